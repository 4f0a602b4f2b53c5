"""Run by examples/run_consumer.cmake with PYTHONPATH = the install prefix's package folder:
the installed package (not the build tree's) imports and solves a small problem."""
import os
import sys

import numpy as np
import scipy.sparse as sp

import tcsolve

prefix = sys.argv[1]
assert os.path.realpath(tcsolve.__file__).startswith(os.path.realpath(prefix)), \
    f"imported {tcsolve.__file__}, not the package under {prefix}"
A = sp.diags([np.arange(1.0, 51.0)], [0], format="csr")
w = tcsolve.eigsh(A, k=3, which="LA", return_eigenvectors=False)
x, info = tcsolve.cg(A, np.ones(50), rtol=1e-12)
print(f"tcsolve {tcsolve.__version__} from {tcsolve.__file__}: eigsh {w}, cg info {info}")
assert np.allclose(w, [48, 49, 50], rtol=0, atol=1e-10), w
assert info == 0 and np.allclose(x, 1 / np.arange(1.0, 51.0), rtol=1e-10)
