// The selections made of runs (solvers/eigs/eigs.hpp): largest_magnitude, both_ends and
// smallest_magnitude from the driver's runs for the ends, nearest without a factorization through
// the folded operator (folded.cpp); and the names of the selections.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "solvers/eigs/steps.hpp"

namespace tcsolve {

const char* to_string(Which w) {
  switch (w) {
    case Which::smallest: return "smallest";
    case Which::largest: return "largest";
    case Which::nearest: return "nearest";
    case Which::largest_magnitude: return "largest_magnitude";
    case Which::smallest_magnitude: return "smallest_magnitude";
    case Which::both_ends: return "both_ends";
  }
  return "?";
}

const std::vector<std::string>& which_names() {
  static const std::vector<std::string> names{"smallest",          "largest",           "nearest",
                                              "largest_magnitude", "smallest_magnitude", "both_ends"};
  return names;
}

Which parse_which(const std::string& s) {
  std::string l = s;
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (Which w : {Which::smallest, Which::largest, Which::nearest, Which::largest_magnitude,
                  Which::smallest_magnitude, Which::both_ends})
    if (l == to_string(w)) return w;
  // SciPy's eigsh spellings
  if (l == "la") return Which::largest;
  if (l == "sa") return Which::smallest;
  if (l == "lm") return Which::largest_magnitude;
  if (l == "sm") return Which::smallest_magnitude;
  if (l == "be") return Which::both_ends;
  throw InvalidArgument("which '" + s + "': expected smallest, largest, nearest, largest_magnitude, "
                        "smallest_magnitude or both_ends (or SciPy's LA, SA, LM, SM, BE)");
}

namespace eigs_detail {

SpectrumBounds spectrum_bounds(const PlanFacts& f) {
  SpectrumBounds out;
  if (!(f.a_disc_lo <= f.a_disc_hi)) return out;  // (NaN: not known)
  if (!f.generalized) {
    out.lo = f.a_disc_lo, out.hi = f.a_disc_hi;
  } else {  // λ = xᵀAx / xᵀBx: only the signs carry over
    if (f.a_disc_lo >= 0) out.lo = 0.0;
    if (f.a_disc_hi <= 0) out.hi = 0.0;
  }
  return out;
}

PlanFacts operator_facts(const PlanFacts& facts, const std::string& why, double a_norm) {
  PlanFacts f;
  f.n = facts.n;
  f.generalized = facts.generalized;
  f.matrix_form = false;
  f.can_factor = false;
  f.factor_why = why;
  f.backend = facts.backend;
  f.a_norm = a_norm;
  f.b_norm = facts.b_norm;
  f.binv_norm = facts.binv_norm;
  return f;
}

EigsResult run_one(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  if (!opt.constraints.empty()) return run_constrained(s, opt, facts);
  return run_all(s, opt, facts, memo);
}

namespace {

// One run of a selection: its result and what method_reason calls it.
struct Part {
  std::string label;
  EigsResult r;
};

// A column of a part.
struct Pick {
  std::size_t part;
  std::int64_t col;
};

int status_rank(SolverStatus s) {
  switch (s) {
    case SolverStatus::converged: return 0;
    case SolverStatus::unverified: return 1;
    case SolverStatus::not_converged: return 2;
    case SolverStatus::breakdown: return 3;
    default: return 4;
  }
}

int verification_rank(Verification v) { return v == Verification::none ? 2 : v == Verification::recheck ? 1 : 0; }

int certified_rank(Certified c) { return c == Certified::no ? 2 : c == Certified::not_checked ? 1 : 0; }

void join(std::string& into, const std::string& text, const char* sep = "; ") {
  if (!text.empty()) into += (into.empty() ? "" : sep) + text;
}

bool passed(const EigsResult& r) {
  return r.status == SolverStatus::converged || r.status == SolverStatus::unverified;
}

// The picked pairs, in the order of `picks`, as one result. From the parts that gave pairs (every
// part when `all_decide`: the choice between them rested on all their values, so a part that did
// not converge taints the set even when it gave none): the status, reason, verification and
// certificate (the worst of them); from every part: the runs, counts, seconds and history (the
// order they ran) and method_reason (`how`, then each part's).
EigsResult combine(std::vector<Part>& parts, const std::vector<Pick>& picks, const std::string& how,
                   bool all_decide = false) {
  EigsResult out;
  const EigsResult& first = parts.front().r;
  out.n = first.n, out.conv = first.conv, out.a_norm = first.a_norm, out.b_norm = first.b_norm;
  out.spmm_kernel = first.spmm_kernel, out.spmm_plan = first.spmm_plan;
  std::vector<char> gave(parts.size(), all_decide ? 1 : 0);
  for (const Pick& p : picks) gave[p.part] = 1;
  bool vectors = true;
  for (const Part& p : parts) vectors = vectors && p.r.vectors.size() == p.r.values.size() * static_cast<std::size_t>(p.r.n);
  const std::size_t n = static_cast<std::size_t>(first.n);
  for (std::size_t i = 0; i < picks.size(); ++i) {
    const EigsResult& r = parts[picks[i].part].r;
    const std::size_t j = static_cast<std::size_t>(picks[i].col);
    out.values.push_back(r.values[j]);
    out.residual_norms.push_back(j < r.residual_norms.size() ? r.residual_norms[j] : NAN);
    out.residual_bounds.push_back(j < r.residual_bounds.size() ? r.residual_bounds[j] : NAN);
    out.error_bounds.push_back(j < r.error_bounds.size() ? r.error_bounds[j] : NAN);
    if (vectors) out.vectors.insert(out.vectors.end(), r.vectors.begin() + j * n, r.vectors.begin() + (j + 1) * n);
    if (std::count(r.floor_pairs.begin(), r.floor_pairs.end(), picks[i].col))
      out.floor_pairs.push_back(static_cast<std::int64_t>(i));
  }
  out.status = SolverStatus::converged;
  out.verification = Verification::dense;
  out.certified = Certified::yes;
  out.why = how;
  std::int64_t offset = 0;
  for (std::size_t q = 0; q < parts.size(); ++q) {
    EigsResult& r = parts[q].r;
    const std::string& label = parts[q].label;
    if (gave[q]) {
      if (status_rank(r.status) > status_rank(out.status)) out.status = r.status;
      if (!r.reason.empty()) join(out.reason, label + ": " + r.reason);
      if (verification_rank(r.verification) > verification_rank(out.verification)) out.verification = r.verification;
      if (certified_rank(r.certified) > certified_rank(out.certified)) out.certified = r.certified;
      join(out.certificate, label + ": " + r.certificate);
      if (out.method.find(r.method) == std::string::npos) join(out.method, r.method, "+");
      if (r.transform != "none") out.transform = r.transform, out.sigma = r.sigma;
      if (out.precision.empty() || out.precision == "fp64") out.precision = r.precision;
      if (!r.test_floor.empty()) join(out.test_floor, label + ": " + r.test_floor);
    }
    join(out.why, label + ": " + r.why);
    if (!r.factor.empty()) join(out.factor, label + ": " + r.factor);
    if (!r.solve_steps.empty()) join(out.solve_steps, label + ": " + r.solve_steps);
    out.predicted_seconds += r.predicted_seconds;
    out.iterations += r.iterations, out.operator_applies += r.operator_applies;
    out.plan_seconds += r.plan_seconds, out.setup_seconds += r.setup_seconds;
    out.solve_seconds += r.solve_seconds, out.verify_seconds += r.verify_seconds;
    std::int64_t last = 0;
    for (IterationRecord& h : r.history) last = h.iteration, h.iteration += offset, out.history.push_back(std::move(h));
    offset += last;
    for (EigsRunRecord& run : r.runs) out.runs.push_back(std::move(run));
  }
  return out;
}

// A selection an interrupt stopped before its last run: the pairs found so far, not the set asked
// for (status interrupted).
EigsResult stopped(std::vector<Part>& parts, const std::vector<Pick>& picks, const std::string& head) {
  EigsResult r = combine(parts, picks, head + "interrupted before its last run", true);
  r.status = SolverStatus::interrupted;
  r.reason = "interrupted before the selection's last run: the pairs are those of the runs done, not the set "
             "asked for" + (r.reason.empty() ? std::string() : "; " + r.reason);
  return r;
}

// Every column of the parts, in the wanted order of `w` (the first k).
std::vector<Pick> best(const std::vector<Part>& parts, Which w, std::int64_t k) {
  std::vector<Pick> all;
  std::vector<double> v;
  for (std::size_t q = 0; q < parts.size(); ++q)
    for (std::size_t j = 0; j < parts[q].r.values.size(); ++j)
      all.push_back({q, static_cast<std::int64_t>(j)}), v.push_back(parts[q].r.values[j]);
  std::vector<std::int64_t> o = wanted_order(v, w, 0.0);
  if (static_cast<std::int64_t>(o.size()) > k) o.resize(k);
  std::vector<Pick> out;
  for (auto i : o) out.push_back(all[i]);
  return out;
}

EigsOptions end_options(const EigsOptions& opt, Which w, std::int64_t k) {
  EigsOptions o = opt;
  o.which = w;
  o.k = k;
  return o;
}

const char* end_label(Which w) { return w == Which::largest ? "the largest end" : "the smallest end"; }

// One run of the other end, or a part of the end that a bound says suffices.
Part end_part(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo, Which w, std::int64_t k) {
  return Part{std::string(end_label(w)) + " (k = " + std::to_string(k) + ")", run_one(s, end_options(opt, w, k), facts, memo)};
}

// 'LM': the end a bound favours first, the other unless a bound proves it cannot contribute.
EigsResult largest_magnitude(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  const SpectrumBounds b = spectrum_bounds(facts);
  const std::int64_t k = opt.k, n = s.global_n();
  const std::string head = "which largest_magnitude: ";
  std::vector<Part> parts;
  if (b.lo >= 0 || b.hi <= 0) {
    const Which w = b.lo >= 0 ? Which::largest : Which::smallest;
    parts.push_back(end_part(s, opt, facts, memo, w, k));
    return combine(parts, best(parts, Which::largest_magnitude, k),
                   head + end_label(w) + " only (Gershgorin: no eigenvalue " + (b.lo >= 0 ? "below" : "above") + " 0)");
  }
  // Gershgorin's interval [lo, hi] of A: the end with the larger bound first.
  const bool low_first = std::isfinite(b.lo) && std::isfinite(b.hi) && -b.lo > b.hi;
  const Which w1 = low_first ? Which::smallest : Which::largest, w2 = low_first ? Which::largest : Which::smallest;
  parts.push_back(end_part(s, opt, facts, memo, w1, k));
  const std::vector<double>& v = parts[0].r.values;
  if (!facts.generalized && static_cast<std::int64_t>(v.size()) == k) {
    // Standard problem: every eigenvalue beyond the other end lies within Gershgorin's bound; the
    // k-th found bounds it in magnitude.
    const double kth = low_first ? -*std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end());
    const double other = low_first ? b.hi : -b.lo;
    if (kth >= 0 && other <= kth)
      return combine(parts, best(parts, Which::largest_magnitude, k),
                     head + end_label(w1) + " only (Gershgorin: no eigenvalue " + (low_first ? "above" : "below") +
                         " -lambda_k, lambda_k = " + fmt("%.6g", low_first ? -kth : kth) + ")");
  }
  if (interrupt_requested()) return stopped(parts, best(parts, Which::largest_magnitude, k), head);
  parts.push_back(end_part(s, opt, facts, memo, w2, std::min(k, n - k)));
  const std::vector<Pick> picks = best(parts, Which::largest_magnitude, k);
  std::int64_t from_first = 0;
  for (const Pick& p : picks) from_first += p.part == 0;
  return combine(parts, picks,
                 head + "the largest and the smallest end merged by |lambda| (" + std::to_string(from_first) +
                     " from " + end_label(w1) + ", " + std::to_string(k - from_first) + " from " + end_label(w2) + ")",
                 /*all_decide=*/true);
}

// 'BE': ceil(k/2) from the largest end, floor(k/2) from the smallest.
EigsResult both_ends(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  const std::int64_t k = opt.k, k_hi = k - k / 2, k_lo = k / 2;
  std::vector<Part> parts;
  const std::string head = "which both_ends: ";
  parts.push_back(end_part(s, opt, facts, memo, Which::largest, k_hi));
  if (k_lo > 0 && interrupt_requested()) return stopped(parts, best(parts, Which::both_ends, k), head);
  if (k_lo > 0) parts.push_back(end_part(s, opt, facts, memo, Which::smallest, k_lo));
  return combine(parts, best(parts, Which::both_ends, k),
                 head + "the " + std::to_string(k_hi) + " largest and the " + std::to_string(k_lo) + " smallest", true);
}

// Shift-invert can serve nearest σ: a matrix whose A − σB may be factored, no constraints.
bool can_shift_invert(const Problem& s, const EigsOptions& opt, const PlanFacts& facts) {
  return facts.can_factor && s.a && opt.constraints.empty() && s.global_n() == s.n;
}

// 'SM': nearest 0 by shift-invert; without a factorization an end that is one-signed, else the
// folded operator around 0.
EigsResult smallest_magnitude(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  const std::string head = "which smallest_magnitude: ";
  const std::int64_t k = opt.k;
  std::vector<Part> parts;
  if (can_shift_invert(s, opt, facts)) {
    EigsOptions o = opt;
    o.which = Which::nearest, o.has_sigma = true, o.sigma = 0.0;
    parts.push_back({"nearest 0", run_one(s, o, facts, memo)});
    return combine(parts, best(parts, Which::smallest_magnitude, k), head + "nearest 0 by shift-invert");
  }
  const SpectrumBounds b = spectrum_bounds(facts);
  if (b.lo >= 0 || b.hi <= 0) {
    const Which w = b.lo >= 0 ? Which::smallest : Which::largest;
    parts.push_back(end_part(s, opt, facts, memo, w, k));
    return combine(parts, best(parts, Which::smallest_magnitude, k),
                   head + end_label(w) + " (Gershgorin: no eigenvalue " + (b.lo >= 0 ? "below" : "above") + " 0)");
  }
  parts.push_back(end_part(s, opt, facts, memo, Which::smallest, k));
  const auto one_signed = [&](const Part& p, double sign) {
    if (!passed(p.r) || static_cast<std::int64_t>(p.r.values.size()) != k) return false;
    for (double v : p.r.values)
      if (sign * v < 0) return false;
    return true;
  };
  // Part q's pairs alone, by |λ| (the other parts' runs stay on record).
  const auto from = [&](std::size_t q) {
    std::vector<Pick> picks;
    for (auto j : wanted_order(parts[q].r.values, Which::smallest_magnitude, 0.0)) picks.push_back({q, j});
    return picks;
  };
  if (one_signed(parts[0], 1.0))
    return combine(parts, from(0), head + "the smallest end is non-negative, so it is the smallest in magnitude");
  if (interrupt_requested()) return stopped(parts, from(0), head);
  parts.push_back(end_part(s, opt, facts, memo, Which::largest, k));
  if (one_signed(parts[1], -1.0))
    return combine(parts, from(1), head + "the largest end is non-positive, so it is the smallest in magnitude");
  if (interrupt_requested()) return stopped(parts, from(1), head);
  parts.push_back({"nearest 0", run_folded(s, opt, facts, 0.0)});
  return combine(parts, from(2), head + "the spectrum has both signs: nearest 0 without a factorization");
}

}  // namespace

EigsResult run_selection(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  EigsOptions o = opt;
  if (o.which == Which::largest_magnitude && o.has_sigma) o.which = Which::nearest;  // SciPy's sigma with 'LM'
  switch (o.which) {
    case Which::largest_magnitude: return largest_magnitude(s, o, facts, memo);
    case Which::both_ends: return both_ends(s, o, facts, memo);
    case Which::smallest_magnitude: return smallest_magnitude(s, o, facts, memo);
    case Which::nearest:
      if (!can_shift_invert(s, o, facts)) return run_folded(s, o, facts, o.sigma);
      return run_one(s, o, facts, memo);
    default: return run_one(s, o, facts, memo);
  }
}

}  // namespace eigs_detail
}  // namespace tcsolve
