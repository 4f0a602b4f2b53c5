// HDF5 layer (io/hdf5_file.hpp) and CSR groups (io/hdf5_matrix.hpp): exact round trips, the
// anndata/h5sparse variants that are accepted, and every malformed group refused with a message
// naming the file and the object.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "io/hdf5_matrix.hpp"
#include "io/matrix_io.hpp"
#include "tests/io/csc_group.hpp"
#include "tests/io/csr_equal.hpp"
#include "tests/temp_dir.hpp"

namespace tcsolve {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

using test::same;

// Random rectangular CSR with empty rows, explicit zeros, -0.0, subnormals and extreme magnitudes.
Csr<double> random_csr(std::int64_t m, std::int64_t n, double density, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < m; ++i) {
    if (u(rng) < 0.1) continue;  // empty row
    for (std::int64_t j = 0; j < n; ++j)
      if (u(rng) < density) {
        double v = (u(rng) - 0.5) * std::pow(10.0, 20 * (u(rng) - 0.5));
        double r = u(rng);
        if (r < 0.03) v = 0.0;
        else if (r < 0.05) v = -0.0;
        else if (r < 0.06) v = std::numeric_limits<double>::denorm_min() * 3;
        else if (r < 0.07) v = std::numeric_limits<double>::max();
        t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), v});
      }
  }
  return csr_from_triplets(m, n, std::move(t));
}

// ---- the generic layer --------------------------------------------------------------------

