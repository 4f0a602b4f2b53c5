// CPU-only build: pseudo-block MINRES's CUDA kernels are not compiled in.
#include "core/error.hpp"
#include "solvers/krylov/minres_kernels.hpp"

namespace tcsolve::mr {

std::unique_ptr<MinresKernels> make_cuda_minres_kernels(void*, std::int64_t, std::int64_t) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU kernels for MINRES");
}

}  // namespace tcsolve::mr
