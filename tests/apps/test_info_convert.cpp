// info / convert / generate through the real binary: round trips between formats, the numbers
// info prints on hand-made matrices, and bad inputs (exit 2, one line naming file and line).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

// The number after `"key": ` in a one-object JSON text (first occurrence).
double json_value(const std::string& json, const std::string& key) {
  auto p = json.find("\"" + key + "\": ");
  if (p == std::string::npos) {
    ADD_FAILURE() << "no key " << key << " in " << json;
    return NAN;
  }
  return std::strtod(json.c_str() + p + key.size() + 4, nullptr);
}

void expect_same_matrix(const Csr<double>& a, const Csr<double>& b, const std::string& what) {
  EXPECT_EQ(a.nrows, b.nrows) << what;
  EXPECT_EQ(a.ncols, b.ncols) << what;
  EXPECT_EQ(a.row_ptr, b.row_ptr) << what;
  EXPECT_EQ(a.col_idx, b.col_idx) << what;
  EXPECT_EQ(a.values, b.values) << what;  // exact: 17 significant digits in .mtx, binary in .h5
}

void expect_error(const RunResult& r, const std::string& must_contain) {
  EXPECT_EQ(r.status, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("tcsolve: error: ", 0), 0u) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos)
      << "expected '" << must_contain << "' in: " << r.err;
}

TEST(AppsInfoConvert, GenerateConvertRoundTripIsExact) {
  ScratchDir d;
  // lap2d: known structure; band: random values (exercises the 17-digit text round trip).
  for (std::string spec : {"gen:lap2d:7x5", "gen:band:101:3@7", "gen:rmat:7:4+scramble"}) {
    SCOPED_TRACE(spec);
    const Csr<double> ref = generate(spec);
    auto g = run_tcsolve({"generate", spec, d.file("a.mtx")});
    ASSERT_EQ(g.status, 0) << g.err;
    EXPECT_NE(g.out.find(std::to_string(ref.nnz()) + " non-zeros"), std::string::npos) << g.out;
    auto c1 = run_tcsolve({"convert", d.file("a.mtx"), d.file("a.h5"), "--quiet"});
    ASSERT_EQ(c1.status, 0) << c1.err;
    EXPECT_TRUE(c1.out.empty()) << c1.out;
    auto c2 = run_tcsolve({"convert", d.file("a.h5"), d.file("b.mtx")});
    ASSERT_EQ(c2.status, 0) << c2.err;
    auto c3 = run_tcsolve({"convert", spec, d.file("c.hdf5")});
    ASSERT_EQ(c3.status, 0) << c3.err;
    expect_same_matrix(read_matrix(d.file("a.mtx")), ref, "a.mtx");
    expect_same_matrix(read_matrix(d.file("a.h5")), ref, "a.h5");
    expect_same_matrix(read_matrix(d.file("b.mtx")), ref, "b.mtx");
    expect_same_matrix(read_matrix(d.file("c.hdf5")), ref, "c.hdf5");
    // no temporary files left beside the outputs
    int files = 0;
    for (auto& e : std::filesystem::directory_iterator(d.path())) (void)e, ++files;
    EXPECT_EQ(files, 4);
    for (auto& e : std::filesystem::directory_iterator(d.path())) std::filesystem::remove(e);
  }
}

