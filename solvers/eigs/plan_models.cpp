// The eigs planner's cost models (solvers/eigs/plan.hpp): the apply model, the predicted seconds
// of each plan, shift-invert's shape and the workspace of each method.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/trace.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/eigs/plan.hpp"

namespace tcsolve {

// ---- estimates --------------------------------------------------------------------------------

std::string secs(double s) {
  char b[32];
  if (s >= 100) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s >= 1) std::snprintf(b, sizeof b, "%.2f s", s);
  else std::snprintf(b, sizeof b, "%.3g s", s);
  return b;
}

std::string PlanEstimate::name() const {
  if (transform == Transform::shift_invert) return "shift-invert lanczos";
  if (lobpcg_factor) return "lobpcg preconditioned by the factorization";
  if (method == EigsMethod::lanczos && block == 1) return "lanczos (single vector)";
  return to_string(method);
}

std::string PlanEstimate::describe() const {
  std::string s = name();
  if (verification == Verification::certificate) s += " + certificate";
  else if (verification == Verification::recheck) s += " + re-check";
  if (!feasible) return s + " (not possible)";
  if (!priced) return s;
  s += ": predicted " + secs(total()) + " (setup " + secs(setup_s) + ", solve " + secs(solve_s) +
       ", verify " + secs(verify_s) + ")";
  if (!detail.empty()) s += " [" + detail + "]";
  return s;
}

ApplyModel apply_model(double t1, double tw, std::int64_t w, Backend backend, std::int64_t n) {
  ApplyModel m;
  const double cols = static_cast<double>(std::max<std::int64_t>(w, 2));
  m.t_col = std::max(0.0, (tw - t1) / (cols - 1.0));
  if (m.t_col <= 0) m.t_col = 0.25 * t1;  // timing noise: a column of X and Y costs something
  // On the host, small matrices time thread start-up rather than bytes: a column (16·n bytes of
  // X and Y) is capped at 2 GB/s.
  if (backend == Backend::cpu) m.t_col = std::min(m.t_col, 16.0 * static_cast<double>(n) / 2e9 + 1e-7);
  m.t_a = std::max(0.0, t1 - m.t_col);
  // Launch and small-matrix latencies: a Chebyshev outer iteration's syevd, Cholesky, fetch and
  // launches (H200: about 2 ms), ~5 µs per extra launch; a filter re-check and a shift-invert
  // basis pass are charged the same. (H200 sweep of 2026-12-01, 180 Chebyshev rows: their solves
  // alone ran at a median 0.70 of the price and their re-checks at 0.26, but the GPU set-up,
  // 0.2–10 ms and not priced, makes up for it: at 1.5 ms and 0.4 ms the rows' totals fell from
  // 94 % within 2× to 87 % on that machine, and to 69 % on a slower one.)
  m.t_outer = backend == Backend::cuda ? 2e-3 : 5e-4;
  m.t_step = backend == Backend::cuda ? 5e-6 : 0.0;
  return m;
}

void host_apply_model(ApplyModel& am, const PlanFacts& f, const PlanProbes& probes, std::int64_t n,
                      std::int64_t m, bool filter) {
  // The filter step timed at the block's width, where the filter runs by rows (the 8-column
  // apply misses the block leaving the cache). Where it runs unfused (long rows, an operator
  // form): the apply timed at the block's width, and half again for the recurrence's passes
  // (bcsstk06, 16 columns: 2.7 µs a column-step measured against 7.3 priced as 3 column units
  // from 8 columns).
  if (filter && probes.step_seconds) {
    am.t_filter_step = probes.step_seconds(m);
    if (!(am.t_filter_step > 0) && timed_block_fits(n, m)) am.t_filter_step = 1.5 * probes.apply_seconds(m);
    am.step_block = m;
  }
  // The dense outer iteration: n·(12·m + 0.35·m²) ns on the 2-core CPU (orthonormalization,
  // Rayleigh–Ritz and residuals, per outer iteration and twice for the start; 0.5–0.7 ns·n·m² at
  // m = 48, 0.9–1.3 at m = 16, 420 to 115k rows, the shared matrices and the sweep's families,
  // 2026-11-30), scaled by the threads that share it: beyond two only from 2500 rows a thread
  // (below, small blocks do not spread: the H200 machine's 16-core host, 1138_bus, 10 largest,
  // 14 ms measured against 2 ms priced at 2/16).
  const std::int64_t spread = std::min<std::int64_t>(std::max(1, f.host_threads), std::max<std::int64_t>(2, n / 2500));
  const double per_thread = 2.0 / static_cast<double>(spread);
  am.t_dense_nm = 12e-9 * per_thread;
  am.t_dense_nm2 = 0.35e-9 * per_thread;
}

