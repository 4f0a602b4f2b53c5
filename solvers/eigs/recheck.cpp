// Re-checks of a returned set (solvers/eigs/recheck.hpp).
#include "solvers/eigs/recheck.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/device.hpp"
#include "core/interrupt.hpp"
#include "solvers/eigs/runs.hpp"
#include "solvers/eigs/steps.hpp"  // apply_a
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::eigs_detail {

namespace {

// Y ← Y − X·(Xᵀ·Y), twice (classical Gram-Schmidt with reorthogonalization); X orthonormal.
void project_out(DenseBlockOps& ops, MvView<const double> x, MvView<double> y,
                 std::vector<double>& g) {
  const std::int64_t m = x.cols, c = y.cols;
  if (m == 0 || c == 0) return;
  g.resize(static_cast<std::size_t>(m * c));
  for (int pass = 0; pass < 2; ++pass) {
    ops.gram(x, y, g.data(), m);
    ops.gemm(-1.0, x, g.data(), m, 1.0, y);
  }
}

// The outcome of a re-check stopped by an interrupt (core/interrupt.hpp): not verified; the
// driver returns the set with status interrupted.
RecheckOutcome interrupted(RecheckOutcome& out, double t0, const std::string& where) {
  out.verified = false;
  out.detail = std::string(Interrupted("the " + where).what()) + "; the set is not verified";
  out.seconds = detail::now_seconds() - t0;
  return out;
}

// A re-check run's options: the caller's, without its callbacks and start block (a fresh random
// block), with `block` columns and the full Krylov space ("nothing beyond" rests on it).
EigsOptions recheck_options(const EigsOptions& opt, std::int64_t block) {
  EigsOptions ro = opt;
  ro.on_iteration = nullptr;
  ro.on_checkpoint = nullptr;
  ro.v0.clear();
  ro.block_size = block;
  ro.lanczos_early_stop = false;
  return ro;
}

// The pairs `keep` of a re-check run's set (columns gathered in that order), to merge into p.
PairSet take_pairs(DenseBlockOps& ops, const PairSet& from, const std::vector<std::int64_t>& keep) {
  PairSet found;
  found.x = reorder_columns(ops, from.x.view(), keep);
  for (auto j : keep)
    found.values.push_back(from.values[j]), found.rn.push_back(from.rn[j]),
        found.xn.push_back(from.xn[j]), found.rq_dev.push_back(from.rq_dev[j]);
  return found;
}

// ---- filter re-check: plan, recurrence, Rayleigh-Ritz (filter_recheck below) ----

// The filter's plan, all in Â = sgn·A (wanted end low): the k-th value μ_k and its window w, the
// resolution δ, the damped interval [cr, upper] = [ce − e, ce + e] and the lowest value `lower`,
// the degree d, the projection period, and the step the recurrence takes.
struct FilterPlan {
  double sgn = 1.0, muk = 0.0, w = 0.0, delta = 0.0;
  double lower = 0.0, upper = 0.0, cr = 0.0, e = 0.0, ce = 0.0;
  std::int64_t b = 1, deg = 0, period = 1;  // b: columns of the random block
  std::unique_ptr<ChebyshevStep> fs32;      // the step on A's values rounded to fp32, or none
  const ChebyshevStep* fs = nullptr;        // the fused step used (fs32 or fp64), or none
};

// The step on A's values rounded to fp32 (GPU, the operator's own CSR in device memory), where
// that is sound; else none. Ã = A + E, |E| ≤ 2^-24·|A| entrywise, so ‖E‖₂ ≤ e32 = 2^-24·‖A‖∞ (|A|
// is symmetric). That is sound where ‖E‖ ≤ δ/1000: a missing eigenvector v of A (eigenvalue λ)
// lies, up to a part of norm ‖E‖/r, in Ã's eigenvectors within r of λ, which p(Ã) amplifies as
// p(A) does v when r ≪ δ; the bounds widen by ‖E‖ (Ã's spectrum), and the Rayleigh-Ritz values
// that decide are those of A itself. The step then moves 8 bytes an entry of A instead of 12
// (H200, lap3d:100 k = 16 largest: 468 steps on 2 columns, docs/performance.md).
// TCSOLVE_RECHECK_FP32=0: off (A/B).
std::unique_ptr<ChebyshevStep> fp32_step(const Problem& s, const ChebyshevStep* fs64, double e32,
                                         double delta) {
  const char* r32 = std::getenv("TCSOLVE_RECHECK_FP32");
  DenseBlockOps& ops = *s.ops;
  if (fs64 && ops.space() == Space::device && s.a && !s.bop && !s.foreign_operator &&
      !(r32 && std::string(r32) == "0") && s.a_norm >= 1e-30 && s.a_norm <= 1e38 &&  // no fp32 overflow; underflow negligible
      1000.0 * e32 <= delta)
    return make_chebyshev_step_on_operator(*s.aop, *s.a, Precision::fp32, ops.stream());
  return nullptr;
}

// The filter's interval and degree (FilterPlan without its step), the bounds widened by `widen`
// (the fp32 step's ‖E‖); false, with the reason in `why`, where it cannot run (the found values
// reach the far end of the spectrum) or its degree would exceed the cap.
bool plan_degree(const Problem& s, const EigsOptions& opt, const PairSet& p, const FilterRecheckInputs& in,
                 double widen, FilterPlan& f, std::string& why) {
  const std::int64_t ng = s.global_n(), k = static_cast<std::int64_t>(p.values.size());
  f.b = std::max<std::int64_t>(1, std::min<std::int64_t>(in.columns, ng - k));
  f.sgn = opt.which == Which::largest ? -1.0 : 1.0;
  // Found values in Â; the k-th (largest in Â) and its window; μ_1 the lowest.
  const auto kth = wanted_order(p.values, opt.which, 0.0).back();
  f.muk = f.sgn * p.values[kth];
  f.w = cert_width(s, p, kth);
  double mu1 = f.muk;
  for (double v : p.values) mu1 = std::min(mu1, f.sgn * v);
  f.delta = std::max(in.resolution, 40.0 * f.w);
  f.upper = in.upper + widen, f.lower = std::min(in.lower, mu1) - widen;
  f.cr = f.muk + f.w;  // damped interval [cr, upper]
  if (!(f.upper > f.cr) || !(f.delta > 0) || !std::isfinite(f.delta)) {
    why = "filter re-check not possible (the found values reach the far end of the spectrum)";
    return false;
  }
  f.e = 0.5 * (f.upper - f.cr), f.ce = 0.5 * (f.upper + f.cr);
  // Degree: T_d(1 + 2(w + δ)/(upper − cr)) ≥ A* = √(2(upper − μ_k)/δ)·√n/t, t = 1e-3.
  const double amp = std::sqrt(2.0 * (f.upper - f.muk) / f.delta) * std::sqrt(static_cast<double>(ng)) / 1e-3;
  const double xv = 1.0 + 2.0 * (f.w + f.delta) / (f.upper - f.cr);
  f.deg = static_cast<std::int64_t>(std::ceil(std::acosh(amp) / std::acosh(xv)));
  f.deg = std::max<std::int64_t>(f.deg, 8);
  f.deg += f.deg & 1;
  if (f.deg > in.max_degree) {
    why = "filter re-check would need degree " + std::to_string(f.deg) + " (cap " +
          std::to_string(in.max_degree) + ")";
    return false;
  }
  // Projection period: the found directions (down to μ_1) grow by ρ(μ_1) per step; keep their
  // regrowth from rounding below 1e8·u between projections.
  const double x1 = (f.ce - f.lower) / f.e;
  const double rho1 = x1 > 1 ? x1 + std::sqrt(x1 * x1 - 1.0) : 1.0;
  f.period = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(std::log(1e8) / std::log(std::max(rho1, 1.0 + 1e-12))), 1, 512);
  return true;
}

// Plans the filter (FilterPlan): its step (fp32 where sound, resolution permitting), then the
// interval and degree with the bounds widened by the fp32 step's error.
bool plan_filter(const Problem& s, const EigsOptions& opt, const PairSet& p,
                 const FilterRecheckInputs& in, FilterPlan& f, std::string& why) {
  const auto kth = wanted_order(p.values, opt.which, 0.0).back();
  const double delta = std::max(in.resolution, 40.0 * cert_width(s, p, kth));
  const double e32 = std::ldexp(s.a_norm, -24);
  const ChebyshevStep* fs64 = fused_step_for(s, *s.aop, opt);
  f.fs32 = fp32_step(s, fs64, e32, delta);
  f.fs = f.fs32 ? f.fs32.get() : fs64;
  return plan_degree(s, opt, p, in, f.fs32 ? e32 : 0.0, f, why);
}

}  // namespace

