// The eigs driver's verification step (solvers/eigs/steps.hpp): the Sylvester certificate or a
// re-check of the returned set (recheck.hpp), chosen by their predicted cost against the solve's
// measured seconds; and the result's lines about the iteration's precision and steps.
#include <algorithm>
#include <limits>
#include <cmath>

#include "core/error.hpp"
#include "solvers/eigs/recheck.hpp"
#include "solvers/eigs/steps.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::eigs_detail {

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
         " s over " + std::to_string(c.filter_columns) + " column-steps, the slowest wanted column " +
         fmt("%.0f", c.wanted_steps) + " steps; the rest " + fmt("%.3g", std::max(0.0, c.seconds_loop - filters)) +
         " s: orthonormalization " + fmt("%.3g", std::max(0.0, c.seconds_filter_ortho - filters)) +
         " s, Rayleigh-Ritz with residuals " + fmt("%.3g", c.seconds_rayleigh_ritz) +
         " s, locking and bookkeeping " +
         fmt("%.3g", std::max(0.0, c.seconds_loop - c.seconds_filter_ortho - c.seconds_rayleigh_ritz)) +
         " s), final check " + fmt("%.3g", c.seconds_finish) + " s";
}

namespace {

// The verification of one returned set: its steps share the problem, the plan and the pairs.
class Verifier {
 public:
  Verifier(const Problem& s, const EigsOptions& opt, const PlanFacts& facts, EigsPlan& plan,
           const PlanEstimate& ran, PairSet& pairs, Factorized* fz, double solve_s,
           const ChebyshevStats* cheb, const PlanProbes& probes)
      : s_(s), opt_(opt), facts_(facts), plan_(plan), ran_(ran), pairs_(pairs), fz_(fz), solve_s_(solve_s),
        cheb_(cheb), probes_(probes),
        lower_entries_(0.5 * static_cast<double>(facts.nnz_a + facts.nnz_b + s.n)) {}
  Verified run();

 private:
  double certificate_seconds(double budget, bool choice);
  bool rate_not_worth_measuring(double budget) const;
  std::string choose(bool& use_cert);
  double filter_recheck_guess(double solve_s);
  Verified certify(const std::string& why);
  RecheckOutcome recheck();
  FilterRecheckInputs filter_inputs();

