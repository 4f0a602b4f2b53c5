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

}  // namespace

RecheckOutcome filter_recheck(const Problem& s, const EigsOptions& opt, EigsMethod method,
                              PairSet& p, const FilterRecheckInputs& in) {
  const double t0 = detail::now_seconds();
  RecheckOutcome out;
  DenseBlockOps& ops = *s.ops;
  const std::int64_t n = s.n, ng = s.global_n(), k = static_cast<std::int64_t>(p.values.size());
  const std::int64_t b = std::max<std::int64_t>(1, std::min<std::int64_t>(in.columns, ng - k));
  const double sgn = opt.which == Which::largest ? -1.0 : 1.0;
  // Found values in Â = s·A; the k-th (largest in Â) and its window.
  const auto kth = wanted_order(p.values, opt.which, 0.0).back();
  const double muk = sgn * p.values[kth];
  const double w = cert_width(s, p, kth);
  double mu1 = muk;
  for (double v : p.values) mu1 = std::min(mu1, sgn * v);
  // On the GPU, with the operator's own CSR in device memory, the filter's steps may read A's
  // values rounded to fp32: Ã = A + E, |E| ≤ 2^-24·|A| entrywise, so ‖E‖₂ ≤ 2^-24·‖A‖∞ (|A| is
  // symmetric). That is sound where ‖E‖ ≤ δ/1000: a missing eigenvector v of A (eigenvalue λ) lies,
  // up to a part of norm ‖E‖/r, in Ã's eigenvectors within r of λ, which p(Ã) amplifies as p(A)
  // does v when r ≪ δ; the bounds widen by ‖E‖ (Ã's spectrum), and the Rayleigh-Ritz values that
  // decide are those of A itself. The step then moves 8 bytes an entry of A instead of 12 (H200,
  // lap3d:100 k = 16 largest: 468 steps on 2 columns, docs/performance.md). TCSOLVE_RECHECK_FP32=0:
  // off (A/B).
  const double e32 = std::ldexp(s.a_norm, -24);
  const char* r32 = std::getenv("TCSOLVE_RECHECK_FP32");
  std::unique_ptr<ChebyshevStep> fs32;
  const ChebyshevStep* fs64 = fused_step_for(s, *s.aop, opt);
  if (fs64 && ops.space() == Space::device && s.a && !s.bop && !s.foreign_operator &&
      !(r32 && std::string(r32) == "0") && s.a_norm >= 1e-30 && s.a_norm <= 1e38 &&  // no fp32 overflow; underflow negligible
      1000.0 * e32 <= std::max(in.resolution, 40.0 * w))
    fs32 = make_chebyshev_step_on_operator(*s.aop, *s.a, Precision::fp32, ops.stream());
  const double widen = fs32 ? e32 : 0.0;
  const double upper = in.upper + widen, lower = std::min(in.lower, mu1) - widen;
  const double cr = muk + w;  // damped interval [cr, upper]
  const double delta = std::max(in.resolution, 40.0 * w);
  if (!(upper > cr) || !(delta > 0) || !std::isfinite(delta)) {
    out.affordable = false;
    out.detail = "filter re-check not possible (the found values reach the far end of the spectrum)";
    return out;
  }
  const double e = 0.5 * (upper - cr), ce = 0.5 * (upper + cr);
  // Degree: T_d(1 + 2(w + δ)/(upper − cr)) ≥ A* = √(2(upper − μ_k)/δ)·√n/t, t = 1e-3.
  const double amp = std::sqrt(2.0 * (upper - muk) / delta) * std::sqrt(static_cast<double>(ng)) / 1e-3;
  const double xv = 1.0 + 2.0 * (w + delta) / (upper - cr);
  std::int64_t deg = static_cast<std::int64_t>(std::ceil(std::acosh(amp) / std::acosh(xv)));
  deg = std::max<std::int64_t>(deg, 8);
  deg += deg & 1;
  if (deg > in.max_degree) {
    out.affordable = false;
    out.detail = "filter re-check would need degree " + std::to_string(deg) + " (cap " +
                 std::to_string(in.max_degree) + ")";
    return out;
  }
  // Projection period: the found directions (down to μ_1) grow by ρ(μ_1) per step; keep their
  // regrowth from rounding below 1e8·u between projections.
  const double x1 = (ce - lower) / e;
  const double rho1 = x1 > 1 ? x1 + std::sqrt(x1 * x1 - 1.0) : 1.0;
  const std::int64_t period =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(std::log(1e8) / std::log(std::max(rho1, 1.0 + 1e-12))), 1, 512);

  MultiVector<double> y0 = ops.allocate(n, b), y1 = ops.allocate(n, b), wv = ops.allocate(n, b);
  std::vector<double> g, nrm(b), scale(b), zero(b, 0.0);
  ops.fill_random(y0.view(), opt.seed * 6364136223846793005ull + 1442695040888963407ull);
  auto apply = [&](MvView<const double> x, MvView<double> yv) {
    if (s.foreign_operator) {
      ops.synchronize();
      s.aop->apply(x, yv);
      if (ops.space() == Space::device) device_synchronize();
    } else {
      ops.external_begin();
      s.aop->apply(x, yv);
      ops.external_end();
    }
  };
  auto normalize_pair = [&](MvView<double> newest, MvView<double> older) {
    ops.column_norms(newest, nrm.data());
    for (std::int64_t j = 0; j < b; ++j) scale[j] = nrm[j] > 0 && std::isfinite(nrm[j]) ? 1.0 / nrm[j] : 1.0;
    ops.axpby_columns(scale.data(), newest, zero.data(), newest);
    ops.axpby_columns(scale.data(), older, zero.data(), older);
  };
  project_out(ops, p.x.view(), y0.view(), g);
  normalize_pair(y0.view(), y1.view());
  // Scaled three-term recurrence (chebyshev.hpp), normalized at a0 = the lowest value (≤ λmin(Â),
  // below the damped interval). Not at cr − e as the solver's short filters are: normalized that
  // far below, everything shrinks by ρ(a0)^−d (3.7^−340 at lap2d:200 k = 16), the Gram matrix of the
  // block underflows to 0 and the check sees nothing; at the lowest value it shrinks by at most
  // the found directions' growth, which the projection period keeps below 1e8.
  // Each step Y_{j−1} ← α·A·Y_j + β·Y_j + γ·Y_{j−1}: the solve's fused kernel where A has one
  // (one launch and one pass a step; the re-check is launch-bound on small matrices: H200,
  // lap2d:200, 472 steps of 2 columns, SpMM + update were 12 µs a step), else the product and
  // the update.
  const ChebyshevStep* fs = fs32 ? fs32.get() : fs64;
  auto step = [&](double alpha, MvView<const double> cur, double beta, double gamma, MvView<double> prev) {
    if (fs) {
      fs->step(alpha, cur, beta, gamma, prev, 0.0, cur);
      return;
    }
    apply(cur, wv.view());
    ops.axpbypcz(alpha, wv.view(), beta, cur, gamma, prev);
  };
  const double a0 = lower;
  const double sigma1 = e / (a0 - ce), tau2 = 2.0 / sigma1;
  double sigma = sigma1;
  step(sgn * sigma1 / e, y0.view(), -ce * sigma1 / e, 0.0, y1.view());
  MultiVector<double>* cur = &y1;   // Y_j
  MultiVector<double>* prev = &y0;  // Y_{j−1}
  for (std::int64_t j = 1; j < deg; ++j) {
    // An interrupt ends the re-check between steps (one product with A on 2 columns): the set
    // stays unverified and the driver returns it with status interrupted.
    if (interrupt_requested()) return interrupted(out, t0, "filter re-check after " + std::to_string(j) + " of " +
                                                               std::to_string(deg) + " steps");
    const double sn = 1.0 / (tau2 - sigma);
    step(sgn * 2.0 * sn / e, cur->view(), -2.0 * sn * ce / e, -sigma * sn, prev->view());
    sigma = sn;
    std::swap(cur, prev);
    if (j % period == 0) {
      project_out(ops, p.x.view(), cur->view(), g);
      project_out(ops, p.x.view(), prev->view(), g);
      normalize_pair(cur->view(), prev->view());
    }
  }
  // Rayleigh-Ritz on the filtered block, ⊥ X. The block may have lost rank: without a missing
  // eigenvalue every column ends dominated by the least-damped directions, e.g. a further copy of
  // the k-th value (a tie, T_d ≈ 1 there), and two columns can end parallel. The basis is taken
  // from the Gram matrix's eigenvectors above 1e-10 of its largest eigenvalue (rank r ≥ 1).
  MvView<double> y = cur->view();
  project_out(ops, p.x.view(), y, g);
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
  if (rank > 0) {
    Eigen::MatrixXd c(b, rank);  // Q = Y·V_r·Λ_r^(-1/2): orthonormal
    for (std::int64_t r = 0; r < rank; ++r)
      c.col(r) = gs.eigenvectors().col(keep_cols[r]) / std::sqrt(gs.eigenvalues()(keep_cols[r]));
    auto q = wv.columns(0, rank);
    ops.gemm(1.0, y, c.data(), b, 0.0, q);
    auto aq = prev->columns(0, rank);
    apply(q, aq);
    std::vector<double> h(rank * rank);
    ops.gram(q, aq, h.data(), rank);
    Eigen::Map<Eigen::MatrixXd> H(h.data(), rank, rank);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (H + H.transpose()), Eigen::EigenvaluesOnly);
    for (std::int64_t j = 0; j < rank; ++j) theta_min = std::min(theta_min, sgn * es.eigenvalues()(j));
  }
  char line[400];
  std::snprintf(line, sizeof line,
                "filter re-check: %lld fresh random vectors, degree %lld on [%.6g, %.6g] (found "
                "pairs projected out every %lld steps%s); resolution %.3g (%s)",
                static_cast<long long>(b), static_cast<long long>(deg), sgn * cr, sgn * upper,
                static_cast<long long>(period), fs32 ? "; steps on A's values rounded to fp32" : "",
                delta, in.resolution_from);
  const double threshold = muk - std::max(0.25 * delta, 10.0 * w);
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
    EigsOptions ro = opt;
    ro.on_iteration = nullptr;
    ro.on_checkpoint = nullptr;
    ro.v0.clear();
    ro.block_size = 2;
    ro.basis = 0;
    ro.lanczos_early_stop = false;  // "nothing nearer" rests on the full Krylov space
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
    PairSet found;
    found.x = reorder_columns(ops, rr.pairs.x.view(), keep);
    for (auto j : keep)
      found.values.push_back(rr.pairs.values[j]), found.rn.push_back(rr.pairs.rn[j]),
          found.xn.push_back(rr.pairs.xn[j]), found.rq_dev.push_back(rr.pairs.rq_dev[j]);
    p = merge_pairs(ops, p, found, k, opt.which == Which::largest ? Which::largest : Which::nearest,
                    sigma);
    out.added += static_cast<std::int64_t>(keep.size());
  }
  out.detail = "shift-invert re-check kept finding missed pairs (" + std::to_string(out.added) +
               " added in 3 rounds)";
  out.seconds = detail::now_seconds() - t0;
  return out;
}

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
    // Each found pair is moved to t, inside the spectrum's range [−L, L] (L = ‖A‖·‖B⁻¹‖ bounds
    // |λ|) and away from the wanted end: A' = A + Σ δ_j·(Bx_j)(Bx_j)ᵀ with δ_j = t − λ_j. Pushing
    // them beyond the range instead (δ = ∓2(‖A‖ + 1)) widens the spectrum the filter must damp
    // 2.2-fold on a Laplacian (gen:lap3d:40, k = 16 largest, no factor: re-check 8.4 s).
    const double big = s.a_norm * std::max(1.0, s.binv_norm);
    const auto kth0 = wanted_order(p.values, opt.which, 0.0).back();
    const double mu0 = p.values[kth0];
    const double t = smallest ? mu0 + std::max(0.5 * (big - mu0), 0.25 * big)
                              : mu0 - std::max(0.5 * (mu0 + big), 0.25 * big);
    std::vector<double> deltas(m);
    for (std::int64_t j = 0; j < m; ++j) deltas[j] = t - p.values[j];
    LowRankUpdate adef(*s.aop, ops, bx.view(), bx.view(), deltas);
    // One wanted pair decides: a missed copy is the extreme eigenvalue of A'. The block keeps kr
    // columns (a multiple eigenvalue is seen as such); asking for all kr pairs costs as much as
    // kr more eigenpairs of a clustered spectrum.
    EigsOptions ro = opt;
    ro.on_iteration = nullptr;
    ro.on_checkpoint = nullptr;
    ro.v0.clear();  // a fresh random block, never the caller's start
    ro.block_size = kr;
    ro.lanczos_early_stop = false;  // "nothing beyond" rests on the full Krylov space
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
    PairSet found;
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
    found.x = reorder_columns(ops, rr.pairs.x.view(), keep);
    for (auto j : keep)
      found.values.push_back(rr.pairs.values[j]), found.rn.push_back(rr.pairs.rn[j]),
          found.xn.push_back(rr.pairs.xn[j]), found.rq_dev.push_back(rr.pairs.rq_dev[j]);
    p = merge_pairs(ops, p, found, k, opt.which, 0.0);
    out.added += static_cast<std::int64_t>(keep.size());
    *detail_text = "re-check found " + std::to_string(keep.size()) + " missed eigenvalue(s); added";
  }
  out.seconds = detail::now_seconds() - t0;
  return out;
}
}  // namespace tcsolve::eigs_detail