std::int64_t filter_recheck_degree(const Problem& s, const EigsOptions& opt, const PairSet& p,
                                   const FilterRecheckInputs& in, std::int64_t* columns) {
  FilterPlan f;
  std::string why;
  const bool ok = plan_degree(s, opt, p, in, 0.0, f, why);
  if (columns) *columns = f.b;
  return ok ? f.deg : 0;
}

namespace {

// The filter's blocks (n × b each): Y_j = y[cur] and Y_{j−1} = y[1 − cur], swapped every step,
// and W (the product where no fused step applies; Q in the Rayleigh-Ritz step).
struct FilterBlocks {
  MultiVector<double> y[2], wv;
  int cur = 1;
  std::vector<double> g, nrm, scale, zero;  // Gram scratch; column norms and scales
  FilterBlocks(DenseBlockOps& ops, std::int64_t n, std::int64_t b)
      : y{ops.allocate(n, b), ops.allocate(n, b)}, wv(ops.allocate(n, b)), nrm(b), scale(b), zero(b, 0.0) {}
  // Scales the columns of `newest` to unit norm and those of `older` by the same factors.
  void normalize_pair(DenseBlockOps& ops, MvView<double> newest, MvView<double> older) {
    const std::int64_t b = newest.cols;
    ops.column_norms(newest, nrm.data());
    for (std::int64_t j = 0; j < b; ++j) scale[j] = nrm[j] > 0 && std::isfinite(nrm[j]) ? 1.0 / nrm[j] : 1.0;
    ops.axpby_columns(scale.data(), newest, zero.data(), newest);
    ops.axpby_columns(scale.data(), older, zero.data(), older);
  }
};

// Runs the filter's d steps on a fresh random block ⊥ X, leaving the filtered block in y[cur].
// Returns the step an interrupt stopped it before (0: all steps done).
// Scaled three-term recurrence (chebyshev.hpp), normalized at a0 = the lowest value (≤ λmin(Â),
// below the damped interval). Not at cr − e as the solver's short filters are: normalized that
// far below, everything shrinks by ρ(a0)^−d (3.7^−340 at lap2d:200 k = 16), the Gram matrix of the
// block underflows to 0 and the check sees nothing; at the lowest value it shrinks by at most
// the found directions' growth, which the projection period keeps below 1e8.
// Each step Y_{j−1} ← α·A·Y_j + β·Y_j + γ·Y_{j−1}: the solve's fused kernel where A has one
// (one launch and one pass a step; the re-check is launch-bound on small matrices: H200,
// lap2d:200, 472 steps of 2 columns, SpMM + update were 12 µs a step), else the product and
// the update.
std::int64_t run_filter(const Problem& s, const EigsOptions& opt, const PairSet& p,
                        const FilterPlan& f, FilterBlocks& blk) {
  DenseBlockOps& ops = *s.ops;
  MultiVector<double>& y0 = blk.y[0];
  ops.fill_random(y0.view(), opt.seed * 6364136223846793005ull + 1442695040888963407ull);
  project_out(ops, p.x.view(), y0.view(), blk.g);
  blk.normalize_pair(ops, y0.view(), blk.y[1].view());
  auto step = [&](double alpha, MvView<const double> cur, double beta, double gamma, MvView<double> prev) {
    if (f.fs) {
      f.fs->step(alpha, cur, beta, gamma, prev, 0.0, cur);
      return;
    }
    apply_a(s, cur, blk.wv.view());
    ops.chebyshev().axpbypcz(alpha, blk.wv.view(), beta, cur, gamma, prev);
  };
  const double a0 = f.lower, e = f.e, ce = f.ce, sgn = f.sgn;
  const double sigma1 = e / (a0 - ce), tau2 = 2.0 / sigma1;
  double sigma = sigma1;
  step(sgn * sigma1 / e, y0.view(), -ce * sigma1 / e, 0.0, blk.y[1].view());
  blk.cur = 1;
  for (std::int64_t j = 1; j < f.deg; ++j) {
    // An interrupt ends the re-check between steps (one product with A on 2 columns).
    if (interrupt_requested()) return j;
    const double sn = 1.0 / (tau2 - sigma);
    // Y_{j+1} overwrites Y_{j−1}, then becomes the current block.
    step(sgn * 2.0 * sn / e, blk.y[blk.cur].view(), -2.0 * sn * ce / e, -sigma * sn, blk.y[1 - blk.cur].view());
    sigma = sn;
    blk.cur = 1 - blk.cur;
    if (j % f.period == 0) {
      MvView<double> yc = blk.y[blk.cur].view(), yp = blk.y[1 - blk.cur].view();
      project_out(ops, p.x.view(), yc, blk.g);
      project_out(ops, p.x.view(), yp, blk.g);
      blk.normalize_pair(ops, yc, yp);
    }
  }
  return 0;
}

// The lowest Rayleigh-Ritz value (in Â) of the filtered block y[cur], ⊥ X; ∞ when it vanished.
// The block may have lost rank: without a missing eigenvalue every column ends dominated by the
// least-damped directions, e.g. a further copy of the k-th value (a tie, T_d ≈ 1 there), and two
// columns can end parallel. The basis is taken from the Gram matrix's eigenvectors above 1e-10
// of its largest eigenvalue (rank r ≥ 1): Q = Y·V_r·Λ_r^(-1/2) (b × r Gram work, then Qᵀ·A·Q).
double lowest_ritz_value(const Problem& s, const PairSet& p, double sgn, FilterBlocks& blk) {
  DenseBlockOps& ops = *s.ops;
  const std::int64_t b = blk.wv.cols();
  MvView<double> y = blk.y[blk.cur].view();
  project_out(ops, p.x.view(), y, blk.g);
  std::vector<double> gram(b * b);
  ops.gram(y, y, gram.data(), b);
  Eigen::MatrixXd G = Eigen::Map<Eigen::MatrixXd>(gram.data(), b, b);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> gs(0.5 * (G + G.transpose()));
  const double gmax = gs.eigenvalues().maxCoeff();
  std::vector<std::int64_t> keep_cols;
  for (std::int64_t j = 0; j < b; ++j)
    if (gmax > 0 && gs.eigenvalues()(j) > 1e-10 * gmax) keep_cols.push_back(j);
  const std::int64_t rank = static_cast<std::int64_t>(keep_cols.size());
  double theta_min = INFINITY;
  if (rank == 0) return theta_min;
  Eigen::MatrixXd c(b, rank);  // Q = Y·V_r·Λ_r^(-1/2): orthonormal
  for (std::int64_t r = 0; r < rank; ++r)
    c.col(r) = gs.eigenvectors().col(keep_cols[r]) / std::sqrt(gs.eigenvalues()(keep_cols[r]));
  auto q = blk.wv.columns(0, rank);
  ops.gemm(1.0, y, c.data(), b, 0.0, q);
  auto aq = blk.y[1 - blk.cur].columns(0, rank);
  apply_a(s, q, aq);
  std::vector<double> h(rank * rank);
  ops.gram(q, aq, h.data(), rank);
  Eigen::Map<Eigen::MatrixXd> H(h.data(), rank, rank);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (H + H.transpose()), Eigen::EigenvaluesOnly);
  for (std::int64_t j = 0; j < rank; ++j) theta_min = std::min(theta_min, sgn * es.eigenvalues()(j));
  return theta_min;
}

}  // namespace

