// Matrix Market reader/writer: every format variant on hand-made files with exact expected CSR,
// every malformed case (InputError naming the line), gzip, round trips, and all real matrices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/matrix_market.hpp"
#include "io/text_input.hpp"
#include "tests/io/text_test_util.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

using test::expect_csr;
using test::expect_input_error;

bool default_options(const ReadOptions& o) { return !o.allow_nonfinite && !o.require_square; }

Csr<double> mm(const std::string& text, const ReadOptions& opt = {}) {
  auto a = parse_matrix_market(text.data(), text.size(), "t.mtx", opt);
  if (default_options(opt)) test::dump_corpus("mtx", text, true);
  return a;
}

void bad(const std::string& text, std::int64_t line, const std::string& what, const ReadOptions& opt = {}) {
  SCOPED_TRACE(text);
  expect_input_error([&] { mm(text, opt); }, "t.mtx", line, what);
  if (default_options(opt)) test::dump_corpus("mtx", text, false);
}

const std::string kGen = "%%MatrixMarket matrix coordinate real general\n";
const std::string kSym = "%%MatrixMarket matrix coordinate real symmetric\n";

// ---- valid variants

TEST(MatrixMarket, CoordinateRealGeneralSumsDuplicatesKeepsZerosSortsRows) {
  const auto a = mm(kGen +
                    "% comment\n"
                    "3 4 6\n"
                    "3 4 -2.5\n"
                    "1 2 0.125\n"
                    "1 1 0\n"          // explicit zero kept
                    "3 1 1e-3\n"
                    "1 2 0.25\n"       // duplicate of (1,2): summed
                    "2 3 -7.75E+02\n");
  EXPECT_EQ(a.symmetry, Symmetry::general);
  expect_csr(a, 3, 4, {0, 2, 3, 5}, {0, 1, 2, 0, 3}, {0.0, 0.375, -775.0, 1e-3, -2.5});
}

TEST(MatrixMarket, CoordinateSymmetricExpandsBothTrianglesDiagonalOnce) {
  const auto a = mm(kSym + "3 3 4\n1 1 2.5\n2 1 -1.25\n3 2 0.5\n3 3 4\n");
  EXPECT_EQ(a.symmetry, Symmetry::symmetric);
  expect_csr(a, 3, 3, {0, 2, 4, 6}, {0, 1, 0, 2, 1, 2}, {2.5, -1.25, -1.25, 0.5, 0.5, 4.0});
  EXPECT_TRUE(is_symmetric(a));
}

TEST(MatrixMarket, CoordinateSymmetricUpperTriangleOnlyIsAccepted) {
  const auto a = mm(kSym + "3 3 3\n1 2 -1.25\n2 3 0.5\n1 1 9\n");
  expect_csr(a, 3, 3, {0, 2, 4, 5}, {0, 1, 0, 2, 1}, {9.0, -1.25, -1.25, 0.5, 0.5});
}

TEST(MatrixMarket, CoordinateSkewSymmetricNegatesMirror) {
  const auto a = mm("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 1 -4\n");
  EXPECT_EQ(a.symmetry, Symmetry::skew_symmetric);
  expect_csr(a, 3, 3, {0, 2, 3, 4}, {1, 2, 0, 0}, {-1.5, 4.0, 1.5, -4.0});
}

TEST(MatrixMarket, CoordinateIntegerGeneral) {
  const auto a = mm("%%MatrixMarket matrix coordinate integer general\n2 3 3\n1 3 -17\n2 1 +4\n2 2 9007199254740993\n");
  expect_csr(a, 2, 3, {0, 1, 3}, {2, 0, 1}, {-17.0, 4.0, 9007199254740992.0});
}

TEST(MatrixMarket, CoordinatePatternSymmetricValuesAreOne) {
  const auto a = mm("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n3 1\n3 2\n");
  expect_csr(a, 3, 3, {0, 2, 3, 5}, {0, 2, 2, 0, 1}, {1, 1, 1, 1, 1});
}

TEST(MatrixMarket, PatternDiagonalAndDuplicates) {
  // Duplicate pattern entries sum to 2.
  const auto a = mm("%%MatrixMarket matrix coordinate pattern general\n2 2 3\n2 2\n1 2\n2 2\n");
  expect_csr(a, 2, 2, {0, 1, 2}, {1, 1}, {1.0, 2.0});
}