TEST(Hdf5File, DatasetsAndAttributesRoundTrip) {
  TempDir tmp;
  const std::string path = tmp / "r.h5";
  std::vector<double> d1 = {1.5, -2.25, 1e-300, 7.0, -0.0};
  std::vector<std::int64_t> i64 = {0, -5, std::numeric_limits<std::int64_t>::max(), 42};
  std::vector<std::int32_t> i32 = {3, -1, 2147483647};
  std::vector<double> m23 = {1, 2, 3, 4, 5, 6};  // 2×3 row-major
  std::vector<double> big(100003);
  for (std::size_t k = 0; k < big.size(); ++k) big[k] = std::sin(double(k)) * 1e3;
  {
    Hdf5File f = Hdf5File::create(path);
    Hdf5Group g = f.create_group("eigs/run1");  // intermediate groups created
    g.write("values", d1);
    g.write("i64", i64);
    g.write("i32", i32);
    g.write_2d("m", m23.data(), 2, 3);
    g.write("big", big, Hdf5WriteOptions{true, 6, 1 << 14});  // chunked + deflate
    g.write("empty", std::vector<double>{});
    g.write("values", std::vector<double>{9.0, 8.0});  // replaces
    g.set_attr("solver", "lobpcg");
    g.set_attr("tol", 1e-8);
    g.set_attr("iters", 17);
    g.set_attr("shape", std::vector<std::int64_t>{4, 5});
    g.set_attr("weights", std::vector<double>{0.5, 0.25});
    g.set_attr("tol", 2e-8);  // replaces
    f.require_group("eigs").set_attr("count", std::int64_t{3});
    f.close();
  }
  Hdf5File f = Hdf5File::open(path);
  EXPECT_TRUE(f.has("eigs"));
  EXPECT_TRUE(f.has_group("eigs/run1"));
  EXPECT_FALSE(f.has_dataset("eigs/run1"));
  EXPECT_TRUE(f.has_dataset("eigs/run1/m"));
  EXPECT_FALSE(f.has("eigs/nothing/deeper"));
  EXPECT_FALSE(f.has("eigs/run1/values/x"));
  Hdf5Group g = f.group("eigs/run1");
  EXPECT_EQ(g.path(), "/eigs/run1");
  EXPECT_EQ(g.read_doubles("values"), (std::vector<double>{9.0, 8.0}));
  EXPECT_EQ(g.read_int64s("i64"), i64);
  EXPECT_EQ(g.read_int32s("i32"), i32);
  EXPECT_EQ(g.read_int64s("i32"), (std::vector<std::int64_t>{3, -1, 2147483647}));
  std::vector<std::int64_t> dims;
  EXPECT_EQ(g.read_doubles("m", &dims), m23);
  EXPECT_EQ(dims, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(g.read_doubles("big"), big);
  EXPECT_TRUE(g.read_doubles("empty").empty());
  EXPECT_EQ(g.dataset_info("i32").type, Hdf5Type::int32);
  EXPECT_EQ(g.dataset_info("m").size(), 6);
  EXPECT_EQ(g.attr_string("solver"), "lobpcg");
  EXPECT_EQ(g.attr_double("tol"), 2e-8);
  EXPECT_EQ(g.attr_int64("iters"), 17);
  EXPECT_EQ(g.attr_double("iters"), 17.0);
  EXPECT_EQ(g.attr_int64s("shape"), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(g.attr_doubles("weights"), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(f.group("eigs").attr_int64("count"), 3);
  EXPECT_TRUE(g.has_attr("tol"));
  EXPECT_FALSE(g.has_attr("nope"));
}

TEST(Hdf5File, ErrorsNameFileAndObjectAndPrintNothing) {
  TempDir tmp;
  const std::string path = tmp / "e.h5";
  {
    Hdf5File f = Hdf5File::create(path);
    f.create_group("g").write("x", std::vector<double>{1.5, 2.5});
    f.create_group("g2").write("big", std::vector<std::int64_t>{std::int64_t(1) << 40});
    f.group("g").set_attr("name", "abc");
    f.close();
  }
  auto input_error = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const InputError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("wrong exception type: ") + e.what();
    }
    return "no exception";
  };
  testing::internal::CaptureStderr();
  Hdf5File f = Hdf5File::open(path);
  std::string m = input_error([&] { f.group("g").read_doubles("y"); });
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("/g/y"), std::string::npos) << m;
  m = input_error([&] { f.group("g").read_int64s("x"); });
  EXPECT_NE(m.find("float64, expected integers"), std::string::npos) << m;
  m = input_error([&] { f.group("g2").read_int32s("big"); });
  EXPECT_NE(m.find("does not fit int32"), std::string::npos) << m;
  m = input_error([&] { f.group("nope"); });
  EXPECT_NE(m.find("/nope: no such group"), std::string::npos) << m;
  m = input_error([&] { f.group("g/x"); });
  EXPECT_NE(m.find("is not a group"), std::string::npos) << m;
  m = input_error([&] { f.group("g").attr_double("name"); });
  EXPECT_NE(m.find("/g@name"), std::string::npos) << m;
  m = input_error([&] { f.group("g").attr_string("missing"); });
  EXPECT_NE(m.find("no such attribute"), std::string::npos) << m;
  m = input_error([&] { Hdf5File::open(tmp / "absent.h5"); });
  EXPECT_NE(m.find("no such file"), std::string::npos) << m;
  std::ofstream(tmp / "text.h5") << "this is not HDF5\n";
  m = input_error([&] { Hdf5File::open(tmp / "text.h5"); });
  EXPECT_NE(m.find("not an HDF5 file"), std::string::npos) << m;
  // Writing into a read-only file is a tcsolve::Error (not InputError) naming the object.
  try {
    f.group("g").write("z", std::vector<double>{1.0});
    ADD_FAILURE() << "write to read-only file succeeded";
  } catch (const InputError& e) {
    ADD_FAILURE() << "write failure reported as InputError: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/g/z"), std::string::npos) << e.what();
  }
  try {
    Hdf5File::create((tmp / "no_such_dir/x.h5"));
    ADD_FAILURE() << "created a file in a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create file"), std::string::npos) << e.what();
  }
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "") << "HDF5 printed its error stack";
}

// ---- CSR groups: round trips --------------------------------------------------------------

