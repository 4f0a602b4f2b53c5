// The eigs planner (solvers/eigs/plan.hpp) and the names of methods, preconditioners and
// verifications.
#include "solvers/eigs/plan.hpp"
#include "solvers/eigs/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/trace.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/solver_common.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve {

namespace {
// TCSOLVE_PLAN_DEFAULT_RATES=0: a fresh machine always measures its engine rates (A/B).
bool plan_default_rates_allowed() {
  static const bool on = [] {
    const char* e = std::getenv("TCSOLVE_PLAN_DEFAULT_RATES");
    return !(e && std::string(e) == "0");
  }();
  return on;
}
}  // namespace

// ---- names ----------------------------------------------------------------------------------

const char* to_string(EigsMethod m) {
  switch (m) {
    case EigsMethod::automatic: return "auto";
    case EigsMethod::lanczos: return "lanczos";
    case EigsMethod::lobpcg: return "lobpcg";
    case EigsMethod::chebyshev: return "chebyshev";
    case EigsMethod::dense: return "dense";
  }
  return "?";
}

const std::vector<std::string>& eigs_method_names() {
  static const std::vector<std::string> names{"auto", "lanczos", "lobpcg", "chebyshev", "dense"};
  return names;
}

namespace {
std::string expected_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}
}  // namespace

EigsMethod parse_eigs_method(const std::string& s) {
  for (EigsMethod m : {EigsMethod::automatic, EigsMethod::lanczos, EigsMethod::lobpcg,
                       EigsMethod::chebyshev, EigsMethod::dense})
    if (s == to_string(m)) return m;
  throw InvalidArgument("method '" + s + "': expected " + expected_list(eigs_method_names()));
}

const char* to_string(EigsPrecond p) {
  switch (p) {
    case EigsPrecond::automatic: return "auto";
    case EigsPrecond::none: return "none";
    case EigsPrecond::jacobi: return "jacobi";
    case EigsPrecond::factor: return "factor";
  }
  return "?";
}

const std::vector<std::string>& eigs_precond_names() {
  static const std::vector<std::string> names{"auto", "none", "jacobi", "factor"};
  return names;
}

EigsPrecond parse_eigs_precond(const std::string& s) {
  for (EigsPrecond p : {EigsPrecond::automatic, EigsPrecond::none, EigsPrecond::jacobi, EigsPrecond::factor})
    if (s == to_string(p)) return p;
  throw InvalidArgument("precond '" + s + "': expected " + expected_list(eigs_precond_names()));
}

const char* to_string(Verification v) {
  switch (v) {
    case Verification::certificate: return "certificate";
    case Verification::recheck: return "recheck";
    case Verification::dense: return "dense";
    case Verification::none: return "none";
  }
  return "?";
}

// ---- estimates --------------------------------------------------------------------------------

namespace {

std::string secs(double s) {
  char b[32];
  if (s >= 100) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s >= 1) std::snprintf(b, sizeof b, "%.2f s", s);
  else std::snprintf(b, sizeof b, "%.3g s", s);
  return b;
}

}  // namespace

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
  // Launch and small-matrix latencies (H200 runs: about 2 ms per Chebyshev outer iteration of
  // syevd, Cholesky, fetch and launches; ~5 µs per extra launch).
  m.t_outer = backend == Backend::cuda ? 2e-3 : 5e-4;
  m.t_step = backend == Backend::cuda ? 5e-6 : 0.0;
  return m;
}

