// The eigs planner: which method, which spectral transformation and which verification, chosen by
// predicted seconds, and why. One typed plan is the single source for the driver, the command's
// job (apps/job.cpp) and the Python module.
//
// Candidates (the ones that apply to the problem):
//   dense                  all eigenvalues by Eigen (n ≤ 4000, matrix form); 10·n³ flops;
//   chebyshev              Chebyshev-filtered subspace iteration (standard problems); priced by the
//                          degree model (chebyshev_cost) on the relative gap that a spectral probe
//                          predicts (spectral_probe.hpp), with the SpMM time measured on the
//                          operator (one column and the block's width) and the dense passes
//                          derived from it (per column and filter step: SpMM 1 + recurrence 2
//                          column units; per outer iteration: 11·m column units and a fixed
//                          latency, 2 ms GPU / 0.5 ms CPU);
//   lanczos                block Lanczos without a transformation (when the filter cannot run);
//   lobpcg                 generalized problems without a factorization (crude model: the gap of A);
//   shift-invert lanczos   the smallest (or nearest σ) through a CHOLMOD factorization of A − σB,
//                          priced from its symbolic analysis (nnz(L), flops) and the host engines'
//                          measured rates (factor/engine_rates.hpp): analysis + factorization +
//                          block solves (model: 2 bases of blocks + 2; measured 0.6–1.9× of it) + the dense Lanczos work.
//   The symbolic analysis itself costs time (the ordering); it is run only when 4× its predicted
//   time (AMD-calibrated; METIS on large 3D matrices is slower) is below the cheapest iterative
//   plan's prediction — otherwise shift-invert cannot win and is listed as not priced, with why.
// Verification (decided again after the solve, with its measured time, driver.cpp): the
// Sylvester certificate when asked (certify) or when its predicted cost (MUMPS LDLᵀ: engine rates
// × the symbolic analysis) is at most 15 % of the solve; else a re-check (recheck.hpp).
// Forced choices (a method asked for, a sigma given, which = nearest) are taken as asked; a
// Chebyshev plan chosen while shift-invert was priced gets that plan as its fallback: when the
// measured convergence (after the second outer iteration) predicts more remaining time than
// 1.5× the fallback's whole prediction, the filter stops and shift-invert runs instead.
// The rounding floor is foreseen before pricing (floor_outlook, below); an automatic plan also
// carries its escalation (escalation_plans), which the driver runs when the chosen plan ends
// without convergence. plan_eigs = check → forced choice, or measure → price each plan
// (price_filter, price_lanczos1, price_lobpcg, price_shift_invert, dense) → rank and choose →
// resolve the run (resolve_run) → escalation.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "factor/engine_rates.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve {

enum class Transform { none, shift_invert };

// The symbolic analysis (ordering) of a factorization is a bet: it is paid whether or not the
// factorization it prices is then used. The planner and the verification run CHOLMOD's analysis
// with AMD alone (analyze_factor, factor/sparse_factor.hpp) and take the bet only when
// kAmdMisguess times its guess (EngineRates::analyze_seconds, calibrated on small AMD-ordered
// problems) fits their budget. Measured against the guess (2-core CPU, `solver_bench analysis`,
// docs/performance.md): 0.44–1.6× up to 250k rows, 2.4× on lap2d:1000 (it grows with n).
// The factorization's own analysis tries METIS after AMD where AMD fills in much
// (SymbolicAnalysis::metis_follows): priced at kMetisOverAmd times AMD's measured analysis (the
// same CPU: 4.3× on lap3d:30 and lap3d:50, 1.6× on elast3d:16; H200 machine: lap3d:100 11 s
// against a 1.1 s guess, and 70.6 s of planning on lap2d:3000 when the whole default analysis
// ran speculatively).
constexpr double kAmdMisguess = 4.0;
constexpr double kMetisOverAmd = 5.0;

