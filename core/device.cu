// CUDA implementation of core/device.hpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "core/cuda_check.cuh"
#include "core/device.hpp"
#include "core/parallel.hpp"
#include "core/process_memory.hpp"
#include "core/trace.hpp"

namespace tcsolve {

bool built_with_cuda() { return true; }

namespace {
// Under a device-memory cap the cap covers the whole process (core/process_memory.hpp): NVML's
// baseline is taken before this process's CUDA context exists, at load time. Without a cap (and
// without TCSOLVE_TRACE) NVML is never loaded: it costs tens of milliseconds at start.
[[maybe_unused]] const bool kBaselineTaken = [] {
  if ((device_memory_limit() > 0 && device_memory_limit_covers_process()) || trace_enabled())
    note_device_baseline();
  return true;
}();
}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int current_device() {
  int dev = -1;
  if (cudaGetDevice(&dev) == cudaSuccess) return dev;
  cudaGetLastError();  // (not sticky: clear it)
  return -1;
}

std::string device_name() {
  if (device_count() == 0) return "cpu";
  int dev = 0;
  TCSOLVE_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  TCSOLVE_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.0f GiB)", p.name, p.major, p.minor,
                p.totalGlobalMem / 1073741824.0);
  return buf;
}

namespace {
// Size and GPU of every live device_malloc block, and per GPU the running total and its peak
// (a batch runs one job per GPU at once: each job's peak is its own GPU's). Allocations happen
// at setup (operators, solver workspaces), never per iteration, so one mutex costs nothing.
// Heap-allocated and never destroyed: device_free may still run from static destructors.
struct DeviceAccounting {
  struct Block {
    std::size_t bytes = 0;
    int device = 0;
  };
  struct Totals {
    std::size_t current = 0, peak = 0;
  };
  std::mutex m;
  std::unordered_map<void*, Block> blocks;
  std::unordered_map<int, Totals> per_device;
};
DeviceAccounting& accounting() {
  static DeviceAccounting* a = new DeviceAccounting;
  return *a;
}
int accounting_device() { return std::max(0, current_device()); }  // (device 0 where none is current)
}  // namespace

DeviceFootprint device_footprint() {
  DeviceFootprint f;
  f.held = device_allocated_bytes();
  int dev = 0;
  char pci[32] = {};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(pci, sizeof pci, dev) != cudaSuccess) {
    cudaGetLastError();
    f.how = "no CUDA device";
    return f;
  }
  const ProcessDeviceMemory p = process_device_memory(pci);
  f.known = p.known;
  f.how = p.how;
  if (p.known) {
    f.process = p.bytes;
    f.other = p.bytes > f.held ? p.bytes - f.held : 0;
  }
  return f;
}

namespace {
// What a cap leaves to device_malloc: the cap less the process's other device memory (context,
// library handles and workspaces, loaded kernels; NVML, cached for 20 ms: allocations come in
// bursts at set-up) and less a reserve for what those grow by after the check (kernels loaded
// on first launch, the libraries' workspaces).
std::size_t cap_for_allocations(std::size_t lim) {
  if (!device_memory_limit_covers_process()) return lim;
  static std::mutex m;
  static double t_last = -1;
  static std::size_t other = 0;
  {
    std::lock_guard<std::mutex> lock(m);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (t_last < 0 || t - t_last > 0.02) {
      const DeviceFootprint f = device_footprint();
      other = f.known ? f.other + kCapReserveBytes : 0;
      t_last = t;
    }
  }
  return lim > other ? lim - other : 0;
}
}  // namespace

std::size_t device_free_bytes() {
  std::size_t free_b = 0, total = 0;
  TCSOLVE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
  // Under a limit, what is left of it: the limit less the process's other device memory and
  // what tcsolve holds now (cached operators of a batch included).
  if (const std::size_t lim = device_memory_limit()) {
    const std::size_t mine = cap_for_allocations(lim);
    const std::size_t held = device_allocated_bytes();
    free_b = std::min(free_b, mine > held ? mine - held : 0);
  }
  return free_b;
}

void* device_malloc(std::size_t bytes) {
  // The limit is enforced, not only planned for: a request past it fails like a full card
  // (OutOfDeviceMemory; the job layer then refuses with the sizes or falls back to the CPU).
  if (const std::size_t lim = device_memory_limit()) {
    const std::size_t mine = cap_for_allocations(lim);
    const std::size_t held = device_allocated_bytes();
    if (held + bytes > mine)
      throw OutOfDeviceMemory(bytes, __FILE__, __LINE__,
                              "TCSOLVE_DEVICE_MEMORY_LIMIT=" + std::to_string(lim) + " bytes: " +
                                  std::to_string(held) + " held by tcsolve" +
                                  (mine < lim ? ", " + std::to_string(lim - mine) +
                                                    " by the CUDA context and libraries with a reserve"
                                              : std::string()));
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfDeviceMemory(bytes, __FILE__, __LINE__);
  }
  TCSOLVE_CUDA_CHECK(e);
  if (p) {
    const int dev = accounting_device();
    DeviceAccounting& a = accounting();
    std::lock_guard<std::mutex> lock(a.m);
    // An address handed out again after a cudaFree that bypassed device_free replaces the stale
    // entry instead of being counted twice.
    auto [it, fresh] = a.blocks.try_emplace(p, DeviceAccounting::Block{bytes, dev});
    if (!fresh) {
      a.per_device[it->second.device].current -= it->second.bytes;
      it->second = DeviceAccounting::Block{bytes, dev};
    }
    DeviceAccounting::Totals& t = a.per_device[dev];
    t.current += bytes;
    t.peak = std::max(t.peak, t.current);
  }
  return p;
}

