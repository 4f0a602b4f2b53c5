// Direct solves of A·X = B (solvers/direct/direct_solve.hpp), as a class of named steps:
//   validate → choose_engine → factor → (singular? least_squares) → condition → solve → refine
//   → verdict
// Square A: one factorization, then a Hager–Higham 1-norm condition estimate (≤ 11 one-column
// solves, solvers/direct/condition_estimate.hpp) decides "singular to working precision" before
// any right-hand side is solved; the block is solved at once (UMFPACK's factors: eight columns at
// a time, factor/lu_triangular.hpp) and refined with the true A while a column's backward error
// is above the tolerance and the refinement still halves it (≤ 2 steps: each one spmm with A and
// one block solve). Least squares (rectangular A, or the singular fallback): SuiteSparseQR's minimum-norm
// answer (factor/qr_factor.hpp). The checks are recomputed from A, B and X at the end
// (solvers/solution_check.hpp): the status never takes an engine's word for it.
#include "solvers/direct/direct_solve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/format.hpp"
#include "core/interrupt.hpp"
#include "factor/lu_factor.hpp"
#include "factor/qr_factor.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/direct/condition_estimate.hpp"
#include "solvers/solution_check.hpp"

namespace tcsolve {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string sci(double v) { return format("%.2g", v); }

constexpr int kMaxRefinements = 2;

// A square engine's factors behind one interface: X = A⁻¹·B (transpose: A⁻ᵀ·B).
struct SquareFactor {
  std::string method;  // "cholmod LLᵀ", "mumps LDLᵀ", "umfpack LU"
  std::string describe;
  std::function<void(MvView<const double>, MvView<double>, bool transpose)> solve;
};

MvView<const double> column_view(const double* x, std::int64_t n) { return {x, n, 1, n, Space::host}; }
MvView<double> column_view(double* x, std::int64_t n) { return {x, n, 1, n, Space::host}; }

// The first column whose test fails (NaN fails), or −1.
std::int64_t first_failing(const std::vector<double>& v, double tol, const std::vector<double>* alt = nullptr,
                           double alt_tol = 0.0) {
  for (std::size_t j = 0; j < v.size(); ++j) {
    const bool ok = v[j] <= tol || (alt && (*alt)[j] <= alt_tol);
    if (!ok) return static_cast<std::int64_t>(j);
  }
  return -1;
}

double worst(const std::vector<double>& v) {
  double w = 0.0;
  for (const double x : v)
    if (!(x <= w)) w = std::isnan(x) ? INFINITY : x;
  return w;
}

class DirectSolve {
 public:
  DirectSolve(const Csr<double>& a, MatrixKind kind, const double* b, std::int64_t ldb, std::int64_t s,
              const DirectOptions& opt)
      : a_(a), kind_(kind), b_(b), ldb_(ldb), s_(s), opt_(opt) {}

  SolveResult run() {
    const double t0 = now();
    validate();
    const DirectEngine engine = choose_engine();
    r_.n = a_.ncols;
    if (engine == DirectEngine::spqr) least_squares("");
    else if (a_.nrows == 0 || s_ == 0) trivial(engine);
    else square(engine);
    r_.seconds = now() - t0;
    return std::move(r_);
  }

  // Step: shapes, and finite values in A and B (InvalidArgument naming the first bad entry).
  void validate() const {
    const std::int64_t m = a_.nrows;
    TCSOLVE_REQUIRE(s_ >= 0 && s_ <= 2147483647, "direct_solve: column count out of range");
    TCSOLVE_REQUIRE(s_ == 0 || b_ != nullptr, "direct_solve: null right-hand sides");
    TCSOLVE_REQUIRE(ldb_ >= std::max<std::int64_t>(m, 1), "direct_solve: ldb must be at least A.nrows");
    const std::int64_t bad = first_non_finite(a_.values.data(), a_.nnz());
    if (bad >= 0) {
      const std::int64_t row = std::upper_bound(a_.row_ptr.begin(), a_.row_ptr.end(), bad) - a_.row_ptr.begin() - 1;
      throw InvalidArgument("direct_solve: A(" + std::to_string(row + 1) + ", " + std::to_string(a_.col_idx[bad] + 1) +
                            ") = " + std::to_string(a_.values[bad]) + " is not finite");
    }
    for (std::int64_t j = 0; j < s_; ++j) {
      const std::int64_t i = first_non_finite(b_ + j * ldb_, m);
      if (i >= 0)
        throw InvalidArgument("direct_solve: b(" + std::to_string(i + 1) + ", " + std::to_string(j + 1) + ") = " +
                              std::to_string(b_[i + j * ldb_]) + " is not finite (right-hand side " +
                              std::to_string(j + 1) + ")");
    }
  }

