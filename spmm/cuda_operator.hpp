// Internal: the CUDA SparseOperator (spmm/cuda_operator.cu; cuda_operator_stub.cpp throws
// NotCompiled in CPU-only builds). Use make_sparse_operator (spmm/sparse_operator.hpp) instead.
#pragma once
#include <memory>

#include "core/csr.hpp"
#include "preprocess/bcsr.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::detail {

// plan.kernel decides what is uploaded. For BCSR kernels `blocks` holds P·A in the plan's block
// shape (built by the caller); for CSR kernels it is ignored.
std::unique_ptr<SparseOperator> make_cuda_operator(const Csr<double>& a, const Bcsr<double>* blocks,
                                                   const SpmmPlan& plan,
                                                   const OperatorOptions& opt);

}  // namespace tcsolve::detail
