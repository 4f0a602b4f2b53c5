// Internal to factor/: the shifted matrix in the form both engines read, and the two engines.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/csr.hpp"
#include "factor/sparse_factor.hpp"

namespace tcsolve::detail {

// Lower triangle of S = A − σ·B (B = I when b == nullptr) in compressed sparse column form
// (column j holds rows i ≥ j, sorted, diagonal first): the CSR rows of the upper triangle of the
// symmetric S, read column-wise. Explicit zeros are kept (the pattern is the union of A's and B's).
struct LowerCsc {
  std::int64_t n = 0;
  std::vector<std::int64_t> col_ptr{0};
  std::vector<std::int32_t> row_idx;
  std::vector<double> values;
  double max_abs = 0.0;  // max |s_ij| (scale for pivot tests)
};
LowerCsc shifted_lower(const Csr<double>& a, const Csr<double>* b, double sigma);

// Caps the OpenMP and OpenBLAS pools the engines use (at each use; sparse_factor.cpp).
void configure_engine_threads();

// Bytes of host memory the engines may use: opt.memory_limit_bytes or 80 % of MemAvailable.
double factor_memory_limit(const FactorOptions& opt);

// CHOLMOD supernodal LLᵀ. Returns nullptr (and sets *minor to the failing column, 0-based) when S
// is not positive definite; throws FactorTooLarge before the numeric factorization.
std::unique_ptr<SparseFactor> cholmod_factor(const LowerCsc& s, double sigma,
                                             const FactorOptions& opt, std::int64_t* minor);
// CHOLMOD's symbolic analysis only (cholmod_l_analyze on S's pattern, AMD alone:
// SymbolicAnalysis, sparse_factor.hpp).
SymbolicAnalysis cholmod_symbolic(const LowerCsc& s);
// MUMPS LDLᵀ with pivoting; with_solve = false keeps only the inertia (no factors kept for
// solves). Throws SingularShift, FactorTooLarge.
std::unique_ptr<SparseFactor> mumps_factor(const LowerCsc& s, double sigma,
                                           const FactorOptions& opt, bool with_solve);
// UMFPACK's LU of the whole S for the solves (FactorOptions::lu_solves); inertia() by a MUMPS
// LDLᵀ of `s` on its first call. Throws SingularShift on a zero pivot, FactorTooLarge.
std::unique_ptr<SparseFactor> lu_shifted(std::shared_ptr<const LowerCsc> s, double sigma, const FactorOptions& opt);
// Whether factor_shifted hands an indefinite S of n rows to lu_shifted.
bool use_lu_solves(const FactorOptions& opt, std::int64_t n);

}  // namespace tcsolve::detail
