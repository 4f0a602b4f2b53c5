// tcsolve eigs / solve on the CPU: results against closed forms and recomputed residuals (read
// back from the HDF5 output), and every bad input of issue 6 giving a clear message.
#include <cstdio>
#include <gtest/gtest.h>

#include <cctype>
#include <regex>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/device.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "io/hdf5_file.hpp"
#include "tests/apps/reorder_check.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

void expect_error(const RunResult& r, const std::string& must_contain) {
  EXPECT_EQ(r.status, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("tcsolve: error: ", 0), 0u) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos)
      << "expected '" << must_contain << "' in: " << r.err;
}

TEST(AppsEigs, SmallestOfLaplacianWithOutputAndPlot) {
  ScratchDir d;
  // 26 × 19 = 494 rows: auto runs shift-invert Lanczos (below 400 rows it solves densely).
  const int nx = 26, ny = 19, k = 4;
  auto r = run_tcsolve({"eigs", "gen:lap2d:26x19", "--k", "4", "--device", "cpu", "--out",
                        d.file("e.h5"), "--plot", d.file("e.svg")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("eigenvalue"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("converged"), std::string::npos) << r.out;
  const auto exact = lap2d_eigenvalues(nx, ny);
  Hdf5File f = Hdf5File::open(d.file("e.h5"));
  const auto vals = f.read_doubles("eigenvalues");
  std::vector<std::int64_t> dims;
  const auto vecs = f.read_doubles("eigenvectors", &dims);
  ASSERT_EQ(vals.size(), std::size_t(k));
  ASSERT_EQ(dims, (std::vector<std::int64_t>{k, nx * ny}));
  for (int j = 0; j < k; ++j) EXPECT_NEAR(vals[j], exact[j], 1e-6) << j;
  const Csr<double> a = generate("gen:lap2d:26x19");
  EXPECT_LT(max_eig_residual(a, vals, vecs), 1e-8 * 8 * 2);
  const auto res = f.read_doubles("residual_norms");
  ASSERT_EQ(res.size(), std::size_t(k));
  EXPECT_EQ(f.attr_string("status"), "converged");
  // --method auto: the planner's choice, named with its prediction and the best rejected plan;
  // the set verified by what the plan could afford (and the printed line says which).
  const std::string method = f.attr_string("method");
  EXPECT_TRUE(method == "lanczos" || method == "chebyshev") << method;
  const std::string why = f.attr_string("method_reason");
  EXPECT_NE(why.find("auto: "), std::string::npos) << why;
  EXPECT_NE(why.find("predicted"), std::string::npos) << why;
  EXPECT_NE(why.find("best rejected"), std::string::npos) << why;
  EXPECT_GT(f.attr_double("predicted_seconds"), 0.0);
  const std::string ver = f.attr_string("verification");
  EXPECT_TRUE(ver == "certificate" || ver == "recheck") << ver;
  EXPECT_EQ(f.attr_string("certified"), ver == "certificate" ? "yes" : "not_checked");
  EXPECT_EQ(f.attr_string("convergence_test"), "rel");
  EXPECT_NE(r.out.find("verified by " + ver), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plan: auto: "), std::string::npos) << r.out;
  EXPECT_EQ(f.read_doubles("error_bounds").size(), std::size_t(k));
  EXPECT_EQ(f.attr_string("task"), "eigs");
  EXPECT_EQ(f.attr_string("tcsolve_version"), TCSOLVE_VERSION);
  EXPECT_EQ(f.attr_string("matrix"), "gen:lap2d:26x19");
  EXPECT_EQ(f.attr_string("matrix_checksum").rfind("csrhash1:", 0), 0u);
  EXPECT_EQ(f.attr_double("tolerance"), 1e-8);
  for (const char* t : {"time_read", "time_preprocess", "time_plan", "time_setup", "time_solve",
                        "time_verify", "time_write"})
    EXPECT_GE(f.attr_double(t), 0.0) << t;
  EXPECT_GT(f.attr_int64("iterations"), 0);
  const auto it = f.group("history").read_int64s("iteration");
  EXPECT_GE(it.size(), 1u);
  const std::string svg = read_file(d.file("e.svg"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_GE(std::count(svg.begin(), svg.end(), '\n'), 10);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

// --device auto: a small Matrix Market problem runs on the host and says why (the GPU's start-up
// would cost more than the whole run); asked for, a GPU is still used (AppsGpu); a larger one,
// a generator spec or an explicit device leave the choice as it was (no reason printed).
TEST(AppsEigs, SmallProblemsRunOnTheHostByDefault) {
  ScratchDir d;
  write_matrix(d.file("small.mtx"), generate("gen:lap2d:40x30"));  // 1200 rows, 5860 entries
  auto r = run_tcsolve({"eigs", d.file("small.mtx"), "--k", "4", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"device\": \"cpu\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"device_reason\": \"auto: the host (1200 rows, 5860 entries"), std::string::npos) << r.out;
  auto t = run_tcsolve({"eigs", d.file("small.mtx"), "--k", "4"});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("device: auto: the host"), std::string::npos) << t.out;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"eigs", d.file("small.mtx"), "--k", "4", "--device", "cpu", "--json"},
        std::vector<std::string>{"eigs", d.file("small.mtx"), "--k", "300", "--json"},  // 5860·300/16 entries of work
        std::vector<std::string>{"eigs", "gen:lap2d:40x30", "--k", "4", "--json"}}) {
    auto q = run_tcsolve(args);
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_NE(q.out.find("\"device_reason\": \"\""), std::string::npos) << args[3] << q.out;
  }
}

// A fresh machine (an empty rate cache) and a small job: the host engines' rates (~1 s to
// measure) are not measured where the plan priced with the defaults is cheap even 4 times slower,
// and the ordering rate is not measured for a verification budget below what measuring it costs.
// TCSOLVE_PLAN_DEFAULT_RATES=0 measures, as before (the cache then holds the machine's full line).
TEST(AppsEigs, AFreshMachineMeasuresNoRatesForASmallJob) {
  auto full_lines = [](const std::string& dir) {
    int n = 0;
    for (const auto& f : files_in(dir)) {
      const std::string text = read_file(dir + "/" + f);
      for (std::size_t p = 0; p < text.size();) {
        const std::size_t e = text.find('\n', p);
        const std::string line = text.substr(p, e == std::string::npos ? std::string::npos : e - p);
        if (!line.empty() && line.substr(0, line.find(' ')).find("|analysis") == std::string::npos) ++n;
        p = e == std::string::npos ? text.size() : e + 1;
      }
    }
    return n;
  };
  // Sanitizer builds run 10-20x slower: their plans may price above the floor and measure, as
  // they should; there only the consistency of what is said and what is cached is checked.
#if defined(__SANITIZE_ADDRESS__)
  const bool release_speed = false;
#else
  const bool release_speed = true;
#endif
  ScratchDir cache;
  const std::string env = "TCSOLVE_CACHE_DIR=" + cache.path().string();
  auto r = run_tcsolve_env({env}, {"eigs", "gen:lap2d:30", "--k", "6", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"status\": \"converged\""), std::string::npos) << r.out;
  const bool defaults_said = r.out.find("engine rates: defaults, not measured") != std::string::npos;
  if (r.out.find("shift-invert") != std::string::npos && (release_speed || defaults_said)) {
    EXPECT_TRUE(defaults_said) << r.out;
    EXPECT_EQ(full_lines(cache.path().string()), 0);
    auto m = run_tcsolve_env({env, "TCSOLVE_PLAN_DEFAULT_RATES=0"},
                             {"eigs", "gen:lap2d:30", "--k", "6", "--device", "cpu", "--json"});
    ASSERT_EQ(m.status, 0) << m.err;
    EXPECT_EQ(m.out.find("engine rates: defaults"), std::string::npos) << m.out;
    EXPECT_EQ(full_lines(cache.path().string()), 1);
  }
  // The decision reads this process's timed apply: on a machine loaded by other work (ctest -j
  // beside builds: failed once in 2026-11-28's full run, passed 3 of 3 alone) the filter is priced
  // high enough for shift-invert to be priced. Up to three runs; one must decide without it.
  ScratchDir cache2;
  RunResult l;
  bool not_priced = false;
  for (int attempt = 0; attempt < 3 && !not_priced; ++attempt) {
    l = run_tcsolve_env({"TCSOLVE_CACHE_DIR=" + cache2.path().string()},
                        {"eigs", "gen:lap2d:40", "--k", "6", "--which", "largest", "--device", "cpu", "--json"});
    ASSERT_EQ(l.status, 0) << l.err;
    EXPECT_NE(l.out.find("\"status\": \"converged\""), std::string::npos) << l.out;
    not_priced = l.out.find("measuring this machine's ordering rate") != std::string::npos ||
                 l.out.find("engine rates are not measured") != std::string::npos;
    if (!not_priced) std::filesystem::remove_all(cache2.path()), std::filesystem::create_directories(cache2.path());
  }
  EXPECT_TRUE(not_priced || !release_speed) << l.out;
  if (not_priced) {
    EXPECT_NE(l.out.find("\"verification\": \"recheck\""), std::string::npos) << l.out;
    EXPECT_TRUE(files_in(cache2.path().string()).empty());  // nothing measured, nothing cached
  }
}

TEST(AppsEigs, LargestByLanczosJson) {
  auto r = run_tcsolve({"eigs", "gen:lap2d:11x8", "--k", "3", "--which", "largest", "--method",
                        "lanczos", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto exact = lap2d_eigenvalues(11, 8);
  std::reverse(exact.begin(), exact.end());
  auto p = r.out.find("\"eigenvalues\": [");
  ASSERT_NE(p, std::string::npos) << r.out;
  const char* c = r.out.c_str() + p + 16;
  for (int j = 0; j < 3; ++j) {
    char* end = nullptr;
    EXPECT_NEAR(std::strtod(c, &end), exact[j], 1e-6) << j;
    c = end + 1;
  }
  EXPECT_NE(r.out.find("\"method\": \"lanczos\""), std::string::npos) << r.out;
}

// --precision: auto is the default (reported; on the CPU every filter is fp64), a bad value is
// refused naming it and the accepted ones.
TEST(AppsEigs, PrecisionAutoIsTheDefaultAndBadValuesAreRefused) {
  auto r = run_tcsolve({"eigs", "gen:lap2d:11x8", "--k", "3", "--method", "chebyshev", "--device",
                        "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"precision\": \"fp64\""), std::string::npos) << r.out;
  auto bad = run_tcsolve({"eigs", "gen:lap2d:11x8", "--k", "3", "--precision", "fp8"});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("--precision 'fp8': expected auto, fp64, fp32, fp16 or bf16"), std::string::npos)
      << bad.err;
}

TEST(AppsEigs, GeneralizedWithMassMatrix) {
  // B = 2.5·I: eigenvalues of A x = λ B x are those of A divided by 2.5, and the B-orthonormal
  // eigenvectors have ‖x‖² = 1/2.5. Both eigensolvers.
  ScratchDir d;
  const int nx = 9, ny = 8, n = nx * ny;
  std::string mass = "%%MatrixMarket matrix coordinate real symmetric\n" + std::to_string(n) + " " +
                     std::to_string(n) + " " + std::to_string(n) + "\n";
  for (int i = 1; i <= n; ++i) mass += std::to_string(i) + " " + std::to_string(i) + " 2.5\n";
  const std::string bpath = d.write("mass.mtx", mass);
  const auto exact = lap2d_eigenvalues(nx, ny);
  for (std::string method : {"lobpcg", "lanczos"}) {
    SCOPED_TRACE(method);
    auto r = run_tcsolve({"eigs", "gen:lap2d:9x8", "--mass", bpath, "--k", "3", "--method", method,
                          "--device", "cpu", "--out", d.file(method + ".h5"), "-q"});
    ASSERT_EQ(r.status, 0) << r.err;
    Hdf5File f = Hdf5File::open(d.file(method + ".h5"));
    const auto vals = f.read_doubles("eigenvalues");
    const auto vecs = f.read_doubles("eigenvectors");
    ASSERT_EQ(vals.size(), 3u);
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(vals[j], exact[j] / 2.5, 1e-7) << j;
      double xx = 0;
      for (int i = 0; i < n; ++i) xx += vecs[j * n + i] * vecs[j * n + i];
      EXPECT_NEAR(xx, 1 / 2.5, 1e-8) << j;
    }
    EXPECT_EQ(f.attr_string("mass"), bpath);
    EXPECT_EQ(f.attr_string("mass_checksum").rfind("csrhash1:", 0), 0u);
  }
  expect_error(run_tcsolve({"eigs", "gen:lap2d:10", "--mass", "gen:lap2d:9", "--device", "cpu"}),
               "mass matrix gen:lap2d:9 is 81 x 81");
}

TEST(AppsEigs, NotConvergedExitsOneAndStillWrites) {
  ScratchDir d;
  auto r = run_tcsolve({"eigs", "gen:lap2d:30", "--method", "lanczos", "--maxiter", "2", "--device",
                        "cpu", "--quiet", "--out", d.file("n.h5")});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("did not converge"), std::string::npos) << r.err;
  Hdf5File f = Hdf5File::open(d.file("n.h5"));
  EXPECT_EQ(f.attr_string("status"), "not_converged");
  EXPECT_FALSE(f.attr_string("reason").empty());
}

// Shift-invert from the command line: the interior, a certified count, the constrained-DOF trap,
// and the refusals (singular shift, indefinite mass, contradictory options).
TEST(AppsEigs, ShiftInvertNearestAndCertified) {
  ScratchDir d;
  auto r = run_tcsolve({"eigs", "gen:elast3d:6", "--which", "nearest", "--sigma", "5", "--k", "8",
                        "--method", "lanczos", "--device", "cpu", "--json", "--certify"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"certified\": \"yes\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"verification\": \"certificate\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"transform\": \"shift-invert\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"sigma\": 5"), std::string::npos) << r.out;
  // The 8 returned values are the 8 closest to 5 (dense check).
  const Csr<double> a = generate("gen:elast3d:6");
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(a.nrows, a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) dense(i, a.col_idx[p]) = a.values[p];
  Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(dense).eigenvalues();
  std::vector<double> near(ev.data(), ev.data() + ev.size());
  std::sort(near.begin(), near.end(), [](double x, double y) { return std::abs(x - 5) < std::abs(y - 5); });
  auto p = r.out.find("\"eigenvalues\": [");
  ASSERT_NE(p, std::string::npos);
  const char* c = r.out.c_str() + p + 16;
  for (int j = 0; j < 8; ++j) {
    char* end = nullptr;
    EXPECT_NEAR(std::strtod(c, &end), near[j], 1e-9) << j;
    c = end + 1;
  }
}

TEST(AppsEigs, ShiftInvertRefusals) {
  ScratchDir d;
  // gen:lap2d:9x1 = tridiag(−1, 4, −1) of 9 rows: eigenvalue 4 − 2cos(π/2) = 4, and A − 4I
  // (entries 0 and −1, exact in floating point) is exactly singular.
  expect_error(run_tcsolve({"eigs", "gen:lap2d:9x1", "--which", "nearest", "--sigma", "4", "--k",
                            "1", "--method", "lanczos", "--device", "cpu"}),
               "is singular at sigma = 4");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:9", "--which", "nearest", "--device", "cpu"}),
               "--which nearest needs --sigma");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:9", "--sigma", "1", "--no-factor", "--device", "cpu"}),
               "cannot be combined with --no-factor");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:9", "--conv", "relative", "--device", "cpu"}),
               "--conv 'relative': expected rel, norm or abs");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:9", "--sigma", "x1", "--device", "cpu"}),
               "--sigma 'x1': expected a finite number");
  // Positive diagonal, indefinite: [[1, 2], [2, 1]] blocks.
  std::string mass = "%%MatrixMarket matrix coordinate real symmetric\n81 81 121\n";
  for (int i = 1; i <= 81; ++i) mass += std::to_string(i) + " " + std::to_string(i) + " 1\n";
  for (int i = 1; i + 1 <= 81; i += 2) mass += std::to_string(i + 1) + " " + std::to_string(i) + " 2\n";
  const std::string bpath = d.write("bad_mass.mtx", mass);
  expect_error(run_tcsolve({"eigs", "gen:lap2d:9", "--mass", bpath, "--device", "cpu"}),
               "is not positive definite");
}