double filter_reduction(const SpectralProbe& probe, const EigsOptions& opt, double sgn) {
  // The rel test asks ‖r‖ ≤ tol·|λ|·‖x‖, and a Ritz vector off by an angle θ has ‖r‖ ≈ ‖A‖·sin θ,
  // so its error must fall by tol·|λ₁|/‖A‖ at the wanted end, not by tol (and by no less than the
  // zero floor's 8u, pairs.cpp zero_floor). |λ₁| from the probe's Ritz value at that end (an upper
  // bound where the end is at 0: the probe does not reach it), ‖A‖ its largest |Ritz value|; the
  // largest end (|λ| ≈ ‖A‖) keeps tol. 2-core CPU sweep, Chebyshev at λ ≈ 0 (rgg, neumann
  // families, smallest): 1.2–6.4× under-predicted at tol.
  const double norm = std::max(std::abs(probe.lower), std::abs(probe.upper));
  const double lam = std::abs(sgn > 0 ? probe.lower : probe.upper);
  if (opt.conv != ConvTest::rel || !(norm > 0) || !std::isfinite(lam)) return opt.tol;
  return std::min(opt.tol, std::max(opt.tol * lam / norm, eigs_detail::kZeroFloorFactor * eigs_detail::kUnitRoundoff));
}

namespace {
// Column-steps of the filter proper: the cost model's column applies less Rayleigh-Ritz's (m an
// outer iteration), the final check's (k) and the probe's.
double filter_columns(const ChebyshevCost& c, std::int64_t k) {
  return std::max(0.0, c.column_applies - c.outer_iterations * static_cast<double>(c.block) -
                           static_cast<double>(k) - 25.0);
}
double chebyshev_seconds(const ChebyshevCost& c, std::int64_t n, std::int64_t k, const ApplyModel& m) {
  const double mb = static_cast<double>(c.block);
  // Filter: D applies of A, per column-step 1 column unit in the SpMM and 2 in the recurrence
  // (m.step_col = 3; 1.5 for the GPU's fused step); on the host by rows, the step timed on the
  // whole block, its column-steps at that step's share;
  // Rayleigh-Ritz per outer iteration: one apply of m columns and 10·m column units of dense
  // passes (two BCGS-PIP passes, the projections), or on the host the measured dense outer
  // iteration (ApplyModel::t_dense_nm), twice more for the start block; the final check: k columns.
  const double timed = m.t_filter_step > 0 && m.step_block == c.block ? m.t_filter_step : 0.0;
  const double filter = timed > 0 ? filter_columns(c, k) / mb * timed + (c.outer_iterations + 1.0) * timed
                                  : (c.total_degree + c.outer_iterations + 1.0) * m.t_a +
                                        filter_columns(c, k) * m.step_col * m.t_col;
  const double dense = m.t_dense_nm > 0
      ? (c.outer_iterations + 2.0) * static_cast<double>(n) * mb * (m.t_dense_nm + m.t_dense_nm2 * mb)
      : c.outer_iterations * (11.0 * mb * m.t_col + m.t_outer);
  return filter + dense + c.total_degree * m.t_step + static_cast<double>(k) * m.t_col;
}
}  // namespace

