// Declared sizes that the file cannot back are refused before anything proportional to them is
// allocated, by every reader: Matrix Market (plain, gzip, array), Rutherford-Boeing and HDF5.
// CTest also runs this binary under `ulimit -v 500000` (test io_declared_sizes_under_ulimit):
// there an allocation of the declared 16 GiB of row offsets fails with std::bad_alloc instead
// of the expected InputError, so an unjustified allocation fails these tests.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_matrix.hpp"
#include "io/matrix_io.hpp"
#include "io/matrix_market.hpp"
#include "io/rutherford_boeing.hpp"
#include "io/text_input.hpp"
#include "tests/io/text_test_util.hpp"
#include "tests/temp_dir.hpp"

namespace tcsolve {
namespace {

using test::expect_input_error;

const std::string kBig = "2147483647";  // 2^31 - 1: 16 GiB of int64 row offsets

Csr<double> mm(const std::string& text) { return parse_matrix_market(text.data(), text.size(), "t.mtx"); }

// ---- Matrix Market -----------------------------------------------------------------------

TEST(DeclaredSizes, MatrixMarketCoordinateRowsRefusedAtTheSizeLine) {
  const std::string t = "%%MatrixMarket matrix coordinate real general\n" + kBig + " " + kBig + " 1\n1 1 1\n";
  expect_input_error([&] { mm(t); }, "t.mtx", 2, "declared size 2147483647 x 2147483647 is not backed by the data");
  expect_input_error([&] { mm(t); }, "t.mtx", 2, "refused before allocating 16.0 GiB of row offsets");
  expect_input_error([&] { mm(t); }, "t.mtx", 2, "hold at most 1 entries");
}

TEST(DeclaredSizes, MatrixMarketHugeEntryCountDoesNotJustifyRows) {
  // 10^12 entries declared, one line present: the entries the bytes can hold count, not the claim.
  const std::string t = "%%MatrixMarket matrix coordinate real general\n%c\n" + kBig + " 5 1000000000000\n1 1 1\n";
  expect_input_error([&] { mm(t); }, "t.mtx", 3, "not backed by the data");
}

TEST(DeclaredSizes, MatrixMarketColumnsAndSymmetricPatternAndArray) {
  expect_input_error([&] { mm("%%MatrixMarket matrix coordinate real general\n3 " + kBig + " 1\n1 1 1\n"); },
                     "t.mtx", 2, "columns would be empty");
  expect_input_error(
      [&] { mm("%%MatrixMarket matrix coordinate pattern symmetric\n" + kBig + " " + kBig + " 2\n2 1\n3 3\n"); },
      "t.mtx", 2, "hold at most 4 entries");
  // array with no column: zero values stored, 2^31 - 1 rows
  expect_input_error([&] { mm("%%MatrixMarket matrix array real general\n" + kBig + " 0\n"); }, "t.mtx", 2,
                     "hold at most 0 entries");
}

TEST(DeclaredSizes, MatrixMarketLimitIsSlackPlusEightRowsPerEntry) {
  // one entry the 6 bytes can hold: 2^20 + 8 rows are accepted, one more is refused
  const std::int64_t limit = kDeclaredDimSlack + kDeclaredDimsPerEntry;
  const std::string ok = std::to_string(limit);
  const Csr<double> a = mm("%%MatrixMarket matrix coordinate real general\n" + ok + " " + ok + " 1\n1 1 1\n");
  EXPECT_EQ(a.nrows, limit);
  EXPECT_EQ(a.nnz(), 1);
  const std::string bad = std::to_string(limit + 1);
  expect_input_error([&] { mm("%%MatrixMarket matrix coordinate real general\n" + bad + " 3 1\n1 1 1\n"); },
                     "t.mtx", 2, "declared size " + bad + " x 3");
}

TEST(DeclaredSizes, MatrixMarketGzipFileThroughReadMatrix) {
  test::TempDir tmp;
  const std::string p = tmp.write("big.mtx.gz", test::gzip_bytes("%%MatrixMarket matrix coordinate real symmetric\n" +
                                                                  kBig + " " + kBig + " 1\n1 1 4.5\n"));
  expect_input_error([&] { read_matrix(p); }, p, 2, "not backed by the data");
}

// ---- Rutherford-Boeing ---------------------------------------------------------------------

std::string right(std::int64_t v, int w) {
  std::string s = std::to_string(v);
  return std::string(w > static_cast<int>(s.size()) ? w - static_cast<int>(s.size()) : 0, ' ') + s;
}
std::string left(const std::string& s, std::size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); }

// A valid RUA file with nrow × 1, one entry at (1, 1).
std::string rb_one_entry(std::int64_t nrow) {
  std::string t = left("Declared sizes", 72) + "DECL    \n";
  t += right(3, 14) + right(1, 14) + right(1, 14) + right(1, 14) + "\n";
  t += left("RUA", 14) + right(nrow, 14) + right(1, 14) + right(1, 14) + right(0, 14) + "\n";
  t += left("(2I14)", 16) + left("(1I14)", 16) + left("(1E20.12)", 20) + "\n";
  t += right(1, 14) + right(2, 14) + "\n" + right(1, 14) + "\n" + "  1.500000000000E+00\n";
  return t;
}

TEST(DeclaredSizes, RutherfordBoeingRowsRefusedAtTheSizesLine) {
  const std::string t = rb_one_entry(2147483647);
  expect_input_error([&] { parse_rutherford_boeing(t.data(), t.size(), "t.rua"); }, "t.rua", 3,
                     "declared size 2147483647 x 1 is not backed by the data");
  const std::string ok = rb_one_entry(1000);
  const Csr<double> a = parse_rutherford_boeing(ok.data(), ok.size(), "ok.rua");
  EXPECT_EQ(a.nrows, 1000);
  EXPECT_EQ(a.values, std::vector<double>{1.5});
}

// ---- HDF5 ----------------------------------------------------------------------------------

// A CSR group of shape [shape_rows, 3] whose indptr declares nrows + 1 int64 elements: written
// in full (stored) or created and never written (late allocation: 0 bytes stored, reads would
// give fill values).
void write_declared_group(const std::string& path, std::int64_t nrows, bool store_indptr, bool chunked,
                          std::int64_t shape_rows = -1) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(f, "matrix", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  auto attr_str = [&](const char* name, const char* v) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, std::char_traits<char>::length(v));
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(g, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, v);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
  };
  attr_str("encoding-type", "csr_matrix");
  {
    hsize_t two = 2;
    const std::int64_t shape[] = {shape_rows >= 0 ? shape_rows : nrows, 3};
    hid_t s = H5Screate_simple(1, &two, nullptr);
    hid_t a = H5Acreate2(g, "shape", H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, shape);
    H5Aclose(a);
    H5Sclose(s);
  }
  auto empty = [&](const char* name, hid_t type) {
    hsize_t zero = 0;
    hid_t s = H5Screate_simple(1, &zero, nullptr);
    hid_t d = H5Dcreate2(g, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(s);
  };
  empty("data", H5T_IEEE_F64LE);
  empty("indices", H5T_STD_I32LE);
  hsize_t n = static_cast<hsize_t>(nrows + 1);
  hid_t s = H5Screate_simple(1, &n, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunked) {
    hsize_t chunk = 1 << 16;
    H5Pset_chunk(dcpl, 1, &chunk);
  }
  hid_t d = H5Dcreate2(g, "indptr", H5T_STD_I64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (store_indptr) {
    std::vector<std::int64_t> zeros(static_cast<std::size_t>(n), 0);
    H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
  }
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(s);
  H5Gclose(g);
  H5Fclose(f);
}

TEST(DeclaredSizes, Hdf5UnwrittenIndptrRefusedBeforeAllocation) {
  test::TempDir tmp;
  for (bool chunked : {false, true}) {
    const std::string p = tmp / (chunked ? "chunked.h5" : "contiguous.h5");
    write_declared_group(p, 2147483647, false, chunked);
    expect_input_error([&] { read_hdf5_matrix(p); }, p, 0,
                       "/matrix/indptr: declares 2147483648 elements (17179869184 bytes) but the file stores only 0 bytes");
  }
}

TEST(DeclaredSizes, Hdf5StoredIndptrOfManyEmptyRowsStillReads) {
  // 9 million empty rows, stored in full (72 MB > the 64 MiB exemption): a real file, accepted.
  test::TempDir tmp;
  const std::string p = tmp / "rows.h5";
  write_declared_group(p, 9000000, true, false);
  const Csr<double> a = read_hdf5_matrix(p);
  EXPECT_EQ(a.nrows, 9000000);
  EXPECT_EQ(a.nnz(), 0);
}

TEST(DeclaredSizes, Hdf5ShapeDisagreeingWithIndptrIsRefused) {
  test::TempDir tmp;
  const std::string p = tmp / "shape.h5";
  write_declared_group(p, 5, true, false, 2147483647);  // shape: 2^31 - 1 rows, indptr: 6 elements
  expect_input_error([&] { read_hdf5_matrix(p); }, p, 0, "/matrix/indptr: has 6 elements, expected nrows + 1 = 2147483648");
}

}  // namespace
}  // namespace tcsolve
