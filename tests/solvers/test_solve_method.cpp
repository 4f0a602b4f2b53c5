// The solve planner's method choice and the iterative budget (solvers/solve_method.hpp), on
// fixed inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "solvers/solve_method.hpp"

namespace tcsolve {
namespace {

SolveMethodFacts facts(MatrixKind kind, std::int64_t n, double direct_seconds) {
  SolveMethodFacts f;
  f.kind = kind;
  f.rows = f.cols = n;
  f.nnz = 5 * n;
  f.rhs = 16;
  f.direct.feasible = direct_seconds > 0;
  f.direct.why = "over the memory limit";
  f.direct_seconds = direct_seconds;
  return f;
}

TEST(SolveMethod, NamesParseBackAndBadOnesAreRefused) {
  for (auto m : {SolveMethod::automatic, SolveMethod::cg, SolveMethod::minres, SolveMethod::gmres,
                 SolveMethod::direct, SolveMethod::lsqr})
    EXPECT_EQ(parse_solve_method(to_string(m)), m);
  EXPECT_THROW(parse_solve_method("bicg"), InvalidArgument);
}

TEST(SolveMethod, RectangularGoesToQr) {
  auto f = facts(MatrixKind::rectangular, 1000, 0.5);
  f.cols = 400;
  const auto p = plan_solve_method(f);
  EXPECT_EQ(p.method, SolveMethod::direct);
  EXPECT_NE(p.why.find("least squares"), std::string::npos);
}

TEST(SolveMethod, ACheapFactorizationIsTakenOutright) {
  const auto p = plan_solve_method(facts(MatrixKind::unsymmetric, 1000, 0.01));
  EXPECT_EQ(p.method, SolveMethod::direct);
  // ... and one cheaper than the iterations no iterative solve does fewer of.
  auto f = facts(MatrixKind::symmetric_indefinite, 1000000, 0.5);
  f.bandwidth = 1e9;  // 30 iterations: 30·(60e6 + 1.5e9)/1e9 ≈ 47 s
  EXPECT_EQ(plan_solve_method(f).method, SolveMethod::direct);
}

TEST(SolveMethod, ALargeProblemIteratesWithTheDirectSolveAsBudgetAndFallback) {
  auto f = facts(MatrixKind::symmetric_indefinite, 1000000, 20.0);
  f.bandwidth = 3e12;
  const auto p = plan_solve_method(f);
  EXPECT_EQ(p.method, SolveMethod::minres);
  ASSERT_EQ(p.fallbacks.size(), 1u);
  EXPECT_EQ(p.fallbacks[0], SolveMethod::direct);
  EXPECT_DOUBLE_EQ(p.budget_seconds, 20.0);
  f.kind = MatrixKind::unsymmetric;
  EXPECT_EQ(plan_solve_method(f).method, SolveMethod::gmres);
  EXPECT_DOUBLE_EQ(plan_solve_method(f).budget_seconds, 20.0);
}

TEST(SolveMethod, PositiveDiagonalKeepsBlockCgUnbudgeted) {
  // even where a factorization is cheap: CG first, MINRES if pᵀAp < 0, the direct solve if it fails
  auto f = facts(MatrixKind::symmetric_positive, 1000, 0.001);
  const auto p = plan_solve_method(f);
  EXPECT_EQ(p.method, SolveMethod::cg);
  ASSERT_EQ(p.fallbacks.size(), 2u);
  EXPECT_EQ(p.fallbacks[0], SolveMethod::minres);
  EXPECT_EQ(p.fallbacks[1], SolveMethod::direct);
  EXPECT_EQ(p.budget_seconds, 0.0);
}

TEST(SolveMethod, NoFeasibleFactorizationMeansNoBudget) {
  auto f = facts(MatrixKind::unsymmetric, 1000000, 0.0);
  f.bandwidth = 3e12;
  const auto p = plan_solve_method(f);
  EXPECT_EQ(p.method, SolveMethod::gmres);
  EXPECT_TRUE(p.fallbacks.empty());
  EXPECT_EQ(p.budget_seconds, 0.0);
  EXPECT_NE(p.why.find("over the memory limit"), std::string::npos);
}

TEST(SolveMethod, AnUnpricedFactorizationIsAFallbackWithoutBudget) {
  auto f = facts(MatrixKind::unsymmetric, 1000000, 0.0);
  f.direct_priced = false;
  f.bandwidth = 3e12;
  const auto p = plan_solve_method(f);
  EXPECT_EQ(p.method, SolveMethod::gmres);
  ASSERT_EQ(p.fallbacks.size(), 1u);
  EXPECT_EQ(p.fallbacks[0], SolveMethod::direct);
  EXPECT_EQ(p.budget_seconds, 0.0);
  EXPECT_NE(p.why.find("ordering alone"), std::string::npos);
}

TEST(SolveMethod, AskedIsObeyed) {
  auto f = facts(MatrixKind::unsymmetric, 1000, 0.01);
  f.asked = SolveMethod::gmres;
  EXPECT_EQ(plan_solve_method(f).method, SolveMethod::gmres);
}

// Residuals falling by `factor` an iteration, one iteration every `dt` seconds.
bool exceeds(double factor, double dt, double budget, double tol, int iterations) {
  IterativeBudget b(budget, tol);
  IterationRecord rec;
  try {
    for (int t = 0; t <= iterations; ++t) {
      rec.residual_norms = {std::pow(factor, t), 0.5 * std::pow(factor, t)};
      b.check(rec, t * dt);
    }
  } catch (const BudgetExceeded&) {
    return true;
  }
  return false;
}

TEST(SolveMethod, TheBudgetGivesWayOnlyWhenTheMeasuredRateMissesIt) {
  // 1 % an iteration to 1e-8: ~1830 iterations, 18 s at 10 ms each, against a 5 s budget.
  EXPECT_TRUE(exceeds(0.99, 0.01, 5.0, 1e-8, 100));
  // 30 % an iteration: ~52 iterations, 0.5 s: well inside.
  EXPECT_FALSE(exceeds(0.7, 0.01, 5.0, 1e-8, 52));
  // A stalled residual gives way; a zero budget never does.
  EXPECT_TRUE(exceeds(1.0, 0.01, 5.0, 1e-8, 100));
  EXPECT_FALSE(exceeds(1.0, 0.01, 0.0, 1e-8, 100));
  // Before kMinIterations nothing is decided on the rate.
  EXPECT_FALSE(exceeds(0.99, 0.01, 5.0, 1e-8, kMinIterations - 2));
}

}  // namespace
}  // namespace tcsolve
