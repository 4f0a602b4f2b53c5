"""Input checks and conversion: what the user passes -> what the C++ side takes.

Three kinds come out of :func:`as_matrix`:

* :class:`HostCsr`   any scipy.sparse matrix/array (csr, csc, coo, ...; any real dtype; int32 or
                     int64 indices) or a dense NumPy array, as canonical CSR (sorted, duplicates
                     summed) with int64 indptr, int32 indices, float64 data. CSR input that is
                     already canonical float64/int32 is passed without a copy here (the C++ side
                     copies once into its own Csr).
* :class:`Operator`  a scipy.sparse.linalg.LinearOperator (or anything with ``shape`` and
                     ``matvec``): the solver calls back into Python for every block product.
* :class:`DeviceCsr` a CuPy sparse matrix or array (or any ``__cuda_array_interface__`` array):
                     its device arrays are used in place (only index/value dtype conversions
                     happen, on the device).

Every problem is reported as ``ValueError``/``TypeError`` with the command line's wording,
naming the argument (``A``, ``M``, ``B``...) and the offending value; row indices are 0-based.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

INT32_MAX = 2**31 - 1
SYMMETRY_TOL = 1e-12  # max |a_ij - a_ji| <= 1e-12 max |a|, as `tcsolve eigs` checks
NEEDS_SYMMETRIC = "the eigensolvers and block CG need a symmetric matrix"


def _type_name(obj):
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def is_cupy(obj):
    mod = type(obj).__module__ or ""
    return mod.split(".")[0] in ("cupy", "cupyx")


def is_device_array(obj):
    return is_cupy(obj) or (hasattr(obj, "__cuda_array_interface__") and not isinstance(obj, np.ndarray))


def _check_real_dtype(dtype, name):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise TypeError(f"{name} has complex dtype {dtype}: tcsolve's solvers are real (complex input is "
                        "not supported)")
    if dtype.kind not in "fiub":
        raise TypeError(f"{name} has dtype {dtype}: expected real numbers (float64, float32 or integers)")


def _square(shape, name):
    if len(shape) != 2:
        raise ValueError(f"{name}: expected a 2-D matrix, got shape {tuple(shape)}")
    m, n = int(shape[0]), int(shape[1])
    if m != n:
        raise ValueError(f"{name} is {m}x{n}, a square matrix is required")
    if n > INT32_MAX:
        raise ValueError(f"{name} has {n} rows: tcsolve's column indices are 32-bit (at most {INT32_MAX})")
    if n == 0:
        raise ValueError(f"{name} is empty (0x0)")
    return n


def _shape(shape, name):
    """(rows, columns) of a matrix that may be rectangular (the direct solves)."""
    if len(shape) != 2:
        raise ValueError(f"{name}: expected a 2-D matrix, got shape {tuple(shape)}")
    m, n = int(shape[0]), int(shape[1])
    if max(m, n) > INT32_MAX:
        raise ValueError(f"{name} is {m}x{n}: tcsolve's indices are 32-bit (at most {INT32_MAX} rows and columns)")
    if m == 0 or n == 0:
        raise ValueError(f"{name} is empty ({m}x{n})")
    return m, n


def _nonfinite_message(name, data, indptr, indices, xp=np):
    bad = int(xp.flatnonzero(~xp.isfinite(data))[0])
    row = int(xp.searchsorted(indptr, xp.asarray([bad]), side="right")[0]) - 1
    col = int(indices[bad])
    kind = "NaN" if bool(xp.isnan(data[bad])) else "Inf"
    return f"{name} has a non-finite value ({kind}) at row {row}, column {col}: non-finite values are refused"


class HostCsr:
    """Canonical CSR on the host (see the module docstring)."""

    kind = "csr"

    def __init__(self, n, indptr, indices, data, desc, m=None):
        self.n, self.indptr, self.indices, self.data, self.desc = n, indptr, indices, data, desc
        self.m = n if m is None else m  # rows (a rectangular one only from as_host_matrix)

    @property
    def nnz(self):
        return int(self.indptr[-1])

    def scipy(self):
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=(self.m, self.n))

    def matmat(self, x):
        """A·X on the host (SciPy's product; for the module's own small checks, not the solvers)."""
        return np.asarray(self.scipy() @ x)

    def diagonal(self):
        # (rows sorted, duplicates summed: at most one diagonal entry per row)
        rows = np.repeat(np.arange(self.m, dtype=np.int64), np.diff(self.indptr))
        on = self.indices == rows
        d = np.zeros(min(self.m, self.n))
        d[rows[on]] = self.data[on]
        return d

    def scipy_op(self):
        return aslinearoperator(self.scipy())

    def gershgorin_lower(self):
        """min_i (a_ii - sum_{j != i} |a_ij|): every eigenvalue is at least this."""
        a = self.scipy()
        d = a.diagonal()
        r = np.asarray(abs(a).sum(axis=1)).ravel()
        return float((d - (r - np.abs(d))).min())

    def check_symmetric(self, name, needs=NEEDS_SYMMETRIC):
        from . import _tcsolve
        defect = _tcsolve.csr_symmetry_defect(self.n, self.indptr, self.indices, self.data)
        if defect > SYMMETRY_TOL:
            raise ValueError(f"{name} is not symmetric (max |a_ij - a_ji| / max |a| = {defect:.3g}): {needs}")


def _has_block_product(op):
    """True when the LinearOperator has its own matmat (a matrix behind it, or one passed to
    LinearOperator(..., matmat=f)); False for one built from a matvec alone."""
    from scipy.sparse.linalg import _interface
    custom = getattr(_interface, "_CustomLinearOperator", None)
    if custom is not None and isinstance(op, custom):
        return getattr(op, "_CustomLinearOperator__matmat_impl", None) is not None
    return type(op)._matmat is not LinearOperator._matmat


class Operator:
    """A LinearOperator called back from the solver (host, float64 blocks)."""

    kind = "operator"

    def __init__(self, op, name):
        self.op, self.name = op, name
        self.n = int(op.shape[0])
        self.desc = f"{_type_name(op)} {op.shape[0]}x{op.shape[1]} (callback)"
        self.column_by_column = not _has_block_product(op)

    def _real_array(self, y):
        """The operator's output as a real NumPy array (a sparse result densified)."""
        if sp.issparse(y):
            y = y.toarray()
        y = np.asarray(y)
        if y.dtype.kind == "c":
            raise TypeError(f"{self.name}: the operator returned complex values ({y.dtype})")
        return y

    def _vector(self, v):
        y = self._real_array(self.op.matvec(v))
        if y.size != self.n:
            raise ValueError(f"{self.name}: the operator's matvec returned {y.size} values for a vector "
                             f"of length {self.n} (shape {y.shape})")
        return y.reshape(self.n)

    def matmat(self, x):
        """A·X for tcsolve's own Python code: the operator gets a copy of x, so what it does with
        its input (keep it, change it) leaves x as it was."""
        return self.matmat_owned(np.array(x, dtype=np.float64, order="F", copy=True))

    def matmat_owned(self, x):
        """A·X where x is handed over: the C++ side's call, whose x (n × k, F order) is a fresh
        array of the operator's own (python/src/py_operator.cpp). An operator built from a matvec
        alone gets 1-D columns, as SciPy's cg/eigsh call it (its default matmat would pass (n, 1)
        columns, which e.g. ``lambda x: x / d`` broadcasts to n × n)."""
        if self.column_by_column:
            return np.column_stack([self._vector(x[:, j]) for j in range(x.shape[1])])
        return self._real_array(self.op.matmat(x))

    def check_symmetric(self, name, seed=12345, needs="the eigensolvers and block CG need a symmetric operator"):
        """Two products with random vectors: |yᵀAx − xᵀAy| small relative to ‖Ax‖‖y‖ + ‖Ay‖‖x‖."""
        rng = np.random.default_rng(seed)
        xy = np.asfortranarray(rng.standard_normal((self.n, 2)))
        axy = self.matmat(xy)
        if axy.shape != (self.n, 2):
            raise ValueError(f"{name}: the operator returned an array of shape {axy.shape} for an input "
                             f"of shape ({self.n}, 2), expected ({self.n}, 2)")
        if not np.all(np.isfinite(axy)):
            raise ValueError(f"{name}: the operator returned a non-finite value (NaN or Inf) for a random input")
        x, y, ax, ay = xy[:, 0], xy[:, 1], axy[:, 0], axy[:, 1]
        scale = np.linalg.norm(ax) * np.linalg.norm(y) + np.linalg.norm(ay) * np.linalg.norm(x)
        defect = abs(y @ ax - x @ ay) / scale if scale > 0 else 0.0
        if defect > 1e-10:
            raise ValueError(f"{name} is not symmetric (|y'Ax - x'Ay| / (|Ax||y| + |Ay||x|) = {defect:.3g} "
                             f"for random x, y): {needs}")


