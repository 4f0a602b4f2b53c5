// core/blas_kernels.hpp: OpenBLAS's exported functions, looked up in the process (RTLD_DEFAULT).
#include "core/blas_kernels.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace tcsolve {

namespace {
template <class Fn>
Fn blas_symbol(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}
}  // namespace

std::string blas_core_name() {
  const auto f = blas_symbol<char* (*)()>("openblas_get_corename");
  const char* c = f ? f() : nullptr;
  return c ? std::string(c) : std::string();
}

std::string blas_core_override() {
  const std::string core = blas_core_name();
  static const char* const kPreAvx2[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge"};
  bool fell_back = false;
  for (const char* c : kPreAvx2) fell_back = fell_back || core == c;
#if defined(__x86_64__) && defined(__GNUC__)
  if (!fell_back || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return {};
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return avx512 && __builtin_cpu_is("intel") ? "SkylakeX" : "Haswell";
#else
  (void)fell_back;
  return {};
#endif
}

bool blas_use_core(const std::string& core) {
  const auto quit = blas_symbol<void (*)()>("gotoblas_dynamic_quit");
  const auto init = blas_symbol<void (*)()>("gotoblas_dynamic_init");
  if (core.empty() || !quit || !init) return false;
  if (::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return false;
  quit();  // (gotoblas = NULL)
  init();  // reads OPENBLAS_CORETYPE, sets the kernel table and its parameters
  return blas_core_name() == core;
}

}  // namespace tcsolve
