#include "apps/job/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "apps/cli.hpp"

namespace tcsolve::app {

namespace {

// The text of `s` from `from` up to the first of `ends` (the rest when none).
std::string up_to(const std::string& s, std::size_t from, std::initializer_list<const char*> ends) {
  std::size_t stop = s.size();
  for (const char* e : ends) stop = std::min(stop, s.find(e, from));
  return s.substr(from, stop - from);
}

void print_table(std::ostream& os, const JobSpec& s, const ResultRecord& r) {
  if (s.eigs()) {
    os << format("%4s  %24s  %12s  %12s\n", "j", "eigenvalue", "residual", "error bound");
    for (std::size_t j = 0; j < r.eigenvalues.size(); ++j)
      os << format("%4zu  %24.16e  %12.3e  %12.3e\n", j, r.eigenvalues[j],
                   j < r.residual_norms.size() ? r.residual_norms[j] : NAN,
                   j < r.error_bounds.size() ? r.error_bounds[j] : NAN);
  } else {
    os << format("%6s  %14s  %10s\n", "column", "rel. residual", "iterations");
    for (std::size_t j = 0; j < r.residual_norms.size(); ++j)
      os << format("%6zu  %14.3e  %10lld\n", j, r.residual_norms[j],
                   j < r.column_iterations.size() ? (long long)r.column_iterations[j] : -1LL);
  }
}

// The phases, each with its seconds (--verbose).
std::string phases_line(const JobSpec& s, const ResultRecord& r) {
  return format("phases: read %s, preprocess %s, %ssetup %s, solve %s, %swrite %s; total %s",
                format_seconds(r.time_read).c_str(), format_seconds(r.time_preprocess).c_str(),
                s.eigs() ? ("plan " + format_seconds(r.time_plan) + ", ").c_str() : "",
                format_seconds(r.time_setup).c_str(), format_seconds(r.time_solve).c_str(),
                s.eigs() ? ("verify " + format_seconds(r.time_verify) + ", ").c_str() : "",
                format_seconds(r.time_write).c_str(), format_seconds(r.time_total).c_str());
}

std::string checkpoints_line(const JobSpec& s, const ResultRecord& r) {
  std::string t = format("checkpoints: %lld written to %s", (long long)r.checkpoints, s.checkpoint.c_str());
  if (r.checkpoints > 0)
    t += format(" (%s each, %s in all)", format_bytes(r.checkpoint_bytes).c_str(),
                format_seconds(r.checkpoint_seconds).c_str());
  if (r.checkpoint_failures > 0)
    t += format("; %lld failed, no more were tried (%s)", (long long)r.checkpoint_failures, r.checkpoint_note.c_str());
  return t;
}

// svds: the run in one line, the triplets (values, both residuals relative to s₁, the explained
// variance when centered), the result file, the checkpoints and notes.
void print_svds_text(std::ostream& os, const JobSpec& s, const ResultRecord& r) {
  os << format("svds: %lld × %lld, k = %lld%s, %s: %s after %lld restarts (%lld applies), %s\n", (long long)r.rows,
               (long long)r.cols, (long long)r.k, r.centered ? " (centered)" : "", r.method.c_str(), r.status.c_str(),
               (long long)r.iterations, (long long)r.operator_applies,
               format_seconds(r.time_setup + r.time_solve + r.time_verify).c_str());
  os << format("%4s  %24s  %12s  %12s%s\n", "j", "singular value", "|Av-su|/s1", "|A'u-sv|/s1",
               r.centered ? "  explained" : "");
  const double s1 = r.a_norm > 0 ? r.a_norm : 1.0;
  const auto& ratio = r.explained_variance_ratio;
  for (std::size_t j = 0; j < r.singular_values.size(); ++j)
    os << format("%4zu  %24.17g  %12.3e  %12.3e", j + 1, r.singular_values[j],
                 j < r.residual_av.size() ? r.residual_av[j] / s1 : NAN,
                 j < r.residual_atu.size() ? r.residual_atu[j] / s1 : NAN)
       << (r.centered && j < ratio.size() ? format("  %9.4f%%", 100 * ratio[j]) : "") << "\n";
  if (!r.method_reason.empty()) os << "method: " << r.method_reason << "\n";
  if (!r.verification.empty())
    os << "verified by: " << r.verification << "; certified: " << r.certified
       << (r.certificate.empty() ? "" : " (" + r.certificate + ")") << "\n";
  if (!s.out.empty()) os << "written: " << s.out << "\n";
  if (!s.plot.empty()) os << "written: " << s.plot << "\n";
  if (!s.checkpoint.empty()) os << checkpoints_line(s, r) << "\n";
  if (r.status == "converged" && !r.reason.empty()) os << "note: " << r.reason << "\n";
}

// The lines that only --verbose prints in full (the default prints their first clauses).
void print_details(std::ostream& os, const JobSpec& s, const ResultRecord& r, bool verbose) {
  auto line = [&](const char* what, const std::string& text) {
    if (!text.empty()) os << what << ": " << (verbose ? text : clip(text, 100 - std::strlen(what) - 2)) << "\n";
  };
  if (!r.device_reason.empty())
    line("device", verbose ? r.device_reason
                           : std::string("auto: the host (small enough to end before a GPU would have started)"));
  if (r.precision_used != "fp64") line("precision", r.precision_used);
  if (s.eigs()) {
    if (verbose) line("plan", r.method_reason);
    else os << plan_line(r) << "\n";
    if (verbose) line("factorization", r.factorization);
  }
  os << time_line(r) << "\n";
  if (verbose) os << phases_line(s, r) << "\n";
  if (s.eigs() && verbose)
    os << format("verified by %s, certified: %s (%s); test %s, tol %g\n", r.verification.c_str(),
                 r.certified.c_str(), r.certificate.c_str(), r.convergence_test.c_str(), r.tolerance);
  else if (s.eigs())
    os << verification_line(r) << "\n";
  if (!s.checkpoint.empty()) os << checkpoints_line(s, r) << "\n";
  line("reorder", r.reorder_plan);
  line("distributed", r.distributed);
  line("note", r.reason);
}

}  // namespace

std::string clip(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  std::size_t cut = 0;
  for (const char* sep : {", ", "; ", " ("}) {
    const std::size_t at = text.rfind(sep, width - 4);
    if (at != std::string::npos && at > cut) cut = at;
  }
  if (cut < width / 3) cut = width - 4;
  return text.substr(0, cut) + " ...";
}

std::string plan_line(const ResultRecord& r) {
  const std::string& why = r.method_reason;
  if (why.rfind("auto: ", 0) != 0) return clip("plan: " + up_to(why, 0, {"; ", " ("}));
  std::string line = "plan: auto: " + up_to(why, 6, {": predicted", "; "});
  const std::size_t rej = why.find("best rejected: ");
  if (rej != std::string::npos) {
    line += "; best rejected: " + up_to(why, rej + 15, {": predicted", "; ", " ["});
    const std::size_t p = why.find(": predicted ", rej);
    if (p != std::string::npos && p < why.find("; ", rej + 15))
      line += " (" + up_to(why, p + 12, {" (", ";", " ["}) + ")";
  } else if (const std::size_t next = why.find("; "); next != std::string::npos) {
    line += "; " + up_to(why, next + 2, {", ", " (", "; "});  // e.g. "shift-invert lanczos: not priced"
  }
  return clip(line);
}

std::string time_line(const ResultRecord& r) {
  if (!r.is_eigs())
    return format("time: %s in all (set-up %s, solve %s)", format_seconds(r.time_total).c_str(),
                  format_seconds(r.time_setup).c_str(), format_seconds(r.time_solve).c_str());
  // What the plan priced: planning, set-up (after the operator, which precedes the plan), the
  // solve and the verification.
  const double took = r.time_plan + (r.time_setup - r.time_operator) + r.time_solve + r.time_verify;
  const std::string in_all = format_seconds(r.time_total) + " in all";
  if (r.predicted_seconds > 0)
    return format("time: predicted %s, took %s to plan, set up, solve and verify; %s",
                  format_seconds(r.predicted_seconds).c_str(), format_seconds(took).c_str(), in_all.c_str());
  return format("time: %s to plan, set up, solve and verify (not predicted); %s", format_seconds(took).c_str(),
                in_all.c_str());
}

std::string verification_line(const ResultRecord& r) {
  return format("verified by %s, certified: %s; test %s, tol %g", r.verification.c_str(), r.certified.c_str(),
                r.convergence_test.c_str(), r.tolerance);
}

void print_result_text(std::ostream& os, const JobSpec& s, const ResultRecord& r, bool verbose) {
  if (s.svds()) return print_svds_text(os, s, r);
  print_table(os, s, r);
  os << format("%s: %s after %lld iterations (%s, %s on %s, kernel %s)\n", r.method.c_str(), r.status.c_str(),
               (long long)r.iterations, r.precision.c_str(), r.backend.c_str(), r.device.c_str(),
               r.spmm_kernel.c_str());
  print_details(os, s, r, verbose);
  if (!s.out.empty()) os << "wrote " << s.out << "\n";
  if (!s.plot.empty()) os << "wrote " << s.plot << "\n";
}

}  // namespace tcsolve::app
