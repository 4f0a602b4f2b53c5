// Chebyshev-filtered subspace iteration (Zhou & Saad 2007; the ChASE variant of Winkelmann, Springer
// & Di Napoli 2019) for k extreme eigenpairs of a symmetric A (standard problems), written once
// against LinearOperator<double> and the backend-resident DenseBlockOps calls.
//
// Work on Â = s·A (s = +1 for the smallest eigenvalues, −1 for the largest), so that the wanted
// end is always the lower one. Block V of m = k + guard columns: locked (converged) columns first,
// then the w active ones. One outer iteration:
//   1. filter   Y ← p_d(Â)·Y on the active columns: the scaled Chebyshev recurrence of degree d on
//               the damped interval [c, b] (c = largest active Ritz value, b = upper bound of Â's
//               spectrum), normalized at a0 ≤ λmin(Â):  e = (b − c)/2, ce = (b + c)/2,
//               σ₁ = e/(a0 − ce), Y₁ = (σ₁/e)(Â − ce)Y₀,
//               σⱼ₊₁ = 1/(2/σ₁ − σⱼ),  Yⱼ₊₁ = (2σⱼ₊₁/e)(Â − ce)Yⱼ − σⱼσⱼ₊₁·Yⱼ₋₁.
//               Each column i has its own even degree dᵢ (from its Ritz value θᵢ and residual rᵢ:
//               the residual shrinks by ρᵢ^(−d), ρᵢ = |tᵢ| + √(tᵢ² − 1), tᵢ = (θᵢ − ce)/e; capped
//               at max_degree, non-decreasing over the block so that step j runs on a suffix of
//               the columns); guard columns take the largest wanted degree.
//   2. orthonormalize against the locked columns and within the block: BCGS-PIP twice
//      (pip_factor: one Gram [L Y]ᵀY and one block update [L Y]·M per pass, Cholesky on the
//      device), a third pass when a pass fell back, SVQB with refill on the host if that fails;
//   3. Rayleigh-Ritz on the active block: AQ = A·Q, H = s·QᵀAQ, H = YΘYᵀ (cuSOLVER syevd/syevj),
//      X = Q·Y, AX = AQ·Y, rᵢ = ‖AXᵢ − λᵢXᵢ‖ (AQ is applied explicitly each iteration, so these
//      are residuals of the current vectors up to the rounding of two GEMMs);
//   4. lock the converged prefix of the active Ritz pairs (ascending θ), stop when k pairs are
//      locked and no active Ritz value lies below the k-th locked one.
// Before a pair is reported converged, A is applied once more to the k chosen vectors and the
// test is repeated on those true residuals (pairs failing it are unlocked and the iteration goes
// on). Convergence test (as LOBPCG/Lanczos): ‖A·x − λ·x‖ ≤ tol·(‖A‖ + |λ|)·‖x‖.
// Spectrum bounds: `lanczos_steps` steps of single-vector Lanczos with full reorthogonalization
// (b = θmax + |βₛ·yₛ| at the unwanted end, min'd with opt.a_norm when given; a0 = θmin).
// The code: a class of these named steps, each testable alone (bounds, filter, orthonormalize,
// rayleigh_ritz, residuals, lock, restart, check), solvers/chebyshev/subspace_iteration.hpp.
//
// Host round trips: one fetch per outer iteration (Ritz values, residual norms, the
// orthonormalization status: 3m + 6 doubles) plus one after the orthonormalization passes
// (status only) — an outer iteration holds up to max_degree operator applies; nothing else
// synchronizes unless apply_order == synchronize.
//
// Memory: 3 blocks of n × m (two ping-pong bases that both hold the locked columns, and the
// operator output W; on the host with a fused step W is n × 2·⌈m⌉₄, the filter's two iterates by
// rows), small m × m matrices, and n × (lanczos_steps + 1) during the bounds.
//
// Traffic per outer iteration with w active columns, l locked, d = mean degree, 8-byte words:
//   filter:  d applies of A on ≤ w columns (A once + 2·n·w per apply) and d recurrence passes
//            (3 reads + 1 write of n × w: 4·n·w per step, 3·n·w for the first);
//   ortho:   2 passes × (Gram reads n·(l + 2w), update reads n·(l + w), writes n·w) = n·(4l + 8w);
//   RR:      1 apply on w columns, Gram 2·n·w, X = Q·Y and AX = AQ·Y 2 × 2·n·w, residuals 2·n·w
//            (= 8·n·w) — so a filter of degree d costs A·(d + 1) + n·w·(6d + 16) + 4·n·l words,
//            dominated by the filter's 6·n·w per step (2 in the apply, 4 in the recurrence) for
//            the degrees used here (d ≈ 10–36). The benchmark (bench/solvers/solver_bench.cpp)
//            prints the time per filter step against this budget at the measured copy bandwidth.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "spmm/chebyshev_step.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