// The shift-invert re-check (a fresh block of 2 against the deflated found pairs, solves through
// the same factor) as a share of the shift-invert solve. GPU (blocks of 8 in the solve): measured
// 0.3–1.5× on small factors (H200 machine, luxembourg's Laplacian, k = 8: 0.095–0.100 s against
// a 0.22–0.24 s solve). Host (single vectors in the solve, so the re-check's block of 2 weighs
// more): 0.75–0.93× (2-core CPU, k = 10: bcsstk10, bcsstk21, dwt_2680, gen:lap2d:300).
constexpr double kShiftInvertRecheckShare = 0.5;
constexpr double kHostShiftInvertRecheckShare = 0.9;
inline double shift_invert_recheck_share(Backend backend) {
  return backend == Backend::cuda ? kShiftInvertRecheckShare : kHostShiftInvertRecheckShare;
}

// Block and basis of shift-invert Lanczos (runs.cpp; the planner prices the same). A block solve
// reads the factor (≈ 16·nnz(L) bytes, about the same for 4 or 16 columns); an expansion step's
// dense work reads the basis (≈ 32·n·m bytes). Large factors (nnz(L) > n·m): blocks of up to 16
// and a 12-block basis, fewest solves (gen:elast3d:14 with a lumped mass, k = 10: 43 block solves
// at b = 16, basis 192; 59 at b = 8; 73 at b = 4). Small factors: the dense work is the cost,
// basis max(2k + 2b, 6b) with blocks of up to 8 on the GPU (launches), and single vectors on
// the CPU, as ARPACK: a solve through a small simplicial factor costs nearly per column, and a
// block needs more columns to converge (2-core CPU, k = 10, solve seconds of Python eigsh at
// b = 4 → 1: bcsstk21 9.8 → 5.5 ms (88 → 58 solve columns), dwt_2680 9.8 → 5.0 ms, bcsstk10
// 2.5 → 1.4 ms; k = 8 graph Laplacians crack 22 → 10 ms, fe_4elt2 32 → 20 ms, 3elt 9.8 →
// 4.9 ms; earlier b = 8 → 4 on bcsstk21 38.3 → 27.3 ms in all). Copies of a repeated eigenvalue
// beyond the block come from rounding or from the verification's rounds (recheck.hpp).
struct ShiftInvertShape {
  std::int64_t block = 0, basis = 0;
  bool big_factor = false;
};
// block > 0: that block (the caller's --block-size), clamped and with its basis.
ShiftInvertShape shift_invert_shape(std::int64_t n, std::int64_t k, double factor_entries, bool host,
                                    std::int64_t block = 0);

// The factorization's analysis when it reuses the planner's AMD ordering (driver.cpp passes it
// unless METIS follows): the elimination tree and the counts, as a share of the AMD analysis
// (2-core CPU, `solver_bench analysis SPEC factor=1`: 0.28–0.41 on bcsstk10/19/21, lap2d:160/400,
// lap3d:22, elast3d:8).
constexpr double kGivenOrderingShare = 0.4;

// Seconds of the factorization's own analysis, from the planner's AMD-only one.
inline double factor_analysis_seconds(const SymbolicAnalysis& sym) {
  return sym.metis_follows ? kMetisOverAmd * sym.seconds : kGivenOrderingShare * sym.seconds;
}

// Where METIS follows, the factorization keeps the ordering that fills in less (CHOLMOD), and
// MUMPS orders by METIS: measured against AMD's analysis (2-core CPU, bench/shift_invert/metis_fill,
// 2026-12-01) 0.74/0.73/0.66 of its entries and 0.52/0.43/0.35 of its flops on lap3d:30 (and
// jump3d:30, the same pattern), stiff:12:74 and elast3d:20. AMD's figures stay the bound (the
// memory check); the times are priced at the expected factor (jump3d:30, 6 smallest: setup
// priced 0.89 s at AMD's, run 0.43 s).
constexpr double kMetisEntriesOverAmd = 0.7;
constexpr double kMetisFlopsOverAmd = 0.45;
inline SymbolicAnalysis expected_factor(const SymbolicAnalysis& sym) {
  SymbolicAnalysis e = sym;
  if (sym.metis_follows) {
    e.factor_entries *= kMetisEntriesOverAmd;
    e.flops *= kMetisFlopsOverAmd;
    e.ordering = "metis expected";
  }
  return e;
}

