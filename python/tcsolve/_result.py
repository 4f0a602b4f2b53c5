"""The result object of ``return_info=True`` and the non-convergence exception."""

import os

import numpy as np
from scipy.sparse.linalg import ArpackNoConvergence

from . import _tcsolve


class Lazy:
    """A field computed on first access (e.g. ``matrix_checksum``: a pass over the arrays that
    only a saved result needs)."""

    def __init__(self, fn):
        self.fn = fn


class History:
    """Per-iteration record: ``iteration``, ``residual_norms`` (iterations × block columns, NaN
    padded, as the solver estimates them), ``converged``, ``active``, ``apply_seconds``,
    ``dense_seconds`` (and ``ortho``, the orthonormalization branch taken)."""

    def __init__(self, d):
        for k, v in d.items():
            setattr(self, k, np.asarray(v) if k != "ortho" else list(v))

    def __len__(self):
        return len(self.iteration)

    def __repr__(self):
        return f"History({len(self)} iterations)"


class Result:
    """What a solve returned, with the fields of tcsolve's HDF5 result files.

    eigs (``task == 'eigs'``): ``eigenvalues`` (k), ``eigenvectors`` (n × k: column j belongs to
    eigenvalue j, as SciPy returns them; the HDF5 file stores the transpose, one row per vector),
    ``residual_norms`` (true ‖A·x − λ·B·x‖, recomputed after the iteration), ``residual_bounds``
    (what each pair had to pass), ``error_bounds``, ``k``, ``which``, ``a_norm``, ``b_norm``, and
    what the eigs() driver reports: ``convergence_test``, ``transform`` ('none' or
    'shift-invert'), ``sigma``, ``method_reason`` (the plan, its predicted seconds and the best
    rejected plan), ``predicted_seconds``, ``verification`` ('certificate', 'recheck', 'dense' or
    'none'; svds also 'block'), ``certified``/``certificate`` (what verified the set), ``factorization``,
    ``time_plan``, ``time_setup``, ``time_verify``.
    solve (``task == 'solve'``): ``solution`` (n × s), ``residual_norms`` (true ‖b − A·x‖/‖b‖
    per column), ``backward_errors`` (‖b − A·x‖/(‖A‖_F‖x‖ + ‖b‖) per column; None for a
    LinearOperator), ``optimality`` (least squares: ‖Aᵀr‖/(‖A‖_F‖r‖)), ``matrix_kind``,
    ``method_reason``, ``column_iterations``, ``right_hand_sides``.
    Both: ``status`` ('converged', 'unverified', 'not_converged', 'breakdown'), ``reason``,
    ``method``, ``iterations``, ``operator_applies``, ``history`` (:class:`History`),
    ``tolerance``, ``max_iterations``, ``precision``, ``preconditioner``, ``backend``,
    ``device``, ``spmm_kernel``, ``matrix`` (a description of A), ``matrix_checksum`` (the same
    FNV-1a checksum the command writes), ``rows``, ``nnz``, ``seed``, ``time_read`` (0: nothing is
    read), ``time_preprocess`` (input checks and conversion: the call's seconds beyond the other
    phases, which are disjoint), ``time_setup``, ``time_solve``,
    ``time_write`` (0), ``tcsolve_version``, ``command`` (the Python call), ``job`` (''),
    ``job_options`` (the Python call), ``input_stamps`` ('': the inputs are in memory).
    ``save(path)`` writes the same HDF5 file as ``tcsolve eigs|solve --out``.
    """

    def __init__(self, fields):
        lazy = {}
        for k, v in fields.items():
            if isinstance(v, Lazy):
                lazy[k] = v
            else:
                setattr(self, k, History(v) if k == "history" else v)
        object.__setattr__(self, "_lazy", lazy)

    def __getattr__(self, name):  # only for attributes not set: the lazy ones
        lazy = self.__dict__.get("_lazy", {})
        if name in lazy:
            value = lazy.pop(name).fn()
            setattr(self, name, value)
            return value
        raise AttributeError(f"Result has no field {name!r}")

    @property
    def converged(self):
        return self.status in ("converged", "unverified")

    def keys(self):
        return [k for k in vars(self) if k != "_lazy"] + list(self._lazy)

    def __repr__(self):
        res = getattr(self, "residual_norms", None)
        worst = f", max residual {float(np.max(res)):.3g}" if res is not None and len(res) else ""
        return (f"Result(task={self.task!r}, status={self.status!r}, method={self.method!r}, "
                f"iterations={self.iterations}{worst}, time_solve={self.time_solve:.3g} s)")

    def save(self, path):
        """Writes the result as tcsolve's command line does, atomically: the command's writer
        (write_result, docs/hdf5-schema.md) with this Result's fields as the values."""
        fields, history = self._file_fields()
        _tcsolve.write_result_file(os.fspath(path), self.task, fields, history)

    def _file_fields(self):
        """The fields under the file's names, and the history group's arrays."""
        fields = {k: getattr(self, k) for k in self.keys() if k != "history"}
        h = getattr(self, "history", None)
        return fields, ({} if h is None else dict(vars(h)))


class NoConvergence(ArpackNoConvergence):
    """Raised by :func:`tcsolve.eigsh`, :func:`tcsolve.svds` and :func:`tcsolve.pca` when not every
    requested pair converged (status ``not_converged`` or ``breakdown``). A subclass of SciPy's
    ``ArpackNoConvergence``, so ``except ArpackNoConvergence`` keeps working; carries the partial
    result: ``eigenvalues``, ``eigenvectors`` (the best approximations, as SciPy's does) and
    ``info`` (the whole :class:`Result`, with ``residual_norms`` saying which pairs passed)."""

    def __init__(self, msg, eigenvalues, eigenvectors, info):
        super().__init__(msg, eigenvalues, eigenvectors)
        self.info = info
        self.msg = msg

    def __str__(self):  # without ArpackError's "ARPACK error -1:" prefix: this is not ARPACK
        return self.msg
