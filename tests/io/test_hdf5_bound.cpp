// HDF5 CSR groups (io/hdf5_matrix.cpp): the shape bounds the stored entries. A compressed group
// of shape 2 x 2 holding 2^21 + 1 entries (all at one position: legal duplicates, summed) is
// refused before its indices and values are read; within 2^20 entries such a file still reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io/hdf5_matrix.hpp"
#include "tests/temp_dir.hpp"

namespace tcsolve::test {
namespace {

void write_duplicates(const std::string& path, std::int64_t entries) {
  Hdf5File f = Hdf5File::create(path);
  Hdf5Group g = f.create_group("matrix");
  g.set_attr("encoding-type", "csr_matrix");
  g.set_attr("encoding-version", "0.1.0");
  g.set_attr("shape", std::vector<std::int64_t>{2, 2});
  Hdf5WriteOptions o;
  o.compress = true;
  g.write("data", std::vector<double>(static_cast<std::size_t>(entries), 0.5), o);
  g.write("indices", std::vector<std::int32_t>(static_cast<std::size_t>(entries), 1), o);
  g.write("indptr", std::vector<std::int64_t>{0, 0, entries}, o);
  f.close();
}

TEST(Hdf5Bound, MoreEntriesThanTheShapeHasPositionsAreRefused) {
  TempDir d;
  const std::string p = d / "dups.h5";
  write_duplicates(p, (std::int64_t(1) << 21) + 1);
  try {
    read_hdf5_matrix(p);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/matrix/data: holds 2097153 entries, more than the 2 x 2 positions of "
                                         "the shape: refused before allocating"),
              std::string::npos)
        << e.what();
  }
}

TEST(Hdf5Bound, DuplicatesWithinTheSlackStillRead) {
  TempDir d;
  const std::string p = d / "dups.h5";
  write_duplicates(p, 1000);
  const Csr<double> a = read_hdf5_matrix(p);
  EXPECT_EQ(a.nnz(), 1);
  EXPECT_EQ(a.values, std::vector<double>{500.0});
}

}  // namespace
}  // namespace tcsolve::test