// What a run takes from its plan, resolved once by the planner (resolve_run): the solvers read
// the run's shape from here, never from a patched copy of the options.
struct RunParams {
  std::int64_t block = 0;           // block Lanczos / shift-invert block (0: the default shape)
  std::int64_t basis = 0;           // Lanczos basis, Chebyshev width (0: the default)
  bool ladder = false;              // Chebyshev: the filter's fp32 rung
  std::int64_t max_iterations = 0;  // 0: the method's default
  bool early_stop = true;           // block Lanczos: stop before the first basis is full
  std::string fitted;               // what fitting EigsOptions::workspace_columns changed ("")
};

// A candidate plan and its predicted seconds.
struct PlanEstimate {
  EigsMethod method = EigsMethod::automatic;
  Transform transform = Transform::none;
  Verification verification = Verification::recheck;
  bool lobpcg_factor = false;  // LOBPCG preconditioned by the factorization of A − σB
  std::int64_t block = 0;      // block Lanczos without a transform: its block (0 = the default)
  bool ladder = false;         // chebyshev: the filter's fp32 rung, chosen by predicted cost
  bool feasible = true;
  bool priced = false;         // setup_s/solve_s/verify_s hold a prediction
  // The prediction is extrapolated far beyond what the model was measured on (the filter's degree
  // model beyond kTrustedOuterIterations outer iterations: a tiny relative gap): ranked at its
  // worst case (kRiskFactor times it) against plans whose cost is bounded, and said so.
  bool low_confidence = false;
  double setup_s = 0.0, solve_s = 0.0, verify_s = 0.0;
  std::string detail;          // the model's main inputs
  RunParams run;               // resolved for the plan that runs (resolve_run)
  double total() const { return setup_s + solve_s + verify_s; }
  std::string name() const;      // "chebyshev", "shift-invert lanczos", ...
  std::string describe() const;  // name, verification and the prediction
};

// What the planner knows without measuring.
struct PlanFacts {
  std::int64_t n = 0, nnz_a = 0, nnz_b = 0;
  bool generalized = false;
  bool matrix_form = true;   // A (and B) are matrices: a dense solve and a factorization are possible
  // A (and B) diagonal: the dense solve reads the pairs off the diagonals, exactly, at any n
  // (the bcsstm* mass matrices; single-vector Lanczos cannot resolve their copies of a value).
  bool diagonal = false;
  bool can_factor = false;   // engines built, factorization allowed, matrix form
  std::string factor_why;    // why not, when !can_factor
  Backend backend = Backend::cpu;
  // The filter's steps on the GPU: fused on A's CSR (rows of at most 16 entries) or on the
  // operator's own natural b×b blocks (spmm's bsr_block kernel, SparseOperator::block_step).
  bool bsr_step = false;
  // The precision ladder's fp32 rung is available to the filter (precision auto on an fp64 A, on
  // the GPU, with a fused or block step): the plan prices it and chooses.
  bool ladder = false;
  // The host's threads (core/parallel.hpp host_threads(); the driver sets this machine's): the
  // host's dense outer iteration is priced per thread (ApplyModel::t_dense_nm). 2 by default, so
  // that a test's plan does not depend on the machine running it.
  int host_threads = 2;
  // The floor outlook's inputs (floor_outlook): ‖A‖ (an upper bound, e.g. ‖A‖∞), ‖B‖, ‖B⁻¹‖
  // (0: not known; the probe's bounds stand in), and the extremes of a_ii/b_ii, Rayleigh quotients
  // of unit vectors and so bounds of the spectrum's ends (NaN: not known, operator form).
  double a_norm = 0.0, b_norm = 1.0, binv_norm = 1.0;
  double diag_min = std::numeric_limits<double>::quiet_NaN();
  double diag_max = std::numeric_limits<double>::quiet_NaN();
  // Gershgorin's bounds of the spectrum (B = I), min/max of a_ii ∓ Σ_j≠i |a_ij| (NaN: not known).
  double gershgorin_lo = std::numeric_limits<double>::quiet_NaN();
  double gershgorin_hi = std::numeric_limits<double>::quiet_NaN();
  // The same of A alone, with or without B (with B they prove the signs of the eigenvalues:
  // select.cpp, spectrum_bounds).
  double a_disc_lo = std::numeric_limits<double>::quiet_NaN();
  double a_disc_hi = std::numeric_limits<double>::quiet_NaN();
};

