// Error checking for CUDA runtime calls and kernel launches (CUDA translation units only).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace tcsolve::detail {
inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free allocation error
    throw OutOfDeviceMemory(0, file, line);
  }
  throw DeviceError(std::string(call) + " failed: " + cudaGetErrorString(e), file, line);
}
}  // namespace tcsolve::detail

#define TCSOLVE_CUDA_CHECK(call) ::tcsolve::detail::cuda_check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: reports launch-configuration errors without synchronizing.
#define TCSOLVE_CUDA_CHECK_LAUNCH() \
  ::tcsolve::detail::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
