// Sparse LU of a square unsymmetric A through UMFPACK (SuiteSparse; 64-bit umfpack_dl_*), and
// minimum-norm least squares through SuiteSparseQR (factor/qr_factor.hpp): the engines of the
// direct solves of every kind of matrix (solvers/direct/direct_solve.hpp).
//   analyze:  umfpack_dl_symbolic (column ordering: AMD/COLAMD by UMFPACK's strategy) gives upper
//             bounds of nnz(L) + nnz(U), the flops and the peak memory before any numeric work;
//             a factorization over the memory limit is refused (FactorTooLarge);
//   factor:   umfpack_dl_numeric, partial pivoting with UMFPACK's row scaling; a zero pivot is
//             not an error but UMFPACK_WARNING_singular_matrix (singular(): the factors are
//             kept, a solve would divide by zero);
//   solve:    on a copy of UMFPACK's factors (umfpack_dl_get_numeric; UMFPACK's own object is
//             freed), eight columns at a time (factor/lu_triangular.hpp), without refinement:
//             a caller that needs it refines with A (solvers/direct/direct_solve.cpp); the
//             workspace (8n doubles) is allocated once. The copy costs 12 bytes an entry;
//             while it is made, UMFPACK's object is held too.
// A's CSR arrays are UMFPACK's CSC of Aᵀ: the engine factors Aᵀ and solves A·x = b as
// (Aᵀ)ᵀ·x = b, without a transposed copy (indices widened to 64 bits: 16 bytes per entry
// besides UMFPACK's own memory, until the factors are copied out). Like the CHOLMOD/MUMPS factorizations, the symbolic and
// numeric phases run through run_interruptible (core/interrupt.hpp) with the engines' thread
// pools capped (EngineThreadsScope, factor/sparse_factor.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/csr.hpp"
#include "core/multivector.hpp"
#include "factor/sparse_factor.hpp"

namespace tcsolve {

// UMFPACK's symbolic analysis of A's pattern (no numeric work): its estimates are upper bounds
// (partial pivoting may choose pivots that fill in less).
struct LuAnalysis {
  double factor_entries = 0;  // nnz(L) + nnz(U) − n (L's unit diagonal is not stored)
  double flops = 0;           // of the numeric factorization
  double bytes = 0;           // UMFPACK's peak memory estimate, plus the 64-bit copy of A
  double seconds = 0;         // of this analysis
};
LuAnalysis analyze_lu(const Csr<double>& a);

class LuFactor {
 public:
  virtual ~LuFactor() = default;
  virtual std::int64_t n() const = 0;
  // A zero pivot (UMFPACK_WARNING_singular_matrix): A is singular, solve() must not be used.
  virtual bool singular() const = 0;
  // UMFPACK's estimate min |u_kk| / max |u_kk| (of the scaled A; 0 with a zero pivot). Cheap and
  // crude: it can miss ill-conditioning that a norm estimate (solvers/direct/) finds.
  virtual double rcond() const = 0;
  virtual double factor_entries() const = 0;  // nnz(L) + nnz(U) − n, as factored
  virtual double factor_flops() const = 0;
  virtual double factor_bytes() const = 0;    // UMFPACK's peak memory, plus the copy of A
  virtual double analyze_seconds() const = 0;
  virtual double factor_seconds() const = 0;
  // "umfpack LU, 1.2 M entries, rcond 3.1e-08, analyze 0.010 s, factor 0.120 s"
  virtual std::string describe() const = 0;
  // The engine as results name it: kUmfpackEngineName or kKluEngineName.
  virtual const char* engine_name() const = 0;
  // X = A⁻¹·B (transpose: A⁻ᵀ·B) for a host block (n × s; X may not alias B). Const, but not
  // for two threads at once (shared workspace).
  virtual void solve(MvView<const double> b, MvView<double> x, bool transpose = false) const = 0;
};

// Factors A (square, host CSR, finite values): by KLU where A is small (run_inline_small,
// core/interrupt.hpp) and KLU's symbolic estimate of the flops at most kKluMaxFlops (low fill:
// circuit-like matrices, 2–3× faster than UMFPACK there, factor/klu_factor.cpp), else by
// UMFPACK; opt.engine == FactorEngine::umfpack asks for UMFPACK alone. Throws InvalidArgument
// (shape), FactorTooLarge
// (UMFPACK's peak estimate over opt.memory_limit_bytes, or 80 % of the available memory),
// Error (UMFPACK out of memory or failing), NotCompiled without UMFPACK. A singular A is not an
// error: the result says singular().
std::unique_ptr<LuFactor> factor_lu(const Csr<double>& a, const FactorOptions& opt = {});

// The engines' names (LuFactor::engine_name, the results' `method`).
inline constexpr const char* kUmfpackEngineName = "umfpack LU";
inline constexpr const char* kKluEngineName = "klu LU";
// KLU's left-looking factorization runs without dense kernels: above ~2e7 flops (about 10 ms
// here) UMFPACK's BLAS-3 fronts are the faster engine.
inline constexpr double kKluMaxFlops = 2e7;

namespace detail {
// The figures both engines report (UMFPACK's LuFactor, factor/lu_factor.cpp; KLU's,
// factor/klu_factor.cpp), set by their constructors.
class LuFactorFigures : public LuFactor {
 public:
  std::int64_t n() const final { return n_; }
  bool singular() const final { return singular_; }
  double rcond() const final { return rcond_; }
  double factor_entries() const final { return entries_; }
  double factor_flops() const final { return flops_; }
  double factor_bytes() const final { return bytes_; }
  double analyze_seconds() const final { return analyze_s_; }
  double factor_seconds() const final { return factor_s_; }
  // "<engine>, <entries> entries, rcond <r>[ (zero pivot)], analyze <s> s, factor <s> s"
  std::string describe() const final;

 protected:
  explicit LuFactorFigures(std::int64_t n) : n_(n) {}
  std::int64_t n_;
  bool singular_ = false;
  double rcond_ = 0, entries_ = 0, flops_ = 0, bytes_ = 0, analyze_s_ = 0, factor_s_ = 0;
};
// KLU's LU of A, or null where its symbolic estimate of the flops exceeds max_flops (or KLU
// refuses the pattern): then UMFPACK. Throws Error on KLU's numeric failure.
std::unique_ptr<LuFactor> try_factor_klu(const Csr<double>& a, double max_flops);
}  // namespace detail

// True when this build contains UMFPACK and SuiteSparseQR.
bool built_with_lu_qr();

}  // namespace tcsolve