// The floor outlook's hints from the matrices (one pass over A and B's diagonal): diag_min/max,
// Gershgorin's bounds of A and, for B = I, of the spectrum.
void spectrum_hints(const Csr<double>& a, const Csr<double>* b, PlanFacts& f);

// Foreseeing the rounding floor (item 1 of issue 42). No iteration on A in double gets a
// residual much below u·(‖A‖ + |λ|·‖B‖)·‖x‖ (the solvers stop at 4u: floor_a); the rel test asks
// for tol·|λ|·‖B·x‖. At the wanted end λ₁ (in Â = ±A, the end low) lies in
// [max(probe.lower_bound, Gershgorin), min(θ_min, min a_ii/b_ii)] (a Ritz value and the unit
// vectors' Rayleigh quotients bound it from above; the probe's residual and the discs from below). With
//   z0 = u^(2/3)·‖A‖·‖B⁻¹‖   (below: zero to working precision, tested at the floor, pairs.hpp)
//   z1 = 4u·‖A‖/tol          (below, down to z0: tol·|λ| under the solvers' floor; ‖B⁻¹‖ with B)
// the test is
//   out of reach  when the upper bound of λ₁ lies in (z0, z1) (or, on the negative side, both
//                 bounds in (−z1, −z0)): no plan without a spectral transformation can pass λ₁
//                 unless an eigenvalue below −z1 or within z0 of 0 hides from the probe and the
//                 diagonal, which shift-invert would find as well (a stiff matrix's constrained
//                 dofs: λ = 1 beside ‖A‖ = 4e9, z1 = 177);
//   at risk       when λ₁ may lie there or within kFloorMargin of it (the upper bound below
//                 kFloorMargin·z1, the lower not above z0): the iteration model's prediction is
//                 not to be trusted (a filter stalls near the floor: the H200 ran 371 outer
//                 iterations against 11 predicted, the CPU 561);
//   clear         otherwise (the probe's own estimate of the wanted end is above kFloorMargin·z1).
// Only for the rel test (norm is never below the floor at tol ≥ 4u; abs where tol < 4u·‖A‖: a
// user's choice, run as asked).
constexpr double kFloorMargin = 4.0;
// At risk, the plan whose worst case is bounded (shift-invert: its cost is the factorization's
// and a Lanczos run on T whose wanted end is well separated) is taken unless an iterative plan
// costs less than 1/kRiskFactor of it: the misses seen at risk were 34x (H200) and 64x (CPU).
constexpr double kRiskFactor = 30.0;
// The filter's degree model is trusted up to this many outer iterations (the sweeps behind its
// calibration ran up to ~40; the held-out misses ran 371 and 561 against 11 predicted).
constexpr double kTrustedOuterIterations = 100.0;
enum class FloorRisk { clear, at_risk, out_of_reach };
const char* to_string(FloorRisk r);
struct FloorOutlook {
  FloorRisk risk = FloorRisk::clear;
  double lambda_lo = 0.0, lambda_hi = 0.0;  // bounds of the wanted end λ₁ (in A's sign)
  double z0 = 0.0, z1 = 0.0;                // as above
  std::string line;                          // what the planner says (method_reason)
};
FloorOutlook floor_outlook(const PlanFacts& f, const EigsOptions& opt, const SpectralProbe& probe);

