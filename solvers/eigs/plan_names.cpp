// The names of the eigs planner's enums (solvers/eigs/plan.hpp): methods, preconditioners,
// verifications and rounding-floor outlooks, and their parsers.
#include "solvers/eigs/plan.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"

namespace tcsolve {

const char* to_string(EigsMethod m) {
  switch (m) {
    case EigsMethod::automatic: return "auto";
    case EigsMethod::lanczos: return "lanczos";
    case EigsMethod::lobpcg: return "lobpcg";
    case EigsMethod::chebyshev: return "chebyshev";
    case EigsMethod::dense: return "dense";
  }
  return "?";
}

const std::vector<std::string>& eigs_method_names() {
  static const std::vector<std::string> names{"auto", "lanczos", "lobpcg", "chebyshev", "dense"};
  return names;
}

namespace {
std::string expected_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}
}  // namespace

EigsMethod parse_eigs_method(const std::string& s) {
  for (EigsMethod m : {EigsMethod::automatic, EigsMethod::lanczos, EigsMethod::lobpcg,
                       EigsMethod::chebyshev, EigsMethod::dense})
    if (s == to_string(m)) return m;
  throw InvalidArgument("method '" + s + "': expected " + expected_list(eigs_method_names()));
}

const char* to_string(EigsPrecond p) {
  switch (p) {
    case EigsPrecond::automatic: return "auto";
    case EigsPrecond::none: return "none";
    case EigsPrecond::jacobi: return "jacobi";
    case EigsPrecond::factor: return "factor";
  }
  return "?";
}

const std::vector<std::string>& eigs_precond_names() {
  static const std::vector<std::string> names{"auto", "none", "jacobi", "factor"};
  return names;
}

EigsPrecond parse_eigs_precond(const std::string& s) {
  for (EigsPrecond p : {EigsPrecond::automatic, EigsPrecond::none, EigsPrecond::jacobi, EigsPrecond::factor})
    if (s == to_string(p)) return p;
  throw InvalidArgument("precond '" + s + "': expected " + expected_list(eigs_precond_names()));
}

const char* to_string(Verification v) {
  switch (v) {
    case Verification::certificate: return "certificate";
    case Verification::recheck: return "recheck";
    case Verification::dense: return "dense";
    case Verification::none: return "none";
  }
  return "?";
}

const char* to_string(FloorRisk r) {
  switch (r) {
    case FloorRisk::clear: return "clear";
    case FloorRisk::at_risk: return "at risk";
    case FloorRisk::out_of_reach: return "out of reach";
  }
  return "?";
}

}  // namespace tcsolve
