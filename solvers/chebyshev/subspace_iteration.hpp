// Chebyshev-filtered subspace iteration as a class of named steps (the algorithm, its memory and
// its traffic budget: solvers/chebyshev.hpp; chebyshev_subspace() there builds this class and
// runs it). run() reads like the algorithm:
//
//   set up (constructor: checks, workspace) → bounds → start (random block, orthonormalize,
//   rayleigh_ritz, residuals) → loop { lock → [check when done or at the limit] → restart (cut,
//   degrees, rung) → filter → orthonormalize → rayleigh_ritz → residuals → record } → finish.
//
// The steps, by file (solvers/chebyshev/):
//   subspace_iteration.cpp  set-up, the driver, bounds, start, the iteration record and stats;
//   restart.cpp             filter_cut, choose_degrees, the rung (fp32_fits, watch_climb);
//   filter.cpp              filter (fp64 recurrence with per-column degrees), filter32 (fp32 rung);
//   orthonormalize.cpp      BCGS-PIP passes, the host fallback (SVQB with refill);
//   rayleigh_ritz.cpp       rayleigh_ritz, residuals (the iteration's one fetch);
//   lock.cpp                lock, all_found, check (true residuals; unlock of failing pairs).
//
// Block layout (n × m each, column-major in ops.space()): basis[cur] holds the current block,
// locked columns 0:nl first, then the w = m − nl active ones; basis[1 − cur] holds the same locked
// columns (BCGS-PIP and Rayleigh-Ritz ping-pong between the two); scratch is the operator output.
// Each step reads and writes State and the Workspace; both are public so that a test can set up
// any step's input and read its output without running the others
// (tests/solvers/test_chebyshev_steps.cpp). Workspace is sized once, by the constructor.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/operator.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/chebyshev/applier.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/host_result.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/result.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::chebyshev {

// Spectrum bounds of Â = s·A (the filter interval's far end, the normalization point and a lower
// bound of ‖A‖₂) from bounds of A.
struct Bounds {
  double upper = 0.0;  // b ≥ λmax(Â)
  double lower = 0.0;  // θmin(Â) ≥ λmin(Â): normalization point of the filter
  double norm = 0.0;   // max |Ritz value|: a lower bound of ‖A‖₂ for the convergence test
};
Bounds bounds_of(const ChebyshevBounds& a, double sgn);

// The filter's interval for a cut: damped [cut, upper] with centre ce and half-width e, the
// normalization point a0 strictly below it, σ₁ of the scaled recurrence, and ρ(x), the factor
// by which one step amplifies the direction of eigenvalue x against the damped interval
// (ρ = |t| + √(t² − 1), t = (x − ce)/e; 1 inside the interval).
struct FilterInterval {
  double e, ce, a0, sigma1;
  FilterInterval(double upper, double cut, double lower)
      : e((upper - cut) / 2), ce((upper + cut) / 2), a0(std::min(lower, cut - e)),
        sigma1(e / (a0 - ce)) {}
  double rho(double x) const {
    const double t = std::abs((x - ce) / e);
    return t > 1.0 ? t + std::sqrt(t * t - 1.0) : 1.0;
  }
};