double predict_chebyshev_seconds(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                 double rel_gap, const ApplyModel& m, std::string* detail) {
  const ChebyshevCost c = chebyshev_cost(n, nnz, k, tol, rel_gap);
  if (detail) {
    char b[160];
    std::snprintf(b, sizeof b, "relative gap %.2g: %.0f filter steps on %lld columns, %.0f outer "
                  "iterations", rel_gap, c.total_degree, static_cast<long long>(c.block),
                  c.outer_iterations);
    *detail = b;
  }
  return chebyshev_seconds(c, n, k, m);
}

LadderPrice price_chebyshev_ladder(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                   double rel_gap, const ApplyModel& m, bool wanted_end_large) {
  const ChebyshevCost c = chebyshev_cost(n, nnz, k, tol, rel_gap);
  LadderPrice p;
  p.fp64_s = chebyshev_seconds(c, n, k, m);
  // The rungs: where the wanted end is large against ‖A‖ (|λ| ≥ ‖A‖/4, the filter's own test,
  // chebyshev.cpp), all filters but the last on fp32; else only the first (its block holds no
  // vector near the end yet).
  const double outer = std::max(1.0, c.outer_iterations);
  p.fp32_share = wanted_end_large ? (outer - 1.0) / outer : 1.0 / outer;
  // the filter's bandwidth parts at 0.7 on the fp32 rung; the timed apply's launch latency
  // (about two launches' worth, 2·t_step) moves no bytes
  const double bw_a = std::max(0.0, m.t_a - 2.0 * m.t_step);
  const double filter_bw = c.total_degree * bw_a + filter_columns(c, k) * m.step_col * m.t_col;
  const double saved = 0.3 * p.fp32_share * filter_bw;
  const double overhead = p.fp32_share * c.outer_iterations *
                          (2.75 * static_cast<double>(c.block) * m.t_col + 2.0 * m.t_step);
  p.ladder_s = p.fp64_s - saved + overhead;
  return p;
}

double host_lanczos_step_words(std::int64_t n, std::int64_t basis, std::int64_t keep) {
  // block_lanczos.cpp, single vectors: a classical Gram–Schmidt pass (the Gram against the basis
  // and the update: 2·c·n words at fill c) and a second pass where the first kept less than 1/√2
  // of the norm (DGKS); the fill runs from keep to basis between restarts. Counted as 1.5 passes.
  return 3.0 * 0.5 * static_cast<double>(basis + keep) * static_cast<double>(n);
}

double host_basis_word_seconds(std::int64_t n, std::int64_t basis, const ApplyModel& m) {
  // Beyond this the basis is streamed from memory: half this development machine's 32 MB
  // last-level cache (not read from sysconf: in its VM that reports the host's 256 MB).
  constexpr double kCachedBasisBytes = 16.0 * 1024 * 1024;
  const double nn = static_cast<double>(n);
  if (8.0 * nn * static_cast<double>(basis) <= kCachedBasisBytes) return m.t_word;
  return std::max(m.t_word, m.t_col / (2.0 * nn));
}