void device_free(void* p) noexcept {
  if (!p) return;
  {
    DeviceAccounting& a = accounting();
    std::lock_guard<std::mutex> lock(a.m);
    auto it = a.blocks.find(p);
    if (it != a.blocks.end()) {
      a.per_device[it->second.device].current -= it->second.bytes;
      a.blocks.erase(it);
    }
  }
  cudaFree(p);
}

std::size_t device_allocated_bytes() {
  const int dev = accounting_device();
  DeviceAccounting& a = accounting();
  std::lock_guard<std::mutex> lock(a.m);
  return a.per_device[dev].current;
}

std::size_t device_peak_bytes() {
  const int dev = accounting_device();
  DeviceAccounting& a = accounting();
  std::lock_guard<std::mutex> lock(a.m);
  return a.per_device[dev].peak;
}

void reset_device_peak() {
  const int dev = accounting_device();
  DeviceAccounting& a = accounting();
  std::lock_guard<std::mutex> lock(a.m);
  DeviceAccounting::Totals& t = a.per_device[dev];
  t.peak = t.current;
}

namespace {
// Host → device through pinned pieces, for GB-sized uploads (A's arrays): the host threads copy
// piece i + 1 into one pinned buffer while the DMA engine takes piece i from the other, on a
// stream of its own. A pageable cudaMemcpy of the 1M x 30k count matrix's 14.4 GB ran at
// 6-7 GB/s on the H200's host (2.0-2.45 s), one thread staging through the driver's buffers.
// Synchronous, like copy_bytes. Returns false (nothing copied) where the pinned buffers cannot
// be had; the caller then copies as before.
bool upload_in_pinned_pieces(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kPiece = std::size_t(64) << 20;
  void* pin[2] = {nullptr, nullptr};
  cudaStream_t st = nullptr;
  cudaEvent_t done[2] = {nullptr, nullptr};
  const auto release = [&] {
    for (int b = 0; b < 2; ++b) {
      if (done[b]) cudaEventDestroy(done[b]);
      if (pin[b]) cudaFreeHost(pin[b]);
    }
    if (st) cudaStreamDestroy(st);
  };
  if (cudaMallocHost(&pin[0], kPiece) != cudaSuccess || cudaMallocHost(&pin[1], kPiece) != cudaSuccess ||
      cudaStreamCreate(&st) != cudaSuccess ||  // a blocking stream: ordered after the legacy default stream, as cudaMemcpy is
      cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    release();
    return false;
  }
  try {
    const std::size_t pieces = (bytes + kPiece - 1) / kPiece;
    for (std::size_t i = 0; i < pieces; ++i) {
      const int b = static_cast<int>(i & 1);
      const std::size_t off = i * kPiece, len = std::min(kPiece, bytes - off);
      TCSOLVE_CUDA_CHECK(cudaEventSynchronize(done[b]));  // the DMA of piece i − 2 left buffer b
      const char* from = static_cast<const char*>(src) + off;
      char* to = static_cast<char*>(pin[b]);
      constexpr std::int64_t kSlices = 16;  // 4 MiB a slice, over the host threads
      parallel_for(kSlices, [&](std::int64_t t) {
        const std::size_t s0 = len * t / kSlices, s1 = len * (t + 1) / kSlices;
        std::memcpy(to + s0, from + s0, s1 - s0);
      }, 1);
      TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + off, pin[b], len, cudaMemcpyHostToDevice, st));
      TCSOLVE_CUDA_CHECK(cudaEventRecord(done[b], st));
    }
    TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(st));
  } catch (...) {
    cudaStreamSynchronize(st);
    release();
    throw;
  }
  release();
  return true;
}
}  // namespace

void copy_bytes(void* dst, Space dst_space, const void* src, Space src_space, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_space == Space::host && src_space == Space::host) {  // no driver needed (CPU-only hosts)
    std::memcpy(dst, src, bytes);
    return;
  }
  if (dst_space == Space::device && src_space == Space::host && bytes >= (std::size_t(512) << 20) &&
      upload_in_pinned_pieces(dst, src, bytes))
    return;
  cudaMemcpyKind kind = dst_space == Space::host
                            ? (src_space == Space::host ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
                            : (src_space == Space::host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice);
  TCSOLVE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

void device_synchronize() { TCSOLVE_CUDA_CHECK(cudaDeviceSynchronize()); }
void use_device(int device) { TCSOLVE_CUDA_CHECK(cudaSetDevice(device)); }

}  // namespace tcsolve
