// Thin host-side interface to the GPU runtime. Implemented in device.cu (CUDA builds) and
// device_stub.cpp (CPU-only builds, where every call but device_count() throws NotCompiled),
// so no other code needs #ifdef.
//
// Contract: device_count() never throws (0 without CUDA or without a usable GPU); a call that
// touches a device needs a CUDA build (else NotCompiled) and a device (else DeviceError naming
// the failed call), while host-to-host copy_bytes() and the memory counters work everywhere.
// device_malloc() throws OutOfDeviceMemory with the requested size instead of returning null;
// device_free(nullptr) is a no-op; copy_bytes() returns when the copy is complete.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <string>

#include "core/types.hpp"

namespace tcsolve {

bool built_with_cuda();
// Number of usable CUDA devices; 0 in CPU-only builds or when the driver finds none.
int device_count();
// The calling thread's current CUDA device (cudaGetDevice); -1 in CPU-only builds or on error.
int current_device();
// "NVIDIA H200 (sm_90, 139 GiB)" or "cpu" style names for reports.
std::string device_name();
// TCSOLVE_DEVICE_MEMORY_LIMIT=BYTES (0 when unset or not a number >= 1): the most device memory
// the process may hold, for a GPU shared with other jobs: its CUDA context, the libraries'
// handles and workspaces and tcsolve's allocations together, as nvidia-smi counts them (NVML:
// device_footprint()). Enforced in device_malloc: an allocation past the limit less the rest of
// the footprint (and kCapReserveBytes for what the context and libraries add after the check)
// throws OutOfDeviceMemory naming the limit. Where NVML cannot say, the limit covers tcsolve's own
// allocations only. Read at each call (allocations happen at setup only).
inline std::size_t device_memory_limit() {
  const char* lim = std::getenv("TCSOLVE_DEVICE_MEMORY_LIMIT");
  if (!lim) return 0;
  char* end = nullptr;
  const double v = std::strtod(lim, &end);
  return end != lim && v >= 1 && v < 1.8e19 ? static_cast<std::size_t>(v) : 0;
}
// TCSOLVE_DEVICE_MEMORY_LIMIT_SCOPE=tcsolve: the limit covers tcsolve's own allocations only
// (device_malloc), not the context and libraries; e.g. in a Python process whose CuPy memory pool
// should not count against tcsolve. Default (unset or "process"): the whole process.
inline bool device_memory_limit_covers_process() {
  const char* s = std::getenv("TCSOLVE_DEVICE_MEMORY_LIMIT_SCOPE");
  return !(s && std::string(s) == "tcsolve");
}
constexpr std::size_t kCapReserveBytes = std::size_t(32) << 20;
// Free device memory (cudaMemGetInfo); under a limit, at most what the limit leaves to
// device_malloc less what it holds now.
std::size_t device_free_bytes();

// The current GPU's memory held by this process (core/process_memory.hpp), split into what
// device_malloc holds and the rest (context, libraries). `known` false (with `how` saying why):
// NVML could not tell, or a CPU build.
struct DeviceFootprint {
  bool known = false;
  std::size_t process = 0, held = 0, other = 0;
  std::string how;
};
DeviceFootprint device_footprint();

// Raw device memory. device_malloc throws OutOfDeviceMemory with the requested size.
// device_free(p) takes only pointers from device_malloc (or nullptr).
void* device_malloc(std::size_t bytes);
void device_free(void* p) noexcept;

// Accounting of the memory above, per GPU (the calling thread's current device; all threads and
// streams on it): bytes allocated by device_malloc and not yet released by device_free, and the
// most there were at once since the start or the last reset_device_peak(). Exact for what goes through these two calls; memory
// taken by libraries (cuBLAS workspaces, the CUDA context) or by direct cudaMalloc is not
// counted: compare with cudaMemGetInfo for the whole card. CPU-only builds report 0.
// Typical use: reset_device_peak() before a solve, device_peak_bytes() after it
// (`peak_device_bytes` in the results).
std::size_t device_allocated_bytes();
std::size_t device_peak_bytes();
void reset_device_peak();  // peak := bytes allocated now
// Copies bytes between any two spaces (synchronous).
void copy_bytes(void* dst, Space dst_space, const void* src, Space src_space, std::size_t bytes);
void device_synchronize();
// Makes GPU `device` the calling thread's (cudaSetDevice; DeviceError when it fails).
void use_device(int device);

}  // namespace tcsolve
