// Thin host-side interface to the GPU runtime. Implemented in device.cu (CUDA builds) and
// device_stub.cpp (CPU-only builds, where every call but device_count() throws NotCompiled),
// so no other code needs #ifdef.
#pragma once
#include <cstddef>
#include <string>

#include "core/types.hpp"

namespace tcsolve {

bool built_with_cuda();
// Number of usable CUDA devices; 0 in CPU-only builds or when the driver finds none.
int device_count();
// "NVIDIA H200 (sm_90, 139 GiB)" or "cpu" style names for reports.
std::string device_name();
std::size_t device_free_bytes();

// Raw device memory. device_malloc throws OutOfDeviceMemory with the requested size.
void* device_malloc(std::size_t bytes);
void device_free(void* p) noexcept;
// Copies bytes between any two spaces (synchronous).
void copy_bytes(void* dst, Space dst_space, const void* src, Space src_space, std::size_t bytes);
void device_synchronize();

}  // namespace tcsolve
