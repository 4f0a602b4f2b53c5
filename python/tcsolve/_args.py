"""Argument checks shared by eigsh, lobpcg and cg (messages as the command line's, naming the
argument and the value: ``maxiter=0: must be at least 1``), and the small helpers around them.

Every integer that reaches the C++ side is checked here against what it can hold (int64, the
seed uint64), so that pybind11's "Unable to cast Python instance to C++ type" never reaches a
caller: wrong kinds raise TypeError, values out of range ValueError."""

import math
import numbers

import numpy as np

from . import _tcsolve

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp64", "fp32", "fp16", "bf16")
METHODS = tuple(_tcsolve.eigs_method_names())  # the C++ driver's list (solvers/eigs/eigs.hpp)
CONV_TESTS = ("rel", "norm", "abs")
DEFAULT_TOL = 1e-8  # tcsolve's default convergence tolerance (solvers/eigs/eigs.hpp, block_cg.hpp)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def built_with_cuda():
    """True when this build has the CUDA backend."""
    return bool(_tcsolve.built_with_cuda())


def choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        expected = ", ".join(choices[:-1]) + " or " + choices[-1]
        raise ValueError(f"{name}={value!r}: expected {expected}")
    return value


def integer(value, name, minimum, maximum=INT64_MAX):
    """An int (Python or NumPy, not bool) in [minimum, maximum]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}={value!r}: expected an integer")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name}={v}: must be at least {minimum}")
    if v > maximum:
        raise ValueError(f"{name}={v}: must be at most {maximum}")
    return v


def seed(value):
    """tcsolve's random seed: an integer in [0, 2**64) (the C++ side's uint64)."""
    return integer(value, "seed", 0, UINT64_MAX)


def number(value, name, finite=True):
    """A real number (int, float, NumPy scalar or 0-d array; not bool, not complex) as float."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.iscomplexobj(value):
        raise TypeError(f"{name}={value!r}: expected a real number")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{name}={value!r}: expected a real number") from None
    if finite and not math.isfinite(v):
        raise ValueError(f"{name}={value!r}: expected a finite number")
    if math.isnan(v):
        raise ValueError(f"{name}={value!r}: expected a number, not NaN")
    return v


def tol(value, name):
    """A tolerance in (0, 1)."""
    t = number(value, name, finite=False)
    if not (0 < t < 1):
        raise ValueError(f"{name}={value!r}: expected 0 < {name} < 1")
    return t


def not_supported(**kw):
    for k, v in kw.items():
        if v is not None:
            raise NotImplementedError(f"{k} is not supported by tcsolve (use scipy.sparse.linalg for it)")


def backend(device, kind, precision):
    """'cpu' or 'cuda' for this input; checks the combinations the solvers cannot run."""
    choice(device, "device", DEVICES)
    choice(precision, "precision", PRECISIONS)
    if kind == "device":
        if device == "cpu":
            raise ValueError("device='cpu' with CuPy input: the arrays live on the GPU (pass NumPy/SciPy "
                             "input for the CPU)")
        if not built_with_cuda():
            raise NotImplementedError("CuPy input needs the CUDA backend: tcsolve was built without CUDA")
        return "cuda"
    if kind == "operator":
        if device == "cuda":
            raise ValueError("a LinearOperator runs on the CPU backend (device='cpu'): its matvec is "
                             "Python code on host arrays")
        chosen = "cpu"
    else:
        chosen = _tcsolve.resolve_device(device)
    if chosen == "cpu" and precision in ("fp16", "bf16"):
        raise ValueError(f"precision={precision!r} needs the GPU (the CPU operator stores fp64 or fp32)")
    return chosen


def call_repr(fname, **kw):
    parts = [f"{k}={v!r}" for k, v in kw.items() if v is not None]
    return f"tcsolve.{fname}(A, " + ", ".join(parts) + ")"


def xp(kind):
    if kind == "device":
        import cupy
        return cupy
    return np


def sync_cupy():
    import cupy
    cupy.cuda.get_current_stream().synchronize()