// Measurements, taken only when a decision needs them (each callback is called at most once).
struct PlanProbes {
  std::function<SpectralProbe()> probe;                  // Lanczos steps on A
  std::function<double(std::int64_t cols)> apply_seconds;  // one apply of A to `cols` columns
  // One step of the host filter by rows on `cols` columns (ChebyshevStep::step_rows: the kernel
  // the CPU filter runs); 0 where the filter would not run it (the GPU, an operator form, long
  // rows). Empty: not measured.
  std::function<double(std::int64_t cols)> step_seconds;
  std::function<SymbolicAnalysis()> analyze;             // CHOLMOD symbolic analysis of A − σB
  std::function<const EngineRates&()> rates;             // host engine rates (cached, else measured)
  // The rates without measuring (known_engine_rates: the cache's or the process's); null when
  // none are known. Empty: none known.
  std::function<const EngineRates*()> known_rates;
  // The analysis rate alone (engine_analyze_rate: cheap when the full rates are not cached);
  // empty: taken from rates().
  std::function<double()> analyze_rate;
  // Whether analyze_rate() has its answer without measuring (cached, or measured in the
  // process). Empty: treated as known.
  std::function<bool()> analyze_rate_known;
  double analysis_rate() const { return analyze_rate ? analyze_rate() : rates().analyze_s_per_entry; }
};

// An automatic plan on a machine whose engine rates are not known uses the defaults when its
// chosen plan, priced with them, costs less than kRateMeasurementFloorSeconds at
// kPessimisticRates times that price (plan_eigs). The floor is below the measurement's cost on
// every host seen (0.6–1.3 s: docs/performance.md); the factor covers the defaults' distance
// from the measured rates (the geometric middle of two hosts up to 5x apart: within ~2.5x of each).
constexpr double kRateMeasurementFloorSeconds = 0.3;
// The least the ordering rate alone costs to measure (engine_analyze_rate: 10–45 ms seen).
constexpr double kAnalysisRateMeasureSeconds = 0.01;
constexpr double kPessimisticRates = 4.0;

// Whether an AMD ordering of `lower_entries` misses `budget` even misguessed at the fastest rate
// any host has (kAmdMisguess × kFastestAnalyzeSecondsPerEntry): then no rate needs measuring.
inline bool ordering_over_at_any_rate(double lower_entries, double budget) {
  return kAmdMisguess * kFastestAnalyzeSecondsPerEntry * lower_entries > budget;
}

// Whether the certificate's symbolic analysis is run for `budget` (the plan and the verification
// use this one rule): not where the ordering misses the budget at any rate, nor, where
// `need_rate` and no cache has this machine's ordering rate, when measuring it costs more than
// the budget (kAnalysisRateMeasureSeconds); else where kAmdMisguess times its guess fits.
inline bool analysis_fits(const PlanProbes& probes, double lower_entries, double budget, bool need_rate) {
  if (ordering_over_at_any_rate(lower_entries, budget)) return false;
  const bool rate_at_hand = !probes.analyze_rate_known || probes.analyze_rate_known();
  if (need_rate && !rate_at_hand && budget < kAnalysisRateMeasureSeconds) return false;
  return kAmdMisguess * probes.analysis_rate() * lower_entries <= budget;
}

// Seconds as the plan's reasons print them ("0.057 s", "1.72 s", "110 s").
std::string secs(double s);