TEST(Hdf5Matrix, RandomMatricesRoundTripExactly) {
  TempDir tmp;
  int k = 0;
  for (auto [m, n, dens] : std::vector<std::tuple<int, int, double>>{
           {1, 1, 1.0}, {37, 53, 0.1}, {200, 13, 0.3}, {13, 211, 0.05}, {5, 5, 0.0}, {0, 0, 0.0}, {0, 7, 0.0}}) {
    Csr<double> a = random_csr(m, n, dens, 17 + k);
    const std::string path = tmp / ("m" + std::to_string(k++) + ".h5");
    write_hdf5_matrix(path, a);
    Csr<double> b = read_hdf5_matrix(path);
    EXPECT_TRUE(same(a, b)) << m << "x" << n;
  }
  for (const char* spec : {"gen:elast3d:3", "gen:rmat:8:4+scramble", "gen:band:101:7@5"}) {
    Csr<double> a = generate(spec);
    write_hdf5_matrix(tmp / "g.h5", a, "some/nested/group");
    Csr<double> b = read_hdf5_matrix(tmp / "g.h5", "some/nested/group");
    EXPECT_TRUE(same(a, b)) << spec;
    EXPECT_EQ(b.symmetry, Symmetry::symmetric);
  }
  // Non-finite values are written and read back when allowed.
  Csr<double> a = random_csr(9, 9, 0.5, 3);
  a.values[1] = std::numeric_limits<double>::quiet_NaN();
  a.values[2] = -std::numeric_limits<double>::infinity();
  write_hdf5_matrix(tmp / "nan.h5", a);
  ReadOptions allow;
  allow.allow_nonfinite = true;
  Csr<double> b = read_hdf5_matrix(tmp / "nan.h5", "matrix", allow);
  EXPECT_TRUE(std::isnan(b.values[1]));
  EXPECT_EQ(b.values[2], -std::numeric_limits<double>::infinity());
}

// Row ranges (hyperslabs of indptr, indices, data) equal the rows of the whole read; empty and
// whole ranges too; a range outside the matrix and a bad entry inside the range are refused, the
// entry named by its index in the whole dataset.
TEST(Hdf5Matrix, RowRangesEqualTheWholeMatrix) {
  TempDir tmp;
  const Csr<double> a = random_csr(203, 197, 0.07, 29);
  write_hdf5_matrix(tmp / "r.h5", a);
  for (auto [r0, r1] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 203}, {0, 1}, {17, 101}, {202, 203}, {50, 50}, {0, 0}}) {
    std::int64_t total = -1;
    const Csr<double> b = read_hdf5_matrix_rows(tmp / "r.h5", r0, r1, "matrix", {}, &total);
    EXPECT_EQ(total, 203);
    ASSERT_EQ(b.nrows, r1 - r0);
    EXPECT_EQ(b.ncols, 197);
    for (std::int64_t i = 0; i < b.nrows; ++i) {
      const std::int64_t e0 = a.row_ptr[r0 + i], len = a.row_ptr[r0 + i + 1] - e0;
      ASSERT_EQ(b.row_ptr[i + 1] - b.row_ptr[i], len) << "row " << r0 + i;
      for (std::int64_t q = 0; q < len; ++q) {
        EXPECT_EQ(b.col_idx[b.row_ptr[i] + q], a.col_idx[e0 + q]);
        EXPECT_EQ(b.values[b.row_ptr[i] + q], a.values[e0 + q]);
      }
    }
  }
  EXPECT_THROW(read_hdf5_matrix_rows(tmp / "r.h5", 10, 204), InvalidArgument);
  EXPECT_THROW(read_hdf5_matrix_rows(tmp / "r.h5", 20, 10), InvalidArgument);
  // A column index out of range in row 150's entries: found by the range that holds it.
  Csr<double> c = a;
  const std::int64_t bad = c.row_ptr[150];
  c.col_idx[bad] = 100000;
  write_hdf5_matrix(tmp / "bad.h5", c);
  EXPECT_NO_THROW(read_hdf5_matrix_rows(tmp / "bad.h5", 0, 150));
  try {
    read_hdf5_matrix_rows(tmp / "bad.h5", 140, 160);
    ADD_FAILURE() << "a bad column index was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("element " + std::to_string(bad)), std::string::npos) << e.what();
  }
}

