// Measured speed of the host sparse direct engines on this machine: what the eigs planner
// (solvers/eigs/plan.hpp) needs to price shift-invert (analysis, factorization, block solves) and
// the Sylvester certificate (a MUMPS LDLᵀ) before doing any of them.
//
// Model (fitted on three generated problems, a small 2D, a 2D and a 3D Laplacian, ~0.2–0.5 s once):
//   analysis  t = entries(lower S) · analyze_s_per_entry
//   factor    t = flops · factor_s_per_flop + nnz(L) · factor_s_per_entry   (CHOLMOD LLᵀ)
//   solve     t = nnz(L) · (per_entry + cols · per_entry_col) (one block of cols; each pair
//             fitted to solves of 1 and of 16 columns). Supernodal factors: the pair of the 2D
//             sample (narrow fronts) and of the 3D one (wide fronts: the dense blocks run at
//             BLAS-3 speed), interpolated geometrically in log(flops / nnz(L)), the mean front
//             width's proxy, between the samples' own ratios and clamped at them (2-core CPU,
//             2026-12-01: the 2D pair alone priced 3-D factors' solves at 3–5× their time: lap3d:30
//             16 columns 82.8 ms against 22.8, gen:stiff:12:74 26.3 against 6.2, elast3d:20 241
//             against 52; bench/shift_invert/metis_fill). Simplicial factors (below
//             kSimplicialBelowFlops) have coefficients of their own and a per-row part,
//             n · (per_row + cols · per_row_col): the permutation, the diagonal and the copies of
//             the block, which dominate thin factors (graphs of roads: nnz(L) ≈ 3n; luxembourg's
//             Laplacian, 2-core CPU: 1.28 ms for one column against 0.27 ms from nnz(L) alone).
//             Fitted on two simplicial problems, a small 2D Laplacian and a long 1D chain.
//   inertia   t = inertia_call_s + n · inertia_s_per_row + inertia_ratio · (analysis + factor)
//             (MUMPS, factors dropped; the call's fixed cost from a 64-row problem: 1–1.5 ms a
//             count on the 2-core CPU, the whole count on a 420-row diagonal matrix; the per-row
//             part, MUMPS's cost per front of the elimination tree, from a 20000-row chain: a
//             3000-row chain counts in 5.1 ms where analysis and factor priced 2.4 ms, 2-core CPU)
// flops and nnz(L) come from analyze_factor() (factor/sparse_factor.hpp).
//
// Cache: measured once per machine and kept in $TCSOLVE_CACHE_DIR, else $XDG_CACHE_HOME/tcsolve,
// else $HOME/.cache/tcsolve (file engine-rates-v8.txt, one line per machine key: host name, cores
// and the engines' thread settings). TCSOLVE_NO_RATE_CACHE=1 measures in every process and writes
// nothing. A cache that cannot be read or written is ignored (the rates are then measured).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "factor/sparse_factor.hpp"

namespace tcsolve {

// A floor under any host's AMD ordering: seconds per entry of the lower triangle at 1e8 entries a
// second. The measured rates are 1.2–1.5e-7 (2-core development VM) and 2.6–3.1e-7 (the H200
// machine's host), and the ordering has come in at 0.44–2.4× its calibrated guess
// (solvers/eigs/plan.hpp), so the floor is 5× below the fastest seen. A decision that rejects an
// analysis even at this speed needs no measured rates: the planner and the verification then
// skip the one-time measurement (~1 s on a fresh machine's first run).
constexpr double kFastestAnalyzeSecondsPerEntry = 1e-8;

// The defaults (a fresh machine's small jobs are priced with them: solvers/eigs/plan.hpp) are the
// geometric middle of the two hosts measured on 2026-11-27 (docs/performance.md): the 2-core
// development VM and the H200 machine's 16-core host, whose rates differ by up to 5x.
struct EngineRates {
  double analyze_s_per_entry = 1.6e-7;
  double factor_s_per_flop = 1e-10;
  double factor_s_per_entry = 5e-8;
  double solve_s_per_entry = 2e-9;        // narrow fronts (the 2D sample)
  double solve_s_per_entry_col = 1.2e-9;
  double wide_solve_s_per_entry = 1.4e-9;  // wide fronts (the 3D sample)
  double wide_solve_s_per_entry_col = 4e-10;
  double narrow_flops_per_entry = 93.0;    // the samples' flops / nnz(L) (lap2d 160, lap3d 22)
  double wide_flops_per_entry = 440.0;
  double simplicial_solve_s_per_entry = 4.5e-10;
  double simplicial_solve_s_per_entry_col = 3e-10;
  double simplicial_solve_s_per_row = 0.0;
  double simplicial_solve_s_per_row_col = 6e-9;
  double inertia_ratio = 2.0;
  double inertia_call_s = 1e-3;
  double inertia_s_per_row = 1.5e-6;
  std::string source = "defaults (not measured)";