// Per-apply cost model of A, from two timed applies: t(c) = t_a + c·t_col.
struct ApplyModel {
  double t_a = 0.0;       // the matrix part of one apply
  double t_col = 0.0;     // one more column (≈ 16·n bytes of X and Y)
  double t_outer = 0.0;   // fixed latency of one outer iteration (launches, small solves, fetch)
  double t_step = 0.0;    // fixed latency of one filter step beyond the apply (recurrence launch)
  // Column units (t_col) of one filter column-step: 3 for the apply and the recurrence's passes;
  // 1.5 where the step is fused on the GPU (cur gathered, next read and written: 24·n bytes
  // against the apply's 16·n; H200, lap3d:100 k = 16: ~10 µs a column-step against ~32 priced
  // unfused, so the prediction was 2.7× the solve).
  double step_col = 3.0;
  // Host only: seconds per word of single-column dense work against a basis (the spectral
  // probe's Gram–Schmidt, measured: its seconds beyond the applies over the words it moved,
  // SpectralProbe::dense_words); 0 = not measured. (Dividing by the full-reorthogonalization
  // count 2·n·s·(s + 1) after the probe went local made it 5–10× too small: host shift-invert
  // solves were predicted at half their time.)
  double t_word = 0.0;
  // Host only, where the filter runs by rows: seconds of one filter step on the whole block
  // (`step_block` columns), timed at that width (PlanProbes::step_seconds); 0 = not measured.
  // It replaces t_a + step_col·m·t_col for the filter: the 8-column apply does not see the block
  // leave the cache (gen:rgg:40000, 48 columns: 8.3–8.8 ns a row-column measured against
  // 1.8 priced from 8 columns; 2-core CPU, 2026-11-30).
  double t_filter_step = 0.0;
  std::int64_t step_block = 0;
  // Host only: the dense work of one outer iteration (orthonormalization, Rayleigh–Ritz, the
  // residuals) on an n × m block, n·(t_dense_nm·m + t_dense_nm2·m²) seconds; 0 = the device model
  // (11·m·t_col + t_outer).
  double t_dense_nm = 0.0, t_dense_nm2 = 0.0;
};
ApplyModel apply_model(double t1, double tw, std::int64_t w, Backend backend, std::int64_t n);
// Two n × cols blocks a plan may time at the block's width: up to 256 MB (past it both widths
// stream from memory, where the 8-column apply's rate holds; the pages' first touch alone costs
// ~1 ms a MB on the 2-core CPU).
inline bool timed_block_fits(std::int64_t n, std::int64_t cols) {
  return 16.0 * static_cast<double>(n) * static_cast<double>(cols) <= 256e6;
}
// The host's part of the apply model (m: the filter's block): the filter step timed at the
// block's width (probes.step_seconds; unfused, 1.5 applies at that width) where `filter` (a
// standard problem whose block fits), and the dense outer iteration per thread.
void host_apply_model(ApplyModel& am, const PlanFacts& f, const PlanProbes& probes, std::int64_t n,
                      std::int64_t m, bool filter);
// The error reduction the filter's degree is priced for (sgn = +1 smallest, −1 largest): tol for
// the norm test, else tol·|λ₁|/‖A‖ at the wanted end, no less than the zero floor's 8u.
double filter_reduction(const SpectralProbe& probe, const EigsOptions& opt, double sgn);

// Predictions (seconds), exposed for the tests and the benchmark.
double predict_chebyshev_seconds(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                 double rel_gap, const ApplyModel& m, std::string* detail = nullptr);
// A trace line (TCSOLVE_TRACE) with the gap's sources at the wanted end (Â = sgn·A): the power
// law's fit, the interpolated counting function, the probe's first node and its count, the bounds.
void trace_gap_sources(const SpectralProbe& probe, double sgn, std::int64_t k, std::int64_t m, double rel_gap);
// The filter re-check's degree at a relative gap (recheck.cpp's formula, 2 columns); past
// kFilterRecheckMaxDegree (recheck.hpp) the run does the deflated re-check instead, about a solve.
double filter_recheck_degree_at(std::int64_t n, double rel_gap);
double predict_filter_recheck_seconds(std::int64_t n, std::int64_t k, double rel_gap,
                                      const ApplyModel& m);
