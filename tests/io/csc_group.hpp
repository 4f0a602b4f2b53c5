// Writes A as anndata's CSC group (encoding-type csc_matrix: indptr over the columns, indices the
// rows; the arrays of Aᵀ's CSR) at GROUP of a new FILE, for the tests of the CSC reader.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve::test {

inline void write_csc_group(const std::string& file, const std::string& group, const Csr<double>& a) {
  const Csr<double> at = transpose(a);
  Hdf5File f = Hdf5File::create(file);
  Hdf5Group g = f.create_group(group);
  g.set_attr("encoding-type", "csc_matrix");
  g.set_attr("encoding-version", "0.1.0");
  g.set_attr("shape", std::vector<std::int64_t>{a.nrows, a.ncols});
  g.write("data", at.values);
  g.write("indices", at.col_idx);
  g.write("indptr", at.row_ptr);
  f.close();
}

}  // namespace tcsolve::test