// Plan, filter a fresh random block, then decide on its lowest Ritz value: nothing beyond the
// k-th value verifies the set; else the full deflated re-check finds and adds what is missing.
RecheckOutcome filter_recheck(const Problem& s, const EigsOptions& opt, EigsMethod method,
                              PairSet& p, const FilterRecheckInputs& in) {
  const double t0 = detail::now_seconds();
  RecheckOutcome out;
  FilterPlan f;
  if (!plan_filter(s, opt, p, in, f, out.detail)) {
    out.affordable = false;
    return out;
  }
  FilterBlocks blk(*s.ops, s.n, f.b);
  // An interrupt leaves the set unverified; the driver returns it with status interrupted.
  if (const std::int64_t j = run_filter(s, opt, p, f, blk))
    return interrupted(out, t0, "filter re-check after " + std::to_string(j) + " of " +
                                    std::to_string(f.deg) + " steps");
  const double theta_min = lowest_ritz_value(s, p, f.sgn, blk);
  const double sgn = f.sgn, muk = f.muk;
  char line[400];
  std::snprintf(line, sizeof line,
                "filter re-check: %lld fresh random vectors, degree %lld on [%.6g, %.6g] (found "
                "pairs projected out every %lld steps%s); resolution %.3g (%s)",
                static_cast<long long>(f.b), static_cast<long long>(f.deg), sgn * f.cr, sgn * f.upper,
                static_cast<long long>(f.period), f.fs32 ? "; steps on A's values rounded to fp32" : "",
                f.delta, in.resolution_from);
  const double threshold = muk - std::max(0.25 * f.delta, 10.0 * f.w);
  if (!(theta_min < threshold) && std::isfinite(theta_min)) {
    out.verified = true;
    out.detail = std::string(line) + ": nothing below the k-th value " + g17(sgn * muk) +
                 " (lowest Ritz value of the filtered block " + g17(sgn * theta_min) + ")";
    out.seconds = detail::now_seconds() - t0;
    return out;
  }
  // Something lies beyond the k-th value: find and add it with the full deflated re-check.
  RecheckOutcome full = deflated_recheck(s, opt, method, p);
  full.detail = std::string(line) + (std::isfinite(theta_min)
                                         ? ": a Ritz value " + g17(sgn * theta_min) + " beyond the k-th value " + g17(sgn * muk)
                                         : ": the filtered block vanished") +
                "; " + full.detail;
  full.seconds = detail::now_seconds() - t0;
  return full;
}

