// Sparse direct factorizations of the shifted matrix S = A − σ·B (A symmetric, B symmetric
// positive definite or the identity), computed once and applied to whole blocks: the engine behind
// shift-invert (Op = S⁻¹·B) and behind certified eigenvalue counts (Sylvester's law of inertia:
// the number of negative eigenvalues of S equals the number of eigenvalues of (A, B) below σ).
//
// Two maintained engines, each used where it is the right tool (README, Dependencies):
//   CHOLMOD (SuiteSparse): supernodal LLᵀ with METIS/AMD ordering when S is positive definite
//     (σ below the spectrum: the usual `smallest` case). Its factor L can be exported, so the
//     triangular solves of the iteration can run on the GPU (factor/shift_invert.hpp).
//   MUMPS (sequential): multifrontal LDLᵀ with 1×1/2×2 pivoting for indefinite S (σ inside the
//     spectrum: `nearest`), with the inertia (negative pivots) and null-pivot detection that the
//     certificate and the singular-shift message need. Solves run on the CPU.
// Engine::automatic tries CHOLMOD first and falls back to MUMPS when S is not positive definite.
//
// Contract: the matrices are host CSR with both triangles stored (core/csr.hpp); only the lower
// triangle is read. Before any numeric work the symbolic analysis estimates the factor's size,
// and a factorization that would not fit in `memory_limit_bytes` is refused (FactorTooLarge,
// with the estimate). An S that is singular to working precision (σ on an eigenvalue) throws
// SingularShift naming σ and a nearby shift. solve() never allocates per call beyond the engine's
// own workspace, and is const (several threads must not call it at once).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/multivector.hpp"

namespace tcsolve {

// σ makes A − σB singular to working precision (σ is, or is within rounding of, an eigenvalue).
class SingularShift : public InvalidArgument {
 public:
  SingularShift(double sigma, double suggestion, const std::string& detail);
  double sigma() const { return sigma_; }
  double suggestion() const { return suggestion_; }
  // What the engine saw ("2 null pivot(s) in MUMPS's LDL^T", "CHOLMOD's reciprocal condition
  // estimate is ..."), without the advice on σ (a direct solve names it in its own words).
  const std::string& detail() const { return detail_; }

 private:
  double sigma_, suggestion_;
  std::string detail_;
};

// The factorization would need more memory than allowed; says how much (estimated before the
// numeric factorization starts).
class FactorTooLarge : public Error {
 public:
  FactorTooLarge(double estimated_bytes, double limit_bytes, const std::string& what);
  double estimated_bytes() const { return estimated_; }

 private:
  double estimated_;
};

enum class FactorEngine { automatic, cholmod, mumps, umfpack };
const char* to_string(FactorEngine e);

// Eigenvalue counts of S = A − σB (equal to the counts of (A, B) below / at / above σ).
struct Inertia {
  std::int64_t negative = 0, zero = 0, positive = 0;
};

struct SymbolicAnalysis;  // below

// CHOLMOD: below this many flops the factorization is simplicial (up-looking by rows), at and
// above it supernodal where CHOLMOD's own switch says so: small supernodes gain nothing from
// BLAS-3 (2-core CPU, 2026-11-24: bcsstk21, 4.2e6 flops, 22 → 6 ms; dwt_2680 8 → 1 ms).
constexpr double kSimplicialBelowFlops = 1e7;

struct FactorOptions {
  FactorEngine engine = FactorEngine::automatic;
  // Refuse a factorization whose estimated size (factor entries, indices, workspace) exceeds this;
  // 0 = 80 % of the host memory available now (MemAvailable).
  double memory_limit_bytes = 0;
  // CHOLMOD: keep the factor's simplicial LLᵀ copy in CSC form for export (export_lower()).
  bool exportable = false;
  // CHOLMOD: an analysis of S's pattern (analyze_factor) whose permutation is used instead of
  // ordering again, and whose flops choose the simplicial or supernodal form before the
  // factorization's own symbolic pass (which then costs the elimination tree and the counts
  // only). Null: CHOLMOD's default strategy orders S. The caller vouches for the pattern: the
  // permutation must have S's size (checked), and any permutation gives a correct factor.
  std::shared_ptr<const SymbolicAnalysis> analysis;
  // Automatic engine, S not positive definite and at most kLuSolvesMaxRows rows: UMFPACK's LU
  // factors S for the solves (engine() umfpack) instead of MUMPS's LDLᵀ, whose solve phase pays
  // per front of the elimination tree (2.5 ms a solve of a 3000-row chain on the 2-core CPU,
  // against ~0.1 ms); inertia() then costs a MUMPS LDLᵀ on its first call. Where it is set,
  // TCSOLVE_SHIFT_LU=0 or 1 forces it off, or on at any size (A/B).
  bool lu_solves = false;
};
constexpr std::int64_t kLuSolvesMaxRows = 20000;

// L in compressed sparse column form with S(p, p) = L·Lᵀ (CHOLMOD, positive definite S):
// perm[i] = p(i), i.e. row i of the permuted matrix is row perm[i] of S. 64-bit column offsets.
struct ExportedFactor {
  std::int64_t n = 0;
  std::vector<std::int64_t> col_ptr;  // n + 1
  std::vector<std::int32_t> row_idx;  // nnz, sorted within each column, diagonal first
  std::vector<double> values;         // nnz
  std::vector<std::int32_t> perm;     // n
};

class SparseFactor {
 public:
  virtual ~SparseFactor() = default;
  virtual std::int64_t n() const = 0;
  virtual double sigma() const = 0;
  virtual FactorEngine engine() const = 0;
  // True when S was found positive definite (a CHOLMOD LLᵀ exists).
  virtual bool positive_definite() const = 0;
  // Exact for MUMPS (its pivots); CHOLMOD: all positive (S is positive definite).
  virtual Inertia inertia() const = 0;
  // Entries of the factor and the bytes the engine holds for it.
  virtual double factor_entries() const = 0;
  virtual double factor_bytes() const = 0;
  // Reciprocal condition estimate of S (CHOLMOD: (min L_ii / max L_ii)², ≥ 1/κ(S); 0 if unknown).
  virtual double rcond() const { return 0.0; }
  // Floating-point operations of the numeric factorization (the engine's count; 0 if unknown).
  virtual double factor_flops() const { return 0.0; }
  // Seconds of the symbolic analysis and of the numeric factorization.
  virtual double analyze_seconds() const = 0;
  virtual double factor_seconds() const = 0;
  // One line for reports: "cholmod LLᵀ (supernodal, metis), 26.2 M entries, 1.9 s".
  virtual std::string describe() const = 0;