class DeviceCsr:
    """Canonical CSR whose arrays live on the GPU (CuPy); the solver reads them in place."""

    kind = "device"

    def __init__(self, n, indptr, indices, data, desc):
        self.n, self.indptr, self.indices, self.data, self.desc = n, indptr, indices, data, desc

    @property
    def nnz(self):
        return int(self.data.size)

    def ptrs(self):
        return tuple(int(a.__cuda_array_interface__["data"][0]) for a in (self.indptr, self.indices, self.data))

    def cupy(self):
        import cupyx.scipy.sparse as csp
        return csp.csr_matrix((self.data, self.indices, self.indptr), shape=(self.n, self.n))

    def diagonal(self):
        return self.cupy().diagonal()

    def check(self):
        """One pass on the device (tcsolve's own kernel): max |a_ij|, max |a_ij - a_ji|, the
        inf-norm, the smallest diagonal entry and its row, the first non-finite entry and the
        first row that is not sorted (spmm/device_csr_view.hpp). Cached."""
        if getattr(self, "_check", None) is None:
            from . import _tcsolve
            import cupy
            cupy.cuda.get_current_stream().synchronize()
            self._check = _tcsolve.device_csr_check(self.n, self.nnz, self.ptrs())
        return self._check

    def inf_norm(self):
        return float(self.check()["inf_norm"]) if self.nnz else 0.0

    def min_diagonal(self):
        """(smallest diagonal entry, its row)."""
        c = self.check()
        return float(c["min_diag"]), int(c["min_diag_row"])

    def gershgorin_lower(self):
        import cupy
        a = self.cupy()
        d = a.diagonal()
        r = abs(a).sum(axis=1).ravel()
        return float((d - (r - cupy.abs(d))).min())

    def check_symmetric(self, name, needs=NEEDS_SYMMETRIC):
        if self.nnz == 0:
            return
        c = self.check()
        amax = float(c["max_abs"])
        if amax == 0.0:
            return
        defect = float(c["symmetry_defect"]) / amax
        if defect > SYMMETRY_TOL:
            raise ValueError(f"{name} is not symmetric (max |a_ij - a_ji| / max |a| = {defect:.3g}): {needs}")