// Blocks and host buffers, sized once per solve (m = block width, k wanted).
struct Workspace {
  MultiVector<double> basis[2];  // n × m: the ping-pong bases (both hold the locked columns)
  MultiVector<double> scratch;   // n × m (n × 2·⌈m⌉₄ when the filter runs by rows: its two
                                 // iterates): A·Y (filter), A·Q (Rayleigh-Ritz), the check's X; the
                                 // fp32 rung's R̂ and Z_odd (two n-float columns per column)
  MultiVector<double> gram, factor, small;  // m × m: [L Y]ᵀY, BCGS-PIP's M, H = s·QᵀAQ (and
                                            // the filter's projection coefficients LᵀY)
  MultiVector<double> theta, resid;  // m × 1: Ritz values (Â), residual norms
  MultiVector<double> status;        // 8 × 1: BCGS-PIP status, 2 doubles per pass
  MultiVector<double> coef;          // (dhigh + 1)·m: the fp32 rung's coefficient table
  MultiVector<double> theta_sel;     // k × 1: the Ritz values the check tests
  std::vector<double> status_h, xn, proj, coef_h, qprev, qcur, sel_theta, true_res, bound;
  std::vector<double> kth;                          // 2m: scratch of kth_smallest()
  std::vector<std::pair<double, std::int64_t>> cand;  // m: the check's candidates
  std::vector<std::int64_t> idx;                      // m: the check's chosen columns
  std::vector<double> swap_theta, swap_rn;            // m: unlock's copies of the active pairs
  OrthoWorkspace ortho;
};

// The iteration's host state: what one step hands the next.
struct State {
  int cur = 0;            // basis[cur] holds the block
  std::int64_t nl = 0;    // locked columns
  std::int64_t it = 0;    // outer iteration
  // Active pairs (columns nl + i of basis[cur]): Ritz values ascending in Â, residual norms, and
  // the filter degrees (even, non-decreasing). Locked pairs in column order 0..nl.
  std::vector<double> theta, rn;
  std::vector<int> deg;
  std::vector<double> lock_theta, lock_res;
  std::vector<char> lock_floor;  // locked at the rounding floor (lock()), not by the test
  // The front active pair's watch at the rounding floor: its best residual and the outer
  // iterations since it last halved. floor_stop: the check ended the solve with only such pairs
  // failing.
  double stall_best = std::numeric_limits<double>::infinity();
  int stall_its = 0;
  bool floor_stop = false;
  // The filter interval's ends in Â (kept below and above every Ritz value), ‖A‖'s lower bound
  // from the bounds, and the convergence test's ‖A‖ and ‖B‖ factors.
  double upper = 0.0, lower = 0.0, norm = 0.0, test_a = 0.0, test_b = 1.0;
  // Restart: the last cut and its lift (multiplicity above the block width), the model's steps
  // left for the slowest wanted column and the filter steps it went through.
  double prev_cut = -1.0, lift = 0.0, steps_left = 0.0, wanted_steps = 0.0, last_cut = 0.0;
  // The least largest active Ritz value seen: each is an upper bound of λ_m (filter_cut).
  double cut_bound = std::numeric_limits<double>::infinity();
  // basis[1 − cur]'s active columns hold the Ritz vectors' A·X (from rayleigh_ritz; not after an
  // unlock: the check reused those columns).
  bool ax_valid = true;
  OrthoBranch worst_branch = OrthoBranch::none;  // of the iteration's orthonormalizations
  std::uint64_t refill_seed = 0;
};

// Outer iterations a pair sits in the rounding floor's zone without halving its residual before
// it is locked as at the floor (lock.cpp).
constexpr int kStallIterations = 3;

// The precision ladder (ChebyshevOptions::filter_precision): whether it is on, and the climb's
// watch (its counts and reasons are in ChebyshevStats).
struct Ladder {
  bool on = false;  // fp32 rung with a fused step
  int stale32 = 0;  // fp32 filters since the slowest wanted ratio last fell below 0.9 of its best
  double best_slow = std::numeric_limits<double>::infinity();
};

// One filter's plan (restart): the cut, the largest degree among the wanted active columns, the
// rung, and (fp32) the slowest wanted residual/test ratio before it.
struct FilterPlan {
  double cut = 0.0;
  int wanted_degree = 0;
  bool fp32 = false;
  double slow_before = 0.0;
};

class SubspaceIteration {
 public:
  // Checks the arguments (InvalidArgument as chebyshev_subspace says) and sizes the workspace.
  // a, ops, opt and copt must outlive the object.
  SubspaceIteration(const LinearOperator<double>& a, DenseBlockOps& ops, const EigenOptions& opt,
                    const ChebyshevOptions& copt);
  SubspaceIteration(const SubspaceIteration&) = delete;
  SubspaceIteration& operator=(const SubspaceIteration&) = delete;