TEST(Hdf5Matrix, WrittenLayoutFollowsAnndata) {
  TempDir tmp;
  Csr<double> a = generate("gen:lap2d:3x2");
  write_hdf5_matrix(tmp / "a.h5", a);
  Hdf5File f = Hdf5File::open(tmp / "a.h5");
  Hdf5Group g = f.group("matrix");
  EXPECT_EQ(g.attr_string("encoding-type"), "csr_matrix");
  EXPECT_EQ(g.attr_string("encoding-version"), "0.1.0");
  EXPECT_EQ(g.attr_string("symmetry"), "symmetric");
  EXPECT_EQ(g.attr_int64s("shape"), (std::vector<std::int64_t>{6, 6}));
  EXPECT_EQ(g.dataset_info("data").type, Hdf5Type::float64);
  EXPECT_EQ(g.dataset_info("indices").type, Hdf5Type::int32);
  EXPECT_EQ(g.dataset_info("indptr").type, Hdf5Type::int64);
  EXPECT_EQ(g.read_int64s("indptr"), a.row_ptr);
  EXPECT_EQ(g.read_doubles("data"), a.values);
}

// anndata's CSC layout (X of an .h5ad written column-major; group "X"): the same matrix as its CSR,
// duplicates summed; a row range of it is refused with the reason.
TEST(Hdf5Matrix, CscGroupReadsAsTheSameMatrix) {
  TempDir tmp;
  const Csr<double> a = generate("gen:counts:40:25");
  test::write_csc_group(tmp / "x.h5ad", "X", a);
  const Csr<double> b = read_hdf5_matrix(tmp / "x.h5ad", "X");
  EXPECT_EQ(b.nrows, a.nrows);
  EXPECT_EQ(b.ncols, a.ncols);
  EXPECT_EQ(b.row_ptr, a.row_ptr);
  EXPECT_EQ(b.col_idx, a.col_idx);
  EXPECT_EQ(b.values, a.values);
  EXPECT_EQ(read_matrix(std::string(tmp / "x.h5ad") + ":X").values, a.values);  // FILE.h5ad:X
  EXPECT_EQ(read_matrix(std::string(tmp / "x.h5ad")).col_idx, a.col_idx);         // X by default
  try {
    read_hdf5_matrix_rows(tmp / "x.h5ad", 0, 10, "X");
    ADD_FAILURE() << "a row range of a CSC group was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("row range of a CSC group"), std::string::npos) << e.what();
  }
}

// ---- CSR groups written by other tools (raw HDF5 API: dtypes our layer does not write) ----

// Writes a 1-D dataset of `file_type` from `mem_type` data.
void raw_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const void* data, hsize_t n) {
  hid_t s = H5Screate_simple(1, &n, nullptr);
  hid_t d = H5Dcreate2(loc, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  if (n > 0) ASSERT_GE(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  H5Dclose(d);
  H5Sclose(s);
}
// Fixed-length (null-padded ASCII) string attribute, as older tools write them.
void raw_fixed_string_attr(hid_t loc, const char* name, const std::string& v) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, v.size());
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, v.data());
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
}

