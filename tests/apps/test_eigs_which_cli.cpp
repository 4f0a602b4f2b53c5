// tcsolve eigs --which largest_magnitude | smallest_magnitude | both_ends (and SciPy's LM, SM, BE,
// LA, SA) and --constraints, on the command line and in a batch job file, against closed forms:
// gen:helmholtz2d:N:K is the 5-point Laplacian minus (K·h)² (h = 1/(N + 1)), eigenvalues
// 4 − 2cos(iπh) − 2cos(jπh) − (K·h)², of both signs.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

// The numbers of `"key": [...]` in a --json output.
std::vector<double> json_array(const std::string& json, const std::string& key) {
  std::vector<double> v;
  const auto p = json.find("\"" + key + "\": [");
  if (p == std::string::npos) return v;
  const char* c = json.c_str() + p + key.size() + 5;
  while (*c && *c != ']') {
    char* end = nullptr;
    v.push_back(std::strtod(c, &end));
    if (end == c) break;
    c = end;
    while (*c == ',' || *c == ' ' || *c == '\n') ++c;
  }
  return v;
}

std::vector<double> helmholtz_spectrum(int n, double k) {
  const double h = 1.0 / (n + 1), shift = (k * h) * (k * h);
  std::vector<double> v;
  for (int i = 1; i <= n; ++i)
    for (int j = 1; j <= n; ++j) v.push_back(4.0 - 2.0 * std::cos(M_PI * i * h) - 2.0 * std::cos(M_PI * j * h) - shift);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<double> sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  const std::vector<double> g = sorted(got), w = sorted(want);
  for (std::size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-8) << j;
}

// K = 42 on a 20 × 20 grid: (K·h)² = 4, the spectrum symmetric about 0 in (−4, 4): the k = 6
// largest |λ| (±3.955, ±3.889 twice) come from both ends, and Gershgorin's [−4, 4] proves nothing.
TEST(AppsEigsWhich, LargestMagnitudeMergesBothEndsOfAHelmholtzMatrix) {
  ScratchDir d;
  for (const char* w : {"LM", "largest_magnitude", "lm"}) {
    auto r = run_tcsolve({"eigs", "gen:helmholtz2d:20:42", "--which", w, "--k", "6", "--device", "cpu", "--json",
                          "--out", d.file("lm.h5")});
    ASSERT_EQ(r.status, 0) << r.err;
    std::vector<double> all = helmholtz_spectrum(20, 42);
    std::stable_sort(all.begin(), all.end(), [](double a, double b) { return std::abs(a) > std::abs(b); });
    expect_values(json_array(r.out, "eigenvalues"), {all.begin(), all.begin() + 6});
    EXPECT_NE(r.out.find("which largest_magnitude: the largest and the smallest end merged by |lambda|"),
              std::string::npos) << r.out;
    EXPECT_EQ(Hdf5File::open(d.file("lm.h5")).attr_string("which"), "largest_magnitude");
  }
}

