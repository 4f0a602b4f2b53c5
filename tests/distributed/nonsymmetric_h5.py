# Writes a 300-row tridiagonal matrix with one entry (5, 250) that has no (250, 5) partner, as an
# HDF5 CSR group /matrix (docs/hdf5-schema.md): a matrix read by row ranges that only the
# distributed symmetry probe can refuse. Usage: nonsymmetric_h5.py OUT.h5
import sys

import h5py
import numpy as np
import scipy.sparse as sp

n = 300
a = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], (n, n)).tolil()
a[5, 250] = 0.5  # no (250, 5) partner
a = a.tocsr()
a.sort_indices()
with h5py.File(sys.argv[1], "w") as f:
    g = f.create_group("matrix")
    g.attrs["encoding-type"] = "csr_matrix"
    g.attrs["encoding-version"] = "0.1.0"
    g.attrs["shape"] = np.array(a.shape, dtype=np.int64)
    g["data"] = a.data
    g["indices"] = a.indices.astype(np.int32)
    g["indptr"] = a.indptr.astype(np.int64)