  // Step: the engine for this kind and shape (or the one asked for, if it applies).
  DirectEngine choose_engine() const {
    const bool square = a_.square();
    if (opt_.engine != DirectEngine::automatic) {
      if (!square && opt_.engine != DirectEngine::spqr)
        throw InvalidArgument(std::string("direct_solve: engine ") + to_string(opt_.engine) + " needs a square A (it is " +
                              std::to_string(a_.nrows) + " x " + std::to_string(a_.ncols) + "); use spqr");
      return opt_.engine;
    }
    if (!square) return DirectEngine::spqr;
    switch (kind_) {
      case MatrixKind::symmetric_positive: return DirectEngine::cholmod;
      // Small symmetric indefinite A: the LU engines (KLU where the fill is low), not MUMPS,
      // whose instance and analysis cost about 1 ms a call (tumorAntiAngiogenesis_2, 305 rows:
      // 2.1 ms a spsolve against SciPy's 1.4; 2-core Xeon).
      case MatrixKind::symmetric_indefinite:
        return run_inline_small(a_.nrows, a_.nnz()) ? DirectEngine::umfpack : DirectEngine::mumps_ldlt;
      case MatrixKind::unsymmetric: return DirectEngine::umfpack;
      case MatrixKind::rectangular: return DirectEngine::spqr;
    }
    return DirectEngine::umfpack;
  }

 private:
  FactorOptions factor_options() const {
    FactorOptions fo;
    fo.memory_limit_bytes = opt_.memory_limit_bytes;
    return fo;
  }

  void trivial(DirectEngine engine) {
    r_.method = engine_method(engine);
    r_.solutions.assign(static_cast<std::size_t>(a_.ncols) * static_cast<std::size_t>(s_), 0.0);
    check(r_, false);
    r_.status = SolverStatus::converged;
  }

  static std::string engine_method(DirectEngine e) {
    switch (e) {
      case DirectEngine::cholmod: return "cholmod LLᵀ";
      case DirectEngine::mumps_ldlt: return "mumps LDLᵀ";
      case DirectEngine::umfpack: return "umfpack LU";
      default: return "spqr QR (least squares)";
    }
  }

  // Step: the factorization. False (with what was seen in *why) when the engine finds A singular
  // to working precision; FactorTooLarge and the engines' failures propagate.
  bool factor(DirectEngine e, SquareFactor& f, std::string* why, bool umfpack_only = false) {
    FactorOptions base = factor_options();
    if (umfpack_only) base.engine = FactorEngine::umfpack;
    if (e == DirectEngine::umfpack) {
      std::shared_ptr<LuFactor> lu = factor_lu(a_, base);
      f.method = lu->engine_name();
      f.describe = lu->describe();
      const std::string who = f.method == kKluEngineName ? "KLU" : "UMFPACK";
      if (lu->singular()) return *why = who + "'s LU has a zero pivot", false;
      if (!(lu->rcond() >= opt_.singular_rcond))
        return *why = who + "'s pivot ratio min|u_kk|/max|u_kk| is " + sci(lu->rcond()), false;
      f.solve = [lu](MvView<const double> b, MvView<double> x, bool t) { lu->solve(b, x, t); };
      return true;
    }
    FactorOptions fo = base;
    // Automatic for symmetric_positive: CHOLMOD, and MUMPS's LDLᵀ when A is not positive definite.
    fo.engine = e == DirectEngine::mumps_ldlt ? FactorEngine::mumps
                : opt_.engine == DirectEngine::cholmod ? FactorEngine::cholmod
                                                        : FactorEngine::automatic;
    std::shared_ptr<SparseFactor> sf;
    try {
      sf = factor_shifted(a_, nullptr, 0.0, fo);
    } catch (const SingularShift& ex) {
      *why = ex.detail();
      f.method = ex.detail().find("CHOLMOD") != std::string::npos ? "cholmod LLᵀ" : "mumps LDLᵀ";
      return false;
    } catch (const InvalidArgument& ex) {
      if (fo.engine != FactorEngine::cholmod) throw;
      // Only CHOLMOD was allowed (opt.engine) and A is not positive definite: say so in a
      // solve's words (factor_shifted speaks of shifts).
      throw InvalidArgument(std::string("direct_solve: engine cholmod needs a positive definite A (") + ex.what() +
                            "); use engine mumps or auto");
    }
    f.method = sf->engine() == FactorEngine::cholmod ? "cholmod LLᵀ" : "mumps LDLᵀ";
    f.describe = sf->describe();
    // A is symmetric: A⁻ᵀ = A⁻¹.
    f.solve = [sf](MvView<const double> b, MvView<double> x, bool) { sf->solve(b, x); };
    return true;
  }