TEST(MatrixMarket, ArrayRealGeneralColumnMajorKeepsEveryValue) {
  const auto a = mm("%%MatrixMarket matrix array real general\n% c\n2 3\n1.5\n-2\n0\n4e1\n5\n-6.25\n");
  expect_csr(a, 2, 3, {0, 3, 6}, {0, 1, 2, 0, 1, 2}, {1.5, 0.0, 5.0, -2.0, 40.0, -6.25});
}

TEST(MatrixMarket, ArraySymmetricLowerTriangleByColumns) {
  const auto a = mm("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
  // lower by columns: (1,1)=1 (2,1)=2 (3,1)=3 (2,2)=4 (3,2)=5 (3,3)=6
  expect_csr(a, 3, 3, {0, 3, 6, 9}, {0, 1, 2, 0, 1, 2, 0, 1, 2}, {1, 2, 3, 2, 4, 5, 3, 5, 6});
}

TEST(MatrixMarket, ArraySkewSymmetricStrictlyLower) {
  const auto a = mm("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1.5\n-2\n3\n");
  // (2,1)=1.5 (3,1)=-2 (3,2)=3
  expect_csr(a, 3, 3, {0, 2, 4, 6}, {1, 2, 0, 2, 0, 1}, {-1.5, 2.0, 1.5, -3.0, -2.0, 3.0});
}

TEST(MatrixMarket, ArrayIntegerSeveralValuesPerLine) {
  const auto a = mm("%%MatrixMarket matrix array integer general\n2 2\n1 -2\n  3\t4\n");
  expect_csr(a, 2, 2, {0, 2, 4}, {0, 1, 0, 1}, {1, 3, -2, 4});
}

TEST(MatrixMarket, LenientSpacingCrlfCaseAndPlusSign) {
  const auto a = mm("%%matrixmarket MATRIX Coordinate REAL General\r\n%c\r\n\r\n  2 2 2 \r\n\r\n 1\t1   +0.5 \r\n2 2 -.25e1\r\n\r\n");
  expect_csr(a, 2, 2, {0, 1, 2}, {0, 1}, {0.5, -2.5});
}

TEST(MatrixMarket, NoFinalNewlineAndEmptyMatrix) {
  expect_csr(mm(kGen + "1 1 1\n1 1 3.25"), 1, 1, {0, 1}, {0}, {3.25});
  expect_csr(mm(kGen + "0 0 0\n"), 0, 0, {0}, {}, {});
  expect_csr(mm(kGen + "4 2 0"), 4, 2, {0, 0, 0, 0, 0}, {}, {});
}

TEST(MatrixMarket, SeventeenDigitValuesAndSubnormalsAreExact) {
  const auto a = mm(kGen + "1 3 3\n1 1 0.10000000000000001\n1 2 -1.7976931348623157e308\n1 3 1e-400\n");
  EXPECT_EQ(a.values[0], 0.1);
  EXPECT_EQ(a.values[1], -std::numeric_limits<double>::max());
  EXPECT_EQ(a.values[2], 0.0);  // underflows to zero, as strtod does
  const auto b = mm(kGen + "1 1 1\n1 1 4.9406564584124654e-324\n");
  EXPECT_EQ(b.values[0], std::numeric_limits<double>::denorm_min());
}

TEST(MatrixMarket, NonFiniteAllowedOnRequest) {
  ReadOptions o;
  o.allow_nonfinite = true;
  const auto a = mm(kGen + "1 3 3\n1 1 nan\n1 2 -inf\n1 3 1e400\n", o);
  EXPECT_TRUE(std::isnan(a.values[0]));
  EXPECT_EQ(a.values[1], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(a.values[2], std::numeric_limits<double>::infinity());
}

TEST(MatrixMarket, HeaderOnly) {
  const std::string t = "%%MatrixMarket matrix coordinate pattern symmetric\n%x\n%y\n5 5 7\n";
  const auto h = parse_matrix_market_header(t.data(), t.size(), "h.mtx");
  EXPECT_TRUE(h.coordinate);
  EXPECT_EQ(h.field, "pattern");
  EXPECT_EQ(h.symmetry, Symmetry::symmetric);
  EXPECT_EQ(h.nrows, 5);
  EXPECT_EQ(h.ncols, 5);
  EXPECT_EQ(h.stored, 7);
  EXPECT_EQ(h.data_line, 4);
}

// ---- malformed input: InputError naming the line and the problem

TEST(MatrixMarketBad, Banner) {
  bad("", 1, "empty file");
  bad("3 3 1\n1 1 1\n", 1, "missing or bad banner");
  bad("%%MatrixMarkt matrix coordinate real general\n1 1 0\n", 1, "missing or bad banner");
  bad("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "incomplete banner");
  bad("%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "unsupported object 'vector'");
  bad("%%MatrixMarket matrix sparse real general\n1 1 0\n", 1, "unknown format 'sparse'");
  bad("%%MatrixMarket matrix coordinate real8 general\n1 1 0\n", 1, "unknown field 'real8'");
  bad("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex matrices are not supported");
  bad("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, "hermitian");
  bad("%%MatrixMarket matrix coordinate real diagonal\n1 1 0\n", 1, "unknown symmetry 'diagonal'");
  bad("%%MatrixMarket matrix coordinate real general extra\n1 1 0\n", 1, "after the banner");
  bad("%%MatrixMarket matrix array pattern general\n1 1\n", 1, "not allowed with format 'array'");
}

TEST(MatrixMarketBad, SizeLine) {
  bad(kGen + "% only comments\n", 3, "missing size line");
  bad(kGen, 2, "missing size line");
  bad(kGen + "%c\n3 x 3\n", 3, "bad size line");
  bad(kGen + "3 3\n1 1 1\n", 2, "missing the number of entries");
  bad(kGen + "-3 3 1\n", 2, "negative number of rows");
  bad(kGen + "3 -3 1\n", 2, "negative number of columns");
  bad(kGen + "3 3 -1\n", 2, "negative number of entries");
  bad(kGen + "3000000000 3 1\n", 2, "exceeds the 32-bit index limit");
  bad(kGen + "3 2147483648 1\n", 2, "exceeds the 32-bit index limit");
  bad(kGen + "3 3 99999999999999999999999\n", 2, "too large");
  bad(kGen + "3 3 1 7\n1 1 1\n", 2, "after the size line");
  bad(kGen + "3 3 1.5\n", 2, "after the size line");
  bad(kSym + "3 4 1\n1 1 1\n", 2, "must be square");
  bad("%%MatrixMarket matrix array real general\n2 2 4\n1\n2\n3\n4\n", 2, "after the size line");
  ReadOptions sq;
  sq.require_square = true;
  bad(kGen + "%\n3 4 1\n1 1 1\n", 3, "square matrix is required", sq);
}

TEST(MatrixMarketBad, EntryCounts) {
  bad(kGen + "3 3 3\n1 1 1\n2 2 2\n", 5, "truncated data");
  bad(kGen + "3 3 3\n1 1 1\n2 2 2\n\n\n", 7, "truncated data");
  bad(kGen + "3 3 1\n1 1 1\n2 2 2\n", 4, "extra data");
  bad(kGen + "3 3 0\n1 1 1\n", 3, "extra data");
  bad("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 6, "truncated data");
  bad("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n5\n", 7, "extra data");
}

TEST(MatrixMarketBad, Indices) {
  bad(kGen + "3 3 2\n1 1 1\n0 2 1\n", 4, "row index 0");
  bad(kGen + "3 3 1\n1 0 1\n", 3, "column index 0");
  bad(kGen + "3 3 1\n4 1 1\n", 3, "row index 4 out of range 1..3");
  bad(kGen + "3 3 1\n1 4 1\n", 3, "column index 4 out of range 1..3");
  bad(kGen + "3 3 1\n99999999999999999999999 1 1\n", 3, "out of range");
  bad(kGen + "3 3 1\n-1 1 1\n", 3, "negative row index");
  bad(kGen + "3 3 1\n1.0 1 1\n", 3, "after the row index");
  bad(kGen + "3 3 1\nx 1 1\n", 3, "expected a row index");
  bad(kGen + "3 3 1\n1 1e0 1\n", 3, "after the column index");
  bad(kGen + "3 3 1\n1\n1 1\n", 3, "line ends before the column index");
}

TEST(MatrixMarketBad, Values) {
  bad(kGen + "3 3 1\n1 1 abc\n", 3, "expected a real value");
  bad(kGen + "3 3 1\n1 1 1.5x\n", 3, "unexpected text 'x'");
  bad(kGen + "3 3 1\n1 1 1.5.2\n", 3, "unexpected text '.2'");
  bad(kGen + "3 3 1\n1 1 1.0 7\n", 3, "unexpected text '7'");
  bad(kGen + "3 3 1\n1 1 1.0D+00\n", 3, "unexpected text 'D+00'");
  bad(kGen + "3 3 1\n1 1\n", 3, "line ends before the value");
  bad(kGen + "3 3 1\n1 1 +-1\n", 3, "expected a real value");
  bad(kGen + "3 3 2\n1 1 1\n2 2 nan\n", 4, "not finite");
  bad(kGen + "3 3 1\n1 1 -Inf\n", 3, "not finite");
  bad(kGen + "3 3 1\n1 1 1e400\n", 3, "not finite");
  bad("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1.0\n", 3, "pattern entries have no value");
  bad("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n", 3, "expected an integer value");
  bad("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 99999999999999999999\n", 3, "does not fit 64 bits");
  bad("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 --1\n", 3, "expected an integer value");
  bad("%%MatrixMarket matrix array real general\n1 2\n1.0\n2.0x\n", 4, "unexpected text 'x'");
  bad("%%MatrixMarket matrix array real general\n1 1\ninf\n", 3, "not finite");
}

TEST(MatrixMarketBad, Symmetry) {
  bad("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n", 4, "diagonal entry (2, 2)");
  bad(kSym + "3 3 3\n2 1 1\n3 3 1\n1 3 1\n", 5, "one triangle only");
  bad(kSym + "3 3 2\n1 2 1\n3 1 1\n", 4, "one triangle only");
}

// ---- gzip

TEST(MatrixMarket, GzipFromMemoryAndFile) {
  const std::string text = kSym + "3 3 4\n1 1 2.5\n2 1 -1.25\n3 2 0.5\n3 3 4\n";
  const auto plain = mm(text);
  const std::string gz = test::gzip_bytes(text);
  ASSERT_TRUE(is_gzip(gz.data(), gz.size()));
  const auto a = parse_matrix_market(gz.data(), gz.size(), "t.mtx.gz");
  EXPECT_EQ(a.row_ptr, plain.row_ptr);
  EXPECT_EQ(a.col_idx, plain.col_idx);
  EXPECT_EQ(a.values, plain.values);
  test::TempDir dir;
  const auto b = read_matrix_market(dir.write("m.mtx.gz", gz));
  EXPECT_EQ(b.values, plain.values);
  // Concatenated gzip members read as one text.
  const std::string half1 = text.substr(0, 60), half2 = text.substr(60);
  const std::string two = test::gzip_bytes(half1) + test::gzip_bytes(half2);
  EXPECT_EQ(parse_matrix_market(two.data(), two.size(), "two.gz").values, plain.values);
}

TEST(MatrixMarket, GzipTruncatedOrCorruptIsInputError) {
  std::string text = kGen + "50 50 50\n";
  for (int k = 1; k <= 50; ++k) text += std::to_string(k) + " " + std::to_string(51 - k) + " " + std::to_string(k * 0.37) + "\n";
  const std::string gz = test::gzip_bytes(text);
  test::TempDir dir;
  for (std::size_t cut : {std::size_t(2), std::size_t(10), gz.size() / 2, gz.size() - 4, gz.size() - 1}) {
    const std::string p = dir.write("cut.mtx.gz", gz.substr(0, cut));
    try {
      read_matrix_market(p);
      ADD_FAILURE() << "truncated gzip at " << cut << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), p);
      EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos) << e.what();
    }
  }
  std::string corrupt = gz;
  corrupt[gz.size() / 2] ^= 0x5a;
  corrupt[gz.size() / 2 + 1] ^= 0x33;
  const std::string p = dir.write("bad.mtx.gz", corrupt);
  EXPECT_THROW(read_matrix_market(p), InputError);
  std::string crc = gz;
  crc[gz.size() - 6] ^= 1;  // CRC-32 of the trailer
  EXPECT_THROW(parse_matrix_market(crc.data(), crc.size(), "crc.gz"), InputError);
}

TEST(MatrixMarket, MissingFileIsInputErrorNamingIt) {
  try {
    read_matrix_market("/nonexistent/dir/x.mtx");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/dir/x.mtx");
  }
}

// ---- writer: exact round trips

Csr<double> random_csr(int n, int m, bool symmetric, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1e3, 1e3);
  std::uniform_int_distribution<int> ri(0, n - 1), ci(0, m - 1), ex(-300, 300);
  std::vector<Triplet<double>> t;
  for (int k = 0; k < 5 * n; ++k) {
    int i = ri(rng), j = symmetric ? ri(rng) : ci(rng);
    double v = val(rng) * std::pow(10.0, ex(rng) / 10);
    if (k % 17 == 0) v = 0.0;  // explicit zeros survive
    if (k % 23 == 0) v = -0.0;
    t.push_back({i, j, v});
    if (symmetric && i != j) t.push_back({j, i, v});
  }
  // Duplicates are summed in the same order on both sides, so values stay exactly symmetric.
  return csr_from_triplets<double>(n, m, t, symmetric ? Symmetry::symmetric : Symmetry::general);
}

void expect_same(const Csr<double>& a, const Csr<double>& b) {
  EXPECT_EQ(a.nrows, b.nrows);
  EXPECT_EQ(a.ncols, b.ncols);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (std::size_t k = 0; k < a.values.size(); ++k)  // bitwise: -0.0 must stay -0.0
    EXPECT_EQ(std::memcmp(&a.values[k], &b.values[k], sizeof(double)), 0)
        << "entry " << k << ": " << a.values[k] << " vs " << b.values[k];
}

TEST(MatrixMarket, WriteReadIsExactGeneralAndSymmetric) {
  test::TempDir dir;
  for (bool sym : {false, true}) {
    const auto a = random_csr(97, sym ? 97 : 61, sym, 11 + sym);
    ASSERT_EQ(is_symmetric(a), sym);
    const std::string p = (dir.path() / (sym ? "s.mtx" : "g.mtx")).string();
    write_matrix_market(p, a);
    const std::string text = test::read_bytes(p);
    EXPECT_EQ(text.rfind(std::string("%%MatrixMarket matrix coordinate real ") + (sym ? "symmetric" : "general"), 0), 0u);
    const auto b = read_matrix_market(p);
    EXPECT_EQ(b.symmetry, a.symmetry);
    expect_same(a, b);
    // .mtx -> read -> write -> read: same text and same matrix.
    const std::string p2 = p + ".again.mtx";
    write_matrix_market(p2, b);
    EXPECT_EQ(test::read_bytes(p2), text);
  }
}

TEST(MatrixMarket, WriteSymmetricFlagWithUnsymmetricValuesFallsBackToGeneral) {
  auto a = random_csr(20, 20, true, 5);
  std::size_t off = 0;  // first off-diagonal entry of row 0..: perturb it
  while (a.col_idx[off] == std::upper_bound(a.row_ptr.begin(), a.row_ptr.end(), std::int64_t(off)) - a.row_ptr.begin() - 1) ++off;
  a.values[off] = a.values[off] == 0.0 ? 1.0 : 3.0 * a.values[off];  // now not symmetric
  ASSERT_FALSE(is_symmetric(a));
  test::TempDir dir;
  const std::string p = (dir.path() / "x.mtx").string();
  write_matrix_market(p, a);
  EXPECT_EQ(test::read_bytes(p).rfind("%%MatrixMarket matrix coordinate real general", 0), 0u);
  expect_same(a, read_matrix_market(p));
}

TEST(MatrixMarket, WriteToBadPathThrows) {
  EXPECT_THROW(write_matrix_market("/nonexistent/dir/x.mtx", random_csr(3, 3, false, 1)), Error);
}

// ---- every real .mtx: sizes and the expanded entry count from an independent scan

struct IndependentCount {
  std::int64_t nrows = 0, ncols = 0, expanded = 0;
};

IndependentCount count_mtx(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  std::istringstream banner(line);
  std::string mm, obj, fmt, field, sym;
  banner >> mm >> obj >> fmt >> field >> sym;
  for (auto* s : {&fmt, &field, &sym}) std::transform(s->begin(), s->end(), s->begin(), ::tolower);
  EXPECT_EQ(fmt, "coordinate") << p;
  while (std::getline(f, line) && (line.empty() || line[0] == '%')) {
  }
  IndependentCount c;
  std::int64_t stored = 0;
  std::istringstream(line) >> c.nrows >> c.ncols >> stored;
  std::int64_t diag = 0, lines = 0;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::int64_t i, j;
    if (!(ls >> i >> j)) continue;
    ++lines;
    diag += i == j;
  }
  EXPECT_EQ(lines, stored) << p;
  c.expanded = sym == "general" ? stored : sym == "symmetric" ? 2 * stored - diag : 2 * stored;
  return c;
}

TEST(MatrixMarketReal, EveryMtxReadsWithRightSizeAndEntryCount) {
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::matrices_dir())) {
    if (e.path().extension() != ".mtx") continue;
    SCOPED_TRACE(e.path().string());
    const auto want = count_mtx(e.path());
    const auto a = read_matrix_market(e.path().string());
    EXPECT_EQ(a.nrows, want.nrows);
    EXPECT_EQ(a.ncols, want.ncols);
    EXPECT_EQ(a.nnz(), want.expanded);
    EXPECT_NO_THROW(validate(a));
    if (a.symmetry == Symmetry::symmetric) EXPECT_TRUE(is_symmetric(a));
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace tcsolve

namespace tcsolve {
namespace {

// csr_from_coo (the readers' CSR build) against core's csr_from_triplets: same contract, on
// in-order, unsorted and duplicate-heavy random inputs of odd sizes.
TEST(CsrFromCoo, MatchesCsrFromTriplets) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 37 + 11 * trial, m = 29 + 5 * trial;
    std::uniform_int_distribution<int> ri(0, n - 1), ci(0, m - 1);
    std::uniform_real_distribution<double> val(-2, 2);
    std::vector<Triplet<double>> t;
    CooEntries e;
    const int count = trial == 0 ? 0 : 40 * trial;
    for (int k = 0; k < count; ++k) {
      const int i = trial % 2 ? ri(rng) : k * n / std::max(count, 1);  // even trials: rows in order
      const int j = trial == 4 ? ci(rng) % 3 : ci(rng);                // trial 4: many duplicates
      const double v = k % 13 == 0 ? 0.0 : val(rng);
      t.push_back({i, j, v});
      e.push(i, j, v);
    }
    const auto want = csr_from_triplets<double>(n, m, t, Symmetry::general);
    const auto got = csr_from_coo(n, m, std::move(e), Symmetry::general);
    EXPECT_EQ(got.row_ptr, want.row_ptr) << trial;
    EXPECT_EQ(got.col_idx, want.col_idx) << trial;
    EXPECT_EQ(got.values, want.values) << trial;
    EXPECT_NO_THROW(validate(got));
  }
}

}  // namespace
}  // namespace tcsolve

