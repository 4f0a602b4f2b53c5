// tcsolve svds: the result file (U, s, Vt and the PCA datasets) read back and checked against
// Eigen's dense SVD of the same matrix, --json's fields, bad input (exit 2, one clear line,
// nothing written) and non-convergence (exit 1, the partial result still written).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>

#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"
#include "tests/io/csc_group.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

Mat dense_of(const Csr<double>& a) {
  Mat d = Mat::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) = a.values[p];
  return d;
}

// Row-major [rows][cols] dataset as an Eigen matrix.
Mat read_2d(const Hdf5File& f, const std::string& name) {
  std::vector<std::int64_t> dims;
  const auto v = f.read_doubles(name, &dims);
  EXPECT_EQ(dims.size(), 2u);
  return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      v.data(), dims[0], dims[1]);
}

TEST(SvdsCli, CenteredResultFileMatchesDense) {
  ScratchDir d;
  const std::string out = (d.path() / "pca.h5").string(), spec = "gen:counts:400:90";
  const auto r = run_tcsolve({"svds", spec, "--k", "5", "--center", "--tol", "1e-10", "--out", out, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"status\":\"converged\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"explained_variance_ratio\":["), std::string::npos);
  EXPECT_NE(r.out.find("\"solve\":"), std::string::npos);
  Mat a = dense_of(generate(spec));
  a.rowwise() -= a.colwise().mean();
  const Eigen::VectorXd ref = Eigen::BDCSVD<Mat>(a).singularValues();
  const auto f = Hdf5File::open(out);
  EXPECT_EQ(f.attr_string("task"), "svds");
  EXPECT_EQ(f.attr_string("status"), "converged");
  EXPECT_EQ(f.attr_string("centered"), "yes");
  const auto s = f.read_doubles("s");
  const Mat U = read_2d(f, "U"), Vt = read_2d(f, "Vt"), scores = read_2d(f, "scores");
  ASSERT_EQ(s.size(), 5u);
  ASSERT_EQ(U.rows(), 400);
  ASSERT_EQ(U.cols(), 5);
  ASSERT_EQ(Vt.rows(), 5);
  ASSERT_EQ(Vt.cols(), 90);
  const Eigen::VectorXd sv = Eigen::Map<const Eigen::VectorXd>(s.data(), 5);
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(s[j], ref(j), 1e-10 * ref(0));
  EXPECT_LE((a * Vt.transpose() - U * sv.asDiagonal()).norm(), 1e-9 * ref(0));
  EXPECT_LE((scores - U * sv.asDiagonal()).norm(), 1e-12 * ref(0));
  const auto ratio = f.read_doubles("explained_variance_ratio");
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(ratio[j], s[j] * s[j] / a.squaredNorm(), 1e-12);
  EXPECT_EQ(f.read_doubles("means").size(), 90u);
}

TEST(SvdsCli, BadInputExitsTwoAndWritesNothing) {
  ScratchDir d;
  const std::string out = (d.path() / "r.h5").string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {Case{{"svds", "gen:counts:50:20", "--k", "21", "--out", out}, "at most min(m, n) = 20"},
                        Case{{"svds", "gen:counts:50:20", "--k", "0", "--out", out}, "--k 0"},
                        Case{{"svds", "gen:counts:50:20", "--tol", "0", "--out", out}, "--tol"},
                        Case{{"svds", "gen:counts:50:20", "--out", (d.path() / "r.txt").string()}, "HDF5"},
                        Case{{"svds", (d.path() / "missing.mtx").string(), "--out", out}, "missing.mtx"},
                        Case{{"svds", "gen:counts:50:20", "--device", "tpu"}, "--device 'tpu'"},
                        Case{{"svds", "gen:counts:50:20", "--certify", "--center", "--out", out}, "dense"},
                        Case{{"svds", "gen:counts:50:20", "--certify", "--no-certify"}, "contradict"}}) {
    const auto r = run_tcsolve(c.args);
    EXPECT_EQ(r.status, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
  }
  EXPECT_TRUE(files_in(d.path()).empty());
}

