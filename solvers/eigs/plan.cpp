// The eigs planner (solvers/eigs/plan.hpp); the names of its enums: plan_names.cpp.
#include "solvers/eigs/plan.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/eigs/recheck.hpp"

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

// ---- the planner --------------------------------------------------------------------------------

bool dense_by_size(const PlanFacts& f, std::int64_t k) {
  return f.matrix_form && (f.diagonal || (f.n <= 4000 && (f.n <= 400 || 3 * k + 32 > f.n)));
}

namespace {

bool chebyshev_fits(std::int64_t n, std::int64_t k) {
  return 2 * (k + std::max<std::int64_t>(8, (k + 1) / 2)) <= n;
}

void check_request(const PlanFacts& f, const EigsOptions& opt) {
  // (nearest by a dense solve needs no factorization: the folded operator's small problems)
  const bool dense = opt.method == EigsMethod::dense;
  const bool need_factor = (!dense && (opt.which == Which::nearest || opt.has_sigma)) ||
                           opt.precond == EigsPrecond::factor || opt.certify;
  if (need_factor && !f.can_factor)
    throw InvalidArgument(std::string(opt.which == Which::nearest ? "--which nearest"
                                      : opt.has_sigma             ? "--sigma"
                                      : opt.certify               ? "--certify"
                                                                  : "--precond factor") +
                          " needs a sparse factorization of A - sigma*B, which is not available "
                          "here (" + f.factor_why + ")");
  if (opt.method == EigsMethod::dense && !(f.matrix_form && (f.n <= 4000 || f.diagonal)))
    throw InvalidArgument("--method dense needs the matrix (not an operator) and n <= 4000 (any n "
                          "for a diagonal matrix)");
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

// Forced choices: a method asked for, a sigma, which = nearest, a preconditioner, a small
// problem (dense). Returns false when the choice is the planner's (auto).
bool plan_forced(const PlanFacts& f, const EigsOptions& opt, EigsPlan& plan) {
  PlanEstimate& c = plan.chosen;
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
  } else if (dense_by_size(f, opt.k)) {
    c.method = EigsMethod::dense;
    c.verification = Verification::dense;
    plan.reason = f.diagonal ? "auto: dense solve (A" + std::string(f.generalized ? " and B are" : " is") +
                                   " diagonal: the pairs read off the diagonal, exactly)"
                             : "auto: dense solve (n = " + std::to_string(f.n) + " is small, or k close to n)";
  } else {
    return false;
  }
  return true;
}

// What the pricing steps share: the problem, the measurements and the verification.
struct Pricing {
  const PlanFacts& f;
  const EigsOptions& opt;
  const PlanProbes& probes;
  EigsPlan& plan;
  std::int64_t n = 0, k = 0, m = 0;  // m: the filter's (or LOBPCG's) block
  double lower_entries = 0.0;        // entries of the lower triangle of A − σB
  Verification verification = Verification::recheck;
  double recheck_gap = 0.0;          // the gap the filter re-check is priced at
  double filter_recheck_gap = 0.0;   // the same after a Chebyshev solve (the k = 1 rule below aside)
  bool modelled = false;             // the probe's power law fits the wanted end
  bool gap_from_count = false;       // plan.rel_gap read off the counting function (or its uniform count below the first node)
  double filter_tol = 0.0;           // the error reduction the filter's degree is priced for
};

// The relative gap the solves are priced at (plan.rel_gap) and the re-check's (p.recheck_gap): the
// probe's power law at the wanted end, or the counting function's reading where the law fails or
// reads far wider, hedged below the probe's first node.
void choose_gaps(Pricing& p, double sgn) {
  EigsPlan& plan = p.plan;
  plan.rel_gap = plan.probe->relative_gap(sgn, p.k, p.m);
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
  p.modelled = std::isfinite(plan.probe->relative_gap(sgn, p.k, p.m, std::nan("")));
  p.recheck_gap = plan.rel_gap;
  if (interpolate && !p.modelled) {
    // A gap of at least 1 (isolated values at the end) counts as 0.5: the filter's degree and
    // single-vector Lanczos's applies are then a handful (bcsstk08, 6 largest: 122 applies priced
    // at the fallback, 32 run; 2-core CPU; on the H200, 494_bus/662_bus/bcsstk20 largest, k = 1
    // and 6: 9 outer iterations priced at the fallback, 2–3 run, 0.21–0.26 of the price).
    const double g = plan.probe->interpolated_gap(sgn, p.k, p.m, 0.5);
    if (std::isfinite(g)) p.recheck_gap = g;
    // The solves too, since their steps are priced as timed (t_filter_step): the fallback's
    // 313 filter steps against 32–132 run (bcsstm19/20 and gen:rgg:40000, 32 largest; 78–91
    // at this gap on the rgg rows), and single-vector Lanczos from it (predict_lanczos1_seconds).
    if (std::isfinite(g)) plan.rel_gap = g, p.gap_from_count = true;
  } else if (interpolate) {
    // The counting function's reading where it reaches λ_{m+1} below a third of the power law's
    // (rgg:40000:2, 6 largest: 0.062 against 0.64, true 0.058). Within 3× the fit stays (luxembourg,
    // 6 smallest: the smaller let an under-priced shift-invert win, 0.7–1.0 s against 0.5). Only
    // where the function resolves λ_k, i.e. k above the first node's count: below it the reading
    // puts λ_k at the node itself (lap3d:60, 16 smallest: 24.5 values at the first node, 2.3e-5
    // read against the power law's 7.2e-4; 58 outer iterations priced, 9 run on the 2-core CPU).
    // Below the first node too where the power law sits at its exponent's ceiling (p ≥ 2.5, N(λ) growing
    // faster than any mesh's Weyl law λ^{d/2}): the fit is then no law of the spectrum's end
    // (rgg:200000:2, 8 smallest, two zeros: p 3, gap 4.4e-3 against the reading's 3.5e-4; 203 filter
    // steps priced, 894 run, 2-core CPU, 2.2 s priced against 9–10 s). No row of the CPU sweep has
    // both (its p ≥ 2.5 rows read within 3× of the fit). Where λ_{m+1} too lies below the node (no
    // reading), a uniform count below it (below_node_gap): the same graph on the H200 (its probe in
    // another order: 22.3 values at the node) fits p 2.94, gap 4.9e-3, the uniform count 1.5e-3;
    // 192 filter steps priced, 868 run (0.059 s against 0.33 s).
    const bool resolved = static_cast<double>(p.k) > plan.probe->first_node_count(sgn);
    const bool ceiling = !resolved && plan.probe->end_model(sgn).p >= 2.5;
    double g = plan.probe->interpolated_gap(sgn, p.k, p.m);
    if (ceiling && !std::isfinite(g)) g = plan.probe->below_node_gap(sgn, p.k, p.m);
    if (std::isfinite(g) && 3.0 * g < plan.rel_gap && (resolved || ceiling))
      plan.rel_gap = p.recheck_gap = g, p.gap_from_count = true;
  }
  // Where the wanted gap lies wholly below the probe's first node, the power law extrapolates
  // from the nodes above it; the gap is taken as the geometric mean of its gap and a uniform
  // count's below the node (below_node_gap) where that is the larger. 2-core CPU sweep (336 rows,
  // 2026-12-01): sherman1 largest k = 1 / 6 at 0.197 / 0.245 of the price before (51 values under
  // the node, the power law's p 0.44 where the true count grows like p ≈ 2.6), 0.51 / 0.54 after;
  // 236 of 246 within 2×, 0 beyond 5× (235, 1 before). It also lowers the filter's price on the
  // Laplacians' rows of the H200's end-to-end table (lap2d:200 and :1000, lap3d:100 k = 16 and 64
  // are below-node rows; lap3d:60 largest k = 16 on the CPU: 6.15 → 4.81 s).
  // TCSOLVE_PLAN_BELOW_NODE=0 turns it off (the A/B of the sweeps).
  static const bool below_node = [] {
    const char* e = std::getenv("TCSOLVE_PLAN_BELOW_NODE");
    return !(e && std::string(e) == "0");
  }();
  if (below_node && p.modelled && !p.gap_from_count) {
    const double gu = plan.probe->below_node_gap(sgn, p.k, p.m);
    if (std::isfinite(gu) && gu > plan.rel_gap) plan.rel_gap = std::sqrt(plan.rel_gap * gu);
  }
}

// The probe and the timed applies (every iterative price needs them).
void measure(Pricing& p) {
  const PlanFacts& f = p.f;
  EigsPlan& plan = p.plan;
  plan.probe = p.probes.probe();
  const std::int64_t width = f.generalized ? p.k + default_lobpcg_guard(p.k) : chebyshev_block(p.n, p.k, -1);
  const std::int64_t w = std::max<std::int64_t>(2, std::min<std::int64_t>(
      f.backend == Backend::cuda ? width : std::min<std::int64_t>(width, 8), p.n));
  const double t1 = plan.probe->apply_seconds / std::max(1, plan.probe->steps);
  plan.applies = apply_model(t1, p.probes.apply_seconds(w), w, f.backend, p.n);
  // The filter's steps fuse where rows are short (eigs_detail::make_fused_step): 1.5 column
  // units a column-step on the GPU. On the CPU the filter keeps its iterates by rows
  // (chebyshev/filter.cpp filter_rows): from 40k rows 0.6, its step's cost against the
  // column-major SpMM at 24 columns (0.54–0.65: rgg 55k after RCM, lap3d:60 and :100,
  // lap2d:1000; cpu_spmm_bench "rows" against "spmm", 2-core CPU, 2026-11-30; docs/performance.md
  // "CPU kernels"); below, 1.25 as for the column-major step: on small matrices the applies'
  // fixed costs rule, and at 0.6 crack (10k rows) and dwt_2680 took Chebyshev over shift-invert
  // on the H200 machine's host and ran 1.7–2× slower than before. On A's natural blocks (BSR step, long rows) one unit: H200,
  // elast3d:64 at 24 columns, 804 µs fp64 and 390 µs on the fp32 rung against 835 µs for the
  // operator's apply alone (docs/performance.md).
  // The 0.6 is for a matrix (an operator form gets no fused step) in a local order (eigs on the
  // CPU from the apps and tcsolve.eigsh reorders a scattered one by RCM first): in a random order
  // the step by rows costs 0.9–1.1 of the SpMM.
  if (chebyshev_step_pays(p.n, f.nnz_a))
    plan.applies->step_col =
        f.backend == Backend::cuda ? 1.5 : (f.matrix_form && f.nnz_a > 0 && p.n >= 40000 ? 0.6 : 1.25);
  else if (f.bsr_step) plan.applies->step_col = 1.0;
  if (f.backend == Backend::cpu && plan.probe->dense_words > 0)
    plan.applies->t_word = plan.probe->dense_seconds / plan.probe->dense_words;
  const std::int64_t block = f.generalized ? width : chebyshev_block(p.n, p.k, -1);
  if (f.backend == Backend::cpu)
    host_apply_model(*plan.applies, f, p.probes, p.n, block, !f.generalized && chebyshev_fits(p.n, p.k));
  const ApplyModel& am = *plan.applies;
  if (trace_enabled()) {
    char b[260];
    std::snprintf(b, sizeof b, "plan: apply model t_a %.3g s, t_col %.3g s, t_outer %.3g s, t_step %.3g s, t_word %.3g s, "
                  "filter step %.3g s on %lld columns", am.t_a, am.t_col, am.t_outer, am.t_step, am.t_word,
                  am.t_filter_step, static_cast<long long>(am.step_block));
    trace_mark(b);
  }
  const double sgn = p.opt.which == Which::largest ? -1.0 : 1.0;
  p.m = block;
  p.filter_tol = filter_reduction(*plan.probe, p.opt, sgn);
  choose_gaps(p, sgn);
  // One wanted value: the set the re-check gets has no second distinct value, so it resolves half
  // the distance from the found value to the probe's bound of the spectrum's end (verify.cpp,
  // filter_inputs), not the gap: in Â = sgn·A, δ = (θ_end − bound)/2 against the width. 2-core
  // CPU sweep, largest, k = 1: the re-check priced from the gap at 0.005–0.03 s where the run's
  // own price was 10–200× that (494_bus: 0.0050 against 0.278 s).
  // After a Chebyshev solve the re-check resolves the distance to the solve's last filter cut
  // (verify.cpp, filter_inputs), which the filter's own gap prices, whatever k (CPU sweep,
  // 9f85165, largest, k = 1: Chebyshev's re-check priced 2-10x its run, gen:jump3d:30:1e6 at
  // 0.34 s, so the certificate's 2.36 s was taken into the plan; the run re-checked in 5 ms).
  p.filter_recheck_gap = p.recheck_gap;
  if (trace_enabled()) trace_gap_sources(*plan.probe, sgn, p.k, p.m, plan.rel_gap);
  if (p.k == 1 && !f.generalized) {
    const SpectralProbe& pr = *plan.probe;
    const double end = sgn > 0 ? pr.lower : -pr.upper, bound = sgn > 0 ? pr.lower_bound : -pr.upper_bound;
    const double far = sgn > 0 ? pr.upper_bound : -pr.lower_bound;
    // δ ≥ 40·w, w ≥ 1e-8·|λ| or 1.1e-15·‖A‖ (pairs.cpp, cert_width)
    const double delta = std::max({0.5 * (end - bound), 4e-7 * std::abs(end), 4.4e-14 * f.a_norm});
    const double g = delta / (far - end);
    if (std::isfinite(g) && g > 0 && g < p.recheck_gap) p.recheck_gap = g;
  }
}

// The filter (or block Lanczos where its block does not fit), on the ladder where priced.
PlanEstimate price_filter(const Pricing& p) {
  const ApplyModel& am = *p.plan.applies;
  const SpectralProbe& probe = *p.plan.probe;
  PlanEstimate e;
  e.verification = p.verification;
  if (chebyshev_fits(p.n, p.k)) {
    e.method = EigsMethod::chebyshev;
    e.solve_s = predict_chebyshev_seconds(p.n, p.f.nnz_a, p.k, p.filter_tol, p.plan.rel_gap, am, &e.detail);
    if (p.f.ladder) {
      const double norm = std::max(std::abs(probe.lower), std::abs(probe.upper));
      const double end = p.opt.which == Which::largest ? std::abs(probe.upper) : std::abs(probe.lower);
      const LadderPrice lp = price_chebyshev_ladder(p.n, p.f.nnz_a, p.k, p.filter_tol, p.plan.rel_gap, am,
                                                    end >= 0.25 * norm);
      e.ladder = lp.ladder_s < lp.fp64_s;
      char b[200];
      std::snprintf(b, sizeof b, "; fp32 rung on ~%.0f%% of the filters: %.3g s against %.3g s in fp64%s",
                    100.0 * lp.fp32_share, lp.ladder_s, lp.fp64_s, e.ladder ? "" : " (not taken)");
      e.detail += b;
      if (e.ladder) e.solve_s = lp.ladder_s;
    }
    const ChebyshevCost cc = chebyshev_cost(p.n, p.f.nnz_a, p.k, p.filter_tol, p.plan.rel_gap);
    if (cc.outer_iterations > kTrustedOuterIterations) {
      e.low_confidence = true;
      e.detail += "; low confidence: " + format("%.0f", cc.outer_iterations) + " outer iterations, beyond the " +
                  format("%.0f", kTrustedOuterIterations) + " the model is trusted for";
    }
  } else {
    // The filter's block does not fit in n/2: block Lanczos, priced like a filter of the same gap
    // (no better model).
    e.method = EigsMethod::lanczos;
    e.solve_s = 2.0 * predict_chebyshev_seconds(p.n, p.f.nnz_a, p.k, p.filter_tol, p.plan.rel_gap, am, &e.detail);
  }
  const double gap = e.method == EigsMethod::chebyshev ? p.filter_recheck_gap : p.recheck_gap;
  e.verify_s = p.verification != Verification::recheck ? 0.0
               : filter_recheck_degree_at(p.n, gap) > eigs_detail::kFilterRecheckMaxDegree
                   ? e.solve_s  // the deflated re-check
                   : predict_filter_recheck_seconds(p.n, p.k, gap, am);
  e.priced = true;
  return e;
}

// Host: single-vector Lanczos (ARPACK's method), which wins where the wanted end holds isolated
// eigenvalues: where the probe's power law gives no gap in (0, 1). Not offered where it does
// (PDE-like ends): there it is 4–15× the filter's degree in applies, and their symmetric
// multiplicities (3D Laplacians: 3 and 6 copies) are what a single vector misses in exact
// arithmetic; the re-check adds one copy a round (three rounds), so a set missing more ends
// unverified (gen:lap3d:21, k = 6 largest, forced: 3 copies added, unverified). Its re-check is
// priced as the filter's.
std::optional<PlanEstimate> price_lanczos1(const Pricing& p, const PlanEstimate& filter) {
  const ApplyModel& am = *p.plan.applies;
  if (p.f.backend != Backend::cpu || !(am.t_word > 0) || p.modelled || p.n <= default_lanczos_basis(p.k, 1) + 1)
    return std::nullopt;
  PlanEstimate l;
  l.method = EigsMethod::lanczos;
  l.block = 1;
  l.verification = filter.verification;
  l.solve_s = predict_lanczos1_seconds(p.n, p.f.nnz_a, p.k, p.filter_tol, p.plan.rel_gap, am, &l.detail,
                                       p.gap_from_count);
  // Its re-check resolves the found set's own gap (p.recheck_gap), not a filter cut.
  l.verify_s = filter.verification != Verification::recheck ? filter.verify_s
               : filter_recheck_degree_at(p.n, p.recheck_gap) > eigs_detail::kFilterRecheckMaxDegree
                   ? l.solve_s
                   : predict_filter_recheck_seconds(p.n, p.k, p.recheck_gap, *p.plan.applies);
  l.priced = true;
  return l;
}

// LOBPCG (generalized problems without a factorization): ≈ ln(4/tol)/(2√g) iterations, each an
// apply of m columns of A and B and ~40·m column units of dense work (crude: the gap of A stands
// in for the pencil's).
PlanEstimate price_lobpcg(const Pricing& p) {
  const ApplyModel& am = *p.plan.applies;
  PlanEstimate e;
  e.method = EigsMethod::lobpcg;
  e.verification = p.verification;
  const double g = std::clamp(p.plan.rel_gap, 1e-12, 0.5);
  const double its = std::min<double>(p.opt.max_iterations > 0 ? p.opt.max_iterations : 2000,
                                      std::log(4.0 / p.opt.tol) / (2.0 * std::sqrt(g)));
  e.solve_s = its * (2.0 * am.t_a + 42.0 * static_cast<double>(p.m) * am.t_col + am.t_outer);
  e.verify_s = 0.3 * e.solve_s;
  char b[96];
  std::snprintf(b, sizeof b, "relative gap %.2g: about %.0f iterations on %lld columns", g, its,
                static_cast<long long>(p.m));
  e.detail = b;
  e.priced = true;
  return e;
}

// The plans without a transformation. Where the floor is out of reach and a factorization can
// be had, they are kept only as the last resort (infeasible), and said so.
std::vector<PlanEstimate> price_iterative(Pricing& p) {
  std::vector<PlanEstimate> cands;
  if (!p.f.generalized) {
    cands.push_back(price_filter(p));
    if (auto l = price_lanczos1(p, cands.front())) cands.push_back(*l);
  } else {
    cands.push_back(price_lobpcg(p));
  }
  const FloorOutlook& o = p.plan.outlook;
  if (o.risk == FloorRisk::out_of_reach && p.f.can_factor) {
    for (auto& ce : cands) ce.feasible = false;
    p.plan.unpriced.push_back(cands.front().name() + " without a transformation: last resort (" + o.line + ")");
  } else if (o.risk != FloorRisk::clear && !p.f.can_factor && !(p.f.matrix_form && p.n <= 4000)) {
    // None can: say so before the run; the closest (the cheapest iterative plan) runs.
    p.plan.unpriced.push_back("no plan here " + std::string(o.risk == FloorRisk::out_of_reach ? "can" : "may") +
                              " meet the rel test at the wanted end (" + o.line + "; no factorization: " +
                              p.f.factor_why + "); the closest runs and stops at the floor, where --conv norm "
                              "would pass");
  }
  return cands;
}

// The analysis' stake (kAmdMisguess, plan.hpp): a quarter of the best plan without a
// transformation, or a few milliseconds (kStakeFloor): a small matrix's analysis is worth a look
// whatever the iterative price (2-core CPU: dwt_2680's 2 ms analysis against a 38 ms plan flipped
// with the noise of the timed applies, and shift-invert is 2-3x faster there). At risk of the
// floor: kRiskFactor times the iterative plan (its worst case); out of reach: any stake.
constexpr double kStake = 0.25, kStakeFloor = 5e-3;
double analysis_stake(FloorRisk risk, double iterative_best) {
  if (risk == FloorRisk::out_of_reach) return INFINITY;
  if (risk == FloorRisk::at_risk) return std::max(kRiskFactor * iterative_best, kStakeFloor);
  return std::max(kStake * iterative_best, kStakeFloor);
}

// Why the ordering is not bet on, or "" when it is (then the analysis runs).
std::string ordering_refused(Pricing& p, double stake, const PlanEstimate& best_iterative) {
  const double analysis_floor = kFastestAnalyzeSecondsPerEntry * p.lower_entries;
  const std::string against = " would cost more than " +
      std::string(p.plan.outlook.risk == FloorRisk::at_risk || best_iterative.low_confidence
                      ? format("%g", kRiskFactor) + " times" : "a quarter of") +
      " the whole " + best_iterative.name() + " plan (" + secs(best_iterative.total()) + ") and more than " +
      secs(kStakeFloor);
  if (ordering_over_at_any_rate(p.lower_entries, stake))
    return "shift-invert lanczos: not priced, its ordering alone (at least " + secs(analysis_floor) +
           " at 1e8 entries a second, up to " + secs(kAmdMisguess * analysis_floor) + " misguessed)" +
           against + " (decided without measuring the host's engine rates)";
  // The ordering rate the analysis is bet on: this machine's, unless no cache has it and the
  // stake is below what measuring it costs (kAnalysisRateMeasureSeconds); then the default
  // rate, whose misjudgement can cost at most about the stake itself.
  const bool unknown = p.probes.analyze_rate_known && !p.probes.analyze_rate_known();
  const double rate = unknown && stake < kAnalysisRateMeasureSeconds ? EngineRates{}.analyze_s_per_entry
                                                                     : p.probes.analysis_rate();
  const double guess = p.lower_entries * rate;
  if (kAmdMisguess * guess > stake)
    return "shift-invert lanczos: not priced, its ordering alone (about " + secs(guess) + " to " +
           secs(kAmdMisguess * guess) + ")" + against;
  return "";
}

// Shift-invert for the smallest: priced from the symbolic analysis, which is run only when it
// could pay (ordering_refused). Returns whether the rates were used.
bool price_shift_invert(Pricing& p, const EngineRates& r, bool r_defaults, const PlanEstimate& best_iterative,
                        std::vector<PlanEstimate>& cands) {
  EigsPlan& plan = p.plan;
  if (p.opt.which != Which::smallest) return false;
  if (!p.f.can_factor) {
    plan.unpriced.push_back("shift-invert lanczos: no factorization (" + p.f.factor_why + ")");
    return false;
  }
  const FloorRisk risk = best_iterative.low_confidence && plan.outlook.risk == FloorRisk::clear
                             ? FloorRisk::at_risk : plan.outlook.risk;  // its worst case is the stake
  const double stake = analysis_stake(risk, best_iterative.total());
  if (const std::string no = ordering_refused(p, stake, best_iterative); !no.empty()) {
    plan.unpriced.push_back(no);
    return false;
  }
  if (!plan.symbolic) plan.symbolic = p.probes.analyze();
  PlanEstimate e;
  e.method = EigsMethod::lanczos;
  e.transform = Transform::shift_invert;
  e.verification = p.verification;
  predict_shift_invert_seconds(p.n, p.k, *plan.symbolic, p.lower_entries, r, *plan.applies, p.f.backend,
                               &e.setup_s, &e.solve_s, &e.detail);
  // The ordering is redone by the factorization: AMD's as measured, METIS's priced.
  e.setup_s += factor_analysis_seconds(*plan.symbolic) - r.analyze_seconds(p.lower_entries);
  const double cert = predict_certificate_seconds(*plan.symbolic, p.lower_entries, r, p.opt.which == Which::nearest);
  // As the verification decides (driver.cpp): the certificate when it costs at most 15 % of the
  // solve or less than the re-check would.
  if (p.verification == Verification::recheck && !r_defaults &&
      cert <= std::max(0.15, shift_invert_recheck_share(p.f.backend)) * e.solve_s)
    e.verification = Verification::certificate;
  e.verify_s = e.verification == Verification::certificate ? cert
               : e.verification == Verification::recheck ? shift_invert_recheck_share(p.f.backend) * e.solve_s : 0.0;
  FactorOptions fo;
  fo.memory_limit_bytes = p.opt.factor_memory_limit;
  if (const double need = 12.0 * plan.symbolic->factor_entries; need > factor_memory_budget(fo)) {
    e.feasible = false;
    plan.unpriced.push_back("shift-invert lanczos: the factor needs about " + format("%.1f GB", need / 1e9) +
                            ", more than the host memory allows");
  } else {
    e.priced = true;
    cands.push_back(e);
  }
  return true;
}

// The iterative plans' verification as the run will choose it (verify.cpp, Verifier::choose):
// the certificate where it costs at most 15 % of the solve or less than the priced re-check. Its
// analysis is run here only where the run would run it too (the same budget, the same rate
// rules), and the run reuses it (plan.symbolic). With default rates the re-check stays.
void price_iterative_certificates(Pricing& p, const EngineRates& r, bool r_defaults,
                                  std::vector<PlanEstimate>& cands) {
  if (p.verification != Verification::recheck || r_defaults || !p.f.can_factor || p.f.generalized) return;
  EigsPlan& plan = p.plan;
  for (auto& ce : cands) {
    if (ce.transform != Transform::none || ce.method == EigsMethod::dense || ce.verification != Verification::recheck)
      continue;
    const double budget = std::max(0.15 * ce.solve_s, ce.verify_s);
    if (!plan.symbolic) {
      if (!analysis_fits(p.probes, p.lower_entries, budget, true)) continue;
      plan.symbolic = p.probes.analyze();
    }
    const double cert = predict_certificate_seconds(*plan.symbolic, p.lower_entries, r, p.opt.which == Which::nearest);
    if (cert <= budget) {
      ce.verification = Verification::certificate;
      ce.verify_s = cert;
    }
  }
}

// The order of the candidates: feasible first, then by predicted seconds, where the floor is at
// risk (or the prediction is of low confidence) with the plans without a transformation counted
// at kRiskFactor times their prediction (their worst case is not bounded; shift-invert's and
// dense's are).
void rank(std::vector<PlanEstimate>& cands, FloorRisk risk) {
  auto key = [risk](const PlanEstimate& e) {
    const bool unbounded = e.transform == Transform::none && e.method != EigsMethod::dense && !e.lobpcg_factor;
    return (risk == FloorRisk::at_risk || e.low_confidence) && unbounded ? kRiskFactor * e.total() : e.total();
  };
  std::stable_sort(cands.begin(), cands.end(), [&](const PlanEstimate& a, const PlanEstimate& b) {
    return a.feasible != b.feasible ? a.feasible : key(a) < key(b);
  });
}

// The plans priced with the host engines' rates (shift-invert, dense, the certificate) added to
// the iterative ones, ranked. Returns whether the rates were used.
bool price_rated(Pricing& p, const std::vector<PlanEstimate>& iterative, std::size_t unpriced_before,
                 const EngineRates& r, bool r_defaults, std::vector<PlanEstimate>& cands) {
  cands = iterative;
  p.plan.unpriced.resize(unpriced_before);
  const PlanEstimate best_iterative = *std::min_element(
      iterative.begin(), iterative.end(), [](const PlanEstimate& a, const PlanEstimate& b) { return a.total() < b.total(); });
  bool used = price_shift_invert(p, r, r_defaults, best_iterative, cands);
  price_iterative_certificates(p, r, r_defaults, cands);
  // Dense for moderate n (matrix form).
  if (p.f.matrix_form && p.n <= 4000) {
    PlanEstimate e;
    e.method = EigsMethod::dense;
    e.verification = Verification::dense;
    used = used || p.f.can_factor;
    e.solve_s = predict_dense_seconds(p.n, p.f.can_factor ? r : EngineRates{},
                                      p.opt.which != Which::largest || p.f.generalized);
    e.priced = true;
    cands.push_back(e);
  }
  rank(cands, p.plan.outlook.risk);
  return used;
}

// The rates this machine has (cached, or measured earlier in the process), else the defaults
// where the plan they choose, at kPessimisticRates times its price, stays below
// kRateMeasurementFloorSeconds: whatever better plan measured rates might have found, the most it
// could save is less than measuring costs (0.5–2 s on a fresh machine, once, and in every process
// where no cache persists: containers, new cluster nodes). The defaults also where the plan they
// choose is the only feasible one (shift-invert where the rounding floor rules out the filter and
// n is past dense: gen:stiff:12:74, 10 smallest, on a fresh H200 machine measured 1.24 s of rates
// for a 0.2 s run). Else measured now. With the defaults
// the verification stays the re-check: the certificate's price (MUMPS's LDLᵀ) is the least sure
// of them (the H200 host: crack's certificate 73 ms where the defaults said under 15 % of a 20 ms
// solve).
std::vector<PlanEstimate> price_all(Pricing& p, const std::vector<PlanEstimate>& iterative) {
  EigsPlan& plan = p.plan;
  const std::size_t unpriced_before = plan.unpriced.size();
  std::vector<PlanEstimate> cands;
  if (const EngineRates* known = p.probes.known_rates ? p.probes.known_rates() : nullptr) {
    plan.rates = *known;
    price_rated(p, iterative, unpriced_before, *plan.rates, false, cands);
    return cands;
  }
  const EngineRates defaults;
  if (!price_rated(p, iterative, unpriced_before, defaults, true, cands)) return cands;
  const PlanEstimate& pick = cands.front();
  const bool alone = std::none_of(cands.begin() + 1, cands.end(), [](const PlanEstimate& c) { return c.feasible; });
  const bool cheap = kPessimisticRates * pick.total() < kRateMeasurementFloorSeconds;
  if (pick.feasible && (cheap || alone) && plan_default_rates_allowed()) {
    plan.rates = defaults;
    plan.rates_are_defaults = true;
    plan.rates->source =
        cheap ? "defaults, not measured: the plan they choose is predicted at " + secs(pick.total()) + ", under " +
                    secs(kRateMeasurementFloorSeconds) + " even " + format("%g", kPessimisticRates) +
                    " times slower, less than measuring the rates would cost"
              : "defaults, not measured: no other plan is feasible here, so measured rates could not change the "
                "choice (the prediction, " + secs(pick.total()) + ", is the defaults')";
  } else {
    plan.rates = p.probes.rates();
    price_rated(p, iterative, unpriced_before, *plan.rates, false, cands);
  }
  return cands;
}

// The choice: the first ranked candidate; the rest rejected; the reason; the fallback.
void choose(Pricing& p, std::vector<PlanEstimate>& cands) {
  EigsPlan& plan = p.plan;
  PlanEstimate& c = plan.chosen;
  c = cands.front();
  plan.rejected.assign(cands.begin() + 1, cands.end());
  plan.reason = "auto: " + c.describe();
  if (!plan.rejected.empty()) plan.reason += "; best rejected: " + plan.rejected.front().describe();
  for (const auto& u : plan.unpriced) plan.reason += "; " + u;
  if (plan.outlook.risk != FloorRisk::clear) {
    plan.reason += "; rounding floor " + std::string(to_string(plan.outlook.risk)) + ": " + plan.outlook.line;
    if (plan.outlook.risk == FloorRisk::at_risk)
      plan.reason += " (low confidence in the iterative plans' prediction: their worst case counted at " +
                     format("%g", kRiskFactor) + "x it)";
  }
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

void plan_auto(const PlanFacts& f, const EigsOptions& opt, const PlanProbes& probes, EigsPlan& plan,
               Verification verification) {
  plan.predicted = true;
  Pricing p{f, opt, probes, plan};
  p.n = f.n;
  p.k = opt.k;
  p.lower_entries = 0.5 * static_cast<double>(f.nnz_a + f.nnz_b + f.n);
  p.verification = verification;
  measure(p);
  plan.outlook = floor_outlook(f, opt, *plan.probe);
  const std::vector<PlanEstimate> iterative = price_iterative(p);
  std::vector<PlanEstimate> cands = price_all(p, iterative);
  choose(p, cands);
}

// The escalation's line: the plans in order, with their prediction where priced.
std::string escalation_line(const std::vector<PlanEstimate>& esc) {
  if (esc.empty()) return "no escalation: no other plan applies";
  std::string with, without;
  for (const PlanEstimate& e : esc) {
    const bool on_a = e.transform == Transform::none && e.method != EigsMethod::dense;
    std::string& s = on_a ? without : with;
    s += (s.empty() ? "" : ", then ") + e.name();
    if (e.priced) s += " (predicted " + secs(e.total()) + ")";
  }
  std::string s = "escalation if it ends without convergence: " + with;
  if (!without.empty())
    s += (with.empty() ? "" : ", then ") + without + (with.empty() ? "" : " (these not after a stop at the rounding floor)");
  return s + "; each from the vectors found so far, to its own iteration limit";
}

}  // namespace

namespace {

// Shrinks Chebyshev's width or the Lanczos basis so that the iteration's n-vectors fit in
// opt.workspace_columns (EigsOptions); says what it did in r.fitted.
void fit_workspace(const PlanFacts& f, const EigsOptions& opt, EigsMethod method, RunParams& r) {
  const std::int64_t w = opt.workspace_columns, n = f.n, k = opt.k;
  if (w <= 0) return;
  const double col_bytes = 8.0 * static_cast<double>(n);
  auto refuse = [&](std::int64_t min_cols) {
    const double bytes = col_bytes * static_cast<double>(min_cols);
    throw WorkspaceDoesNotFit(
        static_cast<std::size_t>(bytes),
        std::string("out of GPU memory: ") + to_string(method) + " with k = " + std::to_string(k) +
            " needs at least " + std::to_string(min_cols) + " vectors of " + std::to_string(n) +
            " rows" + format(" (%.2f GiB)", bytes / 1073741824.0) + " beside the matrix, room for " +
            std::to_string(w));
  };
  if (method == EigsMethod::chebyshev) {
    ChebyshevOptions co;
    if (r.basis > k) co.block = r.basis;
    const std::int64_t m0 = chebyshev_block(n, k, -1, co);
    if (3 * m0 + 2 * k <= w) return;
    const std::int64_t m = (w - 2 * k) / 3;
    if (m < k + 4) refuse(3 * (k + 4) + 2 * k);
    r.basis = m;
    r.fitted = "; block width reduced from " + std::to_string(m0) + " to " + std::to_string(m) +
               " columns to fit the GPU memory";
  } else if (method == EigsMethod::lanczos) {
    const std::int64_t b = r.block > 0 ? r.block : default_lanczos_block(k);
    const std::int64_t m0 = r.basis > 0 ? r.basis : default_lanczos_basis(k, b);
    const std::int64_t fixed = 2 * b + 2 * std::max(b, k);
    if (2 * m0 + fixed <= w) return;
    const std::int64_t m = (w - fixed) / 2 / b * b;
    const std::int64_t m_min = b * ((k + 2 * b + b - 1) / b);
    if (m < m_min) refuse(2 * m_min + fixed);
    r.basis = m;
    r.fitted = "; Lanczos basis reduced from " + std::to_string(m0) + " to " + std::to_string(m) +
               " columns to fit the GPU memory";
  } else {
    const std::int64_t need = 10 * (k + default_lobpcg_guard(k));
    if (need > w) refuse(need);
  }
}

}  // namespace

RunParams resolve_run(const PlanFacts& facts, const EigsOptions& opt, const PlanEstimate& e, bool priced_ladder) {
  RunParams r;
  r.max_iterations = opt.max_iterations;
  r.early_stop = opt.lanczos_early_stop;
  r.basis = opt.basis;
  r.block = opt.block_size > 0 ? opt.block_size
            : e.method == EigsMethod::lanczos && e.transform == Transform::none && e.block > 0 ? e.block : 0;
  // The ladder's rungs as the plan chose them by predicted cost (where it priced them).
  r.ladder = opt.ladder && (!priced_ladder || e.ladder);
  if (e.transform == Transform::none && e.method != EigsMethod::dense) fit_workspace(facts, opt, e.method, r);
  return r;
}

std::vector<PlanEstimate> escalation_plans(const PlanFacts& f, const EigsOptions& opt, const EigsPlan& plan) {
  std::vector<PlanEstimate> out;
  if (!plan.predicted) return out;
  const PlanEstimate& c = plan.chosen;
  auto priced = [&](auto match) -> std::optional<PlanEstimate> {
    for (const auto& r : plan.rejected)
      if (match(r)) return r;
    return std::nullopt;
  };
  auto add = [&](PlanEstimate e) {
    if (!e.feasible) return;  // the factor does not fit the memory
    try {
      e.run = resolve_run(f, opt, e, false);
    } catch (const WorkspaceDoesNotFit&) {
      return;  // its workspace does not fit
    }
    out.push_back(e);
  };
  const Verification v = c.verification == Verification::dense ? (opt.recheck ? Verification::recheck : Verification::none)
                                                               : c.verification;
  if (c.transform == Transform::none && f.can_factor && opt.which == Which::smallest) {
    PlanEstimate si;
    si.method = EigsMethod::lanczos;
    si.transform = Transform::shift_invert;
    si.verification = v;
    const auto known = priced([](const PlanEstimate& r) { return r.transform == Transform::shift_invert; });
    bool memory_refused = false;
    for (const auto& u : plan.unpriced) memory_refused = memory_refused || u.find("host memory allows") != std::string::npos;
    if (!memory_refused) add(known ? *known : si);
  }
  if (c.method != EigsMethod::dense && f.matrix_form && (f.n <= 4000 || f.diagonal)) {
    PlanEstimate d;
    d.method = EigsMethod::dense;
    d.verification = Verification::dense;
    const auto known = priced([](const PlanEstimate& r) { return r.method == EigsMethod::dense; });
    add(known ? *known : d);
  }
  // The methods without a transformation not run yet (after a stop other than the floor).
  std::vector<EigsMethod> others = f.generalized ? std::vector<EigsMethod>{EigsMethod::lobpcg, EigsMethod::lanczos}
                                                 : std::vector<EigsMethod>{EigsMethod::lanczos, EigsMethod::lobpcg,
                                                                           EigsMethod::chebyshev};
  for (EigsMethod m : others) {
    if (m == c.method && c.transform == Transform::none && !(m == EigsMethod::lanczos && c.block == 1)) continue;
    if (m == EigsMethod::chebyshev && !chebyshev_fits(f.n, opt.k)) continue;
    PlanEstimate e;
    e.method = m;
    e.verification = v;
    add(e);
  }
  return out;
}

EigsPlan plan_eigs(const PlanFacts& f, const EigsOptions& opt, const PlanProbes& probes) {
  const double t0 = detail::now_seconds();
  check_request(f, opt);
  EigsPlan plan;
  plan.sigma = opt.has_sigma ? opt.sigma : 0.0;
  const Verification verification =
      opt.certify ? Verification::certificate : opt.recheck ? Verification::recheck : Verification::none;
  plan.chosen.verification = verification;
  if (!plan_forced(f, opt, plan)) plan_auto(f, opt, probes, plan, verification);
  PlanEstimate& c = plan.chosen;
  // The forced plans' names for the verification (decided again after the solve).
  if (!plan.predicted && c.verification == Verification::recheck && c.method == EigsMethod::dense)
    c.verification = Verification::dense;
  c.run = resolve_run(f, opt, c, f.ladder && plan.predicted && c.method == EigsMethod::chebyshev);
  if (!c.run.fitted.empty()) plan.reason += c.run.fitted;
  plan.escalation = escalation_plans(f, opt, plan);
  if (plan.predicted) {
    plan.escalation_line = escalation_line(plan.escalation);
    plan.reason += "; " + plan.escalation_line;
  }
  plan.seconds = detail::now_seconds() - t0;
  return plan;
}

}  // namespace tcsolve