// BE with odd k: the 3 largest and the 2 smallest; SA and LA are smallest and largest.
TEST(AppsEigsWhich, BothEndsAndSciPysAlgebraicNames) {
  const std::vector<double> all = helmholtz_spectrum(20, 30);
  auto r = run_tcsolve({"eigs", "gen:helmholtz2d:20:30", "--which", "BE", "--k", "5", "--device", "cpu", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_values(json_array(r.out, "eigenvalues"), {all[0], all[1], all[397], all[398], all[399]});
  EXPECT_NE(r.out.find("the 3 largest and the 2 smallest"), std::string::npos) << r.out;
  auto sa = run_tcsolve({"eigs", "gen:helmholtz2d:20:30", "--which", "SA", "--k", "3", "--device", "cpu", "--json"});
  ASSERT_EQ(sa.status, 0) << sa.err;
  expect_values(json_array(sa.out, "eigenvalues"), {all[0], all[1], all[2]});
  auto la = run_tcsolve({"eigs", "gen:helmholtz2d:20:30", "--which", "la", "--k", "3", "--device", "cpu", "--json"});
  ASSERT_EQ(la.status, 0) << la.err;
  expect_values(json_array(la.out, "eigenvalues"), {all[397], all[398], all[399]});
}

// SM near 0 of an indefinite matrix: shift-invert at 0 (with a factorization), and without one
// (--no-factor) a dense solve of this small matrix.
TEST(AppsEigsWhich, SmallestMagnitudeOfAnIndefiniteMatrix) {
  std::vector<double> all = helmholtz_spectrum(20, 30);
  std::stable_sort(all.begin(), all.end(), [](double a, double b) { return std::abs(a) < std::abs(b); });
  for (bool factor : {true, false}) {
    std::vector<std::string> args{"eigs", "gen:helmholtz2d:20:30", "--which", "SM", "--k", "4", "--device", "cpu", "--json"};
    if (!factor) args.push_back("--no-factor");
    auto r = run_tcsolve(args);
    if (factor && r.status == 2 && r.err.find("factorization") != std::string::npos) continue;  // (built without)
    ASSERT_EQ(r.status, 0) << r.err;
    expect_values(json_array(r.out, "eigenvalues"), {all.begin(), all.begin() + 4});
    EXPECT_NE(r.out.find(factor ? "nearest 0 by shift-invert" : "nearest 0 by a dense solve"), std::string::npos) << r.out;
  }
}

TEST(AppsEigsWhich, BadWhichIsRefused) {
  auto r = run_tcsolve({"eigs", "gen:lap2d:10", "--which", "XX"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--which 'XX': expected smallest, largest, nearest, largest_magnitude, smallest_magnitude or "
                       "both_ends (or SciPy's LA, SA, LM, SM, BE)"),
            std::string::npos) << r.err;
  auto s = run_tcsolve({"eigs", "gen:lap2d:10", "--which", "SM", "--sigma", "1"});
  EXPECT_EQ(s.status, 2) << s.err;
  EXPECT_NE(s.err.find("--which smallest_magnitude with --sigma"), std::string::npos) << s.err;
  auto h = run_tcsolve({"eigs", "--help"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("largest_magnitude"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("--constraints"), std::string::npos) << h.out;
}

// The pairs of A in the orthogonal complement of span(Y), by dense LAPACK (Eigen).
std::vector<double> deflated_spectrum(const Csr<double>& a, const Eigen::MatrixXd& y) {
  const std::int64_t n = a.nrows, p = y.cols();
  Eigen::MatrixXd ad = Eigen::MatrixXd::Zero(n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) ad(i, a.col_idx[q]) = a.values[q];
  const Eigen::MatrixXd qm = Eigen::HouseholderQR<Eigen::MatrixXd>(y).householderQ();
  const Eigen::MatrixXd z = qm.rightCols(n - p);
  const Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(z.transpose() * ad * z).eigenvalues();
  return {ev.data(), ev.data() + ev.size()};
}

// --constraints from an HDF5 dataset [p][n] and from a Matrix Market n × p array, on the command
// line and in a batch job: the deflated problem's smallest pairs, B-orthogonal to Y.
TEST(AppsEigsWhich, ConstraintsFromFilesOnTheCommandLineAndInABatch) {
  ScratchDir d;
  const std::string spec = "gen:lap2d:15x12";
  const Csr<double> a = generate(spec);
  const std::int64_t n = a.nrows, p = 2, k = 3;
  Eigen::MatrixXd y(n, p);
  for (std::int64_t i = 0; i < n; ++i) y(i, 0) = std::sin(0.1 * i), y(i, 1) = std::cos(0.37 * i) + 0.01 * i;
  {
    Hdf5File f = Hdf5File::create(d.file("y.h5"));
    f.write_2d("Y", y.data(), p, n);  // [p][n]: column j of Y is row j
    f.close();
    std::ofstream m(d.file("y.mtx"));
    m.precision(17);
    m << "%%MatrixMarket matrix array real general\n" << n << " " << p << "\n";
    for (std::int64_t j = 0; j < p; ++j)
      for (std::int64_t i = 0; i < n; ++i) m << y(i, j) << "\n";
  }
  const std::vector<double> all = deflated_spectrum(a, y);
  for (const std::string& c : {d.file("y.h5") + ":Y", d.file("y.mtx")}) {
    auto r = run_tcsolve({"eigs", spec, "--k", "3", "--constraints", c, "--device", "cpu", "--out", d.file("e.h5"), "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    expect_values(json_array(r.out, "eigenvalues"), {all.begin(), all.begin() + k});
    EXPECT_NE(r.out.find("complement of 2 column(s) Y"), std::string::npos) << r.out;
    Hdf5File f = Hdf5File::open(d.file("e.h5"));
    const std::vector<double> x = f.read_doubles("eigenvectors");  // [k][n]
    const Eigen::Map<const Eigen::MatrixXd> xm(x.data(), n, k);
    EXPECT_LT((y.transpose() * xm).cwiseAbs().maxCoeff(), 1e-8 * y.norm());
    EXPECT_NE(f.attr_string("job_options").find(";constraints=" + c), std::string::npos);
  }
  {
    std::ofstream j(d.file("jobs.ini"));
    j << "[job.deflated]\ntask = eigs\nmatrix = " << spec << "\nk = 3\nwhich = SA\nconstraints = " << d.file("y.h5")
      << ":Y\ndevice = cpu\nout = deflated.h5\n\n[job.ends]\ntask = eigs\nmatrix = " << spec
      << "\nk = 4\nwhich = BE\ndevice = cpu\nout = ends.h5\n";
  }
  auto b = run_tcsolve({"batch", d.file("jobs.ini"), "--output-dir", d.path().string()});
  ASSERT_EQ(b.status, 0) << b.out << b.err;
  expect_values(Hdf5File::open(d.file("deflated.h5")).read_doubles("eigenvalues"), {all.begin(), all.begin() + k});
  const std::vector<double> lap = lap2d_eigenvalues(15, 12);
  expect_values(Hdf5File::open(d.file("ends.h5")).read_doubles("eigenvalues"), {lap[0], lap[1], lap[lap.size() - 2], lap.back()});
  // refused: a selection the constraints cannot serve, and a block of the wrong length
  auto bad = run_tcsolve({"eigs", spec, "--which", "SM", "--constraints", d.file("y.mtx")});
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("--constraints serve the ends"), std::string::npos) << bad.err;
  auto len = run_tcsolve({"eigs", "gen:lap2d:10", "--constraints", d.file("y.h5") + ":Y", "--device", "cpu"});
  EXPECT_EQ(len.status, 2) << len.err;
  EXPECT_NE(len.err.find("constraints have length 180 but the matrix has 100 rows"), std::string::npos) << len.err;
}

}  // namespace
}  // namespace tcsolve::test