double predict_lanczos1_seconds(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                double rel_gap, const ApplyModel& m, std::string* detail, bool interpolated) {
  const ChebyshevCost c = chebyshev_cost(n, nnz, k, tol, rel_gap);
  const double applies = (interpolated ? 3.5 : 1.0) * (0.35 * c.total_degree + 2.0 * static_cast<double>(k));
  const std::int64_t basis = default_lanczos_basis(k, 1);
  const std::int64_t keep = std::min(k + std::max<std::int64_t>(1, (basis - k) / 2), basis - 1);
  const double restarts = applies / static_cast<double>(std::max<std::int64_t>(1, basis - keep));
  // Per apply: A on one column and the Gram–Schmidt against the basis as filled on average: two
  // passes, not host_lanczos_step_words' 1.5 (on A itself a step's new direction is a small part
  // of A·v once the wanted end converges, and DGKS asks for the second pass nearly every time);
  // per restart a Rayleigh–Ritz (an eigensolve of the basis-sized matrix: ~20 µs at basis 22 on
  // the 2-core CPU) and the basis rewritten ((basis + keep)·n words); at the end one explicit
  // residual check (A on k columns). The words at the basis's rate (host_basis_word_seconds):
  // gen:rgg:40000:2, 32 largest, 2-core CPU: 10.8 ms a step measured (336 applies in 3.6 s) against
  // 3.5 ms priced at the probe's cached rate, 11.4 ms at the stream's with two passes.
  const double nn = static_cast<double>(n);
  const double tw = host_basis_word_seconds(n, basis, m);
  const double t = applies * (m.t_a + m.t_col + (4.0 / 3.0) * host_lanczos_step_words(n, basis, keep) * tw) +
                   restarts * (static_cast<double>(basis + keep) * nn * tw + 3e-5) +
                   m.t_a + static_cast<double>(k) * m.t_col;
  if (detail) {
    char b[160];
    std::snprintf(b, sizeof b, "relative gap %.2g (no power law): about %.0f single-column applies, basis %lld",
                  rel_gap, applies, static_cast<long long>(basis));
    *detail = b;
  }
  return t;
}

void trace_gap_sources(const SpectralProbe& pr, double sgn, std::int64_t k, std::int64_t m, double rel_gap) {
  const SpectralProbe::EndModel em = pr.end_model(sgn);
  const bool up = sgn < 0 && !pr.nodes.empty();
  const double th0 = pr.nodes.empty() ? 0.0 : sgn * (up ? pr.nodes.back() : pr.nodes.front());
  const double n0 = pr.nodes.empty() ? 0.0 : 0.5 * static_cast<double>(pr.n) * (up ? pr.weights.back() : pr.weights.front());
  // the power law's λ_k, λ_{k+1}, λ_{2k+2} in Â (shift-invert's ratios), NaN without a fit
  const auto ev = [&](std::int64_t j) { return em.fit_ok ? em.eigenvalue(static_cast<double>(j)) : std::nan(""); };
  char b[360];
  std::snprintf(b, sizeof b, "plan: relative gap %.3g (power law %s: l0 %.6g, p %.3g, gap %.3g, lambda_k %.6g, "
                "lambda_k+1 %.6g, lambda_2k+2 %.6g; interpolated %.3g) for k %lld, m %lld; first node %.6g counting "
                "%.3g, bound %.6g, far bound %.6g",
                rel_gap, em.fit_ok ? "fitted" : "not fitted", em.l0, em.p, pr.relative_gap(sgn, k, m, std::nan("")),
                ev(k), ev(k + 1), ev(2 * k + 2), pr.interpolated_gap(sgn, k, m), static_cast<long long>(k),
                static_cast<long long>(m), th0, n0, sgn > 0 ? pr.lower_bound : -pr.upper_bound,
                sgn > 0 ? pr.upper_bound : -pr.lower_bound);
  trace_mark(b);
}

double filter_recheck_degree_at(std::int64_t n, double rel_gap) {
  // recheck.cpp: degree acosh(√(2/δ')·√n/1e-3)/acosh(1 + 2δ'), δ' ≈ the relative gap.
  const double g = std::clamp(rel_gap, 1e-14, 0.5);
  const double amp = std::sqrt(2.0 / g) * std::sqrt(static_cast<double>(n)) / 1e-3;
  return std::acosh(amp) / std::acosh(1.0 + 2.0 * g);
}

double predict_filter_recheck_seconds(std::int64_t n, std::int64_t k, double rel_gap,
                                      const ApplyModel& m) {
  const double d = filter_recheck_degree_at(n, rel_gap);  // on 2 columns
  return d * (m.t_a + 2.0 * m.step_col * m.t_col + m.t_step) + 4.0 * static_cast<double>(k) * m.t_col + m.t_outer;
}