// What a solve did (filled when ChebyshevOptions::stats is set): the counts behind the traffic
// budget, for the benchmark.
struct ChebyshevStats {
  std::int64_t block = 0;             // m
  double upper = 0.0, lower = 0.0;    // damped interval end b and normalization point a0 (in Â)
  std::int64_t outer_iterations = 0;
  std::int64_t applies = 0;           // operator applies (bounds, filter, Rayleigh-Ritz, checks)
  std::int64_t filter_applies = 0;    // of them in the filter
  std::int64_t filter_columns = 0;    // columns multiplied in the filter (= recurrence column-steps)
  std::int64_t ortho_fallbacks = 0;   // host SVQB orthonormalizations
  double dense_budget_words = 0.0;    // 8-byte words the dense work must move (chebyshev.hpp budget)
  double apply_seconds = 0.0;         // only with keep_history / on_iteration (stream marks)
  double dense_seconds = 0.0;
  // Wall-clock phases: workspace, spectrum bounds, first Rayleigh-Ritz, the loop, final checks
  // (including the host copy of the vectors).
  double seconds_setup = 0.0, seconds_bounds = 0.0, seconds_init = 0.0, seconds_loop = 0.0,
         seconds_finish = 0.0;
  // The last filter's cut c (in Â = s·A; ≈ λ_m at the end) and the filter steps the slowest
  // wanted column went through (Σ of its degrees): the re-check's filter is sized from them.
  double cut = 0.0;
  double wanted_steps = 0.0;
  bool stopped = false;  // ChebyshevOptions::keep_going returned false
  std::int64_t projections = 0;  // filter steps that projected out the locked columns
  // The precision ladder (ChebyshevOptions::filter_precision): filter column-steps and seconds
  // (stream-timed per filter) on each rung, and why and where it climbed for good (-1: never).
  std::int64_t steps_fp32 = 0, steps_fp64 = 0;
  double seconds_fp32 = 0.0, seconds_fp64 = 0.0;
  // Host clock per outer iteration, summed: the filter with the orthonormalization after it (up
  // to its fetch), and Rayleigh-Ritz (up to its fetch). With the filters' stream marks they split
  // seconds_loop into filters, orthonormalization, Rayleigh-Ritz and the host's bookkeeping.
  double seconds_filter_ortho = 0.0, seconds_rayleigh_ritz = 0.0;
  std::int64_t filters_fp32 = 0, filters_fp64 = 0;
  std::int64_t climbed_at = -1;
  std::string climb_reason;
  std::string fp64_reason;  // why the last fp64 filter before a climb was kept off fp32
};

// Spectrum bounds of A for the filter, when the caller already has them (a SpectralProbe): the
// solver then skips its own Lanczos steps. upper_bound ≥ λmax(A), lower_bound ≤ λmin(A) (safe
// ends), lower/upper: the extreme Ritz values, norm = max |Ritz value|.
struct ChebyshevBounds {
  double lower = 0.0, upper = 0.0, lower_bound = 0.0, upper_bound = 0.0, norm = 0.0;
};

