// CSR matrices in HDF5, following anndata's sparse convention (docs/hdf5-schema.md):
// a group with attributes encoding-type="csr_matrix", encoding-version="0.1.0",
// shape=[nrows, ncols] and tcsolve's symmetry="general|symmetric|skew-symmetric", holding the
// datasets data [nnz] float64, indices [nnz] int32, indptr [nrows+1] int64.
// Python: g = h5py.File(p)["matrix"]; scipy.sparse.csr_matrix((g["data"], g["indices"],
// g["indptr"]), shape=g.attrs["shape"]).
#pragma once
#include <cstdint>
#include <string>

#include "core/csr.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve {

Csr<double> read_hdf5_matrix(const std::string& path, const std::string& group = "matrix",
                             const ReadOptions& opt = {});
// Rows [r0, r1) only (r1 < 0: all rows), with global column indices: hyperslabs of indptr, then
// of indices/data (a rank of a distributed run reads its own rows). The same checks per entry;
// a declared symmetry is checked only when all rows are read. total_rows (optional): the
// matrix's row count.
Csr<double> read_hdf5_matrix_rows(const std::string& path, std::int64_t r0, std::int64_t r1,
                                  const std::string& group = "matrix", const ReadOptions& opt = {},
                                  std::int64_t* total_rows = nullptr);
// Writes (creating or truncating `path`) the group `group`.
void write_hdf5_matrix(const std::string& path, const Csr<double>& a,
                       const std::string& group = "matrix");

}  // namespace tcsolve
