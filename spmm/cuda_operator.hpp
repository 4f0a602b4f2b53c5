// Internal: the CUDA SparseOperator (spmm/cuda_operator.cu; cuda_operator_stub.cpp throws
// NotCompiled in CPU-only builds). Use make_sparse_operator (spmm/sparse_operator.hpp) instead.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/csr.hpp"
#include "preprocess/bcsr.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::detail {

// plan.kernel decides what is uploaded. For BCSR kernels `blocks` holds P·A in the plan's block
// shape (built by the caller); for CSR kernels it is ignored.
std::unique_ptr<SparseOperator> make_cuda_operator(const Csr<double>& a, const Bcsr<double>* blocks,
                                                   const SpmmPlan& plan,
                                                   const OperatorOptions& opt);

// The construction-time trial: `candidates` are complete plans (kernel, csr_group, stage_x;
// block statistics from the cost model). Builds each in turn (a fp64 BCSR candidate with
// stage_x is timed twice on one upload: X staged and X read directly), times applies at
// expected_cols on scratch X, Y, keeps only the fastest so far (at most two operators on the
// GPU at once) and returns it with plan().by_trial set and every time in plan().trials.
// `blocks` (P·A in the BCSR candidate's block shape) is needed only for a BCSR candidate.
std::unique_ptr<SparseOperator> make_cuda_operator_by_trial(
    const Csr<double>& a, const Bcsr<double>* blocks, const std::vector<SpmmPlan>& candidates,
    const OperatorOptions& opt);

// Aᵀ's operator from A's fp64 CSR arrays in device memory (A m × n with nnz entries; all below
// 2^31): CsrSpmmDevice::transposed, then plan_of(Aᵀ's row offsets) decides the CSR kernel's
// layout (csr_row or csr_segment; no trial). The plan is reported as the operator's plan().
std::unique_ptr<SparseOperator> make_cuda_transposed_operator(
    const SparseOperator::DeviceCsr& a, std::int64_t m, std::int64_t n, std::int64_t nnz,
    const std::function<SpmmPlan(const std::vector<std::int64_t>&)>& plan_of, const OperatorOptions& opt);

// OperatorBasis::permuted on the GPU: `inner` applies B = P·A·Pᵀ (built on the permuted copy);
// the result forwards apply() and converts blocks between the bases with a row-permuting kernel
// on opt.stream (perm uploaded once, 4 bytes per row). `plan` is reported as its plan().
std::unique_ptr<SparseOperator> make_permuted_cuda_operator(std::unique_ptr<SparseOperator> inner,
                                                            std::vector<std::int32_t> perm,
                                                            const SpmmPlan& plan,
                                                            const OperatorOptions& opt);

}  // namespace tcsolve::detail
