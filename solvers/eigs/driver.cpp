// The eigs() driver (solvers/eigs/eigs.hpp): plan → set up → solve → verify → finish.
//
// Shift-invert (Op = T = (A − σB)⁻¹·B, B-self-adjoint, eigenvalues ν = 1/(λ − σ)): thick-restart
// block Lanczos (runs.cpp). A Ritz pair (ν, x) is verified on the purified vector x̂ = T·x/ν
// (ARPACK's mode-3 refinement), free of the ‖A‖·|λ − σ| amplification that x itself would carry;
// λ is the Rayleigh quotient and the true residual ‖A·x̂ − λ·B·x̂‖ is recomputed with A and B
// before anything is called converged.
#include "solvers/eigs/eigs.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/host_memory.hpp"
#include "core/trace.hpp"
#include "factor/shift_invert.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigs/certificate.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/eigs/plan.hpp"
#include "spmm/chebyshev_step.hpp"
#include "solvers/eigs/recheck.hpp"
#include "solvers/eigs/runs.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/spectral_probe.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve {

const char* to_string(ConvTest c) {
  switch (c) {
    case ConvTest::rel: return "rel";
    case ConvTest::norm: return "norm";
    case ConvTest::abs: return "abs";
  }
  return "?";
}

ConvTest parse_conv_test(const std::string& s) {
  if (s == "rel") return ConvTest::rel;
  if (s == "norm") return ConvTest::norm;
  if (s == "abs") return ConvTest::abs;
  throw InvalidArgument("convergence test '" + s + "': expected rel, norm or abs");
}

const char* to_string(Certified c) {
  switch (c) {
    case Certified::yes: return "yes";
    case Certified::no: return "no";
    case Certified::not_checked: return "not_checked";
  }
  return "?";
}