TEST(Hdf5Matrix, AcceptsFloat32Int64IndicesUnsortedRowsAndH5sparse) {
  TempDir tmp;
  // 3×4: row 0: (2, 1.5) (0, 2.5) (2, 0.25) -> unsorted with a duplicate; row 1 empty; row 2: (3, -1)
  const std::string path = tmp / "ext.h5";
  {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "matrix", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float data[] = {1.5f, 2.5f, 0.25f, -1.0f};
    std::int64_t idx[] = {2, 0, 2, 3};
    std::int32_t ptr[] = {0, 3, 3, 4};
    raw_dataset(g, "data", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, 4);
    raw_dataset(g, "indices", H5T_STD_I64LE, H5T_NATIVE_INT64, idx, 4);
    raw_dataset(g, "indptr", H5T_STD_I32LE, H5T_NATIVE_INT32, ptr, 4);
    raw_fixed_string_attr(g, "encoding-type", "csr_matrix");
    hsize_t two = 2;
    std::int32_t shape[] = {3, 4};
    hid_t s = H5Screate_simple(1, &two, nullptr);
    hid_t a = H5Acreate2(g, "shape", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT32, shape);
    H5Aclose(a);
    // The same matrix in h5sparse's convention, in the root group.
    raw_dataset(f, "data", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, 4);
    raw_dataset(f, "indices", H5T_STD_I64LE, H5T_NATIVE_INT64, idx, 4);
    raw_dataset(f, "indptr", H5T_STD_I32LE, H5T_NATIVE_INT32, ptr, 4);
    raw_fixed_string_attr(f, "h5sparse_format", "csr");
    a = H5Acreate2(f, "h5sparse_shape", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT32, shape);
    H5Aclose(a);
    H5Sclose(s);
    H5Gclose(g);
    H5Fclose(f);
  }
  for (const char* group : {"matrix", "/"}) {
    Csr<double> a = read_hdf5_matrix(path, group);
    validate(a);
    EXPECT_EQ(a.nrows, 3);
    EXPECT_EQ(a.ncols, 4);
    EXPECT_EQ(a.symmetry, Symmetry::general);
    EXPECT_EQ(a.row_ptr, (std::vector<std::int64_t>{0, 2, 2, 3}));
    EXPECT_EQ(a.col_idx, (std::vector<std::int32_t>{0, 2, 3}));
    EXPECT_EQ(a.values, (std::vector<double>{2.5, 1.75, -1.0}));
  }
}

// ---- malformed CSR groups -----------------------------------------------------------------

// A valid 4×5 group "/matrix" that each case breaks in one way before it is written.
struct GroupSpec {
  std::vector<double> data = {1.0, -2.0, 3.5, 4.0, 0.5};
  std::vector<std::int32_t> indices = {0, 4, 1, 2, 3};
  std::vector<std::int64_t> indptr = {0, 2, 3, 3, 5};
  std::vector<std::int64_t> shape = {4, 5};
  std::string encoding = "csr_matrix";
  std::string symmetry = "general";
  bool write_data = true, write_indices = true, write_indptr = true, write_shape = true;
  bool data_as_int = false, indices_as_float = false, data_2d = false, group_is_dataset = false;
  bool shape_as_float = false;
};

void write_group(const std::string& path, const GroupSpec& s) {
  Hdf5File f = Hdf5File::create(path);
  if (s.group_is_dataset) {
    f.write("matrix", s.data);
    f.close();
    return;
  }
  Hdf5Group g = f.create_group("matrix");
  if (!s.encoding.empty()) g.set_attr("encoding-type", s.encoding);
  if (!s.symmetry.empty()) g.set_attr("symmetry", s.symmetry);
  if (s.write_shape) {
    if (s.shape_as_float) g.set_attr("shape", std::vector<double>(s.shape.begin(), s.shape.end()));
    else g.set_attr("shape", s.shape);
  }
  if (s.write_data) {
    if (s.data_as_int) g.write("data", std::vector<std::int64_t>(s.data.begin(), s.data.end()));
    else if (s.data_2d) g.write_2d("data", s.data.data(), 1, static_cast<std::int64_t>(s.data.size()));
    else g.write("data", s.data);
  }
  if (s.write_indices) {
    if (s.indices_as_float) g.write("indices", std::vector<double>(s.indices.begin(), s.indices.end()));
    else g.write("indices", s.indices);
  }
  if (s.write_indptr) g.write("indptr", s.indptr);
  f.close();
}

TEST(Hdf5Matrix, ValidBaselineReads) {
  TempDir tmp;
  write_group(tmp / "ok.h5", GroupSpec{});
  Csr<double> a = read_hdf5_matrix(tmp / "ok.h5");
  EXPECT_EQ(a.nnz(), 5);
  EXPECT_EQ(a.values, (std::vector<double>{1.0, -2.0, 3.5, 4.0, 0.5}));
}