namespace tcsolve {
namespace {

// Above 2^20 entries csr_from_coo sorts in two bucketed passes: check that path too.
TEST(CsrFromCoo, LargeBucketedPathMatchesCsrFromTriplets) {
  std::mt19937 rng(3);
  const int n = 5003, m = 4001, count = (1 << 20) + 4321;
  std::uniform_int_distribution<int> ri(0, n - 1), ci(0, m - 1);
  std::uniform_real_distribution<double> val(-2, 2);
  std::vector<Triplet<double>> t;
  CooEntries e;
  t.reserve(count);
  e.reserve(count);
  for (int k = 0; k < count; ++k) {
    const int i = ri(rng), j = ci(rng);
    const double v = val(rng);
    t.push_back({i, j, v});
    e.push(i, j, v);
  }
  const auto want = csr_from_triplets<double>(n, m, t, Symmetry::general);
  const auto got = csr_from_coo(n, m, std::move(e), Symmetry::general);
  EXPECT_LT(want.nnz(), count);  // random duplicates were summed
  EXPECT_EQ(got.row_ptr, want.row_ptr);
  EXPECT_EQ(got.col_idx, want.col_idx);
  EXPECT_EQ(got.values, want.values);
}

}  // namespace
}  // namespace tcsolve

namespace tcsolve {
namespace {

TEST(MatrixMarket, WriteSkewAndEmptyAsGeneral) {
  test::TempDir dir;
  const std::string text = "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 1 -4\n";
  const auto a = parse_matrix_market(text.data(), text.size(), "skew.mtx");
  const std::string p = (dir.path() / "skew.mtx").string();
  write_matrix_market(p, a);
  const std::string out = test::read_bytes(p);
  EXPECT_EQ(out.rfind("%%MatrixMarket matrix coordinate real general", 0), 0u) << out;
  const auto b = read_matrix_market(p);
  EXPECT_EQ(b.row_ptr, a.row_ptr);
  EXPECT_EQ(b.col_idx, a.col_idx);
  EXPECT_EQ(b.values, a.values);
  Csr<double> empty;
  empty.nrows = 4;
  empty.ncols = 2;
  empty.row_ptr.assign(5, 0);
  const std::string q = (dir.path() / "empty.mtx").string();
  write_matrix_market(q, empty);
  const auto c = read_matrix_market(q);
  EXPECT_EQ(c.nrows, 4);
  EXPECT_EQ(c.ncols, 2);
  EXPECT_EQ(c.nnz(), 0);
}

}  // namespace
}  // namespace tcsolve
