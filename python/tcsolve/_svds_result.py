"""The Result of tcsolve.svds / tcsolve.pca (return_info=True): the fields of ``tcsolve svds --out``
(docs/hdf5-schema.md, section 6), and ``save`` writing that file."""

import numpy as np

from ._result import Result

# Attributes of the svds result file, in the command's names.
_ATTRS = ("task", "status", "reason", "method", "matrix", "command", "backend", "k", "rows", "cols", "nnz",
          "iterations", "operator_applies", "seed", "tolerance", "a_norm", "total_sq", "time_read", "time_setup",
          "time_solve", "time_verify", "device", "max_iterations", "tcsolve_version", "time_preprocess", "job",
          "job_options", "input_stamps")


# The svds file's datasets that Result holds under SciPy's names and order (s, U, Vt) or computes
# when saving (scores, the explained variance).
_FILE_ONLY = ("s", "U", "Vt", "scores", "explained_variance", "explained_variance_ratio")


def order_result(res):
    """The result dict under the svds file's names (the C++ one, python/src/results.cpp, or the
    dense path's: ``s`` descending, ``U`` m × k, ``Vt`` k × n) as Result fields in SciPy's order:
    ``singular_values`` ascending, ``u`` (m × k), ``vt`` (k × n), ``residual_av``, ``residual_atu``
    (and the history's estimates) permuted alike."""
    vals = np.asarray(res["s"], dtype=float)
    idx = np.argsort(vals, kind="stable")
    out = {key: val for key, val in res.items() if key not in _FILE_ONLY}
    out["task"] = "svds"
    out["singular_values"] = vals[idx]
    out["u"] = np.asfortranarray(np.asarray(res["U"])[:, idx])
    out["vt"] = np.ascontiguousarray(np.asarray(res["Vt"])[idx])
    for key in ("residual_av", "residual_atu"):
        out[key] = np.asarray(res[key], dtype=float)[idx]
    h = dict(res["history"])
    est = np.asarray(h["residual_estimates"], dtype=float)
    if est.ndim == 2 and est.shape[1] == vals.size:
        h["residual_estimates"] = est[:, idx]
    out["history"] = h
    out.setdefault("method_reason", "")
    out.setdefault("verification", "none")
    out.setdefault("time_read", 0.0)
    out.setdefault("time_write", 0.0)
    return out


class SvdsResult(Result):
    """What svds / pca computed: ``singular_values`` (ascending, as svds returns them), ``u``
    (m × k), ``vt`` (k × n), ``residual_av`` and ``residual_atu`` (true ‖A·v_j − s_j·u_j‖₂ and
    ‖Aᵀ·u_j − s_j·v_j‖₂, recomputed after the iteration; of the centered matrix for a centered
    pca), ``a_norm`` (s₁, the scale of the test), ``tolerance`` (each triplet passed
    residual ≤ tolerance·a_norm when ``status`` is 'converged'), ``status`` ('converged',
    'not_converged', 'interrupted'), ``reason``, ``method`` ('block GKL (b = …, L = …, keep …)' or
    a dense SVD), ``method_reason`` (the planner's prices, or why), ``verification`` (what showed
    that no value above s_k is missing: 'certificate', 'recheck', 'block', 'dense' or 'none'),
    ``certified``/``certificate`` (the count and the re-check: what ran and what it found),
    ``iterations`` (restarts), ``operator_applies`` (columns
    multiplied by A or Aᵀ), ``history`` (``iteration``, ``converged``, ``residual_estimates``:
    restarts × k), ``seed``, ``backend``, ``device``, ``matrix``, ``rows``, ``cols``, ``nnz``,
    ``command``, ``time_setup``, ``time_solve``, ``time_verify``, ``time_preprocess``; a centered
    run adds ``means`` (n) and ``total_sq`` (‖A − 1·μᵀ‖_F²).
    ``save(path)`` writes the HDF5 file of ``tcsolve svds --out`` (largest first there)."""

    def __repr__(self):
        res = max(np.max(self.residual_av, initial=0.0), np.max(self.residual_atu, initial=0.0))
        return (f"SvdsResult(status={self.status!r}, method={self.method!r}, iterations={self.iterations}, "
                f"max residual/s1 {res / self.a_norm if self.a_norm else res:.3g}, "
                f"time_solve={self.time_solve:.3g} s)")

    def _file_fields(self):  # (save() is Result's: the command's writer with these values)
        """The fields under the svds file's names (section 6), largest first as the file holds them."""
        fields, history = super()._file_fields()
        rev = slice(None, None, -1)
        s = np.asarray(self.singular_values)[rev]
        u = np.asarray(self.u)[:, rev]
        fields.update({"s": s, "U": u, "Vt": np.asarray(self.vt)[rev],
                       "residual_av": np.asarray(self.residual_av)[rev],
                       "residual_atu": np.asarray(self.residual_atu)[rev]})
        centered = bool(getattr(self, "centered", False))
        fields["centered"] = "yes" if centered else "no"
        if centered:
            fields["scores"] = u * s
            fields["explained_variance"] = s * s / max(self.rows - 1, 1)
            fields["explained_variance_ratio"] = s * s / self.total_sq if self.total_sq > 0 else np.zeros_like(s)
        if len(self.history):
            history["residual_estimates"] = np.asarray(self.history.residual_estimates)[:, rev]
        else:
            history = {}  # (no history group: the dense path's)
        return fields, history