  // Step: rcond₁ = 1/(‖A‖₁·‖A⁻¹‖₁) from the factors (an upper bound of the true one).
  double condition(const SquareFactor& f) const {
    const std::int64_t n = a_.nrows;
    const double a_norm = csr_norm1(a_);
    const double inv_norm = estimate_inverse_norm1(n, [&](const double* x, double* y, bool t) {
      f.solve(column_view(x, n), column_view(y, n), t);
    });
    if (!(a_norm > 0.0) || inv_norm == 0.0) return 0.0;
    return 1.0 / (a_norm * inv_norm);  // NaN when a solve produced one
  }

  // Step: X = A⁻¹·B for the whole block.
  void solve(const SquareFactor& f) {
    const std::int64_t n = a_.nrows;
    r_.solutions.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(s_));
    MvView<const double> b{b_, n, s_, ldb_, Space::host};
    MvView<double> x{r_.solutions.data(), n, s_, n, Space::host};
    f.solve(b, x, false);
  }

  // Step: x += A⁻¹·(b − A·x) while some column's backward error is above the tolerance and the
  // previous step at least halved the worst one (≤ kMaxRefinements steps, the whole block).
  void refine(const SquareFactor& f) {
    const std::int64_t n = a_.nrows;
    check(r_, false);
    double w = worst(r_.backward_errors);
    std::vector<double> res, dx;
    for (int step = 0; step < kMaxRefinements && !(w <= opt_.backward_tol) && std::isfinite(w); ++step) {
      res.resize(r_.solutions.size());
      dx.resize(r_.solutions.size());
      residual_block(a_, b_, ldb_, r_.solutions.data(), n, s_, res.data());
      f.solve({res.data(), n, s_, n, Space::host}, {dx.data(), n, s_, n, Space::host}, false);
      for (std::size_t i = 0; i < dx.size(); ++i) r_.solutions[i] += dx[i];
      ++r_.refinements;
      check(r_, false);
      const double before = w;
      w = worst(r_.backward_errors);
      if (!(w <= 0.5 * before)) break;
    }
  }

  // Step: factor, condition, solve, refine, verdict. Where KLU's factors (small A of low fill,
  // factor/klu_factor.cpp) give a singular verdict (a zero pivot or the condition estimate) or an
  // answer that misses the tolerance, UMFPACK factors A again before either is believed: KLU's
  // threshold pivoting prefers the diagonal, and its growth must not decide what UMFPACK would
  // have solved (DirectTraps.KluGrowthGivesWayToUmfpack: forced diagonal pivots overflowed into a
  // "zero pivot" on a well-conditioned A).
  void square(DirectEngine e) {
    std::string klu_gave_way;
    for (const bool umfpack_only : {false, true}) {
      SquareFactor f;
      std::string why;
      const bool factored = factor(e, f, &why, umfpack_only);
      const bool klu = f.method == kKluEngineName;
      if (!factored) {
        // (KLU's "zero pivot" can be growth that overflowed: UMFPACK decides.)
        if (klu) {
          klu_gave_way = "klu LU: " + why;
          continue;
        }
        return least_squares(f.method + ": " + why + retried(klu_gave_way));
      }
      const double rcond = condition(f);
      if (!(rcond >= opt_.singular_rcond)) {
        if (klu) {
          klu_gave_way = "klu LU's reciprocal condition estimate " + sci(rcond) + " was below " + sci(opt_.singular_rcond);
          continue;
        }
        return least_squares("the reciprocal condition estimate 1/(‖A‖₁·‖A⁻¹‖₁) is " + sci(rcond) + " (" + f.method +
                             ", below " + sci(opt_.singular_rcond) + ")" + retried(klu_gave_way));
      }
      r_.method = f.method;
      r_.refinements = 0;
      solve(f);
      refine(f);
      const std::int64_t bad = first_failing(r_.backward_errors, opt_.backward_tol);
      if (bad < 0) {
        r_.status = SolverStatus::converged;
        if (!klu_gave_way.empty()) r_.reason = "UMFPACK's LU, since " + klu_gave_way;
        return;
      }
      const std::string missed = "backward error " + sci(r_.backward_errors[bad]) + " of column " +
                                 std::to_string(bad + 1) + " is above the tolerance " + sci(opt_.backward_tol) +
                                 " after " + std::to_string(r_.refinements) + " refinement step(s) (" + f.method +
                                 ", reciprocal condition estimate " + sci(rcond) + ")";
      if (klu) {
        klu_gave_way = "klu LU's " + missed;
        continue;
      }
      r_.status = SolverStatus::not_converged;
      r_.reason = missed + retried(klu_gave_way);
      return;
    }
  }
  static std::string retried(const std::string& klu_gave_way) {
    return klu_gave_way.empty() ? std::string() : "; UMFPACK's LU was tried since " + klu_gave_way;
  }

