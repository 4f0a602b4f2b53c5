#include "solvers/solve_plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "solvers/block_cg.hpp"

namespace tcsolve {

const char* to_string(CgPrecond p) {
  switch (p) {
    case CgPrecond::automatic: return "auto";
    case CgPrecond::none: return "none";
    case CgPrecond::jacobi: return "jacobi";
    case CgPrecond::chebyshev: return "chebyshev";
  }
  return "?";
}

SolvePlan plan_solve(const SolvePlanFacts& f) {
  SolvePlan p;
  p.precond = f.asked;
  if (f.asked == CgPrecond::automatic) {
    AutoPrecondFacts facts = f.facts;
    facts.tight = f.fit_columns > 0;
    const char* why = f.refusal ? f.refusal : auto_precond_refusal(facts);
    if (why) {
      p.precond = CgPrecond::jacobi;
      p.note = std::string("jacobi (auto: not the Chebyshev polynomial, for ") + why + ")";
    } else {
      p.precond = CgPrecond::chebyshev;
      p.note = " (auto: short rows, a constant diagonal, on the GPU)";
    }
  }
  const bool cheb = p.precond == CgPrecond::chebyshev;
  const std::int64_t per_col = cheb ? 11 : 8, reserve = cheb ? 12 : 1;
  p.batch = f.fit_columns > 0 ? std::max<std::int64_t>(1, std::min(f.rhs, (f.fit_columns - reserve) / per_col))
                              : f.rhs;
  return p;
}

bool cg_fp32_iterations(const SolvePlan& p, bool precision_auto, bool on_device_fp32, bool reordered) {
  const char* env = std::getenv("TCSOLVE_CG_FP32");
  return precision_auto && p.precond != CgPrecond::chebyshev && !reordered && on_device_fp32 &&
         p.batch <= kCgFp32MaxRhs && !(env && std::string(env) == "0");
}

}  // namespace tcsolve