TEST(Hdf5Matrix, MalformedGroupsAreRefusedWithMessages) {
  TempDir tmp;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    std::function<void(GroupSpec&)> breakit;
    const char* expect;  // substring of the message (after "FILE: ")
    ReadOptions opt = {};
  };
  ReadOptions square;
  square.require_square = true;
  std::vector<Case> cases = {
      {"missing data", [](GroupSpec& s) { s.write_data = false; }, "/matrix/data: missing dataset"},
      {"missing indices", [](GroupSpec& s) { s.write_indices = false; }, "/matrix/indices: missing dataset"},
      {"missing indptr", [](GroupSpec& s) { s.write_indptr = false; }, "/matrix/indptr: missing dataset"},
      {"integer data", [](GroupSpec& s) { s.data_as_int = true; }, "/matrix/data: has element type int64, expected float32 or float64"},
      {"float indices", [](GroupSpec& s) { s.indices_as_float = true; }, "/matrix/indices: has element type float64"},
      {"2-D data", [](GroupSpec& s) { s.data_2d = true; }, "/matrix/data: has rank 2"},
      {"missing shape", [](GroupSpec& s) { s.write_shape = false; }, "missing attribute 'shape'"},
      {"float shape", [](GroupSpec& s) { s.shape_as_float = true; }, "/matrix@shape: has type float64, expected integers"},
      {"shape of 3", [](GroupSpec& s) { s.shape = {4, 5, 1}; }, "/matrix@shape: has 3 elements, expected 2"},
      {"negative shape", [](GroupSpec& s) { s.shape = {-4, 5}; }, "dimension -4 out of range"},
      {"huge shape", [](GroupSpec& s) { s.shape = {4, std::int64_t(1) << 33}; }, "out of range"},
      {"indptr length", [](GroupSpec& s) { s.indptr = {0, 2, 3, 5}; }, "/matrix/indptr: has 4 elements, expected nrows + 1 = 5"},
      {"indptr start", [](GroupSpec& s) { s.indptr[0] = 1; }, "indptr[0] = 1, expected 0"},
      {"indptr decreasing", [](GroupSpec& s) { s.indptr = {0, 3, 2, 3, 5}; }, "/matrix/indptr: decreases at row 1"},
      {"indptr end", [](GroupSpec& s) { s.indptr.back() = 4; }, "indptr[nrows] = 4 but data/indices hold 5"},
      {"indices count", [](GroupSpec& s) { s.indices.pop_back(); }, "/matrix/indices: has 4 elements but data has 5"},
      {"index = ncols", [](GroupSpec& s) { s.indices[1] = 5; }, "/matrix/indices: element 1 = 5 out of range [0, 5)"},
      {"negative index", [](GroupSpec& s) { s.indices[3] = -1; }, "element 3 = -1 out of range"},
      {"NaN", [nan](GroupSpec& s) { s.data[2] = nan; }, "/matrix/data: element 2 is NaN"},
      {"Inf", [inf](GroupSpec& s) { s.data[4] = -inf; }, "/matrix/data: element 4 is Inf"},
      {"csc with a CSR's indptr", [](GroupSpec& s) { s.encoding = "csc_matrix"; },
       "/matrix/indptr: has 5 elements, expected ncols + 1 = 6"},
      {"csc row out of range", [](GroupSpec& s) {
         s.encoding = "csc_matrix";
         s.shape = {5, 4};  // the default arrays as the CSC of a 5 × 4 matrix: row index 4 is fine, 5 not
         s.indices[1] = 5;
       },
       "/matrix/indices: element 1 = 5 out of range [0, 5)"},
      {"other encoding", [](GroupSpec& s) { s.encoding = "array"; }, "encoding-type is 'array', expected 'csr_matrix' or 'csc_matrix'"},
      {"no encoding", [](GroupSpec& s) { s.encoding.clear(); }, "missing attribute 'encoding-type'"},
      {"bad symmetry", [](GroupSpec& s) { s.symmetry = "hermitian"; }, "/matrix@symmetry: is 'hermitian'"},
      {"symmetric but rectangular", [](GroupSpec& s) { s.symmetry = "symmetric"; }, "declares symmetric but the matrix is 4x5"},
      {"symmetric but values differ",
       [](GroupSpec& s) {
         s.symmetry = "symmetric";
         s.shape = {3, 3};  // [[1, 2], [2, 5]] plus a(2,2): a(0,1) = 2 vs a(1,0) = 2.5
         s.data = {1.0, 2.0, 2.5, 5.0, 7.0};
         s.indices = {0, 1, 0, 1, 2};
         s.indptr = {0, 2, 4, 5};
       },
       "declares symmetric but entries (0, 1) and (1, 0) do not match"},
      {"symmetric but pattern differs",
       [](GroupSpec& s) {
         s.symmetry = "symmetric";
         s.shape = {3, 3};  // a(0,2) = 2 has no a(2,0)
         s.data = {1.0, 2.0, 5.0, 7.0, 1.0};
         s.indices = {0, 2, 1, 1, 2};
         s.indptr = {0, 2, 3, 5};
       },
       "entries (0, 2) and (2, 0) do not match"},
      {"skew with a diagonal",
       [](GroupSpec& s) {
         s.symmetry = "skew-symmetric";
         s.shape = {2, 2};
         s.data = {1.0, 2.0, -2.0};
         s.indices = {0, 1, 0};
         s.indptr = {0, 2, 3};
       },
       "declares skew-symmetric but entries (0, 0) and (0, 0) do not match"},
      {"skew but symmetric values",
       [](GroupSpec& s) {
         s.symmetry = "skew-symmetric";
         s.shape = {2, 2};
         s.data = {2.0, 2.0};
         s.indices = {1, 0};
         s.indptr = {0, 1, 2};
       },
       "entries (0, 1) and (1, 0) do not match"},
      {"rectangular when square required", [](GroupSpec& s) {}, "matrix is 4x5, a square matrix is required", square},
      {"group is a dataset", [](GroupSpec& s) { s.group_is_dataset = true; }, "/matrix: is not a group"},
  };
  for (const Case& c : cases) {
    GroupSpec s;
    c.breakit(s);
    const std::string path = tmp / "bad.h5";
    write_group(path, s);
    try {
      read_hdf5_matrix(path, "matrix", c.opt);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.file(), path) << c.name;
      EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << c.name << ": " << m;
      EXPECT_NE(m.find(c.expect), std::string::npos) << c.name << ": " << m;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << ": wrong exception type: " << e.what();
    }
  }
  // A valid skew-symmetric matrix (with -0.0 against 0.0) and a large symmetric one are accepted;
  // one perturbed value in the large one is found.
  {
    GroupSpec k;
    k.symmetry = "skew-symmetric";
    k.shape = {3, 3};
    k.data = {2.5, 0.0, -2.5, 1.0, -0.0, -1.0};
    k.indices = {1, 2, 0, 2, 0, 1};
    k.indptr = {0, 2, 4, 6};
    write_group(tmp / "skew.h5", k);
    EXPECT_EQ(read_hdf5_matrix(tmp / "skew.h5").symmetry, Symmetry::skew_symmetric);
    Csr<double> big = generate("gen:rmat:11:8@4");
    write_hdf5_matrix(tmp / "big.h5", big);
    EXPECT_EQ(read_hdf5_matrix(tmp / "big.h5").nnz(), big.nnz());
    std::int64_t off = big.row_ptr[700];
    while (big.col_idx[off] == 700) ++off;  // an off-diagonal entry
    big.values[off] *= 1.0 + 1e-15;
    write_hdf5_matrix(tmp / "big.h5", big);
    EXPECT_THROW(read_hdf5_matrix(tmp / "big.h5"), InputError);
  }
  // NaN is accepted when allowed.
  GroupSpec s;
  s.data[0] = nan;
  write_group(tmp / "nan.h5", s);
  ReadOptions allow;
  allow.allow_nonfinite = true;
  EXPECT_TRUE(std::isnan(read_hdf5_matrix(tmp / "nan.h5", "matrix", allow).values[0]));
}

