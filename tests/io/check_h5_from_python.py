#!/usr/bin/env python3
"""tcsolve's HDF5 CSR groups read back with h5py + scipy (docs/hdf5-schema.md), and the reverse.

usage: check_h5_from_python.py FIXTURE_BINARY WORK_DIR
Exits 77 (CTest SKIP_RETURN_CODE) when numpy, h5py or scipy are missing.
"""
import os
import subprocess
import sys

try:
    import h5py
    import numpy as np
    import scipy.io
    import scipy.sparse as sp
except ImportError as e:  # Debian: apt-get install python3-h5py python3-scipy
    print(f"SKIP: {e}")
    sys.exit(77)


def load(path, group="matrix"):
    """The 5 lines of docs/hdf5-schema.md."""
    with h5py.File(path, "r") as f:
        g = f[group]
        assert g.attrs["encoding-type"] == "csr_matrix", g.attrs["encoding-type"]
        a = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
        return a, g.attrs["symmetry"], g["data"].dtype, g["indices"].dtype, g["indptr"].dtype


def same(a, b):
    """Exact equality: same shape, same stored pattern and bitwise-equal values."""
    a, b = a.tocsr(), b.tocsr()
    a.sort_indices()
    b.sort_indices()
    return (a.shape == b.shape and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data.view(np.uint64), b.data.view(np.uint64)))


def main():
    fixture, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    subprocess.run([fixture, "write", work], check=True)
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # 1. The 7x5 Dirichlet Laplacian: known structure, values and spectrum.
    lap, sym, dt, it, pt = load(os.path.join(work, "lap.h5"))
    check(lap.shape == (35, 35), f"lap shape {lap.shape}")
    check(lap.nnz == 35 + 2 * (6 * 5 + 7 * 4), f"lap nnz {lap.nnz}")
    check(sym == "symmetric", f"lap symmetry attribute {sym!r}")
    check((dt, it, pt) == (np.float64, np.int32, np.int64), f"dtypes {dt} {it} {pt}")
    d = lap.toarray()
    check(np.all(np.diag(d) == 4.0), "lap diagonal is 4")
    check(d[0, 1] == -1.0 and d[0, 7] == -1.0 and d[6, 7] == 0.0, "lap neighbours (x fastest, no wrap)")
    ev = np.sort(np.linalg.eigvalsh(d))
    ref = np.sort([4 - 2 * np.cos(np.pi * k / 8) - 2 * np.cos(np.pi * l / 6) for k in range(1, 8) for l in range(1, 6)])
    check(np.max(np.abs(ev - ref)) < 1e-12, "lap spectrum matches the closed form")
    check(same(lap, scipy.io.mmread(os.path.join(work, "lap.mtx"))), "lap.h5 == lap.mtx (scipy.io.mmread)")

    # 2. Random values: the HDF5 group equals the Matrix Market file bit for bit.
    for name, shape in (("band", (57, 57)), ("rect", (23, 31))):
        a, sym, *_ = load(os.path.join(work, name + ".h5"))
        m = scipy.io.mmread(os.path.join(work, name + ".mtx"))
        check(a.shape == shape, f"{name} shape {a.shape}")
        check(same(a, m), f"{name}.h5 == {name}.mtx exactly (nnz {a.nnz})")
        check(sym == ("symmetric" if name == "band" else "general"), f"{name} symmetry {sym!r}")
    band, *_ = load(os.path.join(work, "band.h5"))
    check(abs(band - band.T).max() == 0, "band is symmetric in scipy")
    nested, *_ = load(os.path.join(work, "nested.h5"), "results/A")
    check(same(nested, band), "FILE.h5:GROUP wrote the group results/A")

    # 3. Reverse: a file written by h5py/scipy (int32 indptr, float32 data, unsorted indices with a
    #    duplicate) read by tcsolve and written back as Matrix Market.
    rng = np.random.default_rng(5)
    b = sp.random(40, 29, density=0.15, format="csr", random_state=rng, dtype=np.float64)
    b.data = (b.data - 0.5).astype(np.float32).astype(np.float64)
    py_h5 = os.path.join(work, "from_python.h5")
    with h5py.File(py_h5, "w") as f:
        g = f.create_group("matrix")
        g.attrs["encoding-type"] = "csr_matrix"
        g.attrs["encoding-version"] = "0.1.0"
        g.attrs["shape"] = b.shape
        # row 0 gets its entries reversed plus a duplicate of its first entry
        r0 = slice(b.indptr[0], b.indptr[1])
        idx, dat = b.indices.copy(), b.data.astype(np.float32)
        idx[r0], dat[r0] = idx[r0][::-1], dat[r0][::-1]
        idx = np.insert(idx, b.indptr[1], idx[b.indptr[0]])
        dat = np.insert(dat, b.indptr[1], np.float32(0.5))
        ptr = b.indptr.astype(np.int32).copy()
        ptr[1:] += 1
        g.create_dataset("data", data=dat)
        g.create_dataset("indices", data=idx.astype(np.int32))
        g.create_dataset("indptr", data=ptr)
    expect = sp.csr_matrix((dat.astype(np.float64), idx, ptr), shape=b.shape)
    expect.sum_duplicates()
    out = subprocess.run([fixture, "convert", py_h5, os.path.join(work, "back.mtx")], check=True,
                         capture_output=True, text=True).stdout.split()
    check(out == [str(b.shape[0]), str(b.shape[1]), str(expect.nnz)], f"tcsolve read the h5py file: {out}")
    check(same(scipy.io.mmread(os.path.join(work, "back.mtx")), expect), "h5py file -> tcsolve -> .mtx exact")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