// After each outer iteration: what is done and what the degree model says is left.
struct ChebyshevProgress {
  std::int64_t outer = 0;
  double filter_steps = 0.0;  // filter steps so far (the slowest wanted column's degrees)
  double steps_left = 0.0;    // the model's steps still needed by the slowest wanted column
  std::int64_t locked = 0;
  double seconds = 0.0;       // since the solve began
};

struct ChebyshevOptions {
  // Block width m (k wanted + guard columns). 0: k + opt.guard when opt.guard ≥ 0, else
  // k + max(8, ⌈k/2⌉), rounded up to a multiple of 8 and capped at n/2.
  std::int64_t block = 0;
  // Cap of the per-column degree near convergence (even). Cap while the slowest wanted column
  // still needs more than 4·max_degree_long steps: (steps still needed)/2 between max_degree and
  // max_degree_long (long filters early, fewer Rayleigh-Ritz rounds; short ones at the end,
  // little overshoot). 48/150 (was 36/100), swept on the H200 over eight eigs rows
  // (docs/performance.md, 2026-11-26): lap3d:100 k = 16 largest 0.165 → 0.143 s (19 → 13 outer
  // iterations, every filter still on the fp32 rung), lap2d:1000 k = 32 2.28 → 1.94 s, no row
  // slower beyond noise; 44 gave 0.153 s there, 64 0.212 s (its filters leave the fp32 rung).
  int max_degree = 48;
  int max_degree_long = 150;
  int min_degree = 4;    // floor (even)
  int lanczos_steps = 25;
  // Multiplies the degree the residual model asks for (> 1: fewer outer iterations, a little
  // more filtering).
  double degree_margin = 1.25;
  // The model aims at tolerance / overshoot, so that a column just above the tolerance still
  // gets a real filter instead of a few more small ones.
  double overshoot = 10.0;
  // Guard columns (beyond k) run max_degree (else the largest degree of the wanted columns).
  bool guard_max_degree = false;
  ApplyOrder apply_order = ApplyOrder::events;
  ChebyshevStats* stats = nullptr;  // optional output
  const ChebyshevBounds* bounds = nullptr;  // given bounds (no Lanczos steps of its own)
  // Called after every outer iteration; returning false stops the solve (status not_converged,
  // stats->stopped): the eigs driver's budget when another plan is ready to take over.
  std::function<bool(const ChebyshevProgress&)> keep_going;
  // Convergence test ‖A·x − λ·x‖ ≤ tol·(test_a + |λ|·test_b)·‖x‖ when test_a ≥ 0 (the driver maps
  // its rel/norm/abs tests here); otherwise test_a = ‖A‖, test_b = 1. opt.a_norm keeps bounding
  // the filter interval either way.
  double test_a = -1.0, test_b = 1.0;
  // Optional: the filter's steps W = A·Y, Y' = α·W + β·Y + γ·Y' as one fused kernel on the same A
  // (spmm/chebyshev_step.hpp), in ops.space() on ops.stream(). It must be A itself (not a
  // deflated or shifted operator); the Rayleigh-Ritz products still go through `a`.
  const ChebyshevStep* fused_step = nullptr;
  // The precision ladder: the working precision of the filter's first rung. fp64: every filter
  // in fp64. fp32 (needs fused_step): a filter runs on fp32 blocks in residual form (R-ChFSI,
  // Kodali, Ramakrishnan & Motamarri 2025): with X the Ritz vectors, Θ their Ritz values and
  // R̂ = Â·X − X·Θ (fp64, from the Rayleigh-Ritz products), Yⱼ = X·qⱼ(Θ) + Zⱼ where qⱼ is the
  // scaled Chebyshev polynomial of the filter, and
  //   Z₁ = (σ₁/e)·R̂,  Zⱼ₊₁ = (2σⱼ₊₁/e)(Â − ce)Zⱼ − σⱼσⱼ₊₁·Zⱼ₋₁ + (2σⱼ₊₁/e)·R̂·qⱼ(Θ),
  // Y_d = X·q_d(Θ) + Z_d in fp64. Zⱼ is as small as the residual, so fp32 rounding in it is
  // relative to the residual, not to Y: the residuals keep falling below fp32's unit roundoff.
  // A filter takes the fp32 rung when (a) the block's own amplification, ρ(θmin)^d/ρ(θ_slow)^d,
  // stays below 1e5 (fp32 rounding along the most amplified directions would otherwise bury
  // the slowest wanted column), the slowest wanted |θ| is at least ‖A‖/4 (below, A·x of a
  // wanted vector cancels in fp32 sums: the smallest end of a Laplacian) and no locked-column
  // projection falls inside it, (b) the Ritz vectors' A·X is at hand (not right after an
  // unlock). The solver climbs to fp64 for good after three fp32 filters that did not bring the
  // slowest wanted residual below 0.9 of its best. Rayleigh-Ritz, the residuals that decide
  // convergence and the final check are fp64 on the original A whatever the rung. Bytes per filter column-step: fp64 24·n (gather, read, write), fp32
  // 16·n (gather, read, write, read R̂), plus A; per fp32 filter 2 passes of 20·n (R̂ in, Y out).
  Precision filter_precision = Precision::fp64;
};

