// Rutherford-Boeing / Harwell-Boeing reader: hand-made files of each type with exact expected
// CSR, Fortran field rules, every malformed case (InputError naming the line), gzip, and the
// real .rsa files compared entry by entry with their .mtx twins.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/matrix_market.hpp"
#include "io/rutherford_boeing.hpp"
#include "tests/io/text_test_util.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

using test::expect_csr;
using test::expect_input_error;

std::string right(std::int64_t v, int w) {
  std::string s = std::to_string(v);
  return std::string(w > static_cast<int>(s.size()) ? w - s.size() : 0, ' ') + s;
}
std::string right_s(const std::string& s, std::size_t w) { return std::string(w > s.size() ? w - s.size() : 0, ' ') + s; }
std::string left(const std::string& s, std::size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); }

// A Harwell-Boeing file: header with card counts computed from the data lines (unless overridden).
struct RbSpec {
  std::string type = "RUA";
  std::int64_t nrow = 3, ncol = 3, nnz = 0;
  std::string ptrfmt = "(16I5)", indfmt = "(16I5)", valfmt = "(4E20.12)";
  std::vector<std::string> ptr, ind, val, rhs;
  std::string rhs_header;  // line 5 when rhs is non-empty
  std::int64_t totcrd = -1;
};

std::string rb_text(const RbSpec& s) {
  const std::int64_t p = s.ptr.size(), i = s.ind.size(), v = s.val.size(), r = s.rhs.size();
  std::string t = left("Test matrix", 72) + "TESTKEY \n";
  t += right(s.totcrd >= 0 ? s.totcrd : p + i + v + r, 14) + right(p, 14) + right(i, 14) + right(v, 14) +
       (r ? right(r, 14) : std::string()) + "\n";
  t += left(s.type, 14) + right(s.nrow, 14) + right(s.ncol, 14) + right(s.nnz, 14) + right(0, 14) + "\n";
  t += left(s.ptrfmt, 16) + left(s.indfmt, 16) + left(s.valfmt, 20) + "\n";
  if (r) t += s.rhs_header + "\n";
  for (const auto* sec : {&s.ptr, &s.ind, &s.val, &s.rhs})
    for (const auto& l : *sec) t += l + "\n";
  return t;
}

bool default_options(const ReadOptions& o) { return !o.allow_nonfinite && !o.require_square; }

Csr<double> rb(const std::string& text, const ReadOptions& opt = {}) {
  auto a = parse_rutherford_boeing(text.data(), text.size(), "t.rb", opt);
  if (default_options(opt)) test::dump_corpus("rb", text, true);
  return a;
}

void bad(const std::string& text, std::int64_t line, const std::string& what, const ReadOptions& opt = {}) {
  SCOPED_TRACE(text);
  expect_input_error([&] { rb(text, opt); }, "t.rb", line, what);
  if (default_options(opt)) test::dump_corpus("rb", text, false);
}

// 3x3 unsymmetric:  [ 1  0 -2 ]
//                   [ 3  4  0 ]
//                   [ 0  5  0 ]
// CSC: colptr 1 3 5 6; rows 1 2 2 3 1; values 1 3 4 5 -2.
RbSpec rua() {
  RbSpec s;
  s.nnz = 5;
  s.ptrfmt = "(4I3)";
  s.ptr = {"  1  3  5  6"};
  s.indfmt = "(5I2)";
  s.ind = {" 1 2 2 3 1"};
  s.valfmt = "(2D7.1)";  // numbers touch: "1.0D+00-2.0D+00"
  s.val = {"1.0D+003.0D+00", "4.0D+005.0D+00", "-2.D+00"};
  return s;
}

TEST(RutherfordBoeing, RuaTouchingDExponentFields) {
  const auto a = rb(rb_text(rua()));
  EXPECT_EQ(a.symmetry, Symmetry::general);
  expect_csr(a, 3, 3, {0, 2, 4, 5}, {0, 2, 0, 1, 1}, {1.0, -2.0, 3.0, 4.0, 5.0});
}

