// The eigs planner's cost models (solvers/eigs/plan_models.cpp) and names, on fixed inputs: the
// certificate's price, the apply and filter models, shift-invert's shape and price on the host
// and the GPU. The plans chosen from them: test_plan.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigs/plan.hpp"
#include "tests/solvers/plan_test_rates.hpp"

namespace tcsolve::test {
namespace {

// A Sylvester count costs MUMPS's fixed start-up beside its analysis and factorization: on a
// diagonal matrix, nothing but that (bcsstm06: 1.5 ms a count measured against 0.1 ms priced from
// the entries alone, 2-core CPU).
TEST(Plan, CertificatePriceCountsTheCallsFixedCost) {
  SymbolicAnalysis diag{420, 420, 1e-5, "amd"};
  EngineRates r = fixed_rates();
  r.inertia_call_s = 0.0;
  const double bare = predict_certificate_seconds(diag, 420, r, false);
  r.inertia_call_s = 1e-3;
  EXPECT_NEAR(predict_certificate_seconds(diag, 420, r, false) - bare, 1.3e-3, 1e-9);
  EXPECT_LT(bare, 0.2e-3);
}

// MUMPS pays per front of the elimination tree: on a chain (fronts of one or two rows) that is
// the count (a 3000-row chain: 5.1 ms measured where its analysis and factor priced 2.4 ms,
// 2-core CPU). `nearest` counts at both ends of an interval: twice an end's counts (issue 46 B7:
// two counts ran 13 ms where one was priced 3.2 ms).
TEST(Plan, CertificatePricePaysPerRowAndPerCount) {
  EngineRates r = fixed_rates();
  SymbolicAnalysis chain{6000, 12000, 1e-4, "amd"};
  chain.n = 3000;
  r.inertia_s_per_row = 0.0;
  const double without_rows = predict_certificate_seconds(chain, 6000, r, false);
  r.inertia_s_per_row = 1.5e-6;
  const double with_rows = predict_certificate_seconds(chain, 6000, r, false);
  EXPECT_NEAR(with_rows - without_rows, 1.3 * 3000 * 1.5e-6, 1e-12);
  EXPECT_NEAR(predict_certificate_seconds(chain, 6000, r, true), 2.0 * with_rows, 1e-12);
}

// The cost models follow their inputs: more filter steps for a smaller gap, a shift-invert
// prediction that grows with the factor, the filter re-check far below the solve.
TEST(Plan, CostModelsMoveTheRightWay) {
  const ApplyModel m = apply_model(3e-5, 3e-5 + 23 * 4e-6, 24, Backend::cuda, 1000000);
  EXPECT_NEAR(m.t_col, 4e-6, 1e-9);
  EXPECT_NEAR(m.t_a, 3e-5 - 4e-6, 1e-9);
  const double wide = predict_chebyshev_seconds(1000000, 7000000, 16, 1e-8, 1e-3, m);
  const double narrow = predict_chebyshev_seconds(1000000, 7000000, 16, 1e-8, 1e-5, m);
  EXPECT_GT(narrow, 5 * wide);
  const double recheck = predict_filter_recheck_seconds(1000000, 16, 1e-3, m);
  EXPECT_LT(recheck, 0.25 * wide);
  SymbolicAnalysis small{1e6, 1e9, 0.1, "amd"}, large{1e8, 1e12, 1.0, "amd"};
  double s1 = 0, v1 = 0, s2 = 0, v2 = 0;
  predict_shift_invert_seconds(1000000, 16, small, 4e6, fixed_rates(), m, Backend::cuda, &s1, &v1);
  predict_shift_invert_seconds(1000000, 16, large, 4e6, fixed_rates(), m, Backend::cuda, &s2, &v2);
  EXPECT_GT(s2, 10 * s1);
  EXPECT_GT(v2, v1);
  EXPECT_GT(predict_certificate_seconds(large, 4e6, fixed_rates(), false),
            predict_certificate_seconds(small, 4e6, fixed_rates(), false));
  // AMD's analysis is what the planner measures; where METIS follows in the factorization's own
  // analysis (and in MUMPS's), that costs kMetisOverAmd times as much, and is priced so.
  SymbolicAnalysis filled = large;
  filled.metis_follows = true;
  // Without METIS the factorization reuses AMD's ordering: its analysis is a share of AMD's.
  EXPECT_DOUBLE_EQ(factor_analysis_seconds(large), kGivenOrderingShare * large.seconds);
  EXPECT_LT(kGivenOrderingShare, 1.0);
  EXPECT_DOUBLE_EQ(factor_analysis_seconds(filled), kMetisOverAmd * large.seconds);
  // ... and its factor priced at the fill METIS is expected to leave (AMD's stays the bound)
  SymbolicAnalysis expected = expected_factor(filled);
  EXPECT_DOUBLE_EQ(expected.factor_entries, kMetisEntriesOverAmd * filled.factor_entries);
  EXPECT_DOUBLE_EQ(expected.flops, kMetisFlopsOverAmd * filled.flops);
  EXPECT_DOUBLE_EQ(expected_factor(large).flops, large.flops);
  expected.metis_follows = false;
  EXPECT_GT(predict_certificate_seconds(filled, 4e6, fixed_rates(), false),
            predict_certificate_seconds(expected, 4e6, fixed_rates(), false) +
                fixed_rates().analyze_seconds(4e6));
  double fs = 0, fv = 0, es = 0, ev = 0;
  predict_shift_invert_seconds(1000000, 16, filled, 4e6, fixed_rates(), m, Backend::cuda, &fs, &fv);
  predict_shift_invert_seconds(1000000, 16, expected, 4e6, fixed_rates(), m, Backend::cuda, &es, &ev);
  EXPECT_DOUBLE_EQ(fv, ev);
  EXPECT_LT(fs, s2);
  // The workspace formulas, one place for the apps and the driver.
  EXPECT_EQ(workspace_vectors(EigsMethod::chebyshev, 1000000, 16, 0, false), 3 * 24 + 32);
  EXPECT_EQ(workspace_vectors(EigsMethod::automatic, 1000000, 16, 0, false), 3 * 24 + 32);
  EXPECT_EQ(workspace_vectors(EigsMethod::lobpcg, 1000000, 16, 0, true), 10 * (16 + 8));
  EXPECT_EQ(workspace_vectors(EigsMethod::lanczos, 1000000, 16, 0, false), 2 * (128 + 8) + 32);
  EXPECT_EQ(default_lanczos_block(1), 2);
  EXPECT_EQ(default_lanczos_block(30), 8);
  EXPECT_EQ(default_lobpcg_guard(3), 2);
  EXPECT_EQ(default_lobpcg_guard(40), 8);
}

// Host shift-invert: single-vector Lanczos on small factors (blocks on the GPU and for large
// factors), priced from the measured dense rate (the probe's t_word) and the form-specific solve
// rates: it grows with the factor and with the dense work, and a simplicial factor's solves are
// priced at the simplicial rates.
// On the GPU a single wanted value is priced at one fill of the basis (block 2, basis 12: 6 block
// steps and the check's 2 solves), two fills where more are wanted (k = 2: 14 solves), and the
// host keeps two fills whatever k.
TEST(Plan, GpuShiftInvertPricesOneFillForASingleValue) {
  ApplyModel m = apply_model(3e-5, 3e-5 + 7 * 4e-6, 8, Backend::cuda, 3600);
  const EngineRates r = fixed_rates();
  const SymbolicAnalysis sym{3e4, 1e6, 0.002, "amd"};  // below 12 entries a row: not a big factor
  double su = 0, s1 = 0, s2 = 0;
  std::string d1, d2, h1;
  predict_shift_invert_seconds(3600, 1, sym, 2e4, r, m, Backend::cuda, &su, &s1, &d1);
  predict_shift_invert_seconds(3600, 2, sym, 2e4, r, m, Backend::cuda, &su, &s2, &d2);
  EXPECT_NE(d1.find("; 8 block solves of 2"), std::string::npos) << d1;
  EXPECT_NE(d2.find("; 14 block solves of 2"), std::string::npos) << d2;
  EXPECT_LT(s1, 0.6 * s2);
  ApplyModel hm = apply_model(3e-5, 3e-5 + 7 * 4e-6, 8, Backend::cpu, 3600);
  hm.t_word = 3e-10;
  predict_shift_invert_seconds(3600, 1, sym, 2e4, r, hm, Backend::cpu, &su, &s1, &h1);
  EXPECT_NE(h1.find("; 14 block solves of 1"), std::string::npos) << h1;
}

TEST(Plan, HostShiftInvertShapeAndPrice) {
  const auto small_host = shift_invert_shape(3600, 10, 9e4, /*host=*/true);
  EXPECT_EQ(small_host.block, 1);
  EXPECT_EQ(small_host.basis, 22);  // max(2k + 2b, 6b)
  EXPECT_EQ(shift_invert_shape(3600, 10, 9e4, /*host=*/false).block, 8);
  EXPECT_EQ(shift_invert_shape(3600, 10, 3600.0 * 100, /*host=*/true).block, 10);  // large factor
  EXPECT_EQ(shift_invert_shape(3600, 10, 9e4, true, 3).block, 3);                 // as asked
  ApplyModel m = apply_model(3e-5, 3e-5 + 7 * 4e-6, 8, Backend::cpu, 3600);
  m.t_word = 3e-10;
  EngineRates r = fixed_rates();
  r.simplicial_solve_s_per_entry = 1e-9;
  r.simplicial_solve_s_per_entry_col = 4e-10;
  const SymbolicAnalysis simp{9e4, 4e6, 0.002, "amd"}, super{9e4, 4e7, 0.002, "amd"};
  double su = 0, s_simp = 0, s_super = 0, s_dense = 0;
  predict_shift_invert_seconds(3600, 10, simp, 2e4, r, m, Backend::cpu, &su, &s_simp);
  predict_shift_invert_seconds(3600, 10, super, 2e4, r, m, Backend::cpu, &su, &s_super);
  // 46 steps of one column and the explicit check's block solve of k = 10 columns: the simplicial
  // rates (1.4e-9 per entry; 1e-9 + 10·4e-10 for the block) against the supernodal ones.
  const double per_simp = 9e4 * 1.4e-9, per_super = 9e4 * (5e-9 + 3e-10);
  const double check_simp = 9e4 * (1e-9 + 10 * 4e-10), check_super = 9e4 * (5e-9 + 10 * 3e-10);
  EXPECT_NEAR(s_super - s_simp, 46 * (per_super - per_simp) + check_super - check_simp, 1e-12);
  // The dense work: 46 steps of Gram–Schmidt against the basis as filled on average (keep 16 to
  // basis 22: 1.5 passes of 2·19·n words) at the probe's rate, and the restarts' rewrites.
  EXPECT_DOUBLE_EQ(host_lanczos_step_words(3600, 22, 16), 1.5 * (22 + 16) * 3600);
  ApplyModel slow = m;
  slow.t_word = 3e-9;
  predict_shift_invert_seconds(3600, 10, simp, 2e4, r, slow, Backend::cpu, &su, &s_dense);
  EXPECT_GT(s_dense, s_simp + 46 * host_lanczos_step_words(3600, 22, 16) * 2.7e-9);
  // Single-vector Lanczos on A: its basis at the probe's (cached) rate while it fits 16 MB, else
  // at least a stream's, t_col/(2n) (gen:rgg:40000, k = 32: the basis of 66 columns is 21 MB).
  ApplyModel lm = m;
  lm.t_word = 3e-10, lm.t_col = 1e-4;
  EXPECT_DOUBLE_EQ(host_basis_word_seconds(3600, 66, lm), 3e-10);
  EXPECT_DOUBLE_EQ(host_basis_word_seconds(40000, 66, lm), 1e-4 / 80000);
  EXPECT_GT(predict_lanczos1_seconds(40000, 3e5, 32, 1e-8, 1e-3, lm, nullptr),
            2.0 * predict_lanczos1_seconds(40000, 3e5, 32, 1e-8, 1e-3, [&] {
              ApplyModel c = lm;
              c.t_col = 0.0;  // (no stream rate: the cached one alone)
              return c;
            }(), nullptr));
  // The re-check's block of 2 weighs more against a single-vector solve (host) than against
  // blocks of 8 (GPU): the certificate is preferred sooner on the host.
  EXPECT_GT(shift_invert_recheck_share(Backend::cpu), shift_invert_recheck_share(Backend::cuda));
}

// Names: one list, parsed and printed the same way everywhere.
TEST(Plan, MethodAndPreconditionerNames) {
  for (const std::string& s : eigs_method_names()) EXPECT_EQ(to_string(parse_eigs_method(s)), s);
  for (const std::string& s : eigs_precond_names()) EXPECT_EQ(to_string(parse_eigs_precond(s)), s);
  try {
    parse_eigs_method("arpack");
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected auto, lanczos, lobpcg, chebyshev or dense"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_eigs_precond("ilu"), InvalidArgument);
}

}  // namespace
}  // namespace tcsolve::test
