// The eigs driver's measurements (solvers/eigs/steps.hpp): the spectral probe, timed applies and
// the planner's callbacks over them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

#include "core/device.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "solvers/eigs/runs.hpp"
#include "solvers/eigs/steps.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::eigs_detail {

void apply_a(const Problem& s, MvView<const double> x, MvView<double> y) {
  DenseBlockOps& ops = *s.ops;
  if (s.foreign_operator) {
    ops.synchronize();
    s.aop->apply(x, y);
    if (ops.space() == Space::device) device_synchronize();
  } else {
    ops.queue().external_begin();
    s.aop->apply(x, y);
    ops.queue().external_end();
  }
}

// Seconds of one apply of `op` to `cols` random columns (warmed once, then timed: stream marks on
// the GPU, the host clock on the CPU).
double time_apply(const Problem& s, std::int64_t cols) {
  DenseBlockOps& ops = *s.ops;
  MultiVector<double> x = ops.allocate(s.n, cols), y = ops.allocate(s.n, cols);
  ops.fill_random(x.view(), 12345);
  auto run = [&] { apply_a(s, x.view(), y.view()); };
  run();
  if (ops.space() == Space::device) {
    const int a = ops.queue().mark();
    run();
    const int b = ops.queue().mark();
    return ops.queue().elapsed_seconds(a, b);
  }
  // Host: the fastest of up to 3 runs within ~20 ms (small matrices: thread start-up noise).
  double best = INFINITY, spent = 0;
  for (int r = 0; r < 3 && (r == 0 || spent < 0.02); ++r) {
    const double t0 = detail::now_seconds();
    run();
    const double t = detail::now_seconds() - t0;
    best = std::min(best, t);
    spent += t;
  }
  return best;
}

// Seconds of one host filter step by rows on `cols` columns (the kernel chebyshev/filter.cpp
// filter_rows runs: next = a·A·cur + b·cur + c·next, both blocks by rows), 0 where the filter
// would not run it. The step is A's fused step, built here once and kept for the solve
// (fused_step_for). Two n × ⌈cols⌉₄ blocks for the timing (any finite values), freed after; pages
// touched by the fill first, then the fastest of up to 3 runs within ~20 ms (one run where it takes longer).
double time_step(const Problem& s, const EigsOptions& opt, std::int64_t cols) {
  if (s.ops->space() != Space::host || !s.a || cols < 1) return 0.0;
  const ChebyshevStep* step = fused_step_for(s, *s.aop, opt);
  if (!step || !step->by_rows() || step->space() != Space::host) return 0.0;
  const std::int64_t ld = (cols + 3) / 4 * 4;
  // Past 256 MB for the two blocks both widths stream from memory, where the 8-column apply's
  // rate holds: not timed (the first touch of the pages alone costs ~1 ms a MB here).
  if (!timed_block_fits(s.n, ld)) return 0.0;
  const std::size_t len = static_cast<std::size_t>(s.n * ld);
  std::unique_ptr<double[]> cur(new double[len]), next(new double[len]);
  parallel_for(s.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < ld; ++j) {
      cur[static_cast<std::size_t>(i * ld + j)] = j < cols ? 1.0 + 1e-3 * static_cast<double>(j) : 0.0;
      next[static_cast<std::size_t>(i * ld + j)] = 0.0;
    }
  }, 1024);
  double best = INFINITY, spent = 0;
  for (int r = 0; r < 3 && (r == 0 || spent < 0.02); ++r) {
    const double t0 = detail::now_seconds();
    step->step_rows(1.0, cur.get(), 0.5, -1.0, next.get(), ld, 0, cols);
    const double t = detail::now_seconds() - t0;
    best = std::min(best, t);
    spent += t;
  }
  return best;
}

// The planner's probe reorthogonalizes locally (spectral_probe.hpp): its bounds, quadrature and
// the plans chosen from them were the same on 26 shared-matrix rows (CPU) and 5 GPU rows, and its
// plan phase 2–3 ms shorter on 1M rows (H200). TCSOLVE_PROBE_FULL=1: the full one (A/B).
namespace {

constexpr int kProbeSteps = 30;

bool probe_full_reorthogonalization() {
  const char* e = std::getenv("TCSOLVE_PROBE_FULL");
  return e && std::atoi(e) != 0;
}

}  // namespace

SpectralProbe run_probe(const Problem& s, std::uint64_t seed) {
  DenseBlockOps& ops = *s.ops;
  return spectral_probe([&](MvView<const double> x, MvView<double> y) { apply_a(s, x, y); }, ops, s.n,
                        kProbeSteps, seed, probe_full_reorthogonalization());
}

ChebyshevBounds bounds_of(const SpectralProbe& p) {
  ChebyshevBounds b;
  b.lower = p.lower, b.upper = p.upper;
  b.lower_bound = p.lower_bound, b.upper_bound = p.upper_bound;
  b.norm = std::max(std::abs(p.lower), std::abs(p.upper));
  return b;
}

namespace {
// A timing at `cols` columns, from the batch's memo where it has one, else measured (and kept).
template <class F>
double timed_once(std::map<std::int64_t, double>* memo, std::int64_t cols, const char* mark, F time) {
  if (memo) {
    auto it = memo->find(cols);
    if (it != memo->end()) return it->second;
  }
  const double t = time();
  trace_mark(mark);
  if (memo) (*memo)[cols] = t;
  return t;
}
}  // namespace

PlanProbes make_probes(const Problem& s, const EigsOptions& opt, PlanMemo* memo) {
  PlanProbes probes;
  probes.probe = [&s, &opt, memo] {
    if (memo && memo->probe) return *memo->probe;
    SpectralProbe p = run_probe(s, opt.seed);
    trace_mark("eigs: spectral probe");
    if (memo) memo->probe = p;
    return p;
  };
  probes.apply_seconds = [&s, memo](std::int64_t cols) {
    return timed_once(memo ? &memo->apply_seconds : nullptr, cols, "eigs: an apply timed",
                      [&] { return time_apply(s, cols); });
  };
  probes.step_seconds = [&s, &opt, memo](std::int64_t cols) {
    return timed_once(memo ? &memo->step_seconds : nullptr, cols, "eigs: a filter step timed",
                      [&] { return time_step(s, opt, cols); });
  };
  probes.analyze = [&s, memo] {
    if (memo && memo->symbolic) return *memo->symbolic;
    SymbolicAnalysis a = analyze_factor(*s.a, s.b);
    trace_mark("eigs: symbolic analysis");
    if (memo) memo->symbolic = a;
    return a;
  };
  probes.rates = []() -> const EngineRates& { return engine_rates(); };
  probes.known_rates = [] { return known_engine_rates(); };
  probes.analyze_rate_known = [] { return engine_analyze_rate_known(); };
  probes.analyze_rate = [] { return engine_analyze_rate(); };
  return probes;
}

}  // namespace tcsolve::eigs_detail