namespace eigs_detail {
namespace {

constexpr int kProbeSteps = 30;

void validate(const EigsOptions& opt, std::int64_t n) {
  if (opt.k < 1 || opt.k >= n)
    throw InvalidArgument("k = " + std::to_string(opt.k) + " must satisfy 1 <= k < n = " +
                          std::to_string(n));
  if (!(opt.tol > 0 && opt.tol < 1)) throw InvalidArgument("tol = " + g17(opt.tol) + ": expected 0 < tol < 1");
  if (opt.which == Which::nearest && !opt.has_sigma)
    throw InvalidArgument("which = nearest needs a shift sigma");
  if (opt.which == Which::largest_magnitude)
    throw InvalidArgument("which = largest_magnitude is internal; use nearest with sigma");
  if (opt.has_sigma && !std::isfinite(opt.sigma)) throw InvalidArgument("sigma must be finite");
  if (opt.block_size < 0 || opt.basis < 0 || opt.max_iterations < 0)
    throw InvalidArgument("block_size, basis and max_iterations must be >= 0");
  if (!opt.v0.empty()) {
    if (opt.v0.size() % static_cast<std::size_t>(n) != 0)
      throw InvalidArgument("v0: " + std::to_string(opt.v0.size()) + " values is not a whole number of "
                            "columns of n = " + std::to_string(n));
    // (a resumed run's block is GBs: checked on all host threads)
    if (const std::int64_t i = first_non_finite(opt.v0.data(), static_cast<std::int64_t>(opt.v0.size())); i >= 0)
      throw InvalidArgument("v0: non-finite value at row " + std::to_string(i % n) + ", column " +
                            std::to_string(i / n));
  }
}

// Shrinks Chebyshev's width or the Lanczos basis so that the iteration's n-vectors fit in
// opt.workspace_columns (EigsOptions); appends what it did to `why`.
void fit_workspace(EigsMethod method, std::int64_t n, std::int64_t k, EigsOptions& opt,
                   std::string& why) {
  const std::int64_t w = opt.workspace_columns;
  if (w <= 0 || method == EigsMethod::dense) return;
  const double col_bytes = 8.0 * static_cast<double>(n);
  auto refuse = [&](std::int64_t min_cols) {
    const double bytes = col_bytes * static_cast<double>(min_cols);
    char gib[32];
    std::snprintf(gib, sizeof gib, " (%.2f GiB)", bytes / 1073741824.0);
    throw WorkspaceDoesNotFit(
        static_cast<std::size_t>(bytes),
        std::string("out of GPU memory: ") + to_string(method) + " with k = " + std::to_string(k) +
            " needs at least " + std::to_string(min_cols) + " vectors of " + std::to_string(n) +
            " rows" + gib + " beside the matrix, room for " + std::to_string(w));
  };
  if (method == EigsMethod::chebyshev) {
    ChebyshevOptions co;
    if (opt.basis > k) co.block = opt.basis;
    const std::int64_t m0 = chebyshev_block(n, k, -1, co);
    if (3 * m0 + 2 * k <= w) return;
    const std::int64_t m = (w - 2 * k) / 3;
    if (m < k + 4) refuse(3 * (k + 4) + 2 * k);
    opt.basis = m;
    why += "; block width reduced from " + std::to_string(m0) + " to " + std::to_string(m) +
           " columns to fit the GPU memory";
  } else if (method == EigsMethod::lanczos) {
    const std::int64_t b = opt.block_size > 0 ? opt.block_size : default_lanczos_block(k);
    const std::int64_t m0 = opt.basis > 0 ? opt.basis : default_lanczos_basis(k, b);
    const std::int64_t fixed = 2 * b + 2 * std::max(b, k);
    if (2 * m0 + fixed <= w) return;
    const std::int64_t m = (w - fixed) / 2 / b * b;
    const std::int64_t m_min = b * ((k + 2 * b + b - 1) / b);
    if (m < m_min) refuse(2 * m_min + fixed);
    opt.basis = m;
    why += "; Lanczos basis reduced from " + std::to_string(m0) + " to " + std::to_string(m) +
           " columns to fit the GPU memory";
  } else {
    const std::int64_t need = 10 * (k + default_lobpcg_guard(k));
    if (need > w) refuse(need);
  }
}

// Final order, extended-precision refinement, tests, error bounds and the status (before the
// verification's verdict is folded in by the caller).
EigsResult finish(const Problem& s, const EigsOptions& opt, PairSet& p, RunOut& run, double sigma) {
  DenseBlockOps& ops = *s.ops;
  EigsResult r;
  r.n = s.n;
  r.conv = opt.conv;
  r.a_norm = s.a_norm;
  r.b_norm = s.b_norm;
  r.sigma = sigma;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  auto o = wanted_order(p.values, opt.which, sigma);
  PairSet q;
  q.x = reorder_columns(ops, p.x.view(), o);
  for (auto i : o)
    q.values.push_back(p.values[i]), q.rn.push_back(p.rn[i]), q.xn.push_back(p.xn[i]),
        q.rq_dev.push_back(p.rq_dev[i]);
  // ‖x_j‖² on the device; the block goes to the host when it is wanted, else only the columns
  // that need an extended-precision quotient.
  std::vector<double> x2(k);
  if (k) ops.column_norms(q.x.view(), x2.data());
  for (double& v : x2) v *= v;
  const std::vector<std::int64_t> refine = pairs_to_refine(s, opt.tol, q.values, x2);
  std::vector<double> some;  // the refined columns when the block stays on the device
  std::vector<const double*> cols(refine.size());
  if (opt.want_vectors && k) {
    resize_huge(r.vectors, static_cast<std::size_t>(s.n * k));
    ops.to_host(q.x.view(), r.vectors.data(), s.n);
    for (std::size_t i = 0; i < refine.size(); ++i) cols[i] = r.vectors.data() + refine[i] * s.n;
  } else if (!refine.empty()) {
    some.resize(s.n * refine.size());
    for (std::size_t i = 0; i < refine.size(); ++i) {
      ops.to_host(q.x.view().columns(refine[i], 1), some.data() + i * s.n, s.n);
      cols[i] = some.data() + i * s.n;
    }
  }
  trace_mark("eigs: vectors on the host");
  refine_rayleigh(s, cols, refine, x2, q.values, q.rn, q.rq_dev);
  trace_mark("eigs: extended-precision refinement");
  r.values = q.values;
  r.residual_norms = q.rn;
  const bool pass = test_pairs(s, opt, q.x.view(), q.values, q.rn, q.xn, r.residual_bounds);
  r.residual_norms = q.rn;
  r.values = q.values;
  r.error_bounds = error_bounds(s, q.values, q.rn, q.rq_dev);
  r.iterations = run.iterations;
  r.operator_applies = run.applies;
  r.history = std::move(run.history);
  r.status = pass ? SolverStatus::converged : run.status == SolverStatus::breakdown
                                                  ? SolverStatus::breakdown
                                              : run.status == SolverStatus::interrupted
                                                  ? SolverStatus::interrupted
                                                  : SolverStatus::not_converged;
  if (!pass) {
    // Pairs that failed the test but reached the rounding floor: the test cannot be met in
    // double precision without a spectral transformation; say so, with the accuracy reached.
    std::int64_t at_floor = 0, failing = 0;
    double worst = 0, worst_bound = 0, worst_floor = 0;
    bool norm_ok = true;
    for (std::int64_t j = 0; j < k; ++j) {
      if (r.residual_norms[j] <= r.residual_bounds[j]) continue;
      ++failing;
      const double fl = attainable_floor(q.values[j], q.xn[j], s);
      if (r.residual_norms[j] <= 4.0 * fl) {
        ++at_floor;
        if (r.residual_norms[j] > worst) worst = r.residual_norms[j], worst_bound = r.residual_bounds[j], worst_floor = fl;
      }
      norm_ok = norm_ok && r.residual_norms[j] <= bound_of(ConvTest::norm, opt.tol, q.values[j], q.xn[j], s);
    }
    if (at_floor > 0 && at_floor == failing && opt.conv != ConvTest::norm) {
      char b[600];
      std::snprintf(b, sizeof b,
                    "%lld pair(s) stopped at the rounding floor of double precision for this "
                    "matrix: residual %.3g, floor u*(|A| + |lambda|*|B|) = %.3g, while the %s test "
                    "asks for %.3g; the %s test cannot be met for these eigenvalues without a "
                    "spectral transformation: use --conv norm%s, or shift-invert (--sigma, or "
                    "auto with a factorization)",
                    static_cast<long long>(at_floor), worst, worst_floor, to_string(opt.conv),
                    worst_bound, to_string(opt.conv),
                    norm_ok ? " (these residuals pass it)" : "");
      r.reason = b;
    } else {
      r.reason = run.reason.empty() ? "a returned pair fails its true-residual test" : run.reason;
      if (r.status == SolverStatus::breakdown && s.b)
        r.reason += "; with a mass matrix a breakdown can also mean that it is not positive "
                    "definite (its Cholesky factorization checks that unless --no-factor)";
    }
  }
  p = std::move(q);
  return r;
}

// Seconds of one apply of `op` to `cols` random columns (warmed once, then timed: stream marks on
// the GPU, the host clock on the CPU).
double time_apply(const Problem& s, std::int64_t cols) {
  DenseBlockOps& ops = *s.ops;
  MultiVector<double> x = ops.allocate(s.n, cols), y = ops.allocate(s.n, cols);
  ops.fill_random(x.view(), 12345);
  auto run = [&] {
    if (s.foreign_operator) {
      ops.synchronize();
      s.aop->apply(x.view(), y.view());
      if (ops.space() == Space::device) device_synchronize();
    } else {
      ops.external_begin();
      s.aop->apply(x.view(), y.view());
      ops.external_end();
    }
  };
  run();
  if (ops.space() == Space::device) {
    const int a = ops.mark();
    run();
    const int b = ops.mark();
    return ops.elapsed_seconds(a, b);
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

// The planner's probe reorthogonalizes locally (spectral_probe.hpp): its bounds, quadrature and
// the plans chosen from them were the same on 26 shared-matrix rows (CPU) and 5 GPU rows, and its
// plan phase 2–3 ms shorter on 1M rows (H200). TCSOLVE_PROBE_FULL=1: the full one (A/B).
bool probe_full_reorthogonalization() {
  const char* e = std::getenv("TCSOLVE_PROBE_FULL");
  return e && std::atoi(e) != 0;
}

SpectralProbe run_probe(const Problem& s, std::uint64_t seed) {
  DenseBlockOps& ops = *s.ops;
  return spectral_probe(
      [&](MvView<const double> x, MvView<double> y) {
        if (s.foreign_operator) {
          ops.synchronize();
          s.aop->apply(x, y);
          if (ops.space() == Space::device) device_synchronize();
        } else {
          ops.external_begin();
          s.aop->apply(x, y);
          ops.external_end();
        }
      },
      ops, s.n, kProbeSteps, seed, probe_full_reorthogonalization());
}

ChebyshevBounds bounds_of(const SpectralProbe& p) {
  ChebyshevBounds b;
  b.lower = p.lower, b.upper = p.upper;
  b.lower_bound = p.lower_bound, b.upper_bound = p.upper_bound;
  b.norm = std::max(std::abs(p.lower), std::abs(p.upper));
  return b;
}

// The factorization of A − σB for shift-invert (or the LOBPCG preconditioner): σ below the
// spectrum for the smallest (0 when A − 0·B is positive definite, else lowered until the Cholesky
// factorization exists), or the given σ.
struct Factorized {
  std::unique_ptr<SparseFactor> factor;
  std::unique_ptr<ShiftInvertOperator> sinv;
  double sigma = 0.0;
  std::string desc, why;
};

// Whether A·1 = 0 to rounding: each row's sum within 8u·Σ|a_ij| of zero (a graph Laplacian's
// rows sum to exactly 0 for integer weights). An empty matrix does not count.
bool rows_sum_to_zero(const Csr<double>& a) {
  if (a.nrows == 0) return false;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double sum = 0.0, mag = 0.0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) sum += a.values[p], mag += std::abs(a.values[p]);
    if (!(std::abs(sum) <= 8.0 * kUnitRoundoff * mag)) return false;
  }
  return true;
}

Factorized factorize(const Problem& s, const EigsOptions& opt,
                     const std::function<const SpectralProbe*()>& get_probe,
                     const std::optional<SymbolicAnalysis>& analysis, const SpectralProbe* known_probe) {
  Factorized out;
  FactorOptions fo;
  fo.memory_limit_bytes = opt.factor_memory_limit;
  // The plan's AMD analysis of this pattern: its ordering is the factorization's own choice
  // unless METIS follows (CHOLMOD's default strategy), so it is not computed again (one AMD
  // pass fewer per factorization; every shift tried below shares it).
  if (analysis && analysis->perm && !analysis->metis_follows)
    fo.analysis = std::make_shared<const SymbolicAnalysis>(*analysis);
  // GPU triangular solves (cuSPARSE SpSM) lost their one-time trial to the host engine on every
  // factor measured (elast3d:24/40 on the H200: 1.2–2.3 s vs 0.8 s per 16-column block), and
  // the export and the trial cost seconds: host solves, staged through pinned memory.
  fo.exportable = false;
  if (!opt.has_sigma && opt.which == Which::smallest) {
    double sigma = 0.0;
    std::string tried;
    const double scale = s.a_norm * s.binv_norm;  // λ_min ≥ −‖A‖·‖B⁻¹‖
    int first = 0;
    // The plan's probe already holds a Ritz value of A below −1e-8·‖A‖ (far beyond rounding):
    // λmin < 0 is proven and the Cholesky factorization at σ = 0 would fail; start below the
    // probe's bound instead (as the loop does after that failure).
    if (known_probe && !s.b && known_probe->lower < -1e-8 * scale) {
      const double width = known_probe->upper_bound - known_probe->lower_bound;
      sigma = std::max(std::min(known_probe->lower_bound - 0.01 * width, -1e-8 * scale), -2.0 * scale);
      tried = " 0 (skipped: the probe's Ritz value " + g17(known_probe->lower) + " < 0 proves A indefinite)";
      first = 1;
    }
    // Every row of A sums to 0 (graph Laplacians, pure Neumann problems): A·1 = 0, so A − 0·B is
    // singular and a factorization at σ = 0 would be thrown away (fails or rcond < 1e-12). Start
    // just below 0, where the loop goes after that failure (crack's Laplacian on the 16-core
    // H200 host: the factorization at 0 was a third of its set-up).
    if (first == 0 && s.a && rows_sum_to_zero(*s.a)) {
      sigma = -1e-8 * scale;
      tried = " 0 (skipped: every row of A sums to 0, so A*1 = 0 and A is singular)";
      first = 1;
    }
    for (int attempt = first; attempt < 8; ++attempt) {
      bool indefinite = false;
      try {
        FactorOptions f2 = fo;
        f2.engine = FactorEngine::cholmod;
        out.factor = factor_shifted(*s.a, s.b, sigma, f2);
        // Nearly singular (κ(S) > 1e12, e.g. a graph Laplacian at σ = 0, whose last pivot is a
        // rounding error): T would have one eigenvalue ~1e12 times the others and its Lanczos
        // vectors would carry that direction into every pair. Shift below instead.
        if (sigma == 0.0 && out.factor->rcond() > 0 && out.factor->rcond() < 1e-12) {
          tried += " 0 (nearly singular: rcond " + fmt("%.2g", out.factor->rcond()) + ")";
          out.factor.reset();
        } else {
          break;
        }
      } catch (const SingularShift&) {
        tried += " " + g17(sigma) + " (singular)";
      } catch (const InvalidArgument&) {
        tried += " " + g17(sigma) + " (indefinite)";
        indefinite = true;
      }
      // Next shift. Singular (a semidefinite A, e.g. a graph Laplacian): just below 0,
      // −1e-8·‖A‖‖B⁻¹‖, which leaves the separation of the small eigenvalues as at σ = 0.
      // Indefinite at 0 (λmin < 0): just below the probe's bound of λmin (θmin − |β·y| minus 1 %
      // of the width), close enough that T separates the smallest well (dwt_2680, λmin = −4.06:
      // σ = −19 took 43 restarts). Each further failure steps 5 % of the width lower; the last
      // try, −2·‖A‖‖B⁻¹‖, lies below any eigenvalue.
      // (A negative Ritz value proves λmin < 0; at θmin ≥ 0 the "indefinite" was a rounding-level
      // pivot of a semidefinite A: treated as singular.)
      const SpectralProbe* probe = attempt == 0 && indefinite && !s.b ? get_probe() : nullptr;
      if (probe && !(probe->lower < 0)) probe = nullptr;
      const double width = probe ? probe->upper_bound - probe->lower_bound : 2.0 * scale;
      if (attempt == 0)
        sigma = probe ? std::min(probe->lower_bound - 0.01 * width, -1e-8 * scale) : -1e-8 * scale;
      else if (attempt < 7)
        sigma = std::min(sigma * 100.0, sigma - 0.05 * width);
      else
        sigma = -2.0 * scale;
      sigma = std::max(sigma, -2.0 * scale);
    }
    if (!out.factor)
      throw Error("no shift below the spectrum found (tried" + tried +
                  "); give --sigma, or --no-factor for an iterative method");
    out.sigma = sigma;
    out.why = "; sigma = " + g17(sigma) + " (A - sigma*B positive definite)" +
              (tried.empty() ? "" : "; not at" + tried);
  } else {
    out.sigma = opt.has_sigma ? opt.sigma : 0.0;
    fo.engine = opt.which == Which::nearest ? FactorEngine::automatic : FactorEngine::cholmod;
    try {
      out.factor = factor_shifted(*s.a, s.b, out.sigma, fo);
    } catch (const SingularShift&) {
      throw;
    } catch (const InvalidArgument& e) {
      if (fo.engine != FactorEngine::cholmod) throw;
      // σ inside the spectrum while the smallest/largest are asked for.
      const Inertia in = inertia_at(*s.a, s.b, out.sigma);
      throw InvalidArgument("sigma = " + g17(out.sigma) + " lies inside the spectrum (" +
                            std::to_string(in.negative) + " eigenvalues below it): for the k " +
                            (opt.which == Which::largest ? "largest" : "smallest") +
                            " give a sigma beyond that end, or use --which nearest");
    }
  }
  out.desc = out.factor->describe();
  const double t_si = detail::now_seconds();
  out.sinv = make_shift_invert(*out.factor, opt.backend, s.ops->stream(),
                               std::max<std::int64_t>(16, std::min<std::int64_t>(opt.k + 8, 32)),
                               /*prefer_device_solves=*/false);
  if (opt.backend == Backend::cuda)
    out.desc += "; solves: " + out.sinv->plan() + ", set up in " +
                fmt("%.3f", detail::now_seconds() - t_si) + " s";
  return out;
}

// Verification of the set `pairs` after the solve. Decides between the certificate and the
// re-check with the measured solve time, runs it, and returns (verified, certified, line).
// EigsResult::precision: what the iteration's arithmetic was.
std::string precision_line(const EigsOptions& opt, const ChebyshevStats* cheb) {
  if (opt.precision != Precision::fp64)
    return std::string(to_string(opt.precision)) + " storage: the iteration applied A rounded to " +
           to_string(opt.precision);
  if (!cheb || cheb->filters_fp32 == 0) return "fp64";
  std::string s = "ladder fp32 -> fp64: " + std::to_string(cheb->filters_fp32) + " filters on fp32 (" +
                  std::to_string(cheb->steps_fp32) + " column-steps, " + fmt("%.3g", cheb->seconds_fp32) +
                  " s), " + std::to_string(cheb->filters_fp64) + " on fp64 (" +
                  std::to_string(cheb->steps_fp64) + " column-steps, " + fmt("%.3g", cheb->seconds_fp64) +
                  " s" + (cheb->fp64_reason.empty() ? "" : "; the last fp64 one: " + cheb->fp64_reason) +
                  "); Rayleigh-Ritz and every residual test in fp64 on the given A";
  if (cheb->climbed_at >= 0) s += "; " + cheb->climb_reason;
  return s;
}

// EigsResult::solve_steps: where a Chebyshev solve's seconds went (host clock per step; the
// filters' share from stream marks around them).
std::string solve_steps_line(const ChebyshevStats& c) {
  const double filters = c.seconds_fp32 + c.seconds_fp64;
  return "workspace " + fmt("%.3g", c.seconds_setup) + " s, bounds " + fmt("%.3g", c.seconds_bounds) +
         " s, initial block " + fmt("%.3g", c.seconds_init) + " s, " + std::to_string(c.outer_iterations) +
         " outer iterations " + fmt("%.3g", c.seconds_loop) + " s (filters " + fmt("%.3g", filters) +
         " s, the rest " + fmt("%.3g", std::max(0.0, c.seconds_loop - filters)) +
         " s: orthonormalization " + fmt("%.3g", std::max(0.0, c.seconds_filter_ortho - filters)) +
         " s, Rayleigh-Ritz with residuals " + fmt("%.3g", c.seconds_rayleigh_ritz) +
         " s, locking and bookkeeping " +
         fmt("%.3g", std::max(0.0, c.seconds_loop - c.seconds_filter_ortho - c.seconds_rayleigh_ritz)) +
         " s), final check " + fmt("%.3g", c.seconds_finish) + " s";
}

struct Verified {
  bool verified = false;
  Certificate cert;
  Verification kind = Verification::none;
  std::string line;
};

Verified verify(const Problem& s, const EigsOptions& opt, const PlanFacts& facts, EigsPlan& plan,
                const PlanEstimate& ran, PairSet& pairs, Factorized* fz, double solve_s,
                const ChebyshevStats* cheb, const PlanProbes& probes) {
  Verified v;
  if (ran.method == EigsMethod::dense && !opt.certify) {
    v.verified = true;
    v.kind = Verification::dense;
    v.line = "dense solve: all " + std::to_string(s.n) + " eigenvalues computed";
    return v;
  }
  if (!opt.certify && !opt.recheck) {
    v.line = "not verified (--no-recheck)";
    return v;
  }
  const bool cert_possible = facts.can_factor && s.a;
  const double lower_entries = 0.5 * static_cast<double>(facts.nnz_a + facts.nnz_b + s.n);
  // The certificate's predicted seconds, or infinity where its analysis is not known and would
  // cost more than the budget (the analysis, AMD alone, is a bet: kAmdMisguess, plan.hpp): over
  // it even at the fastest ordering any host has (kFastestAnalyzeSecondsPerEntry), with no rates
  // at all; else by the analysis rate alone. The full rates (a fresh machine's first run measures
  // them: ~1 s) only price a certificate whose analysis is at hand.
  // Where no cache has this machine's ordering rate, measuring it (engine_analyze_rate: two AMD
  // analyses, 10–45 ms) to decide a budget below that cannot pay: the certificate is then not
  // priced (1138_bus largest on a fresh machine: 20 ms measured for a 0.26 ms budget).
  const bool rate_at_hand = !probes.analyze_rate_known || probes.analyze_rate_known();
  auto rate_not_worth_measuring = [&](double budget) {
    return !plan.symbolic && !rate_at_hand && budget < kAnalysisRateMeasureSeconds;
  };
  // A plan priced with the default engine rates (plan.hpp) keeps the re-check: the certificate
  // is not chosen on an unmeasured price (a re-check that cannot verify still hands over to it).
  // `choice`: pricing the certificate against the re-check before it runs (the rule above);
  // after a re-check that could not verify, the alternative is an unverified set: measured then.
  auto certificate_seconds = [&](double budget, bool choice) -> double {
    if (!plan.symbolic && ordering_over_at_any_rate(lower_entries, budget)) return INFINITY;
    if (choice && (rate_not_worth_measuring(budget) || plan.rates_are_defaults)) return INFINITY;
    if (!plan.symbolic && kAmdMisguess * probes.analysis_rate() * lower_entries <= budget)
      plan.symbolic = probes.analyze();
    return plan.symbolic ? predict_certificate_seconds(*plan.symbolic, lower_entries,
                                                       plan.rates ? *plan.rates : probes.rates())
                         : INFINITY;
  };
  std::string why_kind;
  bool use_cert = opt.certify;
  if (opt.certify) {
    why_kind = "certificate (asked for)";
  } else if (cert_possible) {
    // The certificate when it costs at most 15 % of the solve, or less than the re-check would:
    // the shift-invert re-check converges one more pair of T (plan.hpp: about half the solve on
    // the GPU, 0.9 of it on the host), the deflated LOBPCG re-check about a solve, the filter
    // re-check ~10 %.
    const double recheck_guess = fz && ran.transform == Transform::shift_invert
                                     ? shift_invert_recheck_share(facts.backend) * solve_s
                                 : s.bop || ran.method == EigsMethod::lobpcg ? solve_s
                                                                             : 0.1 * solve_s;
    const double budget = std::max(0.15 * solve_s, recheck_guess);
    const double analysis_floor = kFastestAnalyzeSecondsPerEntry * lower_entries;
    const bool over_at_any_rate = !plan.symbolic && ordering_over_at_any_rate(lower_entries, budget);
    const double pred = certificate_seconds(budget, true);
    if (over_at_any_rate) {
      why_kind = "re-check (the certificate's ordering alone, at least " + fmt("%.3g", analysis_floor) +
                 " s at 1e8 entries a second, is above 15 % of the solve's " + fmt("%.3g", solve_s) +
                 " s and the re-check's " + fmt("%.3g", recheck_guess) + " s)";
    } else if (std::isfinite(pred)) {
      use_cert = pred <= budget;
      why_kind = (use_cert ? "certificate (predicted " : "re-check (the certificate was predicted at ") +
                 fmt("%.3g", pred) + " s, " + fmt("%.0f", 100.0 * pred / std::max(solve_s, 1e-9)) +
                 " % of the solve's " + fmt("%.3g", solve_s) + " s; the re-check about " +
                 fmt("%.3g", recheck_guess) + " s)";
    } else if (plan.rates_are_defaults) {
      why_kind = "re-check (the certificate not priced: this machine's engine rates are not measured; "
                 "the plan's defaults do not choose a verification)";
    } else if (rate_not_worth_measuring(budget)) {
      why_kind = "re-check (the certificate not priced: measuring this machine's ordering rate, "
                 "about " + fmt("%.2g", kAnalysisRateMeasureSeconds) + " s once, would cost more than "
                 "the budget it decides, 15 % of the solve's " + fmt("%.3g", solve_s) +
                 " s and the re-check's " + fmt("%.3g", recheck_guess) + " s)";
    } else {
      const double amd_guess = probes.analysis_rate() * lower_entries;
      why_kind = "re-check (the ordering that would price the certificate, about " + fmt("%.3g", amd_guess) +
                 " s and up to " + fmt("%.3g", kAmdMisguess * amd_guess) +
                 " s, is above 15 % of the solve's " +
                 fmt("%.3g", solve_s) + " s and the re-check's " + fmt("%.3g", recheck_guess) + " s)";
    }
  } else {
    why_kind = "re-check (no certificate: " + (facts.factor_why.empty() ? std::string("no factorization") : facts.factor_why) + ")";
  }
  // The Sylvester count, with rounds that find what it says is missing.
  auto certify = [&](const std::string& why) {
    v.kind = Verification::certificate;
    for (int round = 0; round < 4; ++round) {
      v.cert = opt.which == Which::nearest ? certify_interval(s, pairs, fz ? fz->sigma : opt.sigma)
                                           : certify_end(s, pairs, opt.which != Which::largest);
      if (v.cert.state != Certified::no || v.cert.missing == 0 || round == 3) break;
      // Missing eigenvalues: find them (deflated shift-invert when a factor is at hand, else the
      // deflated re-check with the solve's method) and certify again.
      if (fz && fz->sinv) {
        RunOut more = run_shift_invert(
            s, *fz->sinv, fz->sigma, opt,
            std::min<std::int64_t>(std::max<std::int64_t>(v.cert.missing, 2), s.global_n() - opt.k - 1),
            opt.seed + 31 * (round + 1), &pairs, fz->factor->factor_entries());
        if (!more.pairs_pass) break;
        pairs = merge_pairs(*s.ops, pairs, more.pairs, opt.k, opt.which, fz->sigma);
      } else if (opt.which != Which::nearest) {
        RecheckOutcome add = deflated_recheck(s, opt, ran.method, pairs);
        if (add.added == 0) break;
      } else {
        break;
      }
    }
    v.verified = v.cert.state == Certified::yes;
    v.line = why + ": " + v.cert.detail;
    return v;
  };
  if (use_cert) return certify(why_kind);
  v.kind = Verification::recheck;
  RecheckOutcome rc;
  if (fz && fz->sinv && ran.transform == Transform::shift_invert) {
    rc = shift_invert_recheck(s, opt, *fz->sinv, fz->sigma, pairs, fz->factor->factor_entries());
  } else if (s.bop || opt.which == Which::nearest || ran.method == EigsMethod::lobpcg) {
    // Generalized problems (and LOBPCG's own results): the deflated re-check with LOBPCG.
    rc = deflated_recheck(s, opt, s.bop ? EigsMethod::lobpcg : ran.method, pairs);
  } else {
    // Standard problem: the filter re-check, with the solve's bounds and resolution.
    FilterRecheckInputs in;
    const double sgn = opt.which == Which::largest ? -1.0 : 1.0;
    if (cheb && cheb->block > 0) {
      in.lower = cheb->lower;
      in.upper = cheb->upper;
    } else {
      if (!plan.probe) plan.probe = run_probe(s, opt.seed);
      in.lower = sgn > 0 ? plan.probe->lower_bound : -plan.probe->upper_bound;
      in.upper = sgn > 0 ? plan.probe->upper_bound : -plan.probe->lower_bound;
    }
    const auto kth = wanted_order(pairs.values, opt.which, 0.0).back();
    const double muk = sgn * pairs.values[kth];
    const double w = cert_width(s, pairs, kth);
    if (ran.method == EigsMethod::chebyshev && cheb && cheb->cut > muk) {
      in.resolution = cheb->cut - muk;
      in.resolution_from = "the distance from the k-th value to the solve's last filter cut";
    } else {
      // A block Krylov run can miss copies of any found value: resolve the nearest distinct one.
      double prev = -INFINITY;
      for (double val : pairs.values)
        if (sgn * val < muk - 10.0 * w) prev = std::max(prev, sgn * val);
      in.resolution = std::isfinite(prev) ? muk - prev : 0.5 * (muk - in.lower);
      in.resolution_from = std::isfinite(prev) ? "the gap from the k-th value to the next distinct found value"
                                               : "half the distance from the k-th value to the spectrum's end";
    }
    rc = filter_recheck(s, opt, ran.method, pairs, in);
    if (!rc.affordable) {
      const std::string why_not = rc.detail;
      rc = deflated_recheck(s, opt, ran.method == EigsMethod::chebyshev ? EigsMethod::chebyshev
                                                                        : EigsMethod::lanczos,
                            pairs);
      rc.detail = why_not + "; " + rc.detail;
    }
  }
  v.verified = rc.verified;
  v.line = why_kind + ": " + rc.detail;
  // A re-check that could not verify the set (it kept finding missed copies, or did not converge)
  // hands over to the certificate where one is possible and predicted at most twice the solve
  // (the alternative is an unverified set; a 3D factorization on the host can cost 100 solves):
  // its count says how many are missing and its rounds find them (gen:lap3d:12, k = 20,
  // single-vector shift-invert on the CPU: three copies added in three rounds, still unverified;
  // certified after the hand-over).
  if (!rc.verified && cert_possible && !interrupt_requested()) {
    const double cap = 2.0 * solve_s;
    const double pred = certificate_seconds(cap, false);
    if (pred <= cap)
      return certify(why_kind + ": " + rc.detail + "; then the certificate (predicted " + fmt("%.3g", pred) + " s)");
    v.line += "; no certificate after it (predicted " +
              (std::isfinite(pred) ? fmt("%.3g", pred) + " s" : std::string("above its analysis' budget")) +
              ", more than twice the solve's " + fmt("%.3g", solve_s) + " s)";
  }
  return v;
}

EigsResult run_all(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  s.conv = opt.conv;
  const std::int64_t k = opt.k;

  // ---- plan
  PlanProbes probes;
  probes.probe = [&] {
    if (memo && memo->probe) return *memo->probe;
    SpectralProbe p = run_probe(s, opt.seed);
    trace_mark("eigs: spectral probe");
    if (memo) memo->probe = p;
    return p;
  };
  probes.apply_seconds = [&](std::int64_t cols) {
    if (memo) {
      auto it = memo->apply_seconds.find(cols);
      if (it != memo->apply_seconds.end()) return it->second;
    }
    const double t = time_apply(s, cols);
    trace_mark("eigs: an apply timed");
    if (memo) memo->apply_seconds[cols] = t;
    return t;
  };
  probes.analyze = [&] {
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
  EigsPlan plan = plan_eigs(facts, opt, probes);
  trace_mark("eigs: planned");
  PlanEstimate ran = plan.chosen;
  std::string why = plan.reason;

  // ---- set up
  // A bound of λmin for the shift when σ = 0 will not do (the plan's probe, else one now).
  const std::function<const SpectralProbe*()> get_probe = [&]() -> const SpectralProbe* {
    if (!plan.probe) plan.probe = run_probe(s, opt.seed);
    return &*plan.probe;
  };
  const double t_setup0 = detail::now_seconds();
  Factorized fz;
  const bool needs_factor = ran.transform == Transform::shift_invert || ran.lobpcg_factor;
  if (needs_factor) {
    fz = factorize(s, opt, get_probe, plan.symbolic, plan.probe ? &*plan.probe : nullptr);
    why += fz.why;
  }
  double setup_s = detail::now_seconds() - t_setup0;
  trace_mark("eigs: set up");

  // ---- solve
  EigsOptions fit = opt;  // opt with the workspace fitted (iterative methods)
  const double t_solve0 = detail::now_seconds();
  RunOut run;
  ChebyshevStats cheb;
  std::optional<ChebyshevBounds> given;
  if (plan.probe) given = bounds_of(*plan.probe);
  if (ran.method == EigsMethod::dense) {
    run = run_dense(s, opt);
  } else if (ran.transform == Transform::shift_invert) {
    run = run_shift_invert(s, *fz.sinv, fz.sigma, opt, k, opt.seed, nullptr,
                           fz.factor->factor_entries());
  } else {
    if (ran.method == EigsMethod::lanczos && ran.block > 0 && fit.block_size <= 0) fit.block_size = ran.block;
    // The ladder's rungs as the plan chose them by predicted cost (where it priced them).
    if (facts.ladder && plan.predicted && ran.method == EigsMethod::chebyshev) fit.ladder = opt.ladder && ran.ladder;
    fit_workspace(ran.method, s.global_n(), k, fit, why);
    ChebyshevHooks hooks;
    hooks.stats = &cheb;
    if (given) hooks.bounds = &*given;
    if (plan.fallback) {
      hooks.keep_going = [&](const ChebyshevProgress& pg) {
        if (pg.outer < 2 || !(pg.steps_left < 1e8) || pg.filter_steps <= 0) return true;
        const double per_step = pg.seconds / pg.filter_steps;
        return pg.steps_left * per_step <= plan.fallback_budget_s;
      };
    }
    const LinearOperator<double>* precond = opt.preconditioner ? opt.preconditioner
                                            : ran.lobpcg_factor ? fz.sinv.get() : nullptr;
    run = run_iterative(s, *s.aop, ran.method, fit, opt.which, k, opt.seed, precond, hooks);
    if (cheb.stopped && plan.fallback && !interrupt_requested()) {
      // The measured convergence predicted more than the fallback plan: switch to it.
      const double spent = detail::now_seconds() - t_solve0;
      const double t_f = detail::now_seconds();
      fz = factorize(s, opt, get_probe, plan.symbolic, plan.probe ? &*plan.probe : nullptr);
      setup_s += detail::now_seconds() - t_f;
      ran = *plan.fallback;
      why += "; switched after " + fmt("%.3g", spent) + " s of chebyshev (its measured convergence "
             "predicted more than 1.5x the fallback's " + fmt("%.3g", plan.fallback->total()) +
             " s) to " + ran.name() + fz.why;
      cheb = ChebyshevStats{};
      run = run_shift_invert(s, *fz.sinv, fz.sigma, opt, k, opt.seed, nullptr,
                             fz.factor->factor_entries());
    }
  }
  PairSet pairs = std::move(run.pairs);
  const double solve_s = detail::now_seconds() - t_solve0;
  trace_mark("eigs: solved");

  // ---- verify
  const double t_ver0 = detail::now_seconds();
  Verified ver;
  if (run.pairs_pass)
    ver = verify(s, opt, facts, plan, ran, pairs, fz.factor ? &fz : nullptr, solve_s,
                 ran.method == EigsMethod::chebyshev ? &cheb : nullptr, probes);
  const double verify_s = detail::now_seconds() - t_ver0;
  trace_mark("eigs: verified");

  // ---- finish
  const double sigma = fz.factor ? fz.sigma : 0.0;
  EigsResult res = finish(s, opt, pairs, run, sigma);
  trace_mark("eigs: finished");
  res.precision = precision_line(opt, ran.method == EigsMethod::chebyshev ? &cheb : nullptr);
  if (ran.method == EigsMethod::chebyshev && cheb.outer_iterations > 0) res.solve_steps = solve_steps_line(cheb);
  res.plan_seconds = plan.seconds;
  res.setup_seconds = setup_s;
  res.solve_seconds = solve_s;
  res.verify_seconds = verify_s;
  res.method = to_string(ran.method);
  res.transform = ran.transform == Transform::shift_invert ? "shift-invert" : "none";
  res.sigma = fz.factor ? fz.sigma : 0.0;
  res.why = why;
  res.predicted_seconds = plan.predicted ? ran.total() : 0.0;
  res.factor = fz.desc;
  res.certified = ver.cert.state;
  res.verification = ver.kind;
  res.certificate = ver.line.empty() ? "not verified (a pair failed its residual test)" : ver.line;
  if (interrupt_requested() && (res.status == SolverStatus::converged || res.status == SolverStatus::interrupted)) {
    // Stopped during the solve (the pairs as they were) or during the verification (the pairs
    // passed their residual tests; the set is not verified).
    if (res.status == SolverStatus::converged)
      res.reason = detail::interrupted_reason(res.iterations, k, k, "pairs passing their residual tests, "
                                              "during the verification (the set is not verified)");
    else if (res.reason.empty() || res.reason.rfind("interrupted", 0) != 0)
      res.reason = detail::interrupted_reason(res.iterations, 0, k, "pairs verified");
    res.status = SolverStatus::interrupted;
    return res;
  }
  if (res.status == SolverStatus::converged && !ver.verified) {
    res.status = ver.cert.state == Certified::no ? SolverStatus::not_converged : SolverStatus::unverified;
    res.reason = ver.cert.state == Certified::no
                     ? "every pair passed its residual test, but the count says eigenvalues are "
                       "missing: " + ver.cert.detail
                     : "every pair passed its residual test, but nothing verified that no further "
                       "copy of a repeated eigenvalue is missing (" + res.certificate + ")";
  }
  return res;
}

// A = 0 (every stored value zero): every eigenvalue of A·x = λ·B·x is 0 and any B-orthonormal set
// is a set of eigenvectors: X = E·L⁻ᵀ with E = [e_1 … e_k] and B[0:k, 0:k] = L·Lᵀ (B positive
// definite, so its leading block is). Exact: residuals 0, the count is the whole spectrum.
EigsResult zero_matrix_result(const Csr<double>* b, const EigsOptions& opt, std::int64_t n) {
  const std::int64_t k = opt.k;
  Eigen::MatrixXd g = Eigen::MatrixXd::Identity(k, k);
  if (b) {
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t p = b->row_ptr[i]; p < b->row_ptr[i + 1]; ++p)
        if (b->col_idx[p] < k) g(i, b->col_idx[p]) = b->values[p];
  }
  Eigen::LLT<Eigen::MatrixXd> llt(g);
  if (llt.info() != Eigen::Success)
    throw InvalidArgument(opt.mass_name + " is not positive definite (its leading " + std::to_string(k) + " x " +
                          std::to_string(k) + " block has no Cholesky factor)");
  const Eigen::MatrixXd x = llt.matrixU().solve(Eigen::MatrixXd::Identity(k, k));  // L⁻ᵀ
  EigsResult r;
  r.n = n;
  r.status = SolverStatus::converged;
  r.values.assign(k, 0.0);
  r.vectors.assign(static_cast<std::size_t>(n * k), 0.0);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i <= j; ++i) r.vectors[j * n + i] = x(i, j);
  r.residual_norms.assign(k, 0.0);
  r.residual_bounds.assign(k, 0.0);
  r.error_bounds.assign(k, 0.0);
  r.conv = opt.conv;
  r.a_norm = 0.0;
  r.b_norm = b ? csr_inf_norm(*b) : 1.0;
  r.method = "dense";
  r.why = "A = 0: every eigenvalue is 0 and any " + std::string(b ? "B-orthonormal" : "orthonormal") +
          " set is a set of eigenvectors (the first unit vectors" + (b ? ", B-orthonormalized" : "") +
          "); nothing to iterate";
  r.verification = Verification::dense;
  r.certified = Certified::yes;
  r.certificate = "A = 0: all " + std::to_string(n) + " eigenvalues are 0 (exact)";
  return r;
}

}  // namespace
}  // namespace eigs_detail