// The filter on the ladder (chebyshev.cpp) against the same solve all in fp64: a share of its
// filters on the fp32 rung (all but the last where the wanted end is large against ‖A‖, the
// first only elsewhere), whose steps take about 0.7 of the fp64 step's time in their bandwidth
// parts (A's values and the blocks in fp32; H200: 0.63 on elast3d:64's blocks, 0.73 on
// lap3d:100's fused CSR step, per column-step) at the same launch latency (the apply's first
// 2·t_step are latency, not bytes), plus two block passes and two launches per fp32 filter (the
// residual form's R̂ and the final Y = X·q(Θ) + Z).
struct LadderPrice {
  double fp64_s = 0.0, ladder_s = 0.0, fp32_share = 0.0;
};
LadderPrice price_chebyshev_ladder(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                   double rel_gap, const ApplyModel& m, bool wanted_end_large);
// 8-byte words one single-vector Lanczos step's Gram–Schmidt moves on the host (plan.cpp).
double host_lanczos_step_words(std::int64_t n, std::int64_t basis, std::int64_t keep);
// Seconds per 8-byte word of a host pass over a basis of n × basis: the probe's rate (m.t_word)
// while the basis fits the cache, else at least the timed apply's stream rate t_col/(2n).
double host_basis_word_seconds(std::int64_t n, std::int64_t basis, const ApplyModel& m);
// Single-vector thick-restart Lanczos on A (host, basis 2k + 2), offered where the probe's power
// law gives no gap (isolated extreme eigenvalues) and priced there at 0.35·D applies, D the
// Chebyshev degree of the same (fallback) gap: measured 0.2–0.6·D on 1138_bus, 662_bus and
// dwt_2680 largest (0.35: their geometric middle; 0.7 until 2026-11-26 priced every one of the
// bus matrices 3.5–11× over their measured solve), against 4–15·D on PDE-like ends
// (gen:lap2d:100, lap3d:20/30, crack, bcsstk21 largest), where it is not offered (2-core CPU,
// k = 10). `interpolated`: rel_gap read off the probe's counting function (interpolated_gap),
// not the fallback: 3.5·(0.35·D + 2k) applies (53 shared-matrix and family rows, k = 1, 6, 32
// largest: 1–8× the unscaled count, middle 2.5–4.5; gen:rgg:40000, 32 largest, 336–421 against
// 88–91 unscaled; 2-core CPU, 2026-11-30).
double predict_lanczos1_seconds(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                                double rel_gap, const ApplyModel& m, std::string* detail = nullptr,
                                bool interpolated = false);
double predict_dense_seconds(std::int64_t n, const EngineRates& r, bool all_pairs);
// Setup (analysis + factorization) and solve (block solves, dense Lanczos work) of shift-invert.
void predict_shift_invert_seconds(std::int64_t n, std::int64_t k, const SymbolicAnalysis& sym,
                                  double lower_entries, const EngineRates& r, const ApplyModel& m,
                                  Backend backend, double* setup_s, double* solve_s,
                                  std::string* detail = nullptr);
// The Sylvester certificate: one count past the k-th value for an end of the spectrum (a second
// where it has copies), two for `nearest` (the interval's ends; two more on ties).
double predict_certificate_seconds(const SymbolicAnalysis& sym, double lower_entries,
                                   const EngineRates& r, bool nearest);