// --certify: the Sylvester count always runs (never skipped for cost); it needs a factorization.
// The JSON carries the plan's prediction and every phase.
TEST(AppsEigs, CertifyAlwaysCountsAndThePhasesAreReported) {
  auto r = run_tcsolve({"eigs", "gen:lap2d:40", "--k", "6", "--certify", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"verification\": \"certificate\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"certified\": \"yes\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("certificate (asked for)"), std::string::npos) << r.out;
  // the factorizations behind the counts are reported (also where the plan made none at set-up)
  EXPECT_NE(r.out.find("LDL^T factorization"), std::string::npos) << r.out;
  for (const char* key : {"\"read\"", "\"preprocess\"", "\"plan\"", "\"setup\"", "\"solve\"",
                          "\"verify\"", "\"write\"", "\"total\"", "\"init\"", "\"process\"",
                          "\"predicted_seconds\"", "\"operator_applies\"", "\"kernel_reason\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
  expect_error(run_tcsolve({"eigs", "gen:lap2d:40", "--certify", "--no-factor", "--device", "cpu"}),
               "--certify needs a factorization: it cannot be combined with --no-factor");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:40", "--certify", "--no-recheck", "--device", "cpu"}),
               "--certify and --no-recheck contradict each other");
  // The default on the same problem: verified, by what the plan could afford, and it says which.
  auto d = run_tcsolve({"eigs", "gen:lap2d:40", "--k", "6", "--device", "cpu"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("verified by "), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("plan: auto: "), std::string::npos) << d.out;
}

TEST(AppsEigs, WithoutAFactorizationTheSetIsReChecked) {
  auto r = run_tcsolve({"eigs", "gen:lap2d:24", "--k", "6", "--no-factor", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"certified\": \"not_checked\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("re-check"), std::string::npos) << r.out;
  auto u = run_tcsolve({"eigs", "gen:lap2d:24", "--k", "6", "--no-factor", "--no-recheck", "--device",
                        "cpu", "--json"});
  EXPECT_EQ(u.status, 1) << u.err;
  EXPECT_NE(u.out.find("\"status\": \"unverified\""), std::string::npos) << u.out;
}

// Chebyshev runs say where the solve's seconds went; other methods leave solve_steps empty.
TEST(AppsEigs, ChebyshevReportsItsSolveSteps) {
  auto r = run_tcsolve({"eigs", "gen:lap2d:30", "--k", "4", "--method", "chebyshev", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* part : {"\"solve_steps\": \"workspace ", " outer iterations ", "(filters ", " column-steps, the slowest wanted column ", " steps; the rest ", "orthonormalization ", "Rayleigh-Ritz with residuals ", "final check "})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  auto l = run_tcsolve({"eigs", "gen:lap2d:30", "--k", "4", "--method", "lanczos", "--device", "cpu", "--json"});
  ASSERT_EQ(l.status, 0) << l.err;
  EXPECT_NE(l.out.find("\"solve_steps\": \"\""), std::string::npos) << l.out;
}

TEST(AppsSolve, BlockCgReportsWhereItsSecondsWent) {
  // "N iterations T s on the stream (A applies a s, preconditioner p s, the rest d s), outside
  // them o s": a polynomial preconditioner's steps show as p > 0, Jacobi's scaling as p = 0.
  for (const char* pc : {"chebyshev", "jacobi"}) {
    auto r = run_tcsolve({"solve", "gen:lap3d:12", "--rhs", "random:3", "--precond", pc, "--device", "cpu", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto at = r.out.find("\"solve_steps\": \"");
    ASSERT_NE(at, std::string::npos) << r.out;
    long long it = 0;
    double t = -1, a = -1, p = -1, d = -1, o = -1;
    ASSERT_EQ(std::sscanf(r.out.c_str() + at + 16,
                          "%lld iterations %lf s on the stream (A applies %lf s, preconditioner %lf s, "
                          "the rest %lf s), outside them %lf s", &it, &t, &a, &p, &d, &o), 6)
        << r.out.substr(at, 200);
    EXPECT_GT(it, 0);
    EXPECT_GT(a, 0.0);
    EXPECT_GE(d, 0.0);
    EXPECT_GE(o, 0.0);
    EXPECT_NEAR(t, a + p + d, 1e-3 * t + 2e-3);
    if (std::string(pc) == "chebyshev") EXPECT_GT(p, 0.0) << r.out.substr(at, 200);
    else EXPECT_EQ(p, 0.0) << r.out.substr(at, 200);
    // Each second in one phase: the polynomial's set-up (its probe) is setup, not also solve.
    double phases = 0.0;
    for (const char* ph : {"read", "preprocess", "plan", "setup", "solve", "verify", "write"})
      phases += json_number(r.out, ph);
    EXPECT_LE(phases, json_number(r.out, "total") + 1e-3) << pc << ": " << r.out;
  }
}

TEST(AppsSolve, AutomaticPreconditionerSaysWhatItChose) {
  // The default --precond auto: Jacobi on the CPU (the polynomial's measured win is the GPU's),
  // said in the message; an explicit choice is kept.
  auto r = run_tcsolve({"solve", "gen:lap3d:10", "--rhs", "random:2", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("jacobi (auto: not the Chebyshev polynomial, for the CPU)"), std::string::npos) << r.out;
  auto c = run_tcsolve({"solve", "gen:lap3d:10", "--rhs", "random:2", "--device", "cpu", "--precond", "chebyshev", "--json"});
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("chebyshev degree"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("auto:"), std::string::npos) << c.out;
  auto bad = run_tcsolve({"solve", "gen:lap3d:10", "--rhs", "random:2", "--precond", "ilu"});
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("expected auto, jacobi, chebyshev, poly or none"), std::string::npos) << bad.err;
}

TEST(AppsSolve, RightHandSidesFromHdf5) {
  ScratchDir d;
  const std::string spec = "gen:lap2d:15x11";
  const Csr<double> a = generate(spec);
  const std::int64_t n = a.nrows, s = 3;
  std::vector<double> b(n * s);
  for (std::int64_t i = 0; i < n * s; ++i) b[i] = std::sin(0.37 * i + 1.0) + 0.1 * (i % 7);
  {
    Hdf5File f = Hdf5File::create(d.file("b.h5"));
    f.write_2d("B", b.data(), s, n);
    f.write_1d("b1", b.data(), n);
    f.close();
  }
  auto r = run_tcsolve({"solve", spec, "--rhs", d.file("b.h5") + ":B", "--device", "cpu",
                        "--out", d.file("x.h5")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("rel. residual"), std::string::npos) << r.out;
  Hdf5File f = Hdf5File::open(d.file("x.h5"));
  std::vector<std::int64_t> dims;
  const auto x = f.read_doubles("solution", &dims);
  ASSERT_EQ(dims, (std::vector<std::int64_t>{s, n}));
  std::vector<double> ax(n * s);
  csr_spmm_reference(a, x.data(), n, ax.data(), n, static_cast<int>(s));
  for (std::int64_t j = 0; j < s; ++j) {
    double rr = 0, bb = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      rr += std::pow(b[j * n + i] - ax[j * n + i], 2);
      bb += b[j * n + i] * b[j * n + i];
    }
    EXPECT_LT(std::sqrt(rr / bb), 1.01e-8) << "column " << j;
  }
  EXPECT_EQ(f.read_doubles("residual_norms").size(), std::size_t(s));
  EXPECT_EQ(f.attr_string("status"), "converged");
  EXPECT_EQ(f.attr_string("method"), "block_cg");
  // a single right-hand side stored 1-D
  auto r1 = run_tcsolve({"solve", spec, "--rhs", d.file("b.h5") + ":b1", "--device", "cpu", "-q"});
  EXPECT_EQ(r1.status, 0) << r1.err;
}

// --precond chebyshev: the same tolerance met in fewer iterations, the polynomial reported, the
// products with A inside it counted; --precond-degree sets the degree, and is refused elsewhere.
TEST(AppsSolve, ChebyshevPolynomialPreconditioner) {
  ScratchDir d;
  const std::string spec = "gen:lap3d:19";
  const Csr<double> a = generate(spec);
  const std::int64_t n = a.nrows;
  std::int64_t it[2] = {0, 0}, applies[2] = {0, 0};
  std::vector<double> xs[2];
  const char* pcs[2] = {"jacobi", "chebyshev"};
  for (int i = 0; i < 2; ++i) {
    auto r = run_tcsolve({"solve", spec, "--rhs", "random:5", "--device", "cpu", "--tol", "1e-10",
                          "--precond", pcs[i], "--out", d.file(std::string(pcs[i]) + ".h5")});
    ASSERT_EQ(r.status, 0) << r.err;
    Hdf5File f = Hdf5File::open(d.file(std::string(pcs[i]) + ".h5"));
    EXPECT_EQ(f.attr_string("status"), "converged");
    it[i] = f.attr_int64("iterations");
    applies[i] = f.attr_int64("operator_applies");
    for (double v : f.read_doubles("residual_norms")) EXPECT_LE(v, 1e-10);
    std::vector<std::int64_t> dims;
    const auto x = f.read_doubles("solution", &dims);
    ASSERT_EQ(dims, (std::vector<std::int64_t>{5, n}));
    xs[i] = x;
    if (i == 1) {
      const std::string pc = f.attr_string("preconditioner");
      EXPECT_EQ(pc.rfind("chebyshev degree ", 0), 0u) << pc;
    }
  }
  EXPECT_LT(2 * it[1], it[0]) << it[1] << " vs " << it[0];
  // the same solutions (both to 1e-10; the matrix's condition number is about 100)
  double dx = 0, x0 = 0;
  for (std::size_t i = 0; i < xs[0].size(); ++i) dx += std::pow(xs[1][i] - xs[0][i], 2), x0 += xs[0][i] * xs[0][i];
  EXPECT_LT(std::sqrt(dx / x0), 1e-7);
  EXPECT_GT(applies[1], applies[0]);  // the polynomial's products are counted
  auto r = run_tcsolve({"solve", spec, "--rhs", "random:2", "--device", "cpu", "--precond", "chebyshev",
                        "--precond-degree", "3", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("chebyshev degree 3 on"), std::string::npos) << r.out;
  expect_error(run_tcsolve({"solve", spec, "--rhs", "random:2", "--precond-degree", "3"}),
               "--precond-degree is for `solve --precond chebyshev` and `solve --precond poly`");
  expect_error(run_tcsolve({"solve", spec, "--rhs", "random:2", "--precond", "chebyshev",
                            "--precond-degree", "-1"}),
               "--precond-degree -1: expected 0 (automatic) to 1000");
  expect_error(run_tcsolve({"solve", spec, "--rhs", "random:2", "--precond", "poly", "--precond-degree", "501"}),
               "--precond-degree 501: the GMRES polynomial takes at most 500");
  expect_error(run_tcsolve({"solve", spec, "--rhs", "random:2", "--method", "gmres", "--restart", "501"}),
               "--restart 501: expected 1 to 500");
}

// The GMRES polynomial (issue 43): the default for GMRES on a constant diagonal, asked for by
// name with its degree, none with --precond jacobi; the answers agree and pass tol on A itself.
// (Whether auto picks GMRES here is the planner's: tests/apps/test_solve_plan.cpp.)
TEST(AppsSolve, GmresPolynomialPreconditioner) {
  ScratchDir d;
  const std::string spec = "gen:convdiff3d:14";
  const Csr<double> a = generate(spec);
  const std::int64_t n = a.nrows;
  struct Row { std::vector<std::string> extra; const char* pc; std::int64_t it = 0; std::vector<double> x; };
  Row rows[3] = {{{"--precond", "jacobi"}, "jacobi"}, {{}, "GMRES polynomial p of degree 39 "},
                 {{"--precond", "poly", "--precond-degree", "4"}, "GMRES polynomial p of degree 3 "}};
  for (Row& row : rows) {
    SCOPED_TRACE(row.pc);
    // --method gmres: auto prices UMFPACK's LU against GMRES, and on a machine with fast BLAS
    // kernels it picks the LU for this 2744-row matrix (the 2-core Xeon with OpenBLAS's SkylakeX
    // kernels, 9f85165).
    std::vector<std::string> args = {"solve", spec, "--rhs", "random:3", "--device", "cpu", "--tol", "1e-10",
                                     "--restart", "10", "--method", "gmres", "--out", d.file("x.h5")};
    args.insert(args.end(), row.extra.begin(), row.extra.end());
    auto r = run_tcsolve(args);
    ASSERT_EQ(r.status, 0) << r.err;
    Hdf5File f = Hdf5File::open(d.file("x.h5"));
    EXPECT_EQ(f.attr_string("status"), "converged");
    EXPECT_EQ(f.attr_string("preconditioner").rfind(row.pc, 0), 0u) << f.attr_string("preconditioner");
    EXPECT_EQ(f.attr_string("method").rfind("gmres(10)", 0), 0u) << f.attr_string("method");
    row.it = f.attr_int64("iterations");
    for (double v : f.read_doubles("residual_norms")) EXPECT_LE(v, 1e-10);
    for (double v : f.read_doubles("backward_errors")) EXPECT_LE(v, 1e-10);
    row.x = f.read_doubles("solution");
    ASSERT_EQ(row.x.size(), static_cast<std::size_t>(3 * n));
  }
  EXPECT_LT(3 * rows[1].it, rows[0].it) << rows[1].it << " vs " << rows[0].it;
  for (int i = 1; i < 3; ++i) {
    double dx = 0, x0 = 0;
    for (std::size_t k = 0; k < rows[0].x.size(); ++k)
      dx += std::pow(rows[i].x[k] - rows[0].x[k], 2), x0 += rows[0].x[k] * rows[0].x[k];
    EXPECT_LT(std::sqrt(dx / x0), 1e-7) << i;
  }
  expect_error(run_tcsolve({"solve", spec, "--rhs", "random:2", "--method", "cg", "--precond", "poly"}),
               "--precond poly is GMRES's and MINRES's (not --method cg)");
}

// --reorder auto (the default): eigs on the CPU reorders a large matrix stored in a scattered
// order (a scrambled 2D grid) by RCM, and answers in the input's order with the eigenvalues of
// the run that does not reorder; it leaves alone the same grid in its natural order, a random
// graph (RCM does not help there), and a matrix below 32768 rows.
TEST(AppsReorder, AutoReordersAScatteredOrderOnTheCpu) {
  ScratchDir d;
  struct Case { std::string spec; bool reordered; };
  for (const Case& c : {Case{"gen:lap2d:280+scramble", true}, Case{"gen:lap2d:280", false},
                        Case{"gen:random:70000:6", false}, Case{"gen:lap2d:150+scramble", false}}) {
    SCOPED_TRACE(c.spec);
    auto r = run_tcsolve({"eigs", c.spec, "--k", "2", "--which", "largest", "--device", "cpu", "--out",
                          d.file("a.h5"), "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("auto: reverse Cuthill-McKee") != std::string::npos, c.reordered) << r.out.substr(0, 800);
    if (!c.reordered) continue;
    Hdf5File f = Hdf5File::open(d.file("a.h5"));
    const auto vals = f.read_doubles("eigenvalues"), vecs = f.read_doubles("eigenvectors");
    EXPECT_LE(max_eig_residual(generate(c.spec), vals, vecs), 1e-6);
    auto plain = run_tcsolve({"eigs", c.spec, "--k", "2", "--which", "largest", "--device", "cpu", "--reorder",
                              "none", "--out", d.file("b.h5")});
    ASSERT_EQ(plain.status, 0) << plain.err;
    const auto pv = Hdf5File::open(d.file("b.h5")).read_doubles("eigenvalues");
    ASSERT_EQ(pv.size(), vals.size());
    for (std::size_t j = 0; j < vals.size(); ++j) EXPECT_NEAR(vals[j], pv[j], 1e-9 * std::abs(pv[j])) << j;
  }
}

TEST(AppsReorder, EigsAndSolveInThePermutedBasisAnswerInTheInputOrder) {
  expect_reorder_answers_in_input_order("cpu");
}

TEST(AppsSolve, IndefiniteMatrixIsReportedAsSuch) {
  ScratchDir d;
  // positive diagonal, eigenvalues of [[1,2],[2,1]] are 3 and -1: CG must detect it
  std::string p = d.write("indef.mtx",
                          "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n"
                          "1 1 1\n2 2 1\n3 3 1\n2 1 2\n");
  auto r = run_tcsolve({"solve", p, "--rhs", "random:2", "--device", "cpu", "--method", "cg", "--out", d.file("i.h5")});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("not positive definite"), std::string::npos) << r.err;
  EXPECT_EQ(Hdf5File::open(d.file("i.h5")).attr_string("status"), "breakdown");
  // a negative diagonal entry is caught before iterating when block CG is asked for by name
  std::string q = d.write("neg.mtx",
                          "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n"
                          "1 1 2\n2 2 -1\n3 3 2\n");
  expect_error(run_tcsolve({"solve", q, "--rhs", "random:1", "--device", "cpu", "--method", "cg"}),
               "is not positive definite (1 rows with a_ii <= 0)");
  // by default both are solved (issue 43): the kind decides the method, and the answer is checked
  for (const std::string& m : {p, q}) {
    auto a = run_tcsolve({"solve", m, "--rhs", "random:2", "--device", "cpu", "--out", d.file("a.h5")});
    EXPECT_EQ(a.status, 0) << a.err;
    Hdf5File f = Hdf5File::open(d.file("a.h5"));
    EXPECT_EQ(f.attr_string("status"), "converged");
    for (double be : f.read_doubles("backward_errors")) EXPECT_LE(be, 1e-12);
  }
}

TEST(AppsBadInput, EachGetsAClearMessage) {
  ScratchDir d;
  std::string ns = d.write("ns.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 4\n"
                                     "1 1 2\n2 2 2\n3 3 2\n1 2 1\n");
  std::string rect = d.write("rect.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 3\n"
                                         "1 1 2\n2 2 2\n3 3 2\n");
  std::string nan = d.write("nan.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n"
                                       "1 1 2\n2 2 inf\n");
  expect_error(run_tcsolve({"eigs", ns, "--device", "cpu"}), "is not symmetric");
  expect_error(run_tcsolve({"solve", ns, "--rhs", "random:1", "--device", "cpu", "--method", "minres"}),
               "is unsymmetric: --method minres needs a symmetric matrix");
  expect_error(run_tcsolve({"solve", rect, "--rhs", "random:1", "--device", "cpu", "--method", "gmres"}),
               "is rectangular: --method gmres needs a square matrix");
  expect_error(run_tcsolve({"solve", "gen:lap2d:5", "--rhs", "random:1", "--method", "bicg"}),
               "--method 'bicg': expected auto, cg, minres, gmres, direct or lsqr");
  expect_error(run_tcsolve({"eigs", rect, "--device", "cpu"}), "square");
  expect_error(run_tcsolve({"eigs", nan, "--device", "cpu"}), nan);
  expect_error(run_tcsolve({"eigs", "gen:lap2d:3", "--k", "9", "--device", "cpu"}),
               "k = 9 is too large");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:3", "--k", "0"}), "--k 0");
  {
    std::vector<double> v(24, 1.0), w(25, 1.0);
    w[7] = NAN;
    Hdf5File f = Hdf5File::create(d.file("r.h5"));
    f.write("short", v);
    f.write("nan", w);
    f.close();
  }
  expect_error(run_tcsolve({"solve", "gen:lap2d:5", "--rhs", d.file("r.h5") + ":short", "--device", "cpu"}),
               "length 24 but the matrix has 25 rows");
  expect_error(run_tcsolve({"solve", "gen:lap2d:5", "--rhs", d.file("r.h5") + ":nan", "--device", "cpu"}),
               "non-finite value");
  expect_error(run_tcsolve({"solve", "gen:lap2d:5", "--rhs", d.file("r.h5") + ":nosuch", "--device", "cpu"}),
               "nosuch");
  expect_error(run_tcsolve({"solve", "gen:lap2d:5", "--rhs", "random:x"}), "random:x");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:5", "--which", "middle"}), "middle");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:5", "--out", d.file("x.txt")}), ".h5");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:5", "--tol", "-1"}), "--tol");
  expect_error(run_tcsolve({"eigs", "gen:lap2d:5", "--precision", "fp16", "--device", "cpu"}),
               "needs the GPU");
  if (device_count() == 0)
    expect_error(run_tcsolve({"eigs", "gen:lap2d:5", "--device", "cuda"}), "cuda");
  EXPECT_FALSE(std::filesystem::exists(d.file("x.txt")));
}

// The end-of-run text is short: after the table, every line of at most 100 characters — what
// ran, the plan and the best rejected one, the predicted against the measured time, how the set
// was verified. --verbose adds the whole reasoning (the plan with every prediction, the phases,
// the certificate), which --json holds unchanged.
TEST(AppsEigs, EndOfRunTextIsShortAndVerboseHasTheReasoning) {
  auto lines_after_table = [](const std::string& out) {
    std::vector<std::string> lines;
    std::size_t at = 0;
    while (at < out.size()) {
      const std::size_t end = out.find('\n', at);
      const std::string l = out.substr(at, end - at);
      if (!l.empty() && l.find_first_not_of(' ') != std::string::npos && !std::isdigit(static_cast<unsigned char>(l[l.find_first_not_of(' ')])))
        lines.push_back(l);
      at = end == std::string::npos ? out.size() : end + 1;
    }
    return lines;
  };
  auto r = run_tcsolve({"eigs", "gen:lap2d:100", "--device", "cpu"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const std::string& l : lines_after_table(r.out)) EXPECT_LE(l.size(), 100u) << l;
  EXPECT_NE(r.out.find("\nplan: auto: "), std::string::npos) << r.out;
  // Whether shift-invert is priced at all is a timing decision (its ordering against a quarter of
  // the Chebyshev plan, both measured on this machine), so either line is right; one must be there.
  EXPECT_TRUE(r.out.find("; best rejected: ") != std::string::npos ||
              r.out.find("; shift-invert lanczos: not priced") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\ntime: predicted "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" to plan, set up, solve and verify; "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nverified by "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("phases: "), std::string::npos) << r.out;
  auto v = run_tcsolve({"eigs", "gen:lap2d:100", "--device", "cpu", "--verbose"});
  ASSERT_EQ(v.status, 0) << v.err;
  const auto plan = v.out.find("\nplan: auto: ");
  ASSERT_NE(plan, std::string::npos) << v.out;
  const std::string full = v.out.substr(plan + 1, v.out.find('\n', plan + 1) - plan - 1);
  EXPECT_GT(full.size(), 100u) << full;
  EXPECT_NE(full.find(": predicted "), std::string::npos) << full;
  EXPECT_TRUE(full.find("best rejected: ") != std::string::npos ||
              full.find("shift-invert lanczos: not priced, its ordering alone (about ") != std::string::npos)
      << full;
  EXPECT_NE(v.out.find("\nphases: read "), std::string::npos) << v.out;
  // The factorization behind the certificate, when the certificate ran.
  if (v.out.find("\nverified by certificate") != std::string::npos)
    EXPECT_NE(v.out.find("\nfactorization: "), std::string::npos) << v.out;
  // the verification with what it found (the certificate's counts or the re-check's result)
  EXPECT_TRUE(std::regex_search(v.out, std::regex("\nverified by (certificate|recheck), certified: [a-z_]+ \\((certificate|re-check)")))
      << v.out;
  auto s = run_tcsolve({"solve", "gen:lap3d:12", "--rhs", "random:4", "--device", "cpu"});
  ASSERT_EQ(s.status, 0) << s.err;
  for (const std::string& l : lines_after_table(s.out)) EXPECT_LE(l.size(), 100u) << l;
  EXPECT_NE(s.out.find("\ntime: "), std::string::npos) << s.out;
}

}  // namespace
}  // namespace tcsolve::test