RecheckOutcome shift_invert_recheck(const Problem& s, const EigsOptions& opt,
                                    const LinearOperator<double>& sinv, double sigma, PairSet& p,
                                    double factor_entries) {
  const double t0 = detail::now_seconds();
  RecheckOutcome out;
  DenseBlockOps& ops = *s.ops;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  if (s.global_n() - k - 1 < 2) {
    out.detail = "no room for a re-check block (n too small)";
    return out;
  }
  for (int round = 0; round < 3; ++round) {
    const auto where = [&] { return "shift-invert re-check (round " + std::to_string(round + 1) + ")"; };
    if (interrupt_requested()) return interrupted(out, t0, where());
    // The farthest found value from σ, and its window.
    std::int64_t far = 0;
    for (std::int64_t j = 1; j < k; ++j)
      if (std::abs(p.values[j] - sigma) > std::abs(p.values[far] - sigma)) far = j;
    const double r = std::abs(p.values[far] - sigma), w = cert_width(s, p, far);
    EigsOptions ro = recheck_options(opt, 2);
    ro.basis = 0;
    RunOut rr;
    try {
      rr = run_shift_invert(s, sinv, sigma, ro, 1, opt.seed * 7919 + 31 * (round + 1), &p, factor_entries);
    } catch (const Interrupted&) {  // (a phase inside the run with nothing to return: a block solve)
      return interrupted(out, t0, where());
    }
    if (rr.status == SolverStatus::interrupted) return interrupted(out, t0, where());
    const std::int64_t nr = static_cast<std::int64_t>(rr.pairs.values.size());
    if (nr == 0 || !rr.pairs_pass) {
      out.detail = "shift-invert re-check (block of 2, found pairs deflated) did not converge" +
                   (rr.reason.empty() ? std::string() : ": " + rr.reason);
      out.seconds = detail::now_seconds() - t0;
      return out;
    }
    std::vector<std::int64_t> keep;
    for (std::int64_t j = 0; j < nr; ++j) {
      const double wj = rr.pairs.rn[j] * std::sqrt(s.binv_norm);
      if (std::abs(rr.pairs.values[j] - sigma) < r - w - 10 * wj) keep.push_back(j);
    }
    if (keep.empty()) {
      out.verified = true;
      std::int64_t nearest = 0;
      for (std::int64_t j = 1; j < nr; ++j)
        if (std::abs(rr.pairs.values[j] - sigma) < std::abs(rr.pairs.values[nearest] - sigma)) nearest = j;
      out.detail = "shift-invert re-check (fresh block of 2, found pairs deflated, " +
                   std::to_string(rr.applies) + " solve columns): the nearest eigenvalue outside "
                   "the set, " + g17(rr.pairs.values[nearest]) + ", is not nearer sigma = " +
                   g17(sigma) + " than the k-th value" +
                   (round ? " after adding " + std::to_string(out.added) + " missed pair(s)" : "");
      out.seconds = detail::now_seconds() - t0;
      return out;
    }
    PairSet found = take_pairs(ops, rr.pairs, keep);
    p = merge_pairs(ops, p, found, k, opt.which == Which::largest ? Which::largest : Which::nearest,
                    sigma);
    out.added += static_cast<std::int64_t>(keep.size());
  }
  out.detail = "shift-invert re-check kept finding missed pairs (" + std::to_string(out.added) +
               " added in 3 rounds)";
  out.seconds = detail::now_seconds() - t0;
  return out;
}

