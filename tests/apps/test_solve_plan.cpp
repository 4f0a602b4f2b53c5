// The block CG planner (solvers/solve_plan.hpp) that solve and the distributed solve share: the
// automatic preconditioner and its note, the right-hand sides per run when memory is short, and
// the fp32-iterations decision.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/device.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/solve_plan.hpp"

namespace tcsolve::test {
namespace {

SolvePlanFacts gpu_facts(std::int64_t n, std::int64_t rhs) {
  SolvePlanFacts f;
  f.facts.gpu = true;
  f.facts.n = n;
  f.facts.nnz = 7 * n;  // short rows
  f.rhs = rhs;
  return f;
}

TEST(SolvePlan, AutoTakesThePolynomialWhereItWinsAndSaysWhyNotElsewhere) {
  // (the fused step's copy of A must fit the GPU's free memory: asked only with a GPU)
  if (device_count() > 0) {
    const SolvePlan big = plan_solve(gpu_facts(1 << 20, 16));
    if (const char* why = auto_precond_refusal(gpu_facts(1 << 20, 16).facts)) {
      EXPECT_EQ(big.precond, CgPrecond::jacobi);
      EXPECT_EQ(big.note, std::string("jacobi (auto: not the Chebyshev polynomial, for ") + why + ")");
    } else {
      EXPECT_EQ(big.precond, CgPrecond::chebyshev);
      EXPECT_EQ(big.note, " (auto: short rows, a constant diagonal, on the GPU)");
    }
    EXPECT_EQ(big.batch, 16);
  }
  EXPECT_EQ(plan_solve(gpu_facts(1000, 16)).note, "jacobi (auto: not the Chebyshev polynomial, for fewer than 131072 rows)");
  SolvePlanFacts cpu = gpu_facts(1 << 20, 16);
  cpu.facts.gpu = false;
  const SolvePlan c = plan_solve(cpu);
  EXPECT_EQ(c.precond, CgPrecond::jacobi);
  EXPECT_EQ(c.note, "jacobi (auto: not the Chebyshev polynomial, for the CPU)");
  SolvePlanFacts refused = gpu_facts(1 << 20, 16);
  refused.refusal = "the GPU memory";
  EXPECT_EQ(plan_solve(refused).note, "jacobi (auto: not the Chebyshev polynomial, for the GPU memory)");
  SolvePlanFacts asked = gpu_facts(1 << 20, 16);
  asked.asked = CgPrecond::none;
  EXPECT_EQ(plan_solve(asked).precond, CgPrecond::none);
  EXPECT_TRUE(plan_solve(asked).note.empty());
}

// Right-hand sides in runs that fit: (fit - 1) / 8 with Jacobi, (fit - 12) / 11 with the
// polynomial; at least one; all of them without a limit. A limit makes auto take Jacobi (tight).
TEST(SolvePlan, RightHandSidesRunInBatchesThatFit) {
  SolvePlanFacts f = gpu_facts(1 << 20, 64);
  f.asked = CgPrecond::jacobi;
  f.fit_columns = 60;
  EXPECT_EQ(plan_solve(f).batch, (60 - 1) / 8);
  f.asked = CgPrecond::chebyshev;
  EXPECT_EQ(plan_solve(f).batch, (60 - 12) / 11);
  f.fit_columns = 5;
  EXPECT_EQ(plan_solve(f).batch, 1);
  f.fit_columns = 0;
  EXPECT_EQ(plan_solve(f).batch, 64);
  SolvePlanFacts tight = gpu_facts(1 << 20, 64);
  tight.fit_columns = 600;
  const SolvePlan t = plan_solve(tight);
  EXPECT_EQ(t.precond, CgPrecond::jacobi);
  EXPECT_NE(t.note.find("jacobi (auto: not the Chebyshev polynomial"), std::string::npos) << t.note;
}

TEST(SolvePlan, Fp32IterationsOnlyWhereTheyApply) {
  SolvePlan p;
  p.precond = CgPrecond::jacobi;
  p.batch = kCgFp32MaxRhs;
  ::unsetenv("TCSOLVE_CG_FP32");
  EXPECT_TRUE(cg_fp32_iterations(p, true, true, false));
  EXPECT_FALSE(cg_fp32_iterations(p, false, true, false));  // --precision fp64
  EXPECT_FALSE(cg_fp32_iterations(p, true, false, false));  // the CPU
  EXPECT_FALSE(cg_fp32_iterations(p, true, true, true));    // a reordered basis
  p.batch = kCgFp32MaxRhs + 1;
  EXPECT_FALSE(cg_fp32_iterations(p, true, true, false));
  p.batch = 4;
  p.precond = CgPrecond::chebyshev;
  EXPECT_FALSE(cg_fp32_iterations(p, true, true, false));
  p.precond = CgPrecond::none;
  ::setenv("TCSOLVE_CG_FP32", "0", 1);
  EXPECT_FALSE(cg_fp32_iterations(p, true, true, false));
  ::unsetenv("TCSOLVE_CG_FP32");
  EXPECT_TRUE(cg_fp32_iterations(p, true, true, false));
}

}  // namespace
}  // namespace tcsolve::test