EigsResult eigs(const Csr<double>& a, const Csr<double>* b, const EigsOptions& opt,
                const EigsPrebuilt& pre) {
  using namespace eigs_detail;
  if (!a.square()) throw InvalidArgument("A must be square");
  const std::int64_t n = a.nrows;
  validate(opt, n);
  if (b && (b->nrows != n || b->ncols != n))
    throw InvalidArgument("B is " + std::to_string(b->nrows) + " x " + std::to_string(b->ncols) +
                          " but A is " + std::to_string(n) + " x " + std::to_string(n));
  trace_mark("eigs: entered");
  Problem s;
  s.a = &a;
  s.b = b;
  s.n = n;
  if (pre.a_inf_norm >= 0 && pre.a_diagonal && static_cast<std::int64_t>(pre.a_diagonal->size()) == n) {
    s.a_norm = pre.a_inf_norm;
    s.diag_a = pre.a_diagonal;
  } else {
    s.a_norm = csr_inf_norm(a);
    s.diag_a_own = csr_diagonal(a);
    s.diag_a = &s.diag_a_own;
  }
  PlanFacts facts;
  facts.n = n;
  facts.nnz_a = a.nnz();
  facts.nnz_b = b ? b->nnz() : 0;
  facts.generalized = b != nullptr;
  facts.matrix_form = true;
  facts.backend = opt.backend;
  facts.can_factor = opt.allow_factor && built_with_factor();
  if (!opt.allow_factor) facts.factor_why = "--no-factor";
  else if (!built_with_factor()) facts.factor_why = "built without CHOLMOD/MUMPS";
  if (b) {
    s.b_norm = csr_inf_norm(*b);
    s.diag_b = csr_diagonal(*b);
    for (std::int64_t i = 0; i < n; ++i)
      if (!(s.diag_b[i] > 0))
        throw InvalidArgument(opt.mass_name + " is not positive definite (b_ii = " + g17(s.diag_b[i]) +
                              " at row " + std::to_string(i + 1) + ")");
    // Non-diagonal B: a Cholesky factorization proves it positive definite and gives ‖B⁻¹‖.
    if (!is_diagonal(*b) && built_with_factor() && opt.allow_factor) {
      require_positive_definite(*b, opt.mass_name);
    } else if (!is_diagonal(*b)) {
      // No factorization: a Lanczos probe on B (40 host products) proves an indefinite B by a
      // Ritz value below 0 (Ritz values lie inside the spectrum). A B that is indefinite by less
      // than the probe resolves may still reach the solver, which then breaks down.
      auto host_ops = make_dense_ops(Backend::cpu);
      OperatorOptions ho;
      auto bh = make_sparse_operator(*b, Backend::cpu, ho);
      const SpectralProbe pb = spectral_probe([&](MvView<const double> x, MvView<double> y) { bh->apply(x, y); },
                                              *host_ops, n, static_cast<int>(std::min<std::int64_t>(40, n)), 29);
      if (pb.lower < -1e-12 * s.b_norm)
        throw InvalidArgument(opt.mass_name + " is not positive definite (a Lanczos probe finds a vector x "
                              "with x'Bx = " + g17(pb.lower) + " x'x < 0)");
    }
    s.binv_norm = estimate_binv_norm(*b, s.diag_b, built_with_factor() && opt.allow_factor);
  }
  if (s.a_norm == 0.0) return zero_matrix_result(b, opt, n);
  std::unique_ptr<DenseBlockOps> own_ops;
  DenseBlockOps* ops = pre.ops;
  if (!ops) own_ops = make_dense_ops(opt.backend), ops = own_ops.get();
  if (ops->backend() != opt.backend)
    throw InvalidArgument("eigs: the given dense ops run on another backend than opt.backend");
  OperatorOptions oo;
  oo.precision = opt.precision;
  oo.stream = ops->stream();
  oo.expected_cols = static_cast<int>(chebyshev_block(n, opt.k, -1));
  std::unique_ptr<SparseOperator> aop, bop;
  std::string kernel = pre.spmm_kernel, kernel_plan = pre.spmm_plan;
  if (!pre.a) {
    aop = make_sparse_operator(a, opt.backend, oo);
    kernel = to_string(aop->plan().kernel);
    kernel_plan = aop->plan().reason;
  }
  if (b && !pre.b) {
    OperatorOptions ob = oo;
    ob.precision = Precision::fp64;
    bop = make_sparse_operator(*b, opt.backend, ob);
  }
  s.aop = pre.a ? pre.a : aop.get();
  s.bop = b ? (pre.b ? pre.b : bop.get()) : nullptr;
  s.ops = ops;
  trace_mark("eigs: operators ready");
  // The filter's steps on the operator's own blocks (spmm bsr_block): priced as such.
  if (const auto* so = dynamic_cast<const SparseOperator*>(s.aop)) facts.bsr_step = so->block_step() != nullptr;
  facts.ladder = opt.ladder && opt.precision == Precision::fp64 && !facts.generalized && opt.backend == Backend::cuda &&
                 (facts.bsr_step || chebyshev_step_pays(n, facts.nnz_a));
  EigsResult r = run_all(s, opt, facts, pre.memo);
  r.spmm_kernel = kernel;
  r.spmm_plan = kernel_plan;
  return r;
}