TEST(RutherfordBoeing, RsaExpandsLowerTriangle) {
  // lower: (1,1)=4 (2,1)=-1 (3,1)=0.5 (2,2)=5 (3,3)=6
  RbSpec s;
  s.type = "RSA";
  s.nnz = 5;
  s.ptr = {"    1    4    5    6"};
  s.ind = {"    1    2    3    2    3"};
  s.valfmt = "(3E12.4)";
  s.val = {"  0.4000E+01 -0.1000E+01  0.5000E+00", "  0.5000E+01  0.6000E+01"};
  const auto a = rb(rb_text(s));
  EXPECT_EQ(a.symmetry, Symmetry::symmetric);
  expect_csr(a, 3, 3, {0, 3, 5, 7}, {0, 1, 2, 0, 1, 0, 2}, {4, -1, 0.5, -1, 5, 0.5, 6});
}

TEST(RutherfordBoeing, RzaSkewNegatedMirror) {
  RbSpec s;
  s.type = "RZA";
  s.nnz = 2;
  s.ptr = {"    1    3    3    3"};
  s.ind = {"    2    3"};
  s.valfmt = "(2F6.2)";
  s.val = {"  1.50 -4.00"};
  const auto a = rb(rb_text(s));
  EXPECT_EQ(a.symmetry, Symmetry::skew_symmetric);
  expect_csr(a, 3, 3, {0, 2, 3, 4}, {1, 2, 0, 0}, {-1.5, 4.0, 1.5, -4.0});
}

TEST(RutherfordBoeing, PatternTypesHaveNoValues) {
  RbSpec s;
  s.type = "PSA";
  s.nnz = 3;
  s.ptr = {"    1    3    4    4"};
  s.ind = {"    1    3    3"};
  s.valfmt = "";
  const auto a = rb(rb_text(s));
  expect_csr(a, 3, 3, {0, 2, 3, 5}, {0, 2, 2, 0, 1}, {1, 1, 1, 1, 1});
  s.type = "pua";  // lower case accepted
  const auto b = rb(rb_text(s));
  expect_csr(b, 3, 3, {0, 1, 1, 3}, {0, 0, 1}, {1, 1, 1});
}

TEST(RutherfordBoeing, RectangularAndIntegerValues) {
  RbSpec s;
  s.type = "IRA";
  s.nrow = 2;
  s.ncol = 3;
  s.nnz = 3;
  s.ptr = {"    1    2    2    4"};
  s.ind = {"    2    1    2"};
  s.valfmt = "(3I4)";
  s.val = {"  -7  12   3"};
  expect_csr(rb(rb_text(s)), 2, 3, {0, 1, 3}, {2, 0, 2}, {12, -7, 3});
}

TEST(RutherfordBoeing, FortranRealFieldRules) {
  // One column, 6 rows: values exercise implied decimals, bare-sign exponents, Q/d exponents,
  // and the 1P scale factor (which only affects fields without an exponent).
  RbSpec s;
  s.nrow = 6;
  s.ncol = 1;
  s.nnz = 6;
  s.ptr = {"    1    7"};
  s.ind = {"    1    2    3    4    5    6"};
  s.valfmt = "(1P,3E10.3)";
  s.val = {right_s("1.5+002", 10) + right_s("1234", 10) + right_s("-2.5d-01", 10),
           right_s("12.5", 10) + right_s("7.0q1", 10) + right_s("-1.0-100", 10)};
  const auto a = rb(rb_text(s));
  ASSERT_EQ(a.nnz(), 6);
  EXPECT_EQ(a.values[0], 150.0);     // 1.5+002
  EXPECT_EQ(a.values[1], 0.1234);    // 1234: 3 implied decimals -> 1.234, then 1P -> 0.1234
  EXPECT_EQ(a.values[2], -0.25);     // d exponent
  EXPECT_EQ(a.values[3], 1.25);      // 12.5 without exponent: 1P divides by 10
  EXPECT_EQ(a.values[4], 70.0);      // q exponent
  EXPECT_EQ(a.values[5], -1e-100);   // exponent without letter, 3 digits
}

TEST(RutherfordBoeing, HarwellBoeingRhsLinesAreSkipped) {
  RbSpec s = rua();
  s.rhs_header = "F                          1             0";
  s.rhs = {"1.0D+002.0D+00", "3.0D+00"};
  const auto a = rb(rb_text(s));
  expect_csr(a, 3, 3, {0, 2, 4, 5}, {0, 2, 0, 1, 1}, {1.0, -2.0, 3.0, 4.0, 5.0});
}

