// Fixed engine rates for the planner's tests (tests/solvers/test_plan*.cpp): the choices and
// prices they check must not depend on the machine running them.
#pragma once
#include "factor/engine_rates.hpp"

namespace tcsolve::test {

// Host rates of the order measured on the H200 machine's CPU (factor/engine_rates.hpp).
inline EngineRates fixed_rates() {
  EngineRates r;
  r.analyze_s_per_entry = 1e-7;
  r.factor_s_per_flop = 5e-11;
  r.factor_s_per_entry = 3e-8;
  r.solve_s_per_entry = 5e-9;
  r.solve_s_per_entry_col = 3e-10;
  // One supernodal pair at every front width (RateFit.SupernodalSolvesInterpolateInFrontWidth
  // tests the interpolation).
  r.wide_solve_s_per_entry = r.solve_s_per_entry;
  r.wide_solve_s_per_entry_col = r.solve_s_per_entry_col;
  // The simplicial rates as the defaults were before 2026-11-27 (the tests' expectations use
  // these, not whatever EngineRates' defaults are).
  r.simplicial_solve_s_per_entry = 1e-9;
  r.simplicial_solve_s_per_entry_col = 5e-10;
  r.simplicial_solve_s_per_row = 0.0;
  r.simplicial_solve_s_per_row_col = 0.0;
  r.inertia_ratio = 2.0;
  r.inertia_call_s = 0.0;  // as priced before 2026-11-30 (CertificatePriceCountsTheCallsFixedCost)
  r.source = "fixed (test)";
  return r;
}

}  // namespace tcsolve::test