  // The whole solve (once per object).
  EigenResult run();

  // ---- The steps (w: active columns). Each reads and writes state() and workspace().
  // Spectrum bounds: the given ChebyshevOptions::bounds or `lanczos_steps` of Lanczos; sets
  // upper, lower, norm, the test's factors and the result's a_norm.
  void bounds();
  // Random start block (opt.start first), orthonormal, its Ritz pairs and residuals.
  void start();
  // The next filter: cut, per-column degrees and rung.
  FilterPlan restart(std::int64_t w);
  // Cut = the least largest active Ritz value so far (lifted when the block sits inside one
  // eigenspace); moves
  // lower/upper outside every Ritz value.
  double filter_cut(std::int64_t w);
  // deg[0:w] from the residual model: even, within [min, cap], non-decreasing; guard columns the
  // largest wanted degree. Sets steps_left, prev_cut.
  void choose_degrees(std::int64_t w, double cut);
  // The largest degree that keeps the slowest wanted column's own direction above rounding
  // against the most amplified active one, on the filter interval of this cut.
  int rounding_cap(std::int64_t w, double cut) const;
  // Whether the filter may take the fp32 rung (chebyshev.hpp); `why` gets the reason when not.
  bool fp32_fits(std::int64_t w, double cut, std::string* why) const;
  // Y ← p_d(Â)·Y on the active columns of basis[cur], column i to degree deg[i]; the result ends
  // in basis[cur].
  void filter(std::int64_t w, double cut);
  // The same with the two iterates kept by rows in scratch (a host fused step that offers it,
  // spmm/chebyshev_step.hpp by_rows): one transpose in and one out per filter, four per
  // projection against the locked columns (every `period` steps).
  void filter_rows(std::int64_t w, const FilterInterval& iv, int period);
  // y ← y − L·(Lᵀ·y) for the locked columns L (the filter's projection).
  void project_locked(MvView<double> y);
  // The same on the fp32 rung (residual form): needs the Ritz vectors X in basis[cur], their A·X
  // in basis[1 − cur] and θ in state().theta.
  void filter32(std::int64_t w, double cut);
  // The active columns of basis[cur] orthonormal and ⊥ the locked ones (result in basis[cur]):
  // two BCGS-PIP passes, a third when one fell back, the host fallback if that fails. One fetch
  // (two with the third pass). Returns the device passes counted for the budget (2 or 3).
  int orthonormalize(std::int64_t w);
  // Host fallback: project out the locked columns twice, SVQB with dropping, refill lost
  // directions with random vectors (the block keeps its width).
  void orthonormalize_fallback(std::int64_t w);
  // Q = active columns of basis[cur] (orthonormal, ⊥ L): A·Q, H = s·QᵀAQ = YΘYᵀ, Ritz vectors
  // X = Q·Y into basis[cur] and A·X into basis[1 − cur] (cur flips); θ on the device.
  void rayleigh_ritz(std::int64_t w);
  // rᵢ = ‖A·Xᵢ − θᵢXᵢ‖ (in Â: s·A·X) from basis[1 − cur] and basis[cur], and θ, r to the host
  // (state().theta, rn): the iteration's one fetch.
  void residuals(std::int64_t w);
  // Moves the converged prefix of the active pairs to the locked columns (never a pair past an
  // unconverged one; beyond k only pairs below the k-th locked value). Returns the new w. The
  // front pair also locks when it has stalled at the rounding floor (floor_stalled).
  std::int64_t lock(std::int64_t w);
  // Whether the front active pair has sat in the floor zone for kStallIterations outer
  // iterations without halving its residual (updates the watch in State).
  bool floor_stalled(std::int64_t w);
  // A quarter of the least test above the floor among the wanted active pairs after c.
  double leak_cap(std::int64_t c, std::int64_t w) const;
  // Active pair c's residual within max(min(a quarter of its test, leak_cap), its floor).
  bool lockable(std::int64_t c, std::int64_t w) const;
  // The rounding floor's zone of a pair: max(4·(floor_a + |θ|·floor_b), 16u·(‖A‖ + |θ|)). A
  // residual computed in double sits at 2–9 u·‖A‖ there (neumann2d:250's null vector: 8.7u).
  double floor_zone(double theta) const;
  // k pairs locked or passing, and no active Ritz value below the k-th of them.
  bool all_found(std::int64_t w);
  // The k smallest pairs (Â) among the locked and active ones: A applied once more, true
  // residuals tested. On success (or when `last`) the result gets values, residuals and vectors
  // (once per object); otherwise the pairs from the first failing locked one on are unlocked
  // (nl shrinks).
  bool check(std::int64_t w, bool last);
  // The climb off the fp32 rung after a filter (three fp32 filters without progress).
  void watch_climb(std::int64_t w, const FilterPlan& plan);
  // The iteration record, the progress callback and the caller's budget (false: stop).
  bool record(std::int64_t w, int wanted_degree, double t_it);