  // Step: SuiteSparseQR's minimum-norm least-squares answer; singular_why non-empty: the square A
  // was found singular (status breakdown, whatever the answer's quality). A column passes when
  // its optimality is within the tolerance or, at full rank only, when it solves the system to
  // working precision (a consistent system: r is rounding and its angle to range(A) means
  // nothing). Not below full rank: there a tiny backward error only says that x is huge along
  // a near-null direction, which the minimum-norm answer must not be.
  void least_squares(const std::string& singular_why) {
    QrSolution q = qr_least_squares(a_, b_, ldb_, s_, factor_options(), !singular_why.empty());
    r_.solutions = std::move(q.x);
    r_.method = "spqr QR (least squares)";
    check(r_, true);
    const std::int64_t k = std::min(a_.nrows, a_.ncols);
    const bool full_rank = singular_why.empty() && q.rank == k;
    if (!full_rank && optimality_score(r_).first > 0) q = threshold_ladder(std::move(q));
    const std::int64_t bad = full_rank ? first_failing(r_.optimality, opt_.optimality_tol, &r_.backward_errors,
                                                       opt_.backward_tol)
                                       : first_failing(r_.optimality, opt_.optimality_tol);
    const double a_norm = frobenius_norm(a_);
    const std::string how = "(numerical rank " + std::to_string(q.rank) + " of " + std::to_string(k) +
                            " at the column-norm threshold " + sci(a_norm > 0 ? q.tol / a_norm : 0.0) +
                            "·‖A‖_F, SuiteSparseQR: " + q.route + ")";
    std::string failing;
    if (bad >= 0)
      failing = "column " + std::to_string(bad + 1) + "'s optimality ‖Aᵀr‖/(‖A‖‖r‖) = " + sci(r_.optimality[bad]) +
                " is above the tolerance " + sci(opt_.optimality_tol) +
                (full_rank ? " and its backward error " + sci(r_.backward_errors[bad]) + " above " + sci(opt_.backward_tol)
                           : std::string(" (x grows along the near-null directions that the rank test kept)"));
    if (!singular_why.empty()) {
      r_.status = SolverStatus::breakdown;
      r_.reason = "singular to working precision: " + singular_why +
                  "; the least-squares (minimum-norm) answer is returned " + how + (failing.empty() ? "" : "; " + failing);
      return;
    }
    r_.status = bad < 0 ? SolverStatus::converged : SolverStatus::not_converged;
    if (!failing.empty()) r_.reason = "least squares: " + failing + " " + how;
    else if (!full_rank) r_.reason = "rank-deficient: the minimum-norm least-squares answer is returned " + how;
  }

  // (columns whose optimality is above the tolerance, the worst optimality): smaller is better.
  std::pair<std::int64_t, double> optimality_score(const SolveResult& r) const {
    std::pair<std::int64_t, double> sc{0, 0.0};
    for (const double o : r.optimality)
      if (!(o <= opt_.optimality_tol)) ++sc.first, sc.second = std::max(sc.second, std::isnan(o) ? INFINITY : o);
    return sc;
  }