TEST(RutherfordBoeing, CrlfAndGzip) {
  std::string text = rb_text(rua());
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const auto a = rb(crlf);
  EXPECT_EQ(a.values, (std::vector<double>{1.0, -2.0, 3.0, 4.0, 5.0}));
  const std::string gz = test::gzip_bytes(text);
  EXPECT_EQ(rb(gz).values, a.values);
  test::TempDir dir;
  EXPECT_EQ(read_rutherford_boeing(dir.write("m.rua.gz", gz)).values, a.values);
  const std::string cut = gz.substr(0, gz.size() - 3);
  expect_input_error([&] { rb(cut); }, "t.rb", 0, "gzip");
}

TEST(RutherfordBoeing, HeaderOnly) {
  const std::string t = rb_text(rua());
  const auto h = parse_rutherford_boeing_header(t.data(), t.size(), "h.rb");
  EXPECT_EQ(h.title, "Test matrix");
  EXPECT_EQ(h.key, "TESTKEY");
  EXPECT_EQ(h.type, "RUA");
  EXPECT_EQ(h.nrows, 3);
  EXPECT_EQ(h.ncols, 3);
  EXPECT_EQ(h.stored, 5);
}

// ---- malformed input

TEST(RutherfordBoeingBad, TypeAndHeader) {
  auto with_type = [](const std::string& t) {
    RbSpec s = rua();
    s.type = t;
    return rb_text(s);
  };
  bad(with_type("CUA"), 3, "complex matrix");
  bad(with_type("RHA"), 3, "hermitian");
  bad(with_type("RUE"), 3, "elemental");
  bad(with_type("QUA"), 3, "pattern with values supplied separately");
  bad(with_type("XUA"), 3, "bad matrix type 'XUA'");
  bad(with_type("RXA"), 3, "bad matrix type 'RXA'");
  bad(with_type("RSS"), 3, "bad matrix type 'RSS'");
  bad(with_type("RU"), 3, "third letter must be A");
  bad("", 1, "empty file");
  bad("title only\n", 1, "missing line 2");
  bad("title\n  5  1  2  2\n", 2, "bad TOTCRD");
  const std::string full = rb_text(rua());
  const std::size_t l3 = full.find('\n', full.find('\n') + 1) + 1;
  bad(full.substr(0, l3), 2, "missing line 3");
  const std::size_t l4 = full.find('\n', l3) + 1;
  bad(full.substr(0, l4), 3, "missing line 4");
}

TEST(RutherfordBoeingBad, Sizes) {
  RbSpec s = rua();
  s.nrow = 3000000000;
  bad(rb_text(s), 3, "exceeds the 32-bit index limit");
  s = rua();
  s.type = "RSA";
  s.nrow = 4;
  bad(rb_text(s), 3, "must be square");
  s = rua();
  s.nrow = 4;
  ReadOptions sq;
  sq.require_square = true;
  bad(rb_text(s), 3, "square matrix is required", sq);
  std::string t = rb_text(rua());
  const std::size_t l3 = t.find('\n', t.find('\n') + 1) + 1;
  t.replace(l3 + 14, 14, right(-3, 14));
  bad(t, 3, "negative NROW");
  t = rb_text(rua());
  t.replace(l3 + 14, 14, std::string(13, ' ') + "x");
  bad(t, 3, "bad NROW");
}

TEST(RutherfordBoeingBad, Formats) {
  RbSpec s = rua();
  s.ptrfmt = "(4X3)";
  bad(rb_text(s), 4, "unsupported edit descriptor 'X'");
  s = rua();
  s.indfmt = "5I2";
  bad(rb_text(s), 4, "expected '('");
  s = rua();
  s.valfmt = "(2D7)";
  bad(rb_text(s), 4, "needs w.d");
  s = rua();
  s.ptrfmt = "(4E3.1)";
  bad(rb_text(s), 4, "must be an integer (I) format");
  s = rua();
  s.valfmt = "";
  bad(rb_text(s), 4, "expected the pointer, index and value formats");
  s = rua();
  s.valfmt = "(2D0.1)";
  bad(rb_text(s), 4, "field width must be in 1..100");
}