def _first_bad(mask):
    return int(np.flatnonzero(mask)[0])


def _check_sparse_structure(a, name):
    """The index arrays of a scipy.sparse matrix, checked in NumPy before any SciPy C routine reads
    them (``has_canonical_format``, ``tocsr``, ``sum_duplicates`` index memory through them: a
    corrupted ``indptr`` or ``indices`` crashes the interpreter there). The caller's arrays are only
    read. Raises ValueError naming the array, the position and the value."""
    fmt = a.format
    what = f"{name} (scipy.sparse {type(a).__name__})"
    if fmt in ("csr", "csc", "bsr"):
        if fmt == "bsr":
            r, c = a.blocksize
            major, minor = a.shape[0] // r, a.shape[1] // c
        else:
            major, minor = (a.shape[0], a.shape[1]) if fmt == "csr" else (a.shape[1], a.shape[0])
        indptr, indices = np.asarray(a.indptr), np.asarray(a.indices)
        if indptr.ndim != 1 or indices.ndim != 1:
            raise ValueError(f"{what}: indptr and indices must be 1-D arrays")
        if indptr.size != major + 1:
            raise ValueError(f"{what}: indptr has {indptr.size} entries, expected {major + 1}")
        if indptr[0] != 0:
            raise ValueError(f"{what}: indptr[0] = {int(indptr[0])}, expected 0")
        step = np.diff(indptr)
        if step.size and (step < 0).any():
            i = _first_bad(step < 0) + 1
            raise ValueError(f"{what}: indptr[{i}] = {int(indptr[i])} is less than indptr[{i - 1}] = "
                             f"{int(indptr[i - 1])} (indptr must not decrease)")
        nnz = int(indptr[-1])
        stored = min(indices.size, np.asarray(a.data).shape[0])
        if nnz > stored:
            i = _first_bad(indptr > stored)
            raise ValueError(f"{what}: indptr[{i}] = {int(indptr[i])} exceeds the {stored} stored entries")
        idx = indices[:nnz]
        if idx.size and ((idx < 0) | (idx >= minor)).any():
            i = _first_bad((idx < 0) | (idx >= minor))
            raise ValueError(f"{what}: indices[{i}] = {int(idx[i])} is out of range [0, {minor})")
    elif fmt == "coo":
        row, col = np.asarray(a.row if hasattr(a, "row") else a.coords[0]), np.asarray(
            a.col if hasattr(a, "col") else a.coords[1])
        nd = np.asarray(a.data).shape[0]
        if row.shape != (nd,) or col.shape != (nd,):
            raise ValueError(f"{what}: row, col and data have different lengths "
                             f"({row.size}, {col.size}, {nd})")
        for arr, label, bound in ((row, "row", a.shape[0]), (col, "col", a.shape[1])):
            bad = (arr < 0) | (arr >= bound)
            if arr.size and bad.any():
                i = _first_bad(bad)
                raise ValueError(f"{what}: {label}[{i}] = {int(arr[i])} is out of range [0, {bound})")


