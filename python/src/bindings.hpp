// The pieces of the tcsolve._tcsolve extension (python/src/) that its files share:
//   module.cpp           the module: the functions it defines, the exception translation
//   options.cpp          the option dict -> EigsOptions / CgOptions, host CSR arrays -> Csr
//   py_operator.cpp      PyOperator: a Python callable as a host operator (callbacks get copies)
//   interrupt_bridge.cpp Ctrl-C while C++ runs without the GIL (SIGINT -> the solvers' stop flag)
//   results.cpp          solver results -> the result record -> dicts under the HDF5 schema's names
//   result_file.cpp      write_result_file: Result.save() through the command's result writer
//   eigs_bindings.cpp    eigs_csr, eigs_operator, eigs_device
//   solve_bindings.cpp   cg_csr, cg_operator, cg_device
//   krylov_bindings.cpp  krylov_csr, krylov_operator, krylov_device (MINRES, GMRES)
//   direct_bindings.cpp  direct_csr (CHOLMOD / MUMPS / UMFPACK / SuiteSparseQR), classify_csr
//   svd_bindings.cpp     svds_csr, svds_operator, svds_device (partial SVD, PCA)
//   device_bindings.cpp  the cached CUDA dense ops and the small device helpers
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "results/record.hpp"
#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/operator.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::pyext {

namespace py = pybind11;

using F64Array = py::array_t<double, py::array::f_style | py::array::forcecast>;
using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using I32Array = py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>;
using D1Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- options (options.cpp) ---------------------------------------------------------------------

// "key=<repr>: expected <what>" as InvalidArgument (ValueError): the package checks every value
// first, so this is the backstop that keeps pybind11's "Unable to cast" from reaching a user.
[[noreturn]] void bad_option(const char* key, const py::handle& value, const char* what);

template <class T>
const char* option_kind() {
  if constexpr (std::is_same_v<T, bool>) return "True or False";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "an integer in [0, 2**64)";
  else if constexpr (std::is_integral_v<T>) return "an integer in [-2**63, 2**63)";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else return "a string";
}

// opt[key] as T, or `fallback` when absent or None.
template <class T>
T opt_get(const py::dict& d, const char* key, T fallback) {
  if (!d.contains(key)) return fallback;
  py::object v = d[key];
  if (v.is_none()) return fallback;
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    bad_option(key, v, option_kind<T>());
  }
}

EigsOptions eigs_options(const py::dict& d, std::int64_t n);
CgOptions cg_options(const py::dict& d);
// One copy into the Csr's vectors (the package hands over canonical CSR), validated. The first
// form is square (n × n), the second m × n.
Csr<double> csr_from_arrays(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                            const D1Array& data);
Csr<double> csr_from_arrays(std::int64_t m, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                            const D1Array& data);
void check_block(const F64Array& arr, std::int64_t n, const char* what);
// The solution block a solver writes in place: n × s (s = rhs's columns), writable.
void check_x(const py::array_t<double, py::array::f_style>& x, std::int64_t n, const F64Array& rhs);

// ---- Python callables as operators (py_operator.cpp) -------------------------------------------

// A Python callable fn(X) -> A·X as a host operator. apply() takes the GIL and calls fn with a
// NumPy array of its own (a copy of the solver's block, see py_operator.cpp), then copies fn's
// answer, checked (shape, finite values), into Y. The package wraps LinearOperator.matmat into fn.
class PyOperator final : public LinearOperator<double> {
 public:
  PyOperator(py::object fn, std::int64_t n, std::string name)
      : PyOperator(std::move(fn), n, n, std::move(name)) {}
  // rows × cols (svds: A and Aᵀ of a rectangular LinearOperator)
  PyOperator(py::object fn, std::int64_t rows, std::int64_t cols, std::string name)
      : fn_(std::move(fn)), rows_(rows), cols_(cols), name_(std::move(name)) {}
  std::int64_t rows() const override { return rows_; }
  std::int64_t cols() const override { return cols_; }
  Space space() const override { return Space::host; }
  void apply(MvView<const double> x, MvView<double> y) const override;

 private:
  py::object fn_;
  std::int64_t rows_, cols_;
  std::string name_;
};

// A py::object held where the GIL is released and the holder is copied (std::function options):
// copied as a shared_ptr, the object itself released with the GIL taken.
std::shared_ptr<py::object> shared_object(py::object o);

