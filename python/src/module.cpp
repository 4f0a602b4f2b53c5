// tcsolve._tcsolve: the C++ side of the Python package (python/tcsolve/). Thin on purpose: the
// package checks and converts every input (scipy.sparse, NumPy, LinearOperator, CuPy) and maps
// SciPy's parameter names; this extension turns the converted arrays into Csr / operators, runs
// the solver with the GIL released, and returns plain dicts of NumPy arrays and scalars. Its
// files: bindings.hpp lists them; the entries are in eigs_bindings.cpp (eigs_csr, eigs_operator,
// eigs_device), solve_bindings.cpp (cg_csr, cg_operator, cg_device), krylov_bindings.cpp (MINRES
// and GMRES), direct_bindings.cpp (the direct solves), svd_bindings.cpp (svds), device_bindings.cpp
// (the CuPy helpers) and below (the small helpers of the package).
//
// Errors: tcsolve::InvalidArgument / InputError -> ValueError, NotCompiled -> NotImplementedError,
// OutOfDeviceMemory -> MemoryError, OutputError -> OSError, Interrupted -> KeyboardInterrupt, other
// tcsolve::Error -> RuntimeError; a
// Python exception raised inside a callback (operator, Ctrl-C) propagates unchanged, with its
// traceback. Ctrl-C: interrupt_bridge.cpp.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "core/device.hpp"
#include "core/interrupt.hpp"
#include "python/src/bindings.hpp"
#include "solvers/chebyshev_precond.hpp"

namespace py = pybind11;
using namespace tcsolve;
using namespace tcsolve::pyext;

namespace {

// ValueError for bad input, as the command line's exit status 2; NotImplementedError for a
// feature this build lacks; MemoryError when the GPU is too small; RuntimeError otherwise.
void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Interrupted& e) {
    // A phase stopped on Ctrl-C before it had anything to return (the ordering, the
    // factorization, the shift-invert solves): KeyboardInterrupt, with the phase. The SIGINT is
    // pending in the interpreter too (interrupt_bridge.cpp passed it on): run its handler now, so
    // that it does not raise a second KeyboardInterrupt in the caller's except clause; a custom
    // handler's own exception is kept as it raised it.
    if (PyErr_CheckSignals() == 0 || PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  } catch (const InvalidArgument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const InputError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const NotCompiled& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const OutOfDeviceMemory& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const OutputError& e) {
    PyErr_SetString(PyExc_OSError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

void define_helpers(py::module_& m) {
  m.def("auto_precond_refusal",
        [](bool gpu, std::int64_t n, std::int64_t nnz, bool diagonal_varies) -> py::object {
          AutoPrecondFacts f;
          f.gpu = gpu, f.n = n, f.nnz = nnz, f.diagonal_varies = diagonal_varies;
          const char* why = auto_precond_refusal(f);
          return why ? py::object(py::str(why)) : py::object(py::none());
        },
        "Why cg(M='auto') takes Jacobi (None: the Chebyshev polynomial): solve --precond auto's rule.");
  // The results' matrix_checksum (core/csr.hpp), computed when a Result asks for it.
  m.def("csr_checksum", [](std::int64_t n, const I64Array& indptr, const I32Array& indices,
                           const D1Array& data) {
    Csr<double> a = csr_from_arrays(n, indptr, indices, data);
    py::gil_scoped_release release;
    return csr_checksum(a);
  });
  // max |a_ij − a_ji| / max |a| of host CSR arrays (multithreaded, without the GIL).
  m.def("csr_symmetry_defect", [](std::int64_t n, const I64Array& indptr, const I32Array& indices,
                                  const D1Array& data) {
    Csr<double> a = csr_from_arrays(n, indptr, indices, data);
    py::gil_scoped_release release;
    return csr_symmetry_defect(a);
  });
  // Registered with atexit by the package: an interrupted call's engine work (run_interruptible
  // leaves it running) ends before the interpreter and the BLAS library shut down; exiting under
  // it hung in OpenBLAS's thread shutdown or crashed (4 hangs, 1 SIGSEGV in 22 runs, 2026-11-28).
  m.def("_wait_for_abandoned_workers", [] {
    py::gil_scoped_release release;
    wait_for_abandoned_workers();
  });
  m.def("eigs_method_names", &eigs_method_names);
  m.def("eigs_precond_names", &eigs_precond_names);
  m.def("resolve_device", [](const std::string& d) { return std::string(to_string(resolve_backend(d))); });
}

}  // namespace

PYBIND11_MODULE(_tcsolve, m) {
  m.doc() = "tcsolve C++ core (use the `tcsolve` package, not this module)";
  py::register_exception_translator(&translate);
  define_eigs(m);
  define_solve(m);
  define_krylov(m);
  define_direct(m);
  define_svd(m);
  define_device(m);
  define_result_file(m);
  define_interrupt(m);
  define_helpers(m);
  m.attr("__version__") = TCSOLVE_VERSION;
}