TEST(RutherfordBoeingBad, CardCounts) {
  RbSpec s = rua();
  s.totcrd = 7;
  bad(rb_text(s), 2, "TOTCRD = 7");
  s = rua();
  s.ptr = {"  1  3", "  5  6"};  // two lines where (4I3) needs one
  bad(rb_text(s), 2, "PTRCRD = 2 lines");
  s = rua();
  s.nnz = 6;
  bad(rb_text(s), 2, "INDCRD = 1 lines, but 6 row indices");
}

TEST(RutherfordBoeingBad, Pointers) {
  RbSpec s = rua();
  s.ptr = {"  2  3  5  6"};
  bad(rb_text(s), 5, "first column pointer must be 1");
  s.ptr = {"  1  4  3  6"};
  bad(rb_text(s), 5, "column pointers decrease");
  s.ptr = {"  1  3  5  5"};
  bad(rb_text(s), 5, "last column pointer must be NNZERO + 1 = 6");
  s.ptr = {"  1  3  9  6"};
  bad(rb_text(s), 5, "exceeds NNZERO + 1");
  s.ptr = {"  1  3  x  6"};
  bad(rb_text(s), 5, "bad column pointer 'x'");
  s.ptr = {"  1  3  5"};
  bad(rb_text(s), 5, "bad column pointer (blank field)");
  s.ptr = {"  1  3  5  6  7"};
  bad(rb_text(s), 5, "unexpected text '7'");
}

TEST(RutherfordBoeingBad, RowIndices) {
  RbSpec s = rua();
  s.ind = {" 1 2 0 3 1"};
  bad(rb_text(s), 6, "row index 0");
  s.ind = {" 1 2 2 4 1"};
  bad(rb_text(s), 6, "row index 4 out of range 1..3");
  s.ind = {" 1 2 2-3 1"};
  bad(rb_text(s), 6, "row index -3 out of range");
  s.ind = {" 1 2 2 3 ."};
  bad(rb_text(s), 6, "bad row index '.'");
  RbSpec l;  // symmetric file mixing triangles
  l.type = "RSA";
  l.nnz = 2;
  l.ptr = {"    1    2    3    3"};
  l.ind = {"    2    1"};
  l.valfmt = "(2F6.2)";
  l.val = {"  1.00  2.00"};
  bad(rb_text(l), 6, "one triangle only");
  l.type = "RZA";
  l.ind = {"    2    2"};
  bad(rb_text(l), 6, "diagonal entry (2, 2) in a skew-symmetric matrix");
}

TEST(RutherfordBoeingBad, ValuesAndLength) {
  RbSpec s = rua();
  s.val = {"1.0D+003.0D+00", "4.0D+005.0Dx00", "-2.D+00"};
  bad(rb_text(s), 8, "bad value '5.0Dx00'");
  s.val = {"1.0D+003.0D+00", "4.0D+00", "-2.D+00"};
  bad(rb_text(s), 8, "bad value (blank field)");
  s.val = {"1.0D+003.0D+00", "4.0D+00    NaN", "-2.D+00"};
  bad(rb_text(s), 8, "not finite");
  ReadOptions o;
  o.allow_nonfinite = true;
  EXPECT_TRUE(std::isnan(rb(rb_text(s), o).values[4]));  // A(3,2), last in row order
  s.val = {"1.0D+003.0D+00", "4.0D+00  1e999", "-2.D+00"};
  bad(rb_text(s), 8, "not finite");
  // Truncated: the last value line is missing (file ends at line 9).
  std::string t = rb_text(rua());
  t = t.substr(0, t.rfind("-2.D+00"));
  bad(t, 9, "truncated data: expected 5 values, the file ends after 4");
  t = rb_text(rua());
  bad(t.substr(0, t.find(" 1 2 2 3 1")), 6, "truncated data: expected 5 row indices");
  bad(rb_text(rua()) + "\n   \n 42\n", 12, "extra data");
  RbSpec h = rua();
  h.rhs_header = "F  1  0";
  h.rhs = {"1.0D+00", "2.0D+00"};
  std::string ht = rb_text(h);
  bad(ht.substr(0, ht.rfind("2.0D+00")), 12, "RHSCRD = 2");
}

