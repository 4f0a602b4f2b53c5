// CPU-only build: the CUDA backend of DenseBlockOps is not compiled in.
#include "core/error.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve {

std::unique_ptr<DenseBlockOps> make_cuda_dense_ops() {
  throw NotCompiled("tcsolve was built without CUDA: no GPU dense block operations");
}

}  // namespace tcsolve
