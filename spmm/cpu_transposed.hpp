// Aᵀ on the host without forming it (internal to spmm/: make_transposed_operator's CPU branch).
//
// Y = Aᵀ·X by A's rows: A's rows are cut into P parts of about equal non-zeros (P fixed by A, not
// by the thread count); part p sums its rows' contributions a_ij·X(i, :) into its own row-major
// block S_p (A's columns × k, k rounded up to 4), and Y(j, c) = Σ_p S_p(j, c) in part order, so Y is
// bitwise the same for any thread count. Traffic of one apply: A once (12·nnz + 8·(m + 1) bytes), X
// read (8·m·k), the P blocks zeroed, written and read back (3 × 8·P·n·k, meant to stay in the
// cache) and Y written (8·n·k); against forming Aᵀ (a transpose of 12·nnz bytes each way, and a
// second copy of A held). For tall A (many rows, few columns: cells × genes) the blocks are small:
// 100k × 20k with 80M entries and k = 10, 16 blocks of 1.6 MB.
#pragma once
#include <memory>

#include "core/csr.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::detail {

// The operator on `a`'s arrays (not copied: `a` must outlive it; make_transposed_operator passes
// the CPU operator's own copy). nullptr where the P blocks at opt.expected_cols columns would pass
// 64 MB (wide A: forming Aᵀ is then the better trade), or A is empty.
std::unique_ptr<SparseOperator> make_cpu_transposed_operator(const Csr<double>& a, const OperatorOptions& opt);

// The parts P for A (tests): a part for every 256k non-zeros, between 1 and 16 (a few parts a host
// thread on large A, so that uneven rows even out).
int cpu_transposed_parts(std::int64_t nnz);

}  // namespace tcsolve::detail