// The count certificate (where it is cheap: the default) in --json and the result file's attributes.
TEST(SvdsCli, CertificateInJsonAndResultFile) {
  ScratchDir d;
  const std::string out = (d.path() / "c.h5").string();
  const auto r = run_tcsolve({"svds", "gen:counts:400:90", "--k", "4", "--out", out, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"certified\":\"yes\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"verification\":\"certificate\""), std::string::npos) << r.out;
  const auto f = Hdf5File::open(out);
  EXPECT_EQ(f.attr_string("certified"), "yes");
  EXPECT_EQ(f.attr_string("verification"), "certificate");
  EXPECT_NE(f.attr_string("certificate").find("[0 A; A^T 0]"), std::string::npos) << f.attr_string("certificate");
  const auto n = run_tcsolve({"svds", "gen:counts:400:90", "--k", "4", "--no-certify", "--json"});
  ASSERT_EQ(n.status, 0) << n.err;
  EXPECT_NE(n.out.find("\"certified\":\"not_checked\""), std::string::npos) << n.out;
  // not counted: the values are distinct, so the block size answers (no re-check needed); with
  // block 1 the re-check runs; --no-recheck leaves nothing
  EXPECT_NE(n.out.find("\"verification\":\"block\""), std::string::npos) << n.out;
  const auto b1 = run_tcsolve({"svds", "gen:counts:400:90", "--k", "4", "--no-certify", "--block", "1", "--json"});
  ASSERT_EQ(b1.status, 0) << b1.err;
  EXPECT_NE(b1.out.find("\"verification\":\"recheck\""), std::string::npos) << b1.out;
  const auto off = run_tcsolve({"svds", "gen:counts:400:90", "--k", "4", "--no-certify", "--no-recheck", "--json"});
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_NE(off.out.find("\"verification\":\"none\""), std::string::npos) << off.out;
}

// An anndata file whose X is stored column-major (a CSC group): `tcsolve svds cells.h5ad` reads
// its X (no :GROUP needed) and gives the values of the same matrix read as generated.
TEST(SvdsCli, ReadsAnAnndataCscX) {
  ScratchDir d;
  const std::string spec = "gen:counts:300:70", file = (d.path() / "cells.h5ad").string();
  const Csr<double> a = generate(spec);
  test::write_csc_group(file, "X", a);
  const auto r = run_tcsolve({"svds", file, "--k", "3", "--json"});
  const auto g = run_tcsolve({"svds", spec, "--k", "3", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_NE(r.out.find("\"rows\":300,\"cols\":70,\"nnz\":" + std::to_string(a.nnz())), std::string::npos) << r.out;
  const auto values = [](const std::string& out) { return out.substr(out.find("\"singular_values\":"), 80); };
  EXPECT_EQ(values(r.out), values(g.out));
}

// --scale: the scales dataset (the columns' standard deviations) and the attribute.
TEST(SvdsCli, ScaledWritesTheScales) {
  ScratchDir d;
  const std::string out = (d.path() / "z.h5").string(), spec = "gen:counts:400:90";
  const auto r = run_tcsolve({"svds", spec, "--k", "3", "--center", "--scale", "--out", out, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"scaled\":true"), std::string::npos) << r.out;
  const Mat a = dense_of(generate(spec));
  const Eigen::RowVectorXd sd = (a.rowwise() - a.colwise().mean()).colwise().norm() / std::sqrt(399.0);
  const auto f = Hdf5File::open(out);
  EXPECT_EQ(f.attr_string("scaled"), "yes");
  const auto sc = f.read_doubles("scales");
  ASSERT_EQ(sc.size(), 90u);
  for (int j = 0; j < 90; ++j) EXPECT_NEAR(sc[j], sd(j) > 0 ? sd(j) : 1.0, 1e-12 * sc[j]);
}

// olm500-like flat spectra need restarts: gen:lap2d's top singular values are double; with two
// restarts allowed the run stops unconverged, says so, exits 1 and still writes its best.
TEST(SvdsCli, NotConvergedExitsOneWithPartialResult) {
  ScratchDir d;
  const std::string out = (d.path() / "nc.h5").string();
  const auto r = run_tcsolve({"svds", "gen:lap2d:60", "--k", "6", "--maxiter", "1", "--tol", "1e-12",
                              "--basis", "24", "--out", out});
  ASSERT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("did not converge"), std::string::npos) << r.err;
  const auto f = Hdf5File::open(out);
  EXPECT_EQ(f.attr_string("status"), "not_converged");
  EXPECT_EQ(f.read_doubles("s").size(), 6u);
  EXPECT_EQ(f.read_doubles("residual_atu").size(), 6u);
}

}  // namespace
}  // namespace tcsolve::test