TEST(Hdf5Matrix, MissingGroupTruncatedAndForeignFiles) {
  TempDir tmp;
  Csr<double> a = generate("gen:elast3d:5");
  write_hdf5_matrix(tmp / "a.h5", a);
  auto message = [](const std::string& path, const std::string& group) -> std::string {
    try {
      read_hdf5_matrix(path, group);
    } catch (const InputError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("wrong exception type: ") + e.what();
    }
    return "accepted";
  };
  std::string m = message(tmp / "a.h5", "other");
  EXPECT_NE(m.find("/other: no such group"), std::string::npos) << m;
  // Truncations at several points: never accepted, never a crash.
  const auto size = fs::file_size(tmp / "a.h5");
  for (double frac : {0.01, 0.3, 0.6, 0.95}) {
    fs::copy_file(tmp / "a.h5", tmp / "cut.h5", fs::copy_options::overwrite_existing);
    fs::resize_file(tmp / "cut.h5", static_cast<std::uintmax_t>(size * frac));
    m = message(tmp / "cut.h5", "matrix");
    EXPECT_EQ(m.rfind(tmp / "cut.h5", 0), 0u) << frac << ": " << m;
  }
  std::ofstream(tmp / "text.h5") << "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n";
  m = message(tmp / "text.h5", "matrix");
  EXPECT_NE(m.find("not an HDF5 file"), std::string::npos) << m;
  m = message(tmp / "none.h5", "matrix");
  EXPECT_NE(m.find("no such file"), std::string::npos) << m;
}


