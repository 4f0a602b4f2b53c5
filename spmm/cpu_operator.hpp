// Internal: the CPU SparseOperator (spmm/cpu_operator.cpp): Y = A·X by the CPU CSR kernels
// (spmm/cpu_csr_kernels.hpp). Use make_sparse_operator (spmm/sparse_operator.hpp) instead.
#pragma once
#include <memory>

#include "core/csr.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::detail {

// Planned on A (plan_spmm), then holding A's arrays: moved in, the caller's copy (no second one).
// host_csr() is that copy where the storage is fp64.
std::unique_ptr<SparseOperator> make_cpu_operator(Csr<double>&& a, const OperatorOptions& opt);

}  // namespace tcsolve::detail