  const Problem& s_;
  const EigsOptions& opt_;
  const PlanFacts& facts_;
  EigsPlan& plan_;
  const PlanEstimate& ran_;
  PairSet& pairs_;
  Factorized* fz_;
  double solve_s_;
  const ChebyshevStats* cheb_;
  const PlanProbes& probes_;
  double lower_entries_;
  Verified v_;
};

// Where no cache has this machine's ordering rate, measuring it (engine_analyze_rate: two AMD
// analyses, 10–45 ms) to decide a budget below that cannot pay: the certificate is then not
// priced (1138_bus largest on a fresh machine: 20 ms measured for a 0.26 ms budget).
bool Verifier::rate_not_worth_measuring(double budget) const {
  const bool rate_at_hand = !probes_.analyze_rate_known || probes_.analyze_rate_known();
  return !plan_.symbolic && !rate_at_hand && budget < kAnalysisRateMeasureSeconds;
}

// The certificate's predicted seconds, or infinity where its analysis is not known and would
// cost more than the budget (the analysis, AMD alone, is a bet: kAmdMisguess, plan.hpp): over
// it even at the fastest ordering any host has (kFastestAnalyzeSecondsPerEntry), with no rates
// at all; else by the analysis rate alone. The full rates (a fresh machine's first run measures
// them: ~1 s) only price a certificate whose analysis is at hand.
// A plan priced with the default engine rates (plan.hpp) keeps the re-check: the certificate
// is not chosen on an unmeasured price (a re-check that cannot verify still hands over to it).
// `choice`: pricing the certificate against the re-check before it runs (the rule above);
// after a re-check that could not verify, the alternative is an unverified set: measured then.
double Verifier::certificate_seconds(double budget, bool choice) {
  if (choice && plan_.rates_are_defaults) return INFINITY;
  if (!plan_.symbolic && analysis_fits(probes_, lower_entries_, budget, choice)) plan_.symbolic = probes_.analyze();
  return plan_.symbolic ? predict_certificate_seconds(*plan_.symbolic, lower_entries_,
                                                      plan_.rates ? *plan_.rates : probes_.rates(),
                                                      opt_.which == Which::nearest)
                        : INFINITY;
}

// The filter re-check's price: its degree (filter_recheck_degree, from the returned set and the
// solve's bounds) times one step on its columns (the plan's apply model: the apply, the
// recurrence's passes, the step's launch), where the plan timed A's applies; ~10 % of the solve
// otherwise. A degree past the cap means the deflated re-check, about a solve. (Issue 42:
// rgg:40000:3, largest, k = 1, CPU: degree 16116, 17.3 s, had been priced at 0.0101 s.)
double Verifier::filter_recheck_guess(double solve_s) {
  if (!plan_.applies) return 0.1 * solve_s;
  std::int64_t cols = 2;
  const std::int64_t deg = filter_recheck_degree(s_, opt_, pairs_, filter_inputs(), &cols);
  if (deg <= 0) return solve_s;
  const ApplyModel& m = *plan_.applies;
  return static_cast<double>(deg) * (m.t_a + m.t_step + static_cast<double>(cols) * m.step_col * m.t_col);
}

// The certificate or the re-check, and why.
std::string Verifier::choose(bool& use_cert) {
  use_cert = opt_.certify;
  if (opt_.certify) return "certificate (asked for)";
  if (!(facts_.can_factor && s_.a))
    return "re-check (no certificate: " +
           (facts_.factor_why.empty() ? std::string("no factorization") : facts_.factor_why) + ")";
  // The certificate when it costs at most 15 % of the solve, or less than the re-check would:
  // the shift-invert re-check converges one more pair of T (plan.hpp: about half the solve on
  // the GPU, 0.9 of it on the host), the deflated LOBPCG re-check about a solve, the filter
  // re-check ~10 %.
  const double solve_s = solve_s_;
  const double recheck_guess = fz_ && ran_.transform == Transform::shift_invert
                                   ? shift_invert_recheck_share(facts_.backend) * solve_s
                               : s_.bop || ran_.method == EigsMethod::lobpcg || opt_.which == Which::nearest
                                   ? solve_s
                                   : filter_recheck_guess(solve_s);
  const double budget = std::max(0.15 * solve_s, recheck_guess);
  const double analysis_floor = kFastestAnalyzeSecondsPerEntry * lower_entries_;
  const bool over_at_any_rate = !plan_.symbolic && ordering_over_at_any_rate(lower_entries_, budget);
  const double pred = certificate_seconds(budget, true);
  const std::string against = " s and the re-check's " + fmt("%.3g", recheck_guess) + " s)";
  if (over_at_any_rate)
    return "re-check (the certificate's ordering alone, at least " + fmt("%.3g", analysis_floor) +
           " s at 1e8 entries a second, is above 15 % of the solve's " + fmt("%.3g", solve_s) + against;
  if (std::isfinite(pred)) {
    use_cert = pred <= budget;
    return (use_cert ? "certificate (predicted " : "re-check (the certificate was predicted at ") +
           fmt("%.3g", pred) + " s, " + fmt("%.0f", 100.0 * pred / std::max(solve_s, 1e-9)) +
           " % of the solve's " + fmt("%.3g", solve_s) + " s; the re-check about " +
           fmt("%.3g", recheck_guess) + " s)";
  }
  if (plan_.rates_are_defaults)
    return "re-check (the certificate not priced: this machine's engine rates are not measured; "
           "the plan's defaults do not choose a verification)";
  if (rate_not_worth_measuring(budget))
    return "re-check (the certificate not priced: measuring this machine's ordering rate, about " +
           fmt("%.2g", kAnalysisRateMeasureSeconds) + " s once, would cost more than the budget it "
           "decides, 15 % of the solve's " + fmt("%.3g", solve_s) + against;
  const double amd_guess = probes_.analysis_rate() * lower_entries_;
  return "re-check (the ordering that would price the certificate, about " + fmt("%.3g", amd_guess) +
         " s and up to " + fmt("%.3g", kAmdMisguess * amd_guess) + " s, is above 15 % of the solve's " +
         fmt("%.3g", solve_s) + against;
}

// The Sylvester count, with rounds that find what it says is missing.
Verified Verifier::certify(const std::string& why) {
  const Problem& s = s_;
  const EigsOptions& opt = opt_;
  v_.kind = Verification::certificate;
  // Up to kRounds rounds, while each finds some of what is missing (a block Krylov run adds at
  // most a block's worth of copies of one value: bcsstm21, k = 32, 1200 copies: 18, 24, 27, 29, ...).
  constexpr int kRounds = 8;
  std::int64_t missing_before = std::numeric_limits<std::int64_t>::max();
  for (int round = 0; round < kRounds; ++round) {
    v_.cert = opt.which == Which::nearest ? certify_interval(s, pairs_, fz_ ? fz_->sigma : opt.sigma)
                                          : certify_end(s, pairs_, opt.which != Which::largest);
    if (v_.cert.state != Certified::no || v_.cert.missing == 0 || round == kRounds - 1 ||
        v_.cert.missing >= missing_before)
      break;
    missing_before = v_.cert.missing;
    // Missing eigenvalues: find them (deflated shift-invert when a factor is at hand, else the
    // deflated re-check with the solve's method) and certify again.
    if (fz_ && fz_->sinv) {
      RunOut more = run_shift_invert(
          s, *fz_->sinv, fz_->sigma, opt,
          std::min<std::int64_t>(std::max<std::int64_t>(v_.cert.missing, 2), s.global_n() - opt.k - 1),
          opt.seed + 31 * (round + 1), &pairs_, fz_->factor->factor_entries());
      if (!more.pairs_pass) break;
      pairs_ = merge_pairs(*s.ops, pairs_, more.pairs, opt.k, opt.which, fz_->sigma);
    } else if (opt.which != Which::nearest) {
      RecheckOutcome add = deflated_recheck(s, opt, ran_.method, pairs_);
      if (add.added == 0) break;
    } else {
      break;
    }
  }
  v_.verified = v_.cert.state == Certified::yes;
  v_.line = why + ": " + v_.cert.detail;
  return v_;
}

// Standard problem: the filter re-check, with the solve's bounds and resolution.
FilterRecheckInputs Verifier::filter_inputs() {
  FilterRecheckInputs in;
  const double sgn = opt_.which == Which::largest ? -1.0 : 1.0;
  if (cheb_ && cheb_->block > 0) {
    in.lower = cheb_->lower;
    in.upper = cheb_->upper;
  } else {
    if (!plan_.probe) plan_.probe = run_probe(s_, opt_.seed);
    in.lower = sgn > 0 ? plan_.probe->lower_bound : -plan_.probe->upper_bound;
    in.upper = sgn > 0 ? plan_.probe->upper_bound : -plan_.probe->lower_bound;
  }
  const auto kth = wanted_order(pairs_.values, opt_.which, 0.0).back();
  const double muk = sgn * pairs_.values[kth];
  const double w = cert_width(s_, pairs_, kth);
  if (ran_.method == EigsMethod::chebyshev && cheb_ && cheb_->cut > muk) {
    in.resolution = cheb_->cut - muk;
    in.resolution_from = "the distance from the k-th value to the solve's last filter cut";
  } else {
    // A block Krylov run can miss copies of any found value: resolve the nearest distinct one.
    double prev = -INFINITY;
    for (double val : pairs_.values)
      if (sgn * val < muk - 10.0 * w) prev = std::max(prev, sgn * val);
    in.resolution = std::isfinite(prev) ? muk - prev : 0.5 * (muk - in.lower);
    in.resolution_from = std::isfinite(prev) ? "the gap from the k-th value to the next distinct found value"
                                             : "half the distance from the k-th value to the spectrum's end";
  }
  return in;
}

RecheckOutcome Verifier::recheck() {
  if (fz_ && fz_->sinv && ran_.transform == Transform::shift_invert)
    return shift_invert_recheck(s_, opt_, *fz_->sinv, fz_->sigma, pairs_, fz_->factor->factor_entries());
  // Generalized problems (and LOBPCG's own results): the deflated re-check with LOBPCG.
  if (s_.bop || opt_.which == Which::nearest || ran_.method == EigsMethod::lobpcg)
    return deflated_recheck(s_, opt_, s_.bop ? EigsMethod::lobpcg : ran_.method, pairs_);
  RecheckOutcome rc = filter_recheck(s_, opt_, ran_.method, pairs_, filter_inputs());
  if (!rc.affordable) {
    const std::string why_not = rc.detail;
    rc = deflated_recheck(s_, opt_, ran_.method == EigsMethod::chebyshev ? EigsMethod::chebyshev : EigsMethod::lanczos,
                          pairs_);
    rc.detail = why_not + "; " + rc.detail;
  }
  return rc;
}

Verified Verifier::run() {
  if (ran_.method == EigsMethod::dense && !opt_.certify) {
    v_.verified = true;
    v_.kind = Verification::dense;
    v_.line = "dense solve: all " + std::to_string(s_.n) + " eigenvalues computed";
    return v_;
  }
  if (!opt_.certify && !opt_.recheck) {
    v_.line = "not verified (--no-recheck)";
    return v_;
  }
  bool use_cert = false;
  const std::string why_kind = choose(use_cert);
  if (use_cert) return certify(why_kind);
  v_.kind = Verification::recheck;
  const RecheckOutcome rc = recheck();
  v_.verified = rc.verified;
  v_.line = why_kind + ": " + rc.detail;
  // A re-check that could not verify the set (it kept finding missed copies, or did not converge)
  // hands over to the certificate where one is possible and predicted at most twice the solve
  // (the alternative is an unverified set; a 3D factorization on the host can cost 100 solves):
  // its count says how many are missing and its rounds find them (gen:lap3d:12, k = 20,
  // single-vector shift-invert on the CPU: three copies added in three rounds, still unverified;
  // certified after the hand-over).
  if (!rc.verified && facts_.can_factor && s_.a && !interrupt_requested()) {
    const double cap = 2.0 * solve_s_;
    const double pred = certificate_seconds(cap, false);
    if (pred <= cap)
      return certify(why_kind + ": " + rc.detail + "; then the certificate (predicted " + fmt("%.3g", pred) + " s)");
    v_.line += "; no certificate after it (predicted " +
               (std::isfinite(pred) ? fmt("%.3g", pred) + " s" : std::string("above its analysis' budget")) +
               ", more than twice the solve's " + fmt("%.3g", solve_s_) + " s)";
  }
  return v_;
}

}  // namespace

Verified verify(const Problem& s, const EigsOptions& opt, const PlanFacts& facts, EigsPlan& plan,
                const PlanEstimate& ran, PairSet& pairs, Factorized* fz, double solve_s,
                const ChebyshevStats* cheb, const PlanProbes& probes) {
  return Verifier(s, opt, facts, plan, ran, pairs, fz, solve_s, cheb, probes).run();
}

}  // namespace tcsolve::eigs_detail
