// The eigs driver's set-up step (solvers/eigs/steps.hpp): the factorization of A − σB (the shift
// search below the spectrum for the smallest) and the filter's fused step, in one step.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/trace.hpp"
#include "solvers/eigs/steps.hpp"

namespace tcsolve::eigs_detail {

// Whether A·1 = 0 to rounding: each row's sum within 8u·Σ|a_ij| of zero (a graph Laplacian's
// rows sum to exactly 0 for integer weights). An empty matrix does not count.
namespace {

bool rows_sum_to_zero(const Csr<double>& a) {
  if (a.nrows == 0) return false;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double sum = 0.0, mag = 0.0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) sum += a.values[p], mag += std::abs(a.values[p]);
    if (!(std::abs(sum) <= 8.0 * kUnitRoundoff * mag)) return false;
  }
  return true;
}

// σ below the spectrum for the smallest: 0 when A − 0·B is positive definite, else lowered until
// the Cholesky factorization exists (sets out.factor, out.sigma, out.why).
void factor_below_spectrum(const Problem& s, const FactorOptions& fo,
                           const std::function<const SpectralProbe*()>& get_probe,
                           const SpectralProbe* known_probe, Factorized& out) {
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
    factor_below_spectrum(s, fo, get_probe, known_probe, out);
  } else {
    out.sigma = opt.has_sigma ? opt.sigma : 0.0;
    fo.engine = opt.which == Which::nearest ? FactorEngine::automatic : FactorEngine::cholmod;
    fo.lu_solves = true;  // (automatic, indefinite and small: UMFPACK's solves; FactorOptions)
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

}  // namespace

SetUp set_up(const Problem& s, const EigsOptions& opt, const PlanEstimate& e, const EigsPlan& plan,
             const std::function<const SpectralProbe*()>& get_probe) {
  const double t0 = detail::now_seconds();
  SetUp out;
  if (e.transform == Transform::shift_invert || e.lobpcg_factor)
    out.fz = factorize(s, opt, get_probe, plan.symbolic, plan.probe ? &*plan.probe : nullptr);
  // The filter's fused step for A, made once per problem (runs.hpp) and kept for the re-check.
  if (e.method == EigsMethod::chebyshev && e.transform == Transform::none) fused_step_for(s, *s.aop, opt);
  out.seconds = detail::now_seconds() - t0;
  trace_mark("eigs: set up");
  return out;
}

}  // namespace tcsolve::eigs_detail