double predict_dense_seconds(std::int64_t n, const EngineRates& r, bool all_pairs) {
  // LAPACK (solvers/dense/symmetric_eigen.hpp): the tridiagonal reduction and k vectors; every
  // pair where the smallest of a definite A go by the inverse form (the congruence, all vectors
  // back-transformed), `nearest` or both ends. In units of the supernodal rate per flop,
  // n²·(a·n + b): fitted on the 2-core CPU, 2026-12-01 (1.08e-10 s a flop), k pairs 0.3·n³ + 500·n²
  // (bcsstk06, n = 420: 11 ms; sherman1, 1000: 84 ms; dwt_2680: 0.93 s), every pair 0.75·n³ +
  // 2250·n² (bcsstk06 45 ms, bcsstk08 (1074) 0.30 s, bcsstk21 (3600) 6.3 s). Eigen before: 0.71 s
  // at 1000, 18.4 s at 2680.
  const double nn = static_cast<double>(n);
  return nn * nn * (all_pairs ? 0.75 * nn + 2250.0 : 0.3 * nn + 500.0) * r.factor_s_per_flop;
}

ShiftInvertShape shift_invert_shape(std::int64_t n, std::int64_t k, double factor_entries, bool host,
                                    std::int64_t block) {
  const std::int64_t b8 = default_lanczos_block(k);
  ShiftInvertShape sh;
  sh.big_factor = factor_entries > static_cast<double>(n) * static_cast<double>(std::max(2 * k + 2 * b8, 6 * b8));
  sh.block = block > 0 ? block
             : sh.big_factor ? std::min<std::int64_t>(std::max<std::int64_t>(k, 2), 16)
             : host ? 1 : b8;
  sh.block = std::min<std::int64_t>(sh.block, n / 4 > 0 ? n / 4 : 1);
  const std::int64_t b = sh.block;
  sh.basis = b * ((std::max(2 * k + 2 * b, (sh.big_factor ? 12 : 6) * b) + b - 1) / b);
  return sh;
}

