// CUDA implementation of core/device.hpp.
#include <cstdio>

#include "core/cuda_check.cuh"
#include "core/device.hpp"

namespace tcsolve {

bool built_with_cuda() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
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

std::size_t device_free_bytes() {
  std::size_t free_b = 0, total = 0;
  TCSOLVE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
  return free_b;
}

void* device_malloc(std::size_t bytes) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfDeviceMemory(bytes, __FILE__, __LINE__);
  }
  TCSOLVE_CUDA_CHECK(e);
  return p;
}

void device_free(void* p) noexcept { cudaFree(p); }

void copy_bytes(void* dst, Space dst_space, const void* src, Space src_space, std::size_t bytes) {
  if (bytes == 0) return;
  cudaMemcpyKind kind = dst_space == Space::host
                            ? (src_space == Space::host ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
                            : (src_space == Space::host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice);
  TCSOLVE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

void device_synchronize() { TCSOLVE_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace tcsolve
