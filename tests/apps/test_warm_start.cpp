// Warm starts from an earlier result (issue 18 §4): eigs --start RESULT.h5 and solve --x0
// RESULT.h5 take fewer iterations than the same run from scratch, answer the same (closed forms
// and true residuals), are recorded in the result, and refuse blocks of the wrong shape with the
// file, the dataset and the sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

// A parameter sweep's second point: the tolerance tightened from 1e-6 to 1e-11. From the first
// point's eigenvectors the iteration starts with residuals of 1e-6 instead of O(1).
TEST(AppsWarmStart, EigsFromAnEarlierResultTakesFewerIterations) {
  ScratchDir d;
  const int nx = 40, ny = 37, k = 6;
  const auto exact = lap2d_eigenvalues(nx, ny);
  const std::string spec = "gen:lap2d:40x37";
  for (std::string method : {"lobpcg", "chebyshev"}) {
    SCOPED_TRACE(method);
    const std::string which = method == "lobpcg" ? "smallest" : "largest";
    const std::vector<std::string> base = {"eigs", spec, "--k", std::to_string(k), "--which", which,
                                           "--method", method, "--device", "cpu", "--json"};
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> a = base;
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    auto first = run_tcsolve(with({"--tol", "1e-6", "--out", d.file(method + "1.h5")}));
    ASSERT_EQ(first.status, 0) << first.err << first.out;
    auto cold = run_tcsolve(with({"--tol", "1e-11"}));
    ASSERT_EQ(cold.status, 0) << cold.err << cold.out;
    auto warm = run_tcsolve(with({"--tol", "1e-11", "--start", d.file(method + "1.h5"), "--out",
                                  d.file(method + "2.h5")}));
    ASSERT_EQ(warm.status, 0) << warm.err << warm.out;
    // the work is the operator applies (Chebyshev's rounds differ in degree): about 2670 from a
    // random start, 1650 from the earlier result (Chebyshev); LOBPCG saves more
    const double ap_cold = json_number(cold.out, "operator_applies");
    const double ap_warm = json_number(warm.out, "operator_applies");
    EXPECT_GE(ap_cold, 100) << cold.out;
    EXPECT_LE(ap_warm, 0.75 * ap_cold) << "cold " << ap_cold << ", warm " << ap_warm;
    Hdf5File f = Hdf5File::open(d.file(method + "2.h5"));
    EXPECT_EQ(f.attr_string("start"), d.file(method + "1.h5"));
    EXPECT_EQ(f.attr_string("status"), "converged");
    const auto vals = f.read_doubles("eigenvalues");
    ASSERT_EQ(vals.size(), std::size_t(k));
    for (int j = 0; j < k; ++j) {
      const double e = which == "smallest" ? exact[j] : exact[exact.size() - 1 - j];
      EXPECT_NEAR(vals[j], e, 1e-9 * std::abs(e)) << j;
    }
  }
}

// Solve: a loose first solve, then the tight one from its solution.
TEST(AppsWarmStart, SolveFromAnEarlierSolutionTakesFewerIterations) {
  ScratchDir d;
  const std::vector<std::string> base = {"solve", "gen:lap3d:18", "--rhs", "random:4",
                                         "--device", "cpu", "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto first = run_tcsolve(with({"--tol", "1e-5", "--out", d.file("x1.h5")}));
  ASSERT_EQ(first.status, 0) << first.err;
  auto cold = run_tcsolve(with({"--tol", "1e-10"}));
  ASSERT_EQ(cold.status, 0) << cold.err;
  auto warm = run_tcsolve(with({"--tol", "1e-10", "--x0", d.file("x1.h5"), "--out", d.file("x2.h5")}));
  ASSERT_EQ(warm.status, 0) << warm.err;
  const double it_cold = json_number(cold.out, "iterations");
  const double it_warm = json_number(warm.out, "iterations");
  EXPECT_GE(it_cold, 20) << cold.out;
  EXPECT_LE(it_warm, 0.75 * it_cold) << "cold " << it_cold << ", warm " << it_warm;
  Hdf5File f = Hdf5File::open(d.file("x2.h5"));
  EXPECT_EQ(f.attr_string("x0"), d.file("x1.h5"));
  for (double r : f.read_doubles("residual_norms")) EXPECT_LE(r, 1.01e-10);
  // an explicit dataset, and the reordered basis (the guess is permuted like the right-hand sides)
  auto named = run_tcsolve(with({"--tol", "1e-10", "--x0", d.file("x1.h5") + ":solution",
                                 "--reorder", "symmetric"}));
  ASSERT_EQ(named.status, 0) << named.err;
  EXPECT_LE(json_number(named.out, "iterations"), 0.75 * it_cold) << named.out;
}

TEST(AppsWarmStart, BlocksOfTheWrongShapeAreRefused) {
  ScratchDir d;
  auto first = run_tcsolve({"eigs", "gen:lap2d:12x9", "--k", "3", "--method", "lobpcg", "--device",
                            "cpu", "--out", d.file("r.h5"), "-q"});
  ASSERT_EQ(first.status, 0) << first.err;
  {
    Hdf5File f = Hdf5File::create(d.file("bad.h5"));
    std::vector<double> v(108, 0.5);
    v[40] = std::numeric_limits<double>::quiet_NaN();
    f.write_2d("nan", v.data(), 1, 108);
    f.write_2d("x3", std::vector<double>(3 * 108, 1.0).data(), 3, 108);
    f.close();
  }
  auto expect_refused = [](const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  };
  // another matrix size: 108 rows stored, 110 asked
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:11x10", "--k", "3", "--device", "cpu", "--start",
                              d.file("r.h5")}),
                 "/eigenvectors: start vectors have length 108 but the matrix has 110 rows");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:12x9", "--k", "3", "--device", "cpu", "--start",
                              d.file("r.h5") + ":nothing"}),
                 "no dataset 'nothing' for the start vectors");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:12x9", "--k", "3", "--device", "cpu", "--start",
                              d.file("bad.h5") + ":nan"}),
                 "non-finite value in the start vectors at column 0, row 40");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:12x9", "--k", "3", "--device", "cpu", "--start",
                              d.file("missing.h5")}),
                 "missing.h5");
  // a result (eigs) has no /solution; three guesses for two right-hand sides
  expect_refused(run_tcsolve({"solve", "gen:lap2d:12x9", "--rhs", "random:2", "--device", "cpu",
                              "--x0", d.file("r.h5")}),
                 "no dataset 'solution' for the initial guesses");
  expect_refused(run_tcsolve({"solve", "gen:lap2d:12x9", "--rhs", "random:2", "--device", "cpu",
                              "--x0", d.file("bad.h5") + ":x3"}),
                 "/x3: 3 initial guesses for 2 right-hand sides");
  // the result may not replace the file it starts from
  auto same = run_tcsolve({"eigs", "gen:lap2d:12x9", "--k", "3", "--device", "cpu", "--start",
                           d.file("r.h5"), "--out", d.file("r.h5")});
  EXPECT_EQ(same.status, 2) << same.err;
  EXPECT_TRUE(Hdf5File::open(d.file("r.h5")).has_dataset("eigenvectors"));
}

}  // namespace
}  // namespace tcsolve::test