// Standard problems only (B = I), Which::smallest or Which::largest. opt.k, tol, max_iterations
// (outer iterations), seed, a_norm, keep_history, on_iteration and guard are used; the other
// EigenOptions fields are ignored. Throws InvalidArgument for k < 1, k + guard > n/2, another
// `which`, or an operator outside ops.space().
EigenResult chebyshev_subspace(const LinearOperator<double>& a, DenseBlockOps& ops,
                               const EigenOptions& opt, const ChebyshevOptions& copt = {});

// A priori cost of chebyshev_subspace, for the driver's `auto` (no operator applies). Input: the
// relative gap g = (λ_{m+1} − λ_k)/(λmax − λmin) at the wanted end (λ_k the k-th wanted
// eigenvalue, λ_{m+1} the first one outside the block of m columns). Model: the slowest wanted
// vector gains ρ = exp(acosh(1 + 2g/(1 − g))) per filter step, so it needs D = ln(4/tol)/ln ρ
// steps; the guard columns run D steps as well, the k wanted ones 0.6·D on average (they lock as
// they converge): the filter multiplies (m − k + 0.6·k)·D columns, times `calibration` (the
// cut starts far from λ_{m+1} and the degree model overshoots: measured/model = 1.3–1.9 on the
// H200 runs of docs/performance.md, 1.4 by default). Plus one Rayleigh-Ritz apply of m columns
// per outer iteration (D/max_degree + 2 of them), k for the final check and the Lanczos steps.
// Bytes: A (12·nnz + 8·n) once per apply, 6 words of n per filter column-step (apply in/out,
// recurrence), 20·n·m words per outer iteration (two BCGS-PIP passes and Rayleigh-Ritz).
// Time ≈ bytes/(0.75 × copy bandwidth) + 1 ms per outer iteration on the H200 runs.
struct ChebyshevCost {
  std::int64_t block = 0;         // m
  double total_degree = 0.0;      // D, filter steps of the slowest wanted column
  double column_applies = 0.0;    // columns multiplied by A (filter + Rayleigh-Ritz + checks)
  double outer_iterations = 0.0;  // D / max_degree, rounded up, + 2
  double bytes = 0.0;             // device-memory bytes moved, filter and dense work
};
ChebyshevCost chebyshev_cost(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                             double rel_gap, const ChebyshevOptions& copt = {},
                             std::int64_t guard = -1, double calibration = 1.4);

// The block width chebyshev_subspace uses for (n, k, guard) with these options.
std::int64_t chebyshev_block(std::int64_t n, std::int64_t k, std::int64_t guard,
                             const ChebyshevOptions& copt = {});

}  // namespace tcsolve
