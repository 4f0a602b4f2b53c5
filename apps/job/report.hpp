// The end-of-run text of `tcsolve eigs|solve`: the table of pairs or columns, then a few lines
// of at most about 100 characters — what ran and its status, the plan (method, and the best
// rejected one), the time predicted against the time taken, how the set was verified, and the
// notes. --verbose adds the full reasoning (the plan with every prediction, the factorization, the
// certificate's counts, the phases, the precision's rungs), which --json and the result file also
// hold (method_reason, certificate, factorization, seconds, precision).
#pragma once
#include <ostream>
#include <string>

#include "results/record.hpp"
#include "apps/job/spec.hpp"

namespace tcsolve::app {

void print_result_text(std::ostream& os, const JobSpec& s, const ResultRecord& r, bool verbose);

// The one-line forms (without a newline).
// "plan: auto: shift-invert lanczos + re-check; best rejected: chebyshev + re-check (0.812 s)"
std::string plan_line(const ResultRecord& r);
// "time: predicted 0.112 s, took 0.442 s to plan, set up, solve and verify; 0.478 s in all"
std::string time_line(const ResultRecord& r);
// "verified by certificate, certified: yes; test rel, tol 1e-08"
std::string verification_line(const ResultRecord& r);
// `text` cut to about `width` characters at a clause's end (", ", "; ", " ("), with "..." when cut.
std::string clip(const std::string& text, std::size_t width = 100);

}  // namespace tcsolve::app