namespace {

// The deflation shifts δ_j = t − λ_j of deflated_recheck's A' = A + Σ δ_j·(Bx_j)(Bx_j)ᵀ: each
// found pair is moved to t, inside the spectrum's range [−L, L] (L = ‖A‖·‖B⁻¹‖ bounds |λ|) and
// away from the wanted end. Pushing them beyond the range instead (δ = ∓2(‖A‖ + 1)) widens the
// spectrum the filter must damp 2.2-fold on a Laplacian (gen:lap3d:40, k = 16 largest, no
// factor: re-check 8.4 s).
std::vector<double> deflation_shifts(const Problem& s, const EigsOptions& opt, const PairSet& p) {
  const bool smallest = opt.which == Which::smallest;
  const double big = s.a_norm * std::max(1.0, s.binv_norm);
  const auto kth0 = wanted_order(p.values, opt.which, 0.0).back();
  const double mu0 = p.values[kth0];
  const double t = smallest ? mu0 + std::max(0.5 * (big - mu0), 0.25 * big)
                            : mu0 - std::max(0.5 * (mu0 + big), 0.25 * big);
  const std::int64_t m = p.x.cols();
  std::vector<double> deltas(m);
  for (std::int64_t j = 0; j < m; ++j) deltas[j] = t - p.values[j];
  return deltas;
}

}  // namespace