// AtomicFile's temporaries name their writer (TARGET.tmp-PID-HOST-XXXXXX). A writer that dies
// without its destructor (as under SIGKILL: _exit in a child) leaves its temporary; the next
// commit to the same target removes it, and never a live writer's, another target's or a name of
// another pattern. remove_stale_temporaries does the same on demand.
TEST(AtomicFile, ADeadWritersTemporaryGoesWithTheNextCommit) {
  TempDir tmp;
  const std::string target = tmp / "r.h5";
  auto killed_writer = [&](const std::string& t) {
    const pid_t p = ::fork();
    if (p == 0) {
      AtomicFile af(t);
      std::ofstream(af.temp_path()) << "half";
      ::_exit(0);  // no destructor: the temporary stays, as after SIGKILL
    }
    int st = 0;
    ::waitpid(p, &st, 0);
  };
  killed_writer(target);
  killed_writer(tmp / "other.h5");
  ASSERT_EQ(tmp.files().size(), 2u);
  for (const std::string& f : tmp.files()) {
    std::string t;
    EXPECT_TRUE(is_atomic_temporary(tmp / f, &t)) << f;
    EXPECT_EQ(fs::path(t).parent_path(), tmp.path());
  }
  AtomicFile live(target);  // this process: alive
  std::ofstream(tmp / "r.h5.tmp-123456") << "another pattern";
  {
    AtomicFile af(target);
    std::ofstream(af.temp_path()) << "complete";
    af.commit();
  }
  std::vector<std::string> left = tmp.files();
  // r.h5, live's temporary, the other target's, the other pattern: the dead writer's is gone
  EXPECT_EQ(left.size(), 4u);
  for (const std::string& f : left) {
    long pid = 0;
    std::string host;
    if (atomic_file_detail::parse_temp_name(f, "r.h5", &pid, &host)) EXPECT_EQ(pid, ::getpid()) << f;
  }
  EXPECT_EQ(remove_stale_temporaries(tmp / "r.h5"), 0);
  EXPECT_EQ(remove_stale_temporaries(tmp / "other.h5"), 1);
  EXPECT_EQ(tmp.files().size(), 3u);
  EXPECT_FALSE(is_atomic_temporary(tmp / "r.h5.tmp-123456"));
  EXPECT_FALSE(is_atomic_temporary(tmp / "r.h5"));
}

}  // namespace
}  // namespace tcsolve