def _host_csr(a, name, square=True):
    """scipy.sparse (any format) -> HostCsr (m x n when not square)."""
    _check_real_dtype(a.dtype, name)
    m, n = (_square(a.shape, name),) * 2 if square else _shape(a.shape, name)
    _check_sparse_structure(a, name)
    if a.format == "csr" and a.has_canonical_format:
        c = a
    else:
        c = a.tocsr(copy=True)
        c.sum_duplicates()  # sorts the indices and sums duplicates (in our copy)
    data = np.ascontiguousarray(c.data, dtype=np.float64)
    indptr = np.ascontiguousarray(c.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(c.indices, dtype=np.int32)  # n < 2^31 was checked
    if data.size and not np.all(np.isfinite(data)):
        raise ValueError(_nonfinite_message(name, data, indptr, indices))
    desc = f"scipy.sparse {type(a).__name__} {m}x{n} {a.dtype} ({c.nnz} non-zeros)"
    return HostCsr(n, indptr, indices, data, desc, m=m)


def _device_csr(a, name):
    """CuPy sparse or dense (or any __cuda_array_interface__ array) -> DeviceCsr (no host copy)."""
    import cupy
    import cupyx.scipy.sparse as csp
    desc_type = _type_name(a)
    if csp.issparse(a):
        _check_real_dtype(a.dtype, name)
        _square(a.shape, name)
        c = a.tocsr()
    else:
        d = cupy.asarray(a)  # zero-copy view of a __cuda_array_interface__ array
        _check_real_dtype(d.dtype, name)
        _square(d.shape, name)
        if d.dtype.kind != "f":
            d = d.astype(cupy.float64)
        c = csp.csr_matrix(d)
    # The common case (float64 data, int32 indices, sorted rows without duplicates, finite values)
    # is checked and converted by tcsolve's own kernels (one pass, _tcsolve.device_csr_check): no
    # CuPy kernel, so nothing for CuPy to compile at a first call (8 s on a fresh machine).
    # Anything else goes through CuPy (sum_duplicates on a copy: the caller's matrix is kept).
    out = _device_arrays(c, name, desc_type)
    if out.check()["unsorted_row"] >= 0:
        c = c.copy()
        c.sum_duplicates()  # sorts the rows and sums duplicates
        out = _device_arrays(c, name, desc_type)
    bad = out.check()["nonfinite_at"]
    if bad >= 0:
        raise ValueError(_nonfinite_message(name, out.data, out.indptr, out.indices, xp=cupy))
    return out


def _device_arrays(c, name, desc_type):
    import cupy
    from . import _tcsolve
    n = int(c.shape[0])
    data = cupy.ascontiguousarray(c.data, dtype=cupy.float64)
    indices = cupy.ascontiguousarray(c.indices, dtype=cupy.int32)
    if c.indptr.dtype == cupy.int32 and c.indptr.flags.c_contiguous:
        indptr = cupy.empty(n + 1, dtype=cupy.int64)
        cupy.cuda.get_current_stream().synchronize()
        _tcsolve.device_widen_int32(int(c.indptr.data.ptr), int(indptr.data.ptr), n + 1)
    else:
        indptr = cupy.ascontiguousarray(c.indptr, dtype=cupy.int64)
    return DeviceCsr(n, indptr, indices, data, f"{desc_type} {n}x{n} {c.dtype} ({int(data.size)} non-zeros, GPU)")


def _dense_host(a, name, square, expected):
    """A dense NumPy matrix (or nested lists) -> HostCsr, checked (2-D, real, finite)."""
    arr = np.asarray(a)
    if arr.dtype == object:
        raise TypeError(f"{name}: expected {expected}, got {_type_name(a)} of objects")
    _check_real_dtype(arr.dtype, name)
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D matrix, got shape {arr.shape}")
    if square:
        _square(arr.shape, name)
    if arr.size and not np.all(np.isfinite(arr)):
        i, j = np.argwhere(~np.isfinite(arr))[0]
        kind = "NaN" if np.isnan(arr[i, j]) else "Inf"
        raise ValueError(f"{name} has a non-finite value ({kind}) at row {i}, column {j}: "
                         "non-finite values are refused")
    # CSR by NumPy (rows in order, no duplicates): SciPy's constructor and its format checks
    # cost 3 ms a call, more than a small solve.
    mask = arr != 0
    indptr = np.zeros(arr.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(mask, axis=1), out=indptr[1:])
    indices = np.ascontiguousarray(np.nonzero(mask)[1], dtype=np.int32)
    data = np.ascontiguousarray(arr[mask], dtype=np.float64)
    m, n = arr.shape
    return HostCsr(n, indptr, indices, data, f"numpy.ndarray {m}x{n} {arr.dtype} (dense)", m=m)


def as_matrix(a, name):
    """Classifies and converts one matrix argument (see the module docstring)."""
    if a is None:
        raise TypeError(f"{name}: expected a matrix, got None")
    if sp.issparse(a):
        return _host_csr(a, name)
    if is_device_array(a):
        return _device_csr(a, name)
    if isinstance(a, LinearOperator):
        _check_real_dtype(a.dtype if a.dtype is not None else np.float64, name)
        _square(a.shape, name)
        return Operator(a, name)
    if isinstance(a, (np.ndarray, list, tuple)):
        return _dense_host(a, name, True, "a scipy.sparse matrix, a NumPy array, a LinearOperator or a CuPy array")
    if hasattr(a, "shape") and (hasattr(a, "matvec") or hasattr(a, "matmat")):
        op = aslinearoperator(a)
        _square(op.shape, name)
        return Operator(op, name)
    raise TypeError(f"{name}: expected a scipy.sparse matrix, a NumPy array, a LinearOperator or a "
                    f"CuPy array, got {_type_name(a)}")


def as_host_matrix(a, name, square=False):
    """A matrix whose entries a host solver needs (the direct solves): scipy.sparse, a dense NumPy
    array, or CuPy (copied to the host: the direct engines run there) -> HostCsr, m x n unless
    square. A LinearOperator has no entries to factor: TypeError."""
    if a is None:
        raise TypeError(f"{name}: expected a matrix, got None")
    if is_device_array(a):
        import cupy
        import cupyx.scipy.sparse as csp
        a = a.get() if csp.issparse(a) else cupy.asnumpy(a)
    if sp.issparse(a):
        return _host_csr(a, name, square)
    if isinstance(a, LinearOperator) or (hasattr(a, "shape") and hasattr(a, "matvec")):
        raise TypeError(f"{name} is a {_type_name(a)}: a direct solve needs the entries of {name} (a sparse "
                        "or dense matrix); for an operator use tcsolve.gmres / minres / cg or "
                        "scipy.sparse.linalg.lsqr")
    if isinstance(a, (np.ndarray, list, tuple)):
        return _dense_host(a, name, square, "a scipy.sparse matrix, a NumPy array or a CuPy array")
    raise TypeError(f"{name}: expected a scipy.sparse matrix, a NumPy array or a CuPy array, got {_type_name(a)}")


def preconditioner(M, n, names, default):
    """(tcsolve's preconditioner name, operator or None) for a solver's M: one of `names`, None
    (`default`), or a matrix / LinearOperator of A's size (a host matrix as an Operator)."""
    if isinstance(M, str):
        if M not in names:
            raise ValueError(f"M={M!r}: expected " + ", ".join(names[:-1]) + " or " + names[-1])
        return M, None
    if M is None:
        return "auto", None
    op = as_matrix(M, "M")
    if op.n != n:
        raise ValueError(f"preconditioner M is {op.n} x {op.n} but A is {n} x {n}")
    if op.kind == "csr":
        op = Operator(op.scipy_op(), "M")
    return default, op


def column_norms(block):
    """Column 2-norms of an F-ordered float64 (n, s) block as a NumPy array (NaN/Inf where a column
    holds one); CuPy blocks by tcsolve's own device pass."""
    if is_device_array(block):
        import cupy
        from . import _tcsolve
        cupy.cuda.get_current_stream().synchronize()
        return _tcsolve.device_column_norms(int(block.data.ptr), block.shape[0], block.shape[1])
    return np.linalg.norm(block, axis=0)


def as_block(b, n, name, matrix_name="A", device=False, with_norms=False):
    """Right-hand sides / start vectors: (n,) or (n, s) -> (F-ordered float64 (n, s), was_1d), and
    with_norms its column 2-norms (a host array) from the same pass as the finiteness check."""
    if device:
        import cupy
        arr = cupy.asarray(b)
        xp = cupy
    else:
        if is_device_array(b):
            raise TypeError(f"{name} is a GPU array but {matrix_name} is on the host: pass both as CuPy "
                            "arrays, or both as NumPy/SciPy")
        arr = np.asarray(b.toarray() if sp.issparse(b) else b)
        xp = np
        if arr.dtype == object:
            raise TypeError(f"{name}: expected a NumPy array, got {_type_name(b)}")
    _check_real_dtype(arr.dtype, name)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name}: expected shape ({n},) or ({n}, s), got {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but {matrix_name} has {n} rows "
                         f"(expected shape ({n},) or ({n}, s))")
    one_d = arr.ndim == 1
    arr2 = arr.reshape(n, 1) if one_d else arr
    if arr2.shape[1] == 0:
        raise ValueError(f"{name} has no columns")
    if device and arr2.dtype == xp.float64 and not arr2.flags.f_contiguous and arr2.size:
        # C-ordered (or strided) float64: copied column-major by tcsolve's kernel (no CuPy kernel)
        from . import _tcsolve
        out = xp.empty(arr2.shape, dtype=xp.float64, order="F")
        xp.cuda.get_current_stream().synchronize()
        _tcsolve.device_to_column_major(int(arr2.data.ptr), arr2.strides[0] // 8, arr2.strides[1] // 8,
                                        arr2.shape[0], arr2.shape[1], int(out.data.ptr))
    else:
        out = xp.asfortranarray(arr2, dtype=xp.float64)
    # (a norm overflows past 1e154: only then is every entry looked at)
    norms = column_norms(out)
    if not np.all(np.isfinite(norms)) and not bool(xp.isfinite(out).all()):
        i, j = (int(v) for v in xp.argwhere(~xp.isfinite(out))[0])
        kind = "NaN" if bool(xp.isnan(out[i, j])) else "Inf"
        where = f"row {i}" if one_d else f"row {i}, column {j}"
        raise ValueError(f"{name} has a non-finite value ({kind}) at {where}: non-finite values are refused")
    return (out, one_d, norms) if with_norms else (out, one_d)