  // Step: Heath's rank test at SPQR's default threshold (≈ 20·(m + n)·ε of the largest column)
  // keeps columns whose R is still ill-conditioned when the singular values have no gap, and x
  // then grows along them until rounding in A·x spoils the residual. Larger thresholds τ =
  // 1e-12, 1e-10, 1e-8 times ‖A‖_F in turn (each one both sides' QR again), until every column
  // passes; the answer with the best optimality is kept (the measure is smallest where neither
  // the rounding along kept near-null directions, ε‖A‖‖x‖, nor the dropped part, ~τ, dominates).
  // Measured (16 random right-hand sides, worst column): reorientation_1 (κ 8e18) 5e-5 at the
  // default threshold → 1.6e-9 at 1e-8; nnc1374 (κ 4e14) 1e-2 → 6.5e-4 (still reported above
  // the tolerance: its R keeps a near-null direction at every threshold tried).
  QrSolution threshold_ladder(QrSolution best) {
    const double a_norm = frobenius_norm(a_);
    std::pair<std::int64_t, double> best_score = optimality_score(r_);
    for (const double rel : {1e-12, 1e-10, 1e-8}) {
      if (rel * a_norm <= best.tol) continue;
      QrSolution q = qr_least_squares(a_, b_, ldb_, s_, factor_options(), /*known_singular=*/true, rel * a_norm);
      SolveResult t;
      t.solutions = std::move(q.x);
      check(t, true);
      const std::pair<std::int64_t, double> sc = optimality_score(t);
      if (sc < best_score) {
        r_.solutions = std::move(t.solutions);
        r_.residual_norms = std::move(t.residual_norms);
        r_.backward_errors = std::move(t.backward_errors);
        r_.optimality = std::move(t.optimality);
        best = std::move(q);
        best_score = sc;
      }
      if (best_score.first == 0) break;
    }
    return best;
  }

  void check(SolveResult& r, bool least_squares) const {
    const double dummy = 0.0;
    const double* x = r.solutions.empty() ? &dummy : r.solutions.data();
    check_solution(a_, b_ ? b_ : &dummy, ldb_, x, std::max<std::int64_t>(a_.ncols, 1), s_, least_squares, r);
  }

  const Csr<double>& a_;
  MatrixKind kind_;
  const double* b_;
  std::int64_t ldb_, s_;
  DirectOptions opt_;
  SolveResult r_;
};

}  // namespace

const char* to_string(DirectEngine e) {
  switch (e) {
    case DirectEngine::automatic: return "auto";
    case DirectEngine::cholmod: return "cholmod";
    case DirectEngine::mumps_ldlt: return "mumps";
    case DirectEngine::umfpack: return "umfpack";
    case DirectEngine::spqr: return "spqr";
  }
  return "?";
}

DirectEstimate estimate_direct(const Csr<double>& a, MatrixKind kind, const DirectOptions& opt) {
  EngineThreadsScope threads;
  const double t0 = now();
  DirectEstimate e;
  e.engine = DirectSolve(a, kind, nullptr, std::max<std::int64_t>(a.nrows, 1), 0, opt).choose_engine();
  const double n = static_cast<double>(a.nrows);
  if (e.engine == DirectEngine::cholmod || e.engine == DirectEngine::mumps_ldlt) {
    // CHOLMOD's AMD analysis of the pattern; L with 8-byte values and indices (the simplicial
    // bound of both engines' storage; MUMPS's delayed 2×2 pivots may add fill beyond it).
    const SymbolicAnalysis sa = analyze_factor(a, nullptr);
    e.factor_entries = sa.factor_entries;
    e.flops = sa.flops;
    e.bytes = 16.0 * sa.factor_entries + 48.0 * n;
    e.solve_flops_per_column = 4.0 * sa.factor_entries;
  } else if (e.engine == DirectEngine::umfpack) {
    const LuAnalysis la = analyze_lu(a);
    e.factor_entries = la.factor_entries;
    e.flops = la.flops;
    e.bytes = la.bytes;
    e.solve_flops_per_column = 2.0 * la.factor_entries;
  } else {
    const QrAnalysis qa = analyze_qr(a);
    e.factor_entries = qa.factor_entries;
    e.flops = qa.flops;
    e.bytes = qa.bytes;
    e.solve_flops_per_column = 2.0 * qa.factor_entries + 4.0 * qa.householder_entries;
  }
  FactorOptions fo;
  fo.memory_limit_bytes = opt.memory_limit_bytes;
  const double limit = factor_memory_budget(fo);
  e.feasible = e.bytes <= limit;
  if (!e.feasible)
    e.why = format("%s needs about %.2f GiB for its factors, more than the %.2f GiB allowed", to_string(e.engine),
                   e.bytes / 1073741824.0, limit / 1073741824.0);
  e.analysis_seconds = now() - t0;
  return e;
}

SolveResult direct_solve(const Csr<double>& a, MatrixKind kind, const double* b, std::int64_t ldb, std::int64_t s,
                         const DirectOptions& opt) {
  EngineThreadsScope threads;
  return DirectSolve(a, kind, b, ldb, s, opt).run();
}

}  // namespace tcsolve
