// CPU-only build: the CUDA sparse operator is not compiled in.
#include "core/error.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/cuda_operator.hpp"

namespace tcsolve::detail {

std::unique_ptr<SparseOperator> make_cuda_operator(const Csr<double>&, const Bcsr<double>*,
                                                   const SpmmPlan&, const OperatorOptions&) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU sparse operator");
}

std::unique_ptr<SparseOperator> make_cuda_operator_by_trial(const Csr<double>&,
                                                            const Bcsr<double>*,
                                                            const std::vector<SpmmPlan>&,
                                                            const OperatorOptions&) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU sparse operator");
}

std::unique_ptr<SparseOperator> make_cuda_transposed_operator(
    const SparseOperator::DeviceCsr&, std::int64_t, std::int64_t, std::int64_t,
    const std::function<SpmmPlan(const std::vector<std::int64_t>&)>&, const OperatorOptions&) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU sparse operator");
}

std::unique_ptr<SparseOperator> make_permuted_cuda_operator(std::unique_ptr<SparseOperator>,
                                                            std::vector<std::int32_t>,
                                                            const SpmmPlan&, const OperatorOptions&) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU sparse operator");
}

std::unique_ptr<ChebyshevStep> make_cuda_chebyshev_step(const Csr<double>&, Precision, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU Chebyshev step");
}
void launch_bsr_step_shape(const ChebyshevStep&, int, int, int, double, const void*, std::int64_t,
                           double, double, void*, std::int64_t, std::int64_t) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU Chebyshev step");
}

}  // namespace tcsolve::detail

namespace tcsolve {
std::unique_ptr<ChebyshevStep> make_chebyshev_step_bsr(const BsrBlocks&, Precision, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU Chebyshev step");
}
std::unique_ptr<ChebyshevStep> make_chebyshev_step_bsr(const Csr<double>&, int, Precision, void*,
                                                       const std::vector<std::int64_t>*) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU Chebyshev step");
}
std::unique_ptr<ChebyshevStep> make_chebyshev_step_view(std::int64_t, const std::int64_t*,
                                                        const std::int32_t*, const double*, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU Chebyshev step");
}
std::unique_ptr<ChebyshevStep> make_chebyshev_step_view32(std::int64_t, std::int64_t, const std::int64_t*,
                                                          const std::int32_t*, const double*, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU Chebyshev step");
}
}  // namespace tcsolve