RecheckOutcome deflated_recheck(const Problem& s, const EigsOptions& opt, EigsMethod method,
                                PairSet& p) {
  const double t0 = detail::now_seconds();
  RecheckOutcome out;
  std::string* detail_text = &out.detail;
  DenseBlockOps& ops = *s.ops;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  const std::int64_t kr = std::min<std::int64_t>(
      opt.block_size > 0 ? opt.block_size : default_lanczos_block(k),
      s.global_n() - k - 1);
  const bool smallest = opt.which == Which::smallest;
  for (int round = 0; round < 3; ++round) {
    const auto where = [&] { return "re-check (round " + std::to_string(round + 1) + ")"; };
    if (interrupt_requested()) return interrupted(out, t0, where());
    if (kr < 1) {
      *detail_text = "no room for a re-check block (n too small)";
      break;
    }
    const std::int64_t m = p.x.cols();
    MultiVector<double> bx = ops.allocate(s.n, m);
    if (s.bop) s.bop->apply(p.x.view(), bx.view());
    else ops.copy(p.x.view(), bx.view());
    if (ops.space() == Space::device) device_synchronize();
    LowRankUpdate adef(*s.aop, ops, bx.view(), bx.view(), deflation_shifts(s, opt, p));
    // One wanted pair decides: a missed copy is the extreme eigenvalue of A'. The block keeps kr
    // columns (a multiple eigenvalue is seen as such); asking for all kr pairs costs as much as
    // kr more eigenpairs of a clustered spectrum.
    EigsOptions ro = recheck_options(opt, kr);
    if (method == EigsMethod::chebyshev) ro.basis = std::max<std::int64_t>(kr + 8, 16);
    RunOut rr;
    try {
      rr = run_iterative(s, adef, method, ro, opt.which, 1, opt.seed * 1000003 + 7 + round, nullptr);
    } catch (const Interrupted&) {
      return interrupted(out, t0, where());
    }
    if (rr.status == SolverStatus::interrupted) return interrupted(out, t0, where());
    // Each pair on its own: the decisive one is the extreme (first) pair; the block's trailing
    // columns need not converge. Their Ritz values lie inside the extreme one's, so when it is
    // not beyond the k-th value nothing is.
    const std::int64_t nr = static_cast<std::int64_t>(rr.pairs.values.size());
    std::vector<char> ok(nr, 0);
    for (std::int64_t j = 0; j < nr; ++j) {
      std::vector<double> l{rr.pairs.values[j]}, r{rr.pairs.rn[j]}, b;
      ok[j] = test_pairs(s, opt, rr.pairs.x.view().columns(j, 1), l, r, {rr.pairs.xn[j]}, b);
    }
    if (nr == 0 || !ok[0]) {
      *detail_text = "the re-check run (fresh random block of " + std::to_string(kr) +
                ", found pairs deflated) did not converge" + (rr.reason.empty() ? "" : ": " + rr.reason);
      out.seconds = detail::now_seconds() - t0;
      return out;
    }
    // Anything strictly beyond the k-th value (in the wanted direction) is missing from the set.
    auto kth = wanted_order(p.values, opt.which, 0.0).back();
    const double muk = p.values[kth];
    const double wk = cert_width(s, p, kth);
    std::vector<std::int64_t> keep;
    for (std::int64_t j = 0; j < nr; ++j) {
      const double v = rr.pairs.values[j];
      const double wj = rr.pairs.rn[j] * std::sqrt(s.binv_norm);
      if (ok[j] && (smallest ? v < muk - wk - 10 * wj : v > muk + wk + 10 * wj)) keep.push_back(j);
    }
    if (keep.empty()) {
      *detail_text = "re-check with a fresh random block of " + std::to_string(kr) +
                " (found pairs deflated) found nothing beyond the k-th value " + g17(muk) +
                (round ? " after adding " + std::to_string(round) + " round(s) of missed pairs" : "");
      out.seconds = detail::now_seconds() - t0;
      out.verified = true;
      return out;
    }
    PairSet found = take_pairs(ops, rr.pairs, keep);
    p = merge_pairs(ops, p, found, k, opt.which, 0.0);
    out.added += static_cast<std::int64_t>(keep.size());
    *detail_text = "re-check found " + std::to_string(keep.size()) + " missed eigenvalue(s); added";
  }
  out.seconds = detail::now_seconds() - t0;
  return out;
}
}  // namespace tcsolve::eigs_detail