  // ---- Access for tests and the steps' callers.
  State& state() { return s_; }
  Workspace& workspace() { return ws_; }
  // Counts, clocks and the ladder's record as far as the solve has come (block, interval, outer
  // iterations, applies, cut and wanted steps are set by run()'s finish).
  const ChebyshevStats& stats() const { return stats_; }
  EigenResult& result() { return res_; }
  std::int64_t block_width() const { return m_; }
  // The pair's convergence bound: max(tol·(test_a + |θ|·test_b), floor).
  double tau(double theta) const { return pair_bound(opt_, s_.test_a, s_.test_b, theta); }

 private:
  void iterate();
  // Done or at the limit: the check. false: the solve ends (status and reason set).
  bool check_if_due(std::int64_t& w);
  // The filter of the plan, timed by stream marks; returns the marks.
  std::pair<int, int> run_filter(std::int64_t w, const FilterPlan& plan);
  void account_filter(const FilterPlan& plan, std::pair<int, int> marks, std::int64_t steps);
  void pip_pass(std::int64_t w, int slot);
  void count_outer(std::int64_t w, int passes);
  void fill_result(MvView<const double> x, std::int64_t count);
  void unlock(std::int64_t first_bad, std::int64_t w);
  EigenResult finish();
  // The k-th smallest of the locked values and theta[0:c] (kth scratch, no allocation).
  double kth_smallest(std::int64_t c);
  // The slowest wanted active column's index, and the largest residual/test ratio of the wanted
  // active columns.
  std::int64_t slowest(std::int64_t w) const;
  double slowest_ratio(std::int64_t w) const;
  // Steps between projections of the filter's vectors against the locked columns: (ratio)^P ≤ 1e6.
  static int projection_period(double ratio);

  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  const EigenOptions& opt_;
  const ChebyshevOptions& copt_;
  double t_start_;
  std::int64_t n_, k_, m_;
  double sgn_;             // +1 smallest, −1 largest: Â = s·A
  int dmax_, dmin_, dhigh_;  // even degree caps and floor
  bool rows_ = false;      // the filter keeps its iterates by rows (filter_rows; scratch n × 2·⌈m⌉₄)
  Applier ap_;
  Workspace ws_;
  State s_;
  Ladder ladder_;
  ChebyshevStats stats_;  // copied to ChebyshevOptions::stats at the end
  EigenResult res_;
  std::optional<detail::Checkpointer> checkpoint_;  // from the loop's start
  // The host eigenvector buffer, sized and page-locked on a helper thread while the solve runs
  // (solvers/host_result.hpp), unless the vectors stay in ops.space() (vectors_out).
  std::vector<double> vecs_;
  std::optional<detail::HostResult> prep_;
};

}  // namespace tcsolve::chebyshev