namespace {
// Column-steps of the filter proper: the cost model's column applies less Rayleigh-Ritz's (m an
// outer iteration), the final check's (k) and the probe's.
double filter_columns(const ChebyshevCost& c, std::int64_t k) {
  return std::max(0.0, c.column_applies - c.outer_iterations * static_cast<double>(c.block) -
                           static_cast<double>(k) - 25.0);
}
double chebyshev_seconds(const ChebyshevCost& c, std::int64_t k, const ApplyModel& m) {
  const double mb = static_cast<double>(c.block);
  // Filter: D applies of A, per column-step 1 column unit in the SpMM and 2 in the recurrence
  // (m.step_col = 3; 1.5 for the GPU's fused step);
  // Rayleigh-Ritz per outer iteration: one apply of m columns and 10·m column units of dense
  // passes (two BCGS-PIP passes, the projections); the final check: k columns.
  return (c.total_degree + c.outer_iterations + 1.0) * m.t_a +
         filter_columns(c, k) * m.step_col * m.t_col +
         c.outer_iterations * (11.0 * mb * m.t_col + m.t_outer) +
         c.total_degree * m.t_step + static_cast<double>(k) * m.t_col;
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
  return chebyshev_seconds(c, k, m);
}

LadderPrice price_chebyshev_ladder(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                   double rel_gap, const ApplyModel& m, bool wanted_end_large) {
  const ChebyshevCost c = chebyshev_cost(n, nnz, k, tol, rel_gap);
  LadderPrice p;
  p.fp64_s = chebyshev_seconds(c, k, m);
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

double predict_lanczos1_seconds(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                double rel_gap, const ApplyModel& m, std::string* detail) {
  const ChebyshevCost c = chebyshev_cost(n, nnz, k, tol, rel_gap);
  const double applies = 0.35 * c.total_degree + 2.0 * static_cast<double>(k);
  const std::int64_t basis = default_lanczos_basis(k, 1);
  const std::int64_t keep = std::min(k + std::max<std::int64_t>(1, (basis - k) / 2), basis - 1);
  const double restarts = applies / static_cast<double>(std::max<std::int64_t>(1, basis - keep));
  // Per apply: A on one column and the Gram–Schmidt against the basis as filled on average
  // (host_lanczos_step_words); per restart a Rayleigh–Ritz (an eigensolve of the basis-sized
  // matrix: ~20 µs at basis 22 on the 2-core CPU) and the basis rewritten ((basis + keep)·n
  // words); at the end one explicit residual check (A on k columns).
  const double nn = static_cast<double>(n);
  const double t = applies * (m.t_a + m.t_col + host_lanczos_step_words(n, basis, keep) * m.t_word) +
                   restarts * (static_cast<double>(basis + keep) * nn * m.t_word + 3e-5) +
                   m.t_a + static_cast<double>(k) * m.t_col;
  if (detail) {
    char b[160];
    std::snprintf(b, sizeof b, "relative gap %.2g (no power law): about %.0f single-column applies, basis %lld",
                  rel_gap, applies, static_cast<long long>(basis));
    *detail = b;
  }
  return t;
}

double predict_filter_recheck_seconds(std::int64_t n, std::int64_t k, double rel_gap,
                                      const ApplyModel& m) {
  // recheck.cpp: degree acosh(√(2/δ')·√n/1e-3)/acosh(1 + 2δ'), δ' ≈ the relative gap; 2 columns.
  const double g = std::clamp(rel_gap, 1e-14, 0.5);
  const double amp = std::sqrt(2.0 / g) * std::sqrt(static_cast<double>(n)) / 1e-3;
  const double d = std::acosh(amp) / std::acosh(1.0 + 2.0 * g);
  return d * (m.t_a + 2.0 * m.step_col * m.t_col + m.t_step) + 4.0 * static_cast<double>(k) * m.t_col + m.t_outer;
}

double predict_dense_seconds(std::int64_t n, const EngineRates& r) {
  // Tridiagonalization and eigenvectors (Eigen, one thread, ~10·n³ flops), at a fifth of the
  // multithreaded supernodal rate.
  const double nn = static_cast<double>(n);
  return 10.0 * nn * nn * nn * 5.0 * r.factor_s_per_flop;
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

void predict_shift_invert_seconds(std::int64_t n, std::int64_t k, const SymbolicAnalysis& sym,
                                  double lower_entries, const EngineRates& r, const ApplyModel& m,
                                  Backend backend, double* setup_s, double* solve_s,
                                  std::string* detail) {
  const double lnz = sym.factor_entries;
  const ShiftInvertShape sh = shift_invert_shape(n, k, lnz, backend != Backend::cuda);
  const std::int64_t b = sh.block, basis = sh.basis;
  const double solves = 2.0 * static_cast<double>(basis) / static_cast<double>(b) + 2.0;
  double per_solve = r.solve_seconds(lnz, static_cast<double>(b), sym.flops, static_cast<double>(n));
  if (backend == Backend::cuda) per_solve += 16.0 * static_cast<double>(n * b) / 12e9;  // staged
  *setup_s = r.analyze_seconds(lower_entries) + r.factor_seconds(sym);
  if (backend == Backend::cuda || !(m.t_word > 0)) {
    // Dense Lanczos work per block step: two passes over the basis (≈ 4·basis column units).
    const double dense = 4.0 * static_cast<double>(basis) * m.t_col + m.t_outer;
    *solve_s = solves * (per_solve + dense);
  } else {
    // Host (single vectors): a step's Gram–Schmidt against the basis as filled on average
    // (host_lanczos_step_words, at the probe's rate); each pass of the basis ends in a
    // Rayleigh–Ritz and a thick restart, which rewrites the basis ((basis + keep)·n words) plus
    // the small eigenproblem; a look whose estimates pass is checked explicitly: x̂ = T·x (one
    // block solve of k columns) and A·x̂ for the true residuals (one look: the usual case).
    const double nn = static_cast<double>(n);
    const std::int64_t keep = std::min(k + std::max(b, (basis - k) / 2), basis - b);
    const double passes = 1.0 + std::max(0.0, solves * static_cast<double>(b) - static_cast<double>(basis)) /
                                    static_cast<double>(std::max<std::int64_t>(b, basis - keep));
    const double check = r.solve_seconds(lnz, static_cast<double>(k), sym.flops, nn) + m.t_a +
                         static_cast<double>(k) * m.t_col;
    *solve_s = solves * (per_solve + host_lanczos_step_words(n, basis, keep) * m.t_word) +
               passes * (static_cast<double>(basis + keep) * nn * m.t_word + 1e-4) + check;
  }
  if (detail) {
    char bf[200];
    std::snprintf(bf, sizeof bf, "factor %.3g M entries, %.3g GFLOP (%s); %.0f block solves of %lld",
                  lnz / 1e6, sym.flops / 1e9, sym.ordering.c_str(), solves, static_cast<long long>(b));
    *detail = bf;
  }
}

double predict_certificate_seconds(const SymbolicAnalysis& sym, double lower_entries,
                                   const EngineRates& r) {
  // One LDLᵀ count; a second when the k-th value has copies (about one case in three). MUMPS
  // orders by METIS where CHOLMOD would try it (its automatic choice on such fill).
  const double metis = sym.metis_follows ? (kMetisOverAmd - 1.0) * r.analyze_seconds(lower_entries) : 0.0;
  return 1.3 * (r.inertia_seconds(sym, lower_entries) + r.inertia_ratio * metis);
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

// ---- the planner --------------------------------------------------------------------------------

namespace {

bool chebyshev_fits(std::int64_t n, std::int64_t k) {
  return 2 * (k + std::max<std::int64_t>(8, (k + 1) / 2)) <= n;
}

void check_request(const PlanFacts& f, const EigsOptions& opt) {
  const bool need_factor = opt.which == Which::nearest || opt.has_sigma ||
                           opt.precond == EigsPrecond::factor || opt.certify;
  if (need_factor && !f.can_factor)
    throw InvalidArgument(std::string(opt.which == Which::nearest ? "--which nearest"
                                      : opt.has_sigma             ? "--sigma"
                                      : opt.certify               ? "--certify"
                                                                  : "--precond factor") +
                          " needs a sparse factorization of A - sigma*B, which is not available "
                          "here (" + f.factor_why + ")");
  if (opt.method == EigsMethod::dense && !(f.matrix_form && f.n <= 4000))
    throw InvalidArgument("--method dense needs the matrix (not an operator) and n <= 4000");
  if (opt.method == EigsMethod::chebyshev && (f.generalized || opt.which == Which::nearest))
    throw InvalidArgument("chebyshev solves standard problems for the smallest or largest "
                          "eigenvalues (no --mass, no --which nearest)");
  if (opt.method == EigsMethod::lobpcg && opt.which == Which::nearest)
    throw InvalidArgument("lobpcg finds extreme eigenvalues; --which nearest runs Lanczos on the "
                          "shift-inverted operator (--method lanczos or auto)");
  if (opt.which == Which::largest && opt.has_sigma)
    throw InvalidArgument("shift-invert serves --which smallest and nearest; for the largest "
                          "eigenvalues drop --sigma (or use --which nearest with a sigma above the "
                          "spectrum)");
  if (opt.preconditioner && opt.method != EigsMethod::lobpcg && opt.method != EigsMethod::automatic)
    throw InvalidArgument("a preconditioner operator applies to lobpcg");
  if (opt.preconditioner && (opt.has_sigma || opt.which == Which::nearest))
    throw InvalidArgument("a preconditioner operator M cannot be combined with sigma");
}

}  // namespace

EigsPlan plan_eigs(const PlanFacts& f, const EigsOptions& opt, const PlanProbes& probes) {
  const double t0 = detail::now_seconds();
  check_request(f, opt);
  EigsPlan plan;
  plan.sigma = opt.has_sigma ? opt.sigma : 0.0;
  const std::int64_t n = f.n, k = opt.k;
  const double lower_entries = 0.5 * static_cast<double>(f.nnz_a + f.nnz_b + n);
  const Verification default_verification =
      opt.certify ? Verification::certificate : opt.recheck ? Verification::recheck : Verification::none;
  PlanEstimate& c = plan.chosen;
  c.verification = default_verification;

  // ---- forced choices
  if (opt.method == EigsMethod::dense) {
    c.method = EigsMethod::dense;
    c.verification = Verification::dense;
    plan.reason = "method dense as asked";
  } else if (opt.preconditioner) {
    c.method = EigsMethod::lobpcg;
    plan.reason = "LOBPCG with the given preconditioner operator";
  } else if (opt.which == Which::nearest || opt.has_sigma) {
    if (opt.method == EigsMethod::lobpcg) {
      c.method = EigsMethod::lobpcg;
      c.lobpcg_factor = true;
      plan.reason = "lobpcg preconditioned by the factorization of A - sigma*B";
    } else {
      c.method = EigsMethod::lanczos;
      c.transform = Transform::shift_invert;
      plan.reason = "shift-invert block Lanczos around the given sigma";
    }
  } else if (opt.precond == EigsPrecond::factor) {
    if (opt.which != Which::smallest || (opt.method != EigsMethod::lobpcg && opt.method != EigsMethod::automatic))
      throw InvalidArgument("--precond factor applies to lobpcg for the smallest eigenvalues");
    c.method = EigsMethod::lobpcg;
    c.lobpcg_factor = true;
    plan.reason = "lobpcg preconditioned by the factorization of A - sigma*B";
  } else if (opt.method != EigsMethod::automatic) {
    c.method = opt.method;
    // LOBPCG for the smallest with a factorization at hand: preconditioned by it (auto precond).
    c.lobpcg_factor = c.method == EigsMethod::lobpcg && opt.which == Which::smallest &&
                      f.can_factor && opt.precond == EigsPrecond::automatic;
    plan.reason = std::string("method ") + to_string(opt.method) + " as asked";
  } else if (f.matrix_form && f.n <= 4000 && (f.n <= 400 || 3 * k + 32 > f.n)) {
    c.method = EigsMethod::dense;
    c.verification = Verification::dense;
    plan.reason = "auto: dense solve (n = " + std::to_string(f.n) + " is small, or k close to n)";
  } else {
    // ---- auto: price the candidates
    plan.predicted = true;
    std::vector<PlanEstimate> cands;
    // Measurements: the probe and the applies (every iterative price needs them).
    plan.probe = probes.probe();
    const std::int64_t width = f.generalized ? k + default_lobpcg_guard(k)
                                             : chebyshev_block(n, k, -1);
    const std::int64_t w = std::max<std::int64_t>(2, std::min<std::int64_t>(
        f.backend == Backend::cuda ? width : std::min<std::int64_t>(width, 8), n));
    const double t1 = plan.probe->apply_seconds / std::max(1, plan.probe->steps);
    const double tw = probes.apply_seconds(w);
    plan.applies = apply_model(t1, tw, w, f.backend, n);
    // The filter's steps fuse on the GPU where rows are short (eigs_detail::make_fused_step):
    // 1.5 column units a column-step. On A's natural blocks (BSR step, long rows) one unit: H200,
    // elast3d:64 at 24 columns, 804 µs fp64 and 390 µs on the fp32 rung against 835 µs for the
    // operator's apply alone (docs/performance.md).
    if (f.backend == Backend::cuda && chebyshev_step_pays(n, f.nnz_a))
      plan.applies->step_col = 1.5;
    else if (f.bsr_step)
      plan.applies->step_col = 1.0;
    if (f.backend == Backend::cpu && plan.probe->dense_words > 0)
      plan.applies->t_word = plan.probe->dense_seconds / plan.probe->dense_words;
    const ApplyModel& am = *plan.applies;
    if (trace_enabled()) {
      char b[200];
      std::snprintf(b, sizeof b, "plan: apply model t_a %.3g s, t_col %.3g s, t_outer %.3g s, t_step %.3g s, t_word %.3g s",
                    am.t_a, am.t_col, am.t_outer, am.t_step, am.t_word);
      trace_mark(b);
    }
    const double sgn = opt.which == Which::largest ? -1.0 : 1.0;
    const std::int64_t m = f.generalized ? width : chebyshev_block(n, k, -1);
    plan.rel_gap = plan.probe->relative_gap(sgn, k, m);
    // The filter re-check's price (its degree from the resolution, recheck.cpp): where the power
    // law fails, the resolution read off the quadrature's counting function (interpolated_gap)
    // rather than the solves' fallback 1e-3. 2-core CPU, the shared matrices' single-vector
    // Lanczos rows (k = 10): the re-check priced at 1.1–13× its measured seconds with the
    // fallback, 0.2–3.0× with this; the solves stay at the fallback (priced at the interpolated
    // gap they came out at 0.1–0.8× their seconds). TCSOLVE_PLAN_INTERPOLATED_GAP=0: the
    // fallback for the re-check too (A/B).
    static const bool interpolate = [] {
      const char* e = std::getenv("TCSOLVE_PLAN_INTERPOLATED_GAP");
      return !(e && std::string(e) == "0");
    }();
    // modelled: the probe's power law fits the wanted end
    const bool modelled = std::isfinite(plan.probe->relative_gap(sgn, k, m, std::nan("")));
    double recheck_gap = plan.rel_gap;
    if (interpolate && !modelled) {
      const double g = plan.probe->interpolated_gap(sgn, k, m);
      if (std::isfinite(g)) recheck_gap = g;
    }

    if (!f.generalized) {
      PlanEstimate e;
      e.verification = default_verification;
      if (chebyshev_fits(n, k)) {
        e.method = EigsMethod::chebyshev;
        e.solve_s = predict_chebyshev_seconds(n, f.nnz_a, k, opt.tol, plan.rel_gap, am, &e.detail);
        if (f.ladder) {
          const double norm = std::max(std::abs(plan.probe->lower), std::abs(plan.probe->upper));
          const double end = opt.which == Which::largest ? std::abs(plan.probe->upper) : std::abs(plan.probe->lower);
          const LadderPrice lp = price_chebyshev_ladder(n, f.nnz_a, k, opt.tol, plan.rel_gap, am, end >= 0.25 * norm);
          e.ladder = lp.ladder_s < lp.fp64_s;
          char b[200];
          std::snprintf(b, sizeof b, "; fp32 rung on ~%.0f%% of the filters: %.3g s against %.3g s in fp64%s",
                        100.0 * lp.fp32_share, lp.ladder_s, lp.fp64_s, e.ladder ? "" : " (not taken)");
          e.detail += b;
          if (e.ladder) e.solve_s = lp.ladder_s;
        }
      } else {
        // The filter's block does not fit in n/2: block Lanczos, priced like a filter of the
        // same gap (no better model).
        e.method = EigsMethod::lanczos;
        e.solve_s = 2.0 * predict_chebyshev_seconds(n, f.nnz_a, k, opt.tol, plan.rel_gap, am, &e.detail);
      }
      e.verify_s = default_verification == Verification::recheck
                       ? predict_filter_recheck_seconds(n, k, recheck_gap, am) : 0.0;
      e.priced = true;
      cands.push_back(e);
      // Host: single-vector Lanczos (ARPACK's method), which wins where the wanted end holds
      // isolated eigenvalues: where the probe's power law gives no gap in (0, 1). Not offered
      // where it does (PDE-like ends): there it is 4–15× the filter's degree in applies, and their
      // symmetric multiplicities (3D Laplacians: 3 and 6 copies) are what a single vector misses
      // in exact arithmetic; the re-check adds one copy a round (three rounds), so a set missing
      // more ends unverified (gen:lap3d:21, k = 6 largest, forced: 3 copies added, unverified).
      // Its re-check is priced as the filter's.
      if (f.backend == Backend::cpu && am.t_word > 0 && !modelled && n > default_lanczos_basis(k, 1) + 1) {
        PlanEstimate l;
        l.method = EigsMethod::lanczos;
        l.block = 1;
        l.verification = e.verification;
        l.solve_s = predict_lanczos1_seconds(n, f.nnz_a, k, opt.tol, plan.rel_gap, am, &l.detail);
        l.verify_s = e.verify_s;
        l.priced = true;
        cands.push_back(l);
      }
    } else {
      PlanEstimate e;
      e.method = EigsMethod::lobpcg;
      e.verification = default_verification;
      // LOBPCG: ≈ ln(4/tol)/(2√g) iterations, each an apply of m columns of A and B and ~40·m
      // column units of dense work (crude: the gap of A stands in for the pencil's).
      const double g = std::clamp(plan.rel_gap, 1e-12, 0.5);
      const double its = std::min<double>(opt.max_iterations > 0 ? opt.max_iterations : 2000,
                                          std::log(4.0 / opt.tol) / (2.0 * std::sqrt(g)));
      e.solve_s = its * (2.0 * am.t_a + 42.0 * static_cast<double>(m) * am.t_col + am.t_outer);
      e.verify_s = 0.3 * e.solve_s;
      char b[96];
      std::snprintf(b, sizeof b, "relative gap %.2g: about %.0f iterations on %lld columns", g, its,
                    static_cast<long long>(m));
      e.detail = b;
      e.priced = true;
      cands.push_back(e);
    }
    // The rel test at the wanted end can be out of reach without a transformation: a positive
    // θ_min (≥ λ_min > 0 then, as the wanted values) with tol·θ_min below the rounding floor
    // u·‖A‖ (θ_max ≥ θ_min > 0 stands in for ‖A‖). No iteration on A in double gets its residuals under
    // that (driver.cpp's at-the-floor reason), so where a factorization can be had these plans
    // are kept only as the last resort (stiffness matrices with constrained or very stiff
    // dofs: the H200 priced the filter at half of shift-invert and then ended not_converged).
    const bool rel_out_of_reach =
        !f.generalized && opt.which == Which::smallest && opt.conv == ConvTest::rel &&
        plan.probe->lower > 0 &&
        opt.tol * plan.probe->lower < eigs_detail::kUnitRoundoff * plan.probe->upper;
    if (rel_out_of_reach && f.can_factor) {
      for (auto& ce : cands) ce.feasible = false;
      char b[300];
      std::snprintf(b, sizeof b, "%s without a transformation: last resort, the rel test asks for "
                    "tol*lambda_min <= %.2g, below the rounding floor u*|A| = %.2g of any "
                    "iteration on A (--conv norm would allow it)",
                    cands.front().name().c_str(), opt.tol * plan.probe->lower,
                    eigs_detail::kUnitRoundoff * plan.probe->upper);
      plan.unpriced.push_back(b);
    }
    // The cheapest iterative plan (copied: cands grows below).
    const PlanEstimate best_iterative = *std::min_element(
        cands.begin(), cands.end(), [](const PlanEstimate& a, const PlanEstimate& b) { return a.total() < b.total(); });
    const double iterative_best = best_iterative.total();

    // The plans priced with the host engines' rates (shift-invert, dense, the certificate): the
    // rates this machine has (cached, or measured earlier in the process), else the defaults
    // where the plan they choose, at kPessimisticRates times its price, stays below
    // kRateMeasurementFloorSeconds: whatever better plan measured rates might have found, the
    // most it could save is less than measuring costs (0.5–2 s on a fresh machine, once, and in
    // every process where no cache persists: containers, new cluster nodes). Else measured now.
    const std::vector<PlanEstimate> iterative = cands;
    const std::size_t unpriced_before = plan.unpriced.size();
    bool rates_used = false;  // a candidate was priced with r
    // The ordering rate the analysis is bet on: this machine's, unless no cache has it and the
    // stake is below what measuring it costs (kAnalysisRateMeasureSeconds); then the default
    // rate, whose misjudgement can cost at most about the stake itself.
    auto bet_rate = [&](double stake) {
      if (probes.analyze_rate_known && !probes.analyze_rate_known() && stake < kAnalysisRateMeasureSeconds)
        return EngineRates{}.analyze_s_per_entry;
      return probes.analysis_rate();
    };
    // With the defaults the verification stays the re-check: the certificate's price (MUMPS's
    // LDLᵀ) is the least sure of them (the H200 host: crack's certificate 73 ms where the defaults
    // said under 15 % of a 20 ms solve).
    auto price_rated = [&](const EngineRates& r, bool r_defaults) {
      rates_used = false;
      cands = iterative;
      plan.unpriced.resize(unpriced_before);
      // Shift-invert for the smallest: priced from the symbolic analysis, which is run only when
      // it could pay.
      if (opt.which == Which::smallest) {
        // The analysis is a bet (kAmdMisguess, plan.hpp): taken only when even the misguessed
        // analysis stays within a quarter of the best iterative plan, or within a few milliseconds
        // (kStakeFloor): a small matrix's analysis is worth a look whatever the iterative price
        // (2-core CPU: dwt_2680's 2 ms analysis against a 38 ms plan flipped with the noise of the
        // timed applies, and shift-invert is 2-3x faster there).
        constexpr double kStake = 0.25, kStakeFloor = 5e-3;
        const double stake = std::max(kStake * iterative_best, kStakeFloor);
        // Rejected even at the fastest ordering any host has (kFastestAnalyzeSecondsPerEntry):
        // decided without the host's measured rates, which a fresh machine measures once (~1 s).
        const double analysis_floor = kFastestAnalyzeSecondsPerEntry * lower_entries;
        if (!f.can_factor) {
          plan.unpriced.push_back("shift-invert lanczos: no factorization (" + f.factor_why + ")");
        } else if (!rel_out_of_reach && ordering_over_at_any_rate(lower_entries, stake)) {
          plan.unpriced.push_back("shift-invert lanczos: not priced, its ordering alone (at least " +
                                  secs(analysis_floor) + " at 1e8 entries a second, up to " +
                                  secs(kAmdMisguess * analysis_floor) +
                                  " misguessed) would cost more than a quarter of the whole " +
                                  best_iterative.name() + " plan (" + secs(iterative_best) +
                                  ") and more than " + secs(kStakeFloor) +
                                  " (decided without measuring the host's engine rates)");
        } else if (const double analysis_guess = rel_out_of_reach ? 0.0 : lower_entries * bet_rate(stake);
                   !rel_out_of_reach && kAmdMisguess * analysis_guess > stake) {
          // Rejected on the analysis rate alone (engine_analyze_rate): the full rates not measured.
          plan.unpriced.push_back("shift-invert lanczos: not priced, its ordering alone (about " +
                                  secs(analysis_guess) + " to " + secs(kAmdMisguess * analysis_guess) +
                                  ") would cost more than a quarter of the whole " + best_iterative.name() +
                                  " plan (" + secs(iterative_best) + ") and more than " + secs(kStakeFloor));
        } else {
          if (!plan.symbolic) plan.symbolic = probes.analyze();
          rates_used = true;
          PlanEstimate e;
          e.method = EigsMethod::lanczos;
          e.transform = Transform::shift_invert;
          e.verification = default_verification;
          predict_shift_invert_seconds(n, k, *plan.symbolic, lower_entries, r, am, f.backend,
                                       &e.setup_s, &e.solve_s, &e.detail);
          // The ordering is redone by the factorization: AMD's as measured, METIS's priced.
          e.setup_s -= r.analyze_seconds(lower_entries);
          e.setup_s += factor_analysis_seconds(*plan.symbolic);
          const double cert = predict_certificate_seconds(*plan.symbolic, lower_entries, r);
          // As the verification decides (driver.cpp): the certificate when it costs at most 15 %
          // of the solve or less than the re-check would.
          if (default_verification == Verification::recheck && !r_defaults &&
              cert <= std::max(0.15, shift_invert_recheck_share(f.backend)) * e.solve_s)
            e.verification = Verification::certificate;
          e.verify_s = e.verification == Verification::certificate ? cert
                       : e.verification == Verification::recheck ? shift_invert_recheck_share(f.backend) * e.solve_s : 0.0;
          const double need = 12.0 * plan.symbolic->factor_entries;
          FactorOptions fo;
          fo.memory_limit_bytes = opt.factor_memory_limit;
          if (need > factor_memory_budget(fo)) {
            e.feasible = false;
            char b[96];
            std::snprintf(b, sizeof b, "%.1f GB", need / 1e9);
            plan.unpriced.push_back(std::string("shift-invert lanczos: the factor needs about ") + b +
                                    ", more than the host memory allows");
          } else {
            e.priced = true;
            cands.push_back(e);
          }
          // The iterative plans' certificate, when it is cheap next to their solve.
          for (auto& ce : cands)
            if (ce.transform == Transform::none && default_verification == Verification::recheck &&
                !r_defaults && cert <= 0.15 * ce.solve_s) {
              ce.verification = Verification::certificate;
              ce.verify_s = cert;
            }
        }
      }
      // Dense for moderate n (matrix form).
      if (f.matrix_form && n <= 4000) {
        PlanEstimate e;
        e.method = EigsMethod::dense;
        e.verification = Verification::dense;
        rates_used = rates_used || f.can_factor;
        e.solve_s = f.can_factor ? predict_dense_seconds(n, r)
                                 : predict_dense_seconds(n, EngineRates{});
        e.priced = true;
        cands.push_back(e);
      }
      std::stable_sort(cands.begin(), cands.end(), [](const PlanEstimate& a, const PlanEstimate& b) {
        return a.feasible != b.feasible ? a.feasible : a.total() < b.total();
      });
    };
    if (const EngineRates* known = probes.known_rates ? probes.known_rates() : nullptr) {
      plan.rates = *known;
      price_rated(*plan.rates, false);
    } else {
      const EngineRates defaults;
      price_rated(defaults, true);
      const PlanEstimate& pick = cands.front();
      if (!rates_used) {
        // No candidate needed them (the factorization not priced, no dense candidate).
      } else if (pick.feasible && kPessimisticRates * pick.total() < kRateMeasurementFloorSeconds &&
                 plan_default_rates_allowed()) {
        plan.rates = defaults;
        plan.rates_are_defaults = true;
        plan.rates->source = "defaults, not measured: the plan they choose is predicted at " +
                             secs(pick.total()) + ", under " + secs(kRateMeasurementFloorSeconds) +
                             " even " + format("%g", kPessimisticRates) +
                             " times slower, less than measuring the rates would cost";
      } else {
        plan.rates = probes.rates();
        price_rated(*plan.rates, false);
      }
    }
    c = cands.front();
    plan.rejected.assign(cands.begin() + 1, cands.end());
    plan.reason = "auto: " + c.describe();
    if (!plan.rejected.empty()) plan.reason += "; best rejected: " + plan.rejected.front().describe();
    for (const auto& u : plan.unpriced) plan.reason += "; " + u;
    if (plan.rates_are_defaults) plan.reason += "; engine rates: " + plan.rates->source;
    // A filter plan with shift-invert priced behind it: the fallback.
    if (c.method == EigsMethod::chebyshev)
      for (const auto& r : plan.rejected)
        if (r.transform == Transform::shift_invert && r.feasible) {
          plan.fallback = r;
          plan.fallback_budget_s = 1.5 * r.total();
          break;
        }
  }
  // The forced plans' names for the verification (decided again after the solve).
  if (!plan.predicted && c.verification == Verification::recheck && c.method == EigsMethod::dense)
    c.verification = Verification::dense;
  plan.seconds = detail::now_seconds() - t0;
  return plan;
}

}  // namespace tcsolve