// opt["mass_inverse"] (a callable X -> B⁻¹·X: SciPy's Minv, for the folded operator) set as the
// options' mass_inverse (CPU backend only); the returned operator must outlive the solve.
std::unique_ptr<PyOperator> mass_inverse_operator(const py::dict& d, std::int64_t n, EigsOptions& o);

// ---- Ctrl-C (interrupt_bridge.cpp) -------------------------------------------------------------

// Construct with the GIL held before the GIL is released for a solve, restore() (GIL held) once
// the solve has returned; the destructor restores too (an exception's path). While it lives, on
// the main thread, SIGINT reaches the solvers' stop flag (core/interrupt.hpp). See the file.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  void restore();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  bool installed_ = false;
};

// f() with the GIL released inside an InterruptScope; with the GIL back, Python's pending signal
// handlers run (Ctrl-C: KeyboardInterrupt, thrown as py::error_already_set).
template <class F>
auto run_interruptible(F&& f) -> decltype(f()) {
  InterruptScope scope;
  decltype(f()) r;
  {
    py::gil_scoped_release release;
    r = f();
  }
  scope.restore();
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return r;
}

// The per-iteration hook: runs Python's signal handlers (with the GIL) unless the solver is
// already stopping on Ctrl-C; with opt["progress"] also calls progress(iteration, Ritz values,
// residual norms, converged count) after every iteration (lobpcg's verbosityLevel).
std::function<void(const IterationRecord&)> interrupt_check();
std::function<void(const IterationRecord&)> progress_and_interrupt(const py::dict& opt);

// ---- results (results.cpp) ---------------------------------------------------------------------

py::array_t<double> vec(const std::vector<double>& v);
// A solver's result as the record of the command's result file (results/record.hpp, filled by
// the job pipeline's record_eigs / record_solve / record_svds) with the call's options as asked;
// the binding adds what it knows (nnz, the SpMM kernel, precision, time_setup) and result_dict
// turns it into the package's dict (the vectors and the history are moved out of the result).
ResultRecord eigs_record(EigsResult& r, const EigsOptions& o);
// Any solve's (method from r.method, "block_cg" when empty; backward_errors and optimality when
// the result has them; the solution when the result holds it, as the direct solves' does).
ResultRecord solve_record(SolveResult& r, double tol, std::int64_t max_iterations, Backend backend,
                          const std::string& precond);
ResultRecord svds_record(SvdResult& r, const SvdOptions& o, Backend backend);
// The operator fields of a solve on CuPy arrays read in place (the csr_view kernel; nnz, fp64,
// time_setup), and of one on a LinearOperator (Python callbacks).
void device_view_fields(ResultRecord& r, std::int64_t nnz, double setup_seconds);
void python_operator_fields(ResultRecord& r);
// The record's objects under the schema's names (visit_result), less the keys the package writes
// from the call (its matrix description, command, which, k...), plus the fields its Result had
// before the record: history's values and ortho (eigs, solve), eigs' sigma, predicted_seconds,
// factorization and eigenvectors always, svds' centered as a bool and its operator fields.
py::dict result_dict(const ResultRecord& r);

// ---- the CUDA dense ops shared by calls on CuPy input (device_bindings.cpp) --------------------

struct DevicePtrs {
  const std::int64_t* indptr;
  const std::int32_t* indices;
  const double* data;
};
DevicePtrs device_ptrs(const py::tuple& t);

// Made once per process and reused by every call on CuPy input (a stream, cuBLAS and cuSOLVER
// handles: 0.1–0.5 s to create); the mutex keeps concurrent Python threads (the GIL is released
// during a solve) from sharing them at once.
struct CachedDeviceOps {
  std::mutex mutex;
  std::unique_ptr<DenseBlockOps> ops;
};
CachedDeviceOps& cached_device_ops();
DenseBlockOps& device_ops_locked();  // made on first use; call with the mutex held

// ---- the module's functions (eigs_, solve_, krylov_, direct_, svd_, device_bindings.cpp) ----------

void define_eigs(py::module_& m);
void define_solve(py::module_& m);
void define_krylov(py::module_& m);
void define_direct(py::module_& m);
void define_svd(py::module_& m);
void define_device(py::module_& m);
void define_result_file(py::module_& m);  // write_result_file, behind Result.save (result_file.cpp)
void define_interrupt(py::module_& m);  // the test hook _interrupt_test_wait (interrupt_bridge.cpp)

}  // namespace tcsolve::pyext