  // X = S⁻¹·R for a host block (n × s, column-major; X may not alias R).
  virtual void solve(MvView<const double> rhs, MvView<double> x) const = 0;
  // The factor for GPU solves; throws InvalidArgument unless engine() == cholmod and the options
  // asked for it (exportable).
  virtual const ExportedFactor& export_lower() const = 0;
};

// Factors S = A − σ·B (b == nullptr: B = I). Throws InvalidArgument for shape errors,
// SingularShift, FactorTooLarge, or NotCompiled when tcsolve was built without the engines.
std::unique_ptr<SparseFactor> factor_shifted(const Csr<double>& a, const Csr<double>* b,
                                             double sigma, const FactorOptions& opt = {});

// Number of eigenvalues of (A, B) below τ (MUMPS inertia of A − τB). Throws SingularShift when
// τ is an eigenvalue to working precision.
Inertia inertia_at(const Csr<double>& a, const Csr<double>* b, double tau,
                   const FactorOptions& opt = {});

// CHOLMOD's symbolic analysis of the pattern of A − σB with AMD alone: the factor's entries and
// the flops of its numeric LLᵀ under AMD's ordering, before any numeric work. The planner
// (solvers/eigs/plan.hpp) prices shift-invert with it. AMD alone because its cost is predictable
// (EngineRates::analyze_seconds): the factorization's own analysis (CHOLMOD's default strategy)
// also tries METIS when AMD fills in much (fl/lnz ≥ 500 and lnz/anz ≥ 5), which costs up to ten
// times more (kMetisOverAmd, solvers/eigs/plan.hpp) and keeps whichever fills in less, so
// AMD's entries and flops bound the factorization's from above.
struct SymbolicAnalysis {
  double factor_entries = 0.0;  // nnz(L) under AMD
  double flops = 0.0;           // of the numeric factorization under AMD
  double seconds = 0.0;         // of this analysis (the ordering dominates)
  std::string ordering;         // amd
  bool metis_follows = false;   // the factorization's analysis will try METIS as well
  // AMD's fill-reducing permutation (postordered; perm[i] = the row of S placed i-th): a
  // factorization of the same pattern may take it (FactorOptions::ordering) instead of ordering
  // again. Shared, since plans and memos copy the analysis.
  std::shared_ptr<const std::vector<std::int64_t>> perm;
  double n = 0.0;  // rows of S (a Sylvester count pays per row: EngineRates::inertia_seconds)
};
SymbolicAnalysis analyze_factor(const Csr<double>& a, const Csr<double>* b);

// Host bytes a factorization may use under these options (memory_limit_bytes, or 80 % of the
// memory available now): the planner marks shift-invert infeasible above it.
double factor_memory_budget(const FactorOptions& opt = {});

// True when this build contains the sparse direct engines.
bool built_with_factor();

// The engines run with OpenBLAS's and OpenMP's pools capped at min(4, cores) unless the user set
// OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or TCSOLVE_FACTOR_THREADS (sparse_factor.cpp: the
// defaults oversubscribed a 16-core host, 8.1 s against 1.4 s for one factorization). Those pools
// are the process's: in a library call (the Python module) the cap would stay on the caller's
// own BLAS (NumPy's) afterwards. This scope puts back, when it ends, the counts it found when it
// began, if the engines changed them in between (calling thread; nothing where the libraries are
// not loaded or nothing changed).
class EngineThreadsScope {
 public:
  EngineThreadsScope();
  ~EngineThreadsScope();
  EngineThreadsScope(const EngineThreadsScope&) = delete;
  EngineThreadsScope& operator=(const EngineThreadsScope&) = delete;

 private:
  int openblas_ = -1, omp_ = -1;
};

// Checks that B is symmetric positive definite by a Cholesky factorization (CHOLMOD); throws
// InvalidArgument naming `what` and the first column where it fails.
void require_positive_definite(const Csr<double>& b, const std::string& what);

}  // namespace tcsolve