// ---- real files

struct RsaCount {
  std::int64_t nrows = 0, ncols = 0, expanded = 0;
};

// Independent reading of an RSA/RUA file's structure: header by fixed columns, the pointer and
// index sections by the widths their (nIw) formats give.
RsaCount count_rb(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string l1, l2, l3, l4;
  std::getline(f, l1);
  std::getline(f, l2);
  std::getline(f, l3);
  std::getline(f, l4);
  const int rhscrd = l2.size() > 56 ? std::atoi(l2.substr(56, 14).c_str()) : 0;
  if (rhscrd > 0) std::getline(f, l1);
  RsaCount c;
  const char sym = l3[1];
  c.nrows = std::stoll(l3.substr(14, 14));
  c.ncols = std::stoll(l3.substr(28, 14));
  const std::int64_t stored = std::stoll(l3.substr(42, 14));
  int pn, pw, in, iw;
  EXPECT_EQ(std::sscanf(l4.c_str(), " (%dI%d) (%dI%d)", &pn, &pw, &in, &iw), 4) << l4;
  auto ints = [&](std::int64_t count, int n, int w) {
    std::vector<std::int64_t> v;
    std::string line;
    while (static_cast<std::int64_t>(v.size()) < count && std::getline(f, line))
      for (int k = 0; k < n && static_cast<std::int64_t>(v.size()) < count; ++k)
        v.push_back(std::stoll(line.substr(static_cast<std::size_t>(k) * w, w)));
    return v;
  };
  const auto colptr = ints(c.ncols + 1, pn, pw);
  const auto rows = ints(stored, in, iw);
  EXPECT_EQ(static_cast<std::int64_t>(rows.size()), stored);
  std::int64_t diag = 0;
  for (std::int64_t j = 0; j < c.ncols; ++j)
    for (std::int64_t q = colptr[j] - 1; q < colptr[j + 1] - 1; ++q) diag += rows[q] == j + 1;
  c.expanded = sym == 'S' ? 2 * stored - diag : sym == 'Z' ? 2 * stored : stored;
  return c;
}

TEST(RutherfordBoeingReal, EveryRsaReadsWithRightSizeAndEntryCount) {
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::matrices_dir())) {
    const auto ext = e.path().extension();
    if (ext != ".rsa" && ext != ".rua" && ext != ".rb") continue;
    SCOPED_TRACE(e.path().string());
    const auto want = count_rb(e.path());
    const auto a = read_rutherford_boeing(e.path().string());
    EXPECT_EQ(a.nrows, want.nrows);
    EXPECT_EQ(a.ncols, want.ncols);
    EXPECT_EQ(a.nnz(), want.expanded);
    EXPECT_NO_THROW(validate(a));
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(RutherfordBoeingReal, RsaMatchesMtxTwinEntryByEntry) {
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  for (const char* name : {"bcsstk02", "nos1"}) {
    SCOPED_TRACE(name);
    const auto dir = test::matrices_dir();
    const auto a = read_rutherford_boeing((dir / (std::string(name) + ".rsa")).string());
    const auto b = read_matrix_market((dir / (std::string(name) + ".mtx")).string());
    EXPECT_EQ(a.symmetry, Symmetry::symmetric);
    EXPECT_EQ(b.symmetry, Symmetry::symmetric);
    ASSERT_EQ(a.nrows, b.nrows);
    ASSERT_EQ(a.ncols, b.ncols);
    ASSERT_EQ(a.row_ptr, b.row_ptr);
    ASSERT_EQ(a.col_idx, b.col_idx);
    // The two files print values with different digit counts (e.g. E16.8 vs 13 digits):
    // equal to the precision of the shorter one.
    double worst = 0;
    for (std::size_t k = 0; k < a.values.size(); ++k) {
      const double d = std::abs(a.values[k] - b.values[k]) / std::max(std::abs(b.values[k]), 1e-300);
      worst = std::max(worst, d);
    }
    EXPECT_LE(worst, 1e-8) << "largest relative difference";
    EXPECT_TRUE(is_symmetric(a));
  }
}

}  // namespace
}  // namespace tcsolve
