// Error checking for the CUDA libraries' status codes (cuBLAS, cuSOLVER, cuSPARSE), as
// core/cuda_check.cuh does for the runtime: a failed call throws DeviceError with the call's text,
// the status, file and line. CUDA translation units only; a unit that uses one of the macros links
// that library (the others' functions are inline and never emitted).
#pragma once
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <string>

#include "core/error.hpp"

namespace tcsolve::detail {
inline void cublas_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed: cuBLAS status " + std::to_string(int(s)), file,
                    line);
}
inline void cusolver_check(cusolverStatus_t s, const char* call, const char* file, int line) {
  if (s == CUSOLVER_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed: cuSOLVER status " + std::to_string(int(s)), file,
                    line);
}
inline void cusparse_check(cusparseStatus_t s, const char* call, const char* file, int line) {
  if (s == CUSPARSE_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed: " + cusparseGetErrorString(s), file, line);
}
}  // namespace tcsolve::detail

#define TCSOLVE_CUBLAS_CHECK(call) \
  ::tcsolve::detail::cublas_check((call), #call, __FILE__, __LINE__)
#define TCSOLVE_CUSOLVER_CHECK(call) \
  ::tcsolve::detail::cusolver_check((call), #call, __FILE__, __LINE__)
#define TCSOLVE_CUSPARSE_CHECK(call) \
  ::tcsolve::detail::cusparse_check((call), #call, __FILE__, __LINE__)