void predict_shift_invert_seconds(std::int64_t n, std::int64_t k, const SymbolicAnalysis& amd,
                                  double lower_entries, const EngineRates& r, const ApplyModel& m,
                                  Backend backend, double* setup_s, double* solve_s,
                                  std::string* detail) {
  const SymbolicAnalysis sym = expected_factor(amd);
  const double lnz = sym.factor_entries;
  const ShiftInvertShape sh = shift_invert_shape(n, k, lnz, backend != Backend::cuda);
  const std::int64_t b = sh.block, basis = sh.basis;
  // Two fills of the basis and the check's solves; on the GPU one fill where a single value is
  // wanted: σ's nearest value, well apart from the next in the inverted spectrum, converges as
  // the basis first fills (the H200 sweep of 2026-12-01, k = 1: 1.65 basis passes on average,
  // 1 in 12 rows of 20, and 0.9–2.0 ms a solve phase priced at 9.3–9.6 ms from two fills and
  // 3.3–3.7 passes' latencies; k = 6 and 32 ran 3.8 and 5.3 passes, priced at 4.2 and 5.0). On
  // the host (single vectors, the CPU sweep's k = 1 rows at 0.6–1.5 of their price) two fills.
  const double fills = backend == Backend::cuda && k == 1 ? 1.0 : 2.0;
  const double solves = fills * static_cast<double>(basis) / static_cast<double>(b) + 2.0;
  double per_solve = r.solve_seconds(lnz, static_cast<double>(b), sym.flops, static_cast<double>(n));
  if (backend == Backend::cuda) per_solve += 16.0 * static_cast<double>(n * b) / 12e9;  // staged
  *setup_s = r.analyze_seconds(lower_entries) + r.factor_seconds(sym);
  const std::int64_t keep = std::min(k + std::max(b, (basis - k) / 2), basis - b);
  const double passes = 1.0 + std::max(0.0, solves * static_cast<double>(b) - static_cast<double>(basis)) /
                                  static_cast<double>(std::max<std::int64_t>(b, basis - keep));
  if (backend == Backend::cuda || !(m.t_word > 0)) {
    // Dense Lanczos work per block step: two passes over the basis (≈ 4·basis column units) and
    // the staged solve's round trip (a copy each way and a wait: ~0.1 ms a step on the H200,
    // 2026-11-30 sweep, where the outer iteration's 2 ms latency had been charged a step: k = 1
    // rows of 420–3600 rows priced at 30–100 ms, run in 3–22 ms); each pass of the basis ends in
    // a Rayleigh–Ritz and a restart, an outer iteration's latency (the 2026-12-01 sweep's k = 6
    // rows ran 3–5 passes at ~3.5 ms each beyond their solves).
    constexpr double kStagedSolveLatency = 1e-4;
    const double dense = 4.0 * static_cast<double>(basis) * m.t_col + kStagedSolveLatency;
    *solve_s = solves * (per_solve + dense) + passes * m.t_outer;
  } else {
    // Host (single vectors): a step's Gram–Schmidt against the basis as filled on average
    // (host_lanczos_step_words, at the probe's rate); each pass of the basis ends in a
    // Rayleigh–Ritz and a thick restart, which rewrites the basis ((basis + keep)·n words) plus
    // the small eigenproblem; a look whose estimates pass is checked explicitly: x̂ = T·x (one
    // block solve of k columns) and A·x̂ for the true residuals (one look: the usual case).
    const double nn = static_cast<double>(n);
    const double check = r.solve_seconds(lnz, static_cast<double>(k), sym.flops, nn) + m.t_a +
                         static_cast<double>(k) * m.t_col;
    // The words at the basis's rate (host_basis_word_seconds, streamed past the cache) and two
    // passes a step, as single-vector Lanczos (predict_lanczos1_seconds): luxembourg, 32 smallest,
    // 114k rows, basis 66: 36 ms a step measured against 8.6 priced at the probe's cached rate
    // with 1.5 passes, 26 ms so (2-core CPU, 2026-11-30).
    const double tw = host_basis_word_seconds(n, basis, m);
    *solve_s = solves * (per_solve + (4.0 / 3.0) * host_lanczos_step_words(n, basis, keep) * tw) +
               passes * (static_cast<double>(basis + keep) * nn * tw + 1e-4) + check;
  }
  if (detail) {
    char bf[200];
    std::snprintf(bf, sizeof bf, "factor %.3g M entries, %.3g GFLOP (%s); %.0f block solves of %lld",
                  lnz / 1e6, sym.flops / 1e9, sym.ordering.c_str(), solves, static_cast<long long>(b));
    *detail = bf;
  }
}

double predict_certificate_seconds(const SymbolicAnalysis& sym, double lower_entries,
                                   const EngineRates& r, bool nearest) {
  // One LDLᵀ count at an end, two for an interval; one more in three cases (the k-th value's
  // copies, ties at the interval's ends). MUMPS orders by METIS where CHOLMOD would try it (its
  // automatic choice on such fill). (Issue 46 B7, a 3000-row chain, nearest σ: two counts ran
  // 13 ms where one priced 3.2 ms.)
  const double metis = sym.metis_follows ? (kMetisOverAmd - 1.0) * r.analyze_seconds(lower_entries) : 0.0;
  const double counts = nearest ? 2.6 : 1.3;
  return counts * (r.inertia_seconds(expected_factor(sym), lower_entries) + r.inertia_ratio * metis);
}

std::int64_t workspace_vectors(EigsMethod method, std::int64_t n, std::int64_t k,
                               std::int64_t block_size, bool generalized) {
  if (method == EigsMethod::automatic) method = generalized ? EigsMethod::lobpcg : EigsMethod::chebyshev;
  switch (method) {
    case EigsMethod::chebyshev: return 3 * chebyshev_block(n, k, -1) + 2 * k;
    case EigsMethod::lanczos: {
      const std::int64_t b = block_size > 0 ? block_size : default_lanczos_block(k);
      return 2 * (default_lanczos_basis(k, b) + b) + 2 * std::max(b, k);
    }
    case EigsMethod::lobpcg: return 10 * (k + default_lobpcg_guard(k));
    default: return 0;
  }
}

}  // namespace tcsolve