  double analyze_seconds(double lower_entries) const { return lower_entries * analyze_s_per_entry; }
  double factor_seconds(const SymbolicAnalysis& s) const {
    return s.flops * factor_s_per_flop + s.factor_entries * factor_s_per_entry;
  }
  // One block solve of `cols` columns through a factor of n rows and these entries whose
  // factorization costs `flops` (which decides its form).
  double solve_seconds(double factor_entries, double cols, double flops, double n) const {
    return flops < kSimplicialBelowFlops
               ? factor_entries * (simplicial_solve_s_per_entry + cols * simplicial_solve_s_per_entry_col) +
                     n * (simplicial_solve_s_per_row + cols * simplicial_solve_s_per_row_col)
               : factor_entries * supernodal_solve_s_per_entry(flops / std::max(1.0, factor_entries), cols);
  }
  // Seconds per factor entry of a supernodal block solve of `cols` columns at this front width.
  double supernodal_solve_s_per_entry(double flops_per_entry, double cols) const {
    const double narrow = solve_s_per_entry + cols * solve_s_per_entry_col;
    const double wide = wide_solve_s_per_entry + cols * wide_solve_s_per_entry_col;
    if (!(wide > 0) || !(narrow > 0) || !(wide_flops_per_entry > narrow_flops_per_entry) ||
        !(flops_per_entry > narrow_flops_per_entry))
      return narrow;
    const double w = std::min(1.0, std::log(flops_per_entry / narrow_flops_per_entry) /
                                       std::log(wide_flops_per_entry / narrow_flops_per_entry));
    return narrow * std::pow(wide / narrow, w);
  }
  double inertia_seconds(const SymbolicAnalysis& s, double lower_entries) const {
    return inertia_call_s + s.n * inertia_s_per_row +
           inertia_ratio * (analyze_seconds(lower_entries) + factor_seconds(s));
  }
};

// The rates of this machine: from the cache, or measured now (then cached). Thread-safe; the
// first call pays the measurement. Throws NotCompiled in a build without the engines.
const EngineRates& engine_rates();

// The rates without measuring: the cache's, or those engine_rates() measured in this process;
// null when neither is at hand (a fresh machine). Thread-safe.
const EngineRates* known_engine_rates();

// analyze_s_per_entry alone, for decisions that need only the ordering's price (the planner's and
// the verification's bets on an analysis): from the cached full rates, else from its own cache
// entry (key "<machine>|analysis"), else measured on the full measurement's two supernodal samples'
// AMD analyses alone (~10–30 ms against ~0.5–1.1 s for all the rates) and cached.
double engine_analyze_rate();

// Whether engine_analyze_rate() would answer without measuring: a cached rate (full or alone), or
// one measured in this process.
bool engine_analyze_rate_known();

// Measures without the cache (the benchmark and the tests call it directly).
EngineRates measure_engine_rates();

namespace detail {
// The factorization's coefficients (t = flops·a + entries·b) from a 2D sample (t2: entries
// dominate) and a 3D one (t3: flops dominate), both non-negative, a at least a quarter of the 3D
// sample's whole rate t3/flops3 (a noisy fit had left it ~70x too small).
void factor_coefficients(double t2, double flops2, double entries2, double t3, double flops3,
                         double entries3, double* a, double* b);
// Replaces `key`'s line of the cache file `file` (in `dir`, created when missing) by `r`, keeping
// the other keys' lines. Safe in a folder other users can write: the file is read without
// following a symbolic link, the new text goes to a temporary of random name created with
// O_CREAT | O_EXCL | O_NOFOLLOW, and rename(2) replaces the entry `file` itself (a link planted
// there or at any temporary name never redirects the write). Failures are ignored (no cache).
void write_rate_cache(const std::string& dir, const std::string& file, const std::string& key,
                      const EngineRates& r);
}  // namespace detail

}  // namespace tcsolve