// n-vectors of workspace the iteration of `method` holds for k pairs (the apps' memory estimate;
// the driver's fit_workspace shrinks a basis or width to a limit with the same formulas):
//   chebyshev 3·m + 2k (m = chebyshev_block), lanczos 2·(basis + b) + 2·max(b, k),
//   lobpcg 10·(k + guard), dense 0 (host). automatic: chebyshev for standard problems and lobpcg
//   for generalized ones, the planner's usual choice on the GPU (shift-invert's basis is smaller).
std::int64_t workspace_vectors(EigsMethod method, std::int64_t n, std::int64_t k,
                               std::int64_t block_size, bool generalized);

struct EigsPlan {
  PlanEstimate chosen;
  std::vector<PlanEstimate> rejected;  // priced alternatives, cheapest first
  std::vector<std::string> unpriced;   // alternatives not priced, each with why
  // The escalation (auto only): the plans the driver goes on with, in order, when the chosen one
  // ends without convergence (escalation_plans); each resolved (run), priced where it was.
  std::vector<PlanEstimate> escalation;
  std::string escalation_line;         // the escalation and its budget, for method_reason
  // A Chebyshev plan with shift-invert priced behind it: the filter stops when its measured
  // convergence predicts more than fallback_budget_s (1.5x the fallback's whole prediction).
  std::optional<PlanEstimate> fallback;
  double fallback_budget_s = 0.0;      // remaining-time threshold that triggers the fallback
  FloorOutlook outlook;                // the rounding floor foreseen (auto plans)
  double sigma = 0.0;
  bool predicted = false;              // chosen by predicted cost
  std::string reason;                  // method_reason
  double seconds = 0.0;                // planning time (probe, timed applies, analysis)
  // What the planner measured, for the steps to reuse.
  std::optional<SpectralProbe> probe;
  std::optional<SymbolicAnalysis> symbolic;
  std::optional<ApplyModel> applies;
  // The host engines' rates the plan was priced with (the verification prices its certificate
  // with them): known, measured, or the defaults where measuring could not pay (source says).
  std::optional<EngineRates> rates;
  bool rates_are_defaults = false;     // `rates` are the built-in defaults, not this machine's
  double rel_gap = 0.0;                // the probe's relative gap at the wanted end (0: none)
};

struct PlanMemo {
  std::optional<SpectralProbe> probe;
  std::map<std::int64_t, double> apply_seconds;  // columns → seconds of one apply
  std::map<std::int64_t, double> step_seconds;   // columns → seconds of one filter step by rows
  std::optional<SymbolicAnalysis> symbolic;
};

// Auto solves densely (forced, nothing measured) a matrix with n ≤ 400, or n ≤ 4000 with
// 3k + 32 > n (a Krylov basis would be about as large as the matrix).
bool dense_by_size(const PlanFacts& facts, std::int64_t k);

// Throws InvalidArgument for impossible requests (certify without a factorization, a method that
// cannot serve the problem), and WorkspaceDoesNotFit when the chosen method's smallest workspace
// exceeds EigsOptions::workspace_columns.
EigsPlan plan_eigs(const PlanFacts& facts, const EigsOptions& opt, const PlanProbes& probes);

// The run's shape for plan `e` (RunParams): the caller's block, basis and limit, the plan's
// block and ladder, and the workspace fitted to EigsOptions::workspace_columns (Chebyshev's width
// or the Lanczos basis shrunk; below the method's minimum: WorkspaceDoesNotFit).
RunParams resolve_run(const PlanFacts& facts, const EigsOptions& opt, const PlanEstimate& e,
                      bool priced_ladder);

// Escalation (eigs.hpp): the plans the driver goes on with, in order, when the chosen one ends
// without convergence (auto only): shift-invert (smallest, with a factorization that fits the
// memory), dense (n ≤ 4000, matrix form), then the methods without a transformation not chosen —
// these the driver skips after a stop at the rounding floor (no iteration on A gets below it).
// Each resolved (run); the priced ones keep their prediction.
std::vector<PlanEstimate> escalation_plans(const PlanFacts& facts, const EigsOptions& opt,
                                           const EigsPlan& plan);

}  // namespace tcsolve