TEST(AppsInfoConvert, InfoOfGeneratedLaplacian) {
  // 7x5 grid: 35 rows; corners have 3 entries, edges 4, interior 5;
  // nnz = 35 + 2·((7-1)·5 + 7·(5-1)) = 151.
  auto r = run_tcsolve({"info", "gen:lap2d:7x5", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_value(r.out, "rows"), 35);
  EXPECT_EQ(json_value(r.out, "cols"), 35);
  EXPECT_EQ(json_value(r.out, "nnz"), 151);
  EXPECT_EQ(json_value(r.out, "min"), 3);
  EXPECT_EQ(json_value(r.out, "max"), 5);
  EXPECT_NEAR(json_value(r.out, "mean"), 151.0 / 35.0, 1e-12);
  EXPECT_EQ(json_value(r.out, "present"), 35);
  EXPECT_EQ(json_value(r.out, "missing"), 0);
  EXPECT_EQ(json_value(r.out, "empty_rows"), 0);
  EXPECT_EQ(json_value(r.out, "symmetry_defect"), 0);
  EXPECT_EQ(json_value(r.out, "bandwidth"), 7);
  EXPECT_EQ(json_value(r.out, "abs_max"), 4);
  EXPECT_EQ(json_value(r.out, "abs_min"), 1);

  auto t = run_tcsolve({"info", "gen:lap2d:6"});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("36 x 36"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("yes (exactly)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("read time"), std::string::npos) << t.out;
}

TEST(AppsInfoConvert, InfoOfHandMadeMatrix) {
  // 4x4 general: row lengths 2, 3, 0, 1 (mean 1.5, std sqrt(1.25)); row 3 empty; diagonal
  // present in rows 1, 2, 4 (row 2's is an explicit zero), missing in row 3;
  // a13 = 2.5 but a31 = 0, so max|a_ij - a_ji| / max|a| = 2.5 / 7.
  ScratchDir d;
  std::string p = d.write("m.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "% a comment\n"
                          "4 4 6\n"
                          "1 1 -7\n1 3 2.5\n2 1 0.5\n2 2 0\n2 4 1\n4 4 3\n");
  auto r = run_tcsolve({"info", p, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_value(r.out, "nnz"), 6);
  EXPECT_EQ(json_value(r.out, "min"), 0);
  EXPECT_EQ(json_value(r.out, "max"), 3);
  EXPECT_NEAR(json_value(r.out, "mean"), 1.5, 1e-15);
  EXPECT_NEAR(json_value(r.out, "std"), std::sqrt(1.25), 1e-12);
  EXPECT_EQ(json_value(r.out, "empty_rows"), 1);
  EXPECT_EQ(json_value(r.out, "present"), 3);
  EXPECT_EQ(json_value(r.out, "zero"), 1);
  EXPECT_EQ(json_value(r.out, "missing"), 1);
  EXPECT_EQ(json_value(r.out, "bandwidth"), 2);
  EXPECT_NEAR(json_value(r.out, "symmetry_defect"), 2.5 / 7.0, 1e-15);
  EXPECT_NE(r.out.find("\"declared_symmetry\": \"general\""), std::string::npos) << r.out;

  auto t = run_tcsolve({"info", p});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("values symmetric   no"), std::string::npos) << t.out;
}

TEST(AppsInfoConvert, MalformedMatrixMarketNamesFileAndLine) {
  ScratchDir d;
  std::string p = d.write("bad.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "3 3 3\n"
                          "1 1 1.0\n"
                          "2 x 2.0\n"
                          "3 3 3.0\n");
  expect_error(run_tcsolve({"info", p}), p + ":4");
  // same through convert, and no output file appears
  expect_error(run_tcsolve({"convert", p, d.file("out.h5")}), p + ":4");
  EXPECT_FALSE(std::filesystem::exists(d.file("out.h5")));
}

TEST(AppsInfoConvert, TruncatedFileIsAnError) {
  ScratchDir d;
  std::string p = d.write("short.mtx",
                          "%%MatrixMarket matrix coordinate real symmetric\n"
                          "5 5 4\n"
                          "1 1 1.0\n"
                          "2 2 2.0\n");
  expect_error(run_tcsolve({"info", p}), p);
}

TEST(AppsInfoConvert, MissingFile) {
  ScratchDir d;
  std::string p = d.file("does_not_exist.mtx");
  expect_error(run_tcsolve({"info", p}), p);
  expect_error(run_tcsolve({"convert", p, d.file("x.mtx")}), p);
}

TEST(AppsInfoConvert, NonFiniteValues) {
  ScratchDir d;
  std::string p = d.write("nan.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "2 2 2\n"
                          "1 1 1.0\n"
                          "2 2 nan\n");
  expect_error(run_tcsolve({"info", p}), p);
  auto r = run_tcsolve({"info", p, "--allow-nonfinite", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_value(r.out, "nonfinite"), 1);
}

TEST(AppsInfoConvert, UnsupportedOutputFormatBeforeReading) {
  ScratchDir d;
  // the input does not exist: the output name is checked first, so that is the error shown
  expect_error(run_tcsolve({"convert", d.file("missing.mtx"), d.file("out.txt")}),
               "unsupported output format");
  expect_error(run_tcsolve({"generate", "gen:lap2d:5", d.file("out.csv")}),
               "unsupported output format");
}

TEST(AppsInfoConvert, OutputInMissingFolder) {
  ScratchDir d;
  std::string out = d.file("no/such/dir/out.mtx");
  auto r = run_tcsolve({"generate", "gen:lap2d:5", out});
  expect_error(r, "out.mtx");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(AppsInfoConvert, BadGeneratorSpecs) {
  ScratchDir d;
  expect_error(run_tcsolve({"generate", "lap2d:5", d.file("a.mtx")}), "not a generator spec");
  expect_error(run_tcsolve({"info", "gen:lap2d:abc"}), "gen:lap2d:abc");
  expect_error(run_tcsolve({"info", "gen:nosuch:5"}), "nosuch");
}

}  // namespace
}  // namespace tcsolve::test
