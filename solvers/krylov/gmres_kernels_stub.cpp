// CPU-only build: GMRES's CUDA kernels (gmres_kernels.cu) are not compiled in; their table throws
// NotCompiled (a device-space solve cannot be set up here anyway: the dense ops' CUDA backend
// throws first).
#include "core/error.hpp"
#include "solvers/krylov/gmres_kernels.hpp"

namespace tcsolve::krylov::gmres::cuda {

Kernels kernels() { throw NotCompiled("tcsolve was built without CUDA: no GPU GMRES kernels"); }

}  // namespace tcsolve::krylov::gmres::cuda
