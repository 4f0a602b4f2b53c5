"""CuPy input of svds / pca: A (m × n, any CuPy sparse matrix or dense array, or a
__cuda_array_interface__ array) as canonical device CSR, and Aᵀ as a second device CSR built by
CuPy (the solver reads both in place: one product with each per block step, no atomics). Nothing
is copied to the host except the n column means of a centered run; the caller's arrays are
left as they are (conversions work on copies)."""

from . import _inputs


class DeviceRect:
    """Canonical CSR of A and of Aᵀ on the GPU (CuPy matrices for the package's own products, and
    their arrays with int64 indptr, which CuPy's matrices keep as int32, for the solver)."""

    kind = "device"

    def __init__(self, c, ct, desc):
        import cupy
        self.m, self.n = (int(d) for d in c.shape)
        self.c, self.ct, self.desc = c, ct, desc
        self._arrays = [(cupy.ascontiguousarray(x.indptr, dtype=cupy.int64),
                         cupy.ascontiguousarray(x.indices, dtype=cupy.int32),
                         cupy.ascontiguousarray(x.data, dtype=cupy.float64)) for x in (c, ct)]

    @property
    def nnz(self):
        return int(self.c.data.size)

    def _ptrs(self, which):
        return tuple(int(x.__cuda_array_interface__["data"][0]) for x in self._arrays[which])

    def ptrs(self):
        return self._ptrs(0)

    def ptrs_t(self):
        return self._ptrs(1)

    def matmat(self, x):
        """A·x for a host block (the package's own small products: v0, the dense check)."""
        import cupy
        return cupy.asnumpy(self.c @ cupy.asarray(x))

    def rmatmat(self, y):
        import cupy
        return cupy.asnumpy(self.ct @ cupy.asarray(y))

    def means(self):
        """The column means μ = Aᵀ·1/m, as a host array (n values)."""
        import cupy
        counts = cupy.ones(self.m, dtype=cupy.float64)
        return cupy.asnumpy(self.ct @ counts) / self.m

    def centered_sq(self, mu):
        """‖A − 1·μᵀ‖_F² = Σ_stored (a_ij − μ_j)² + Σ_j (m − nnz_j)·μ_j², on the device (without the
        cancellation of ‖A‖_F² − m·‖μ‖²)."""
        import cupy
        mu_d = cupy.asarray(mu)
        stored = float(cupy.sum((self.c.data - mu_d[self.c.indices]) ** 2))
        nnz_j = cupy.diff(self.ct.indptr).astype(cupy.float64)
        return stored + float(cupy.sum((self.m - nnz_j) * mu_d * mu_d))

    def frobenius_sq(self):
        import cupy
        return float(cupy.sum(self.c.data * self.c.data))


def _canonical(c):
    """A CSR copy with float64 data, sorted rows, duplicates summed (the caller's matrix is kept)."""
    import cupy
    import cupyx.scipy.sparse as csp
    c = csp.csr_matrix(c, dtype=cupy.float64, copy=True)
    c.sum_duplicates()  # sorts each row's indices, sums duplicates
    return c


def device_rect(a):
    """A CuPy matrix -> DeviceRect (checked: 2-D, real, not empty, finite; at most 2**31 - 1 columns)."""
    import cupy
    import cupyx.scipy.sparse as csp
    desc_type = f"{type(a).__module__}.{type(a).__qualname__}"
    if csp.issparse(a):
        _inputs._check_real_dtype(a.dtype, "A")
        m, n = _inputs._shape(a.shape, "A")
        c = a.tocsr()
    else:
        d = cupy.asarray(a)
        _inputs._check_real_dtype(d.dtype, "A")
        if d.ndim != 2:
            raise ValueError(f"A has shape {d.shape}: a 2-D matrix is required")
        m, n = _inputs._shape(d.shape, "A")
        c = csp.csr_matrix(d.astype(cupy.float64))
    c = _canonical(c)
    if c.data.size and not bool(cupy.isfinite(c.data).all()):
        raise ValueError(_inputs._nonfinite_message("A", c.data, c.indptr, c.indices, xp=cupy))
    ct = _canonical(c.T.tocsr())
    desc = f"{desc_type} {m}x{n} {a.dtype} ({int(c.data.size)} non-zeros, GPU)"
    return DeviceRect(c, ct, desc)