EigsResult eigs(const LinearOperator<double>& a, const LinearOperator<double>* b,
                DenseBlockOps& ops, const EigsOptions& opt, double a_norm, double b_norm) {
  using namespace eigs_detail;
  const std::int64_t n = a.rows();
  if (a.cols() != n) throw InvalidArgument("A must be square");
  // n: the rows here; ops.global_rows(n): the problem's (distributed/: the sum over the ranks).
  const std::int64_t ng = ops.global_rows(n);
  if (ng != n && !opt.v0.empty()) throw InvalidArgument("v0: not supported for a distributed problem");
  validate(opt, ng);
  Problem s;
  s.aop = &a;
  s.bop = b;
  s.ops = &ops;
  s.n = n;
  // Operators given from outside (a Python LinearOperator, a CuPy matrix's view) may launch on any
  // stream: every apply is fenced by host synchronizations; tcsolve's own (own_operator) are
  // ordered by events.
  s.foreign_operator = !opt.own_operator;
  s.a_norm = a_norm > 0 ? a_norm : estimate_norm(a, ops);
  s.b_norm = b ? (b_norm > 0 ? b_norm : estimate_norm(*b, ops)) : 1.0;
  PlanFacts facts;
  facts.n = ng;
  facts.generalized = b != nullptr;
  facts.matrix_form = false;
  facts.can_factor = false;
  facts.factor_why = "operator given, not a matrix";
  facts.backend = opt.backend;
  return run_all(s, opt, facts, nullptr);
}

}  // namespace tcsolve
