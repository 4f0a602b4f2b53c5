// tcsolve._tcsolve: the C++ side of the Python package (python/tcsolve/). Thin on purpose: the
// package checks and converts every input (scipy.sparse, NumPy, LinearOperator, CuPy) and maps
// SciPy's parameter names; this file turns the converted arrays into Csr / operators, runs the
// solver with the GIL released, and returns plain dicts of NumPy arrays and scalars.
//
// Functions (all options in a dict `opt`, keys as EigsOptions/CgOptions fields):
//   eigs_csr(n, indptr, indices, data, mass, opt)        mass: None or (indptr, indices, data)
//   eigs_operator(n, matmat_a, matmat_b, opt)            callables X (n×k, F) -> A·X
//   eigs_device(n, nnz, ptrs_a, ptrs_b, opt)             ptrs: (indptr, indices, data) device
//                                                        addresses (int64 / int32 / float64)
//   cg_csr(n, indptr, indices, data, rhs, x, use_x0, opt)  rhs n×s, x n×s (F, float64, written)
//   cg_operator(n, matmat_a, rhs, x, use_x0, opt)
//   cg_device(n, nnz, ptrs_a, rhs_ptr, x_ptr, s, use_x0, opt)   rhs/x device n×s column-major
// Errors: tcsolve::InvalidArgument / InputError -> ValueError, NotCompiled -> NotImplementedError,
// OutOfDeviceMemory -> MemoryError, OutputError -> OSError, other tcsolve::Error -> RuntimeError; a Python exception
// raised inside a callback (operator, Ctrl-C) propagates unchanged.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/types.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigs/eigs.hpp"
#include "spmm/device_csr_view.hpp"
#include "spmm/sparse_operator.hpp"

namespace py = pybind11;
using namespace tcsolve;

namespace {

using F64Array = py::array_t<double, py::array::f_style | py::array::forcecast>;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- options -----------------------------------------------------------------------------------

template <class T>
T opt_get(const py::dict& d, const char* key, T fallback) {
  if (!d.contains(key)) return fallback;
  py::object v = d[key];
  if (v.is_none()) return fallback;
  return v.cast<T>();
}

Which parse_which(const std::string& w) {
  if (w == "smallest") return Which::smallest;
  if (w == "largest") return Which::largest;
  if (w == "nearest") return Which::nearest;
  throw InvalidArgument("which '" + w + "': expected smallest, largest or nearest");
}

EigsOptions eigs_options(const py::dict& d, std::int64_t n) {
  EigsOptions o;
  o.k = opt_get<std::int64_t>(d, "k", 6);
  o.which = parse_which(opt_get<std::string>(d, "which", "smallest"));
  if (d.contains("sigma") && !d["sigma"].is_none()) {
    o.has_sigma = true;
    o.sigma = d["sigma"].cast<double>();
  }
  o.method = parse_eigs_method(opt_get<std::string>(d, "method", "auto"));
  o.conv = parse_conv_test(opt_get<std::string>(d, "conv", "rel"));
  o.tol = opt_get<double>(d, "tol", o.tol);
  o.max_iterations = opt_get<std::int64_t>(d, "max_iterations", 0);
  o.block_size = opt_get<std::int64_t>(d, "block_size", 0);
  o.basis = opt_get<std::int64_t>(d, "basis", 0);
  o.precond = parse_eigs_precond(opt_get<std::string>(d, "precond", "auto"));
  o.certify = opt_get<bool>(d, "certify", false);
  o.allow_factor = opt_get<bool>(d, "allow_factor", true);
  o.backend = resolve_backend(opt_get<std::string>(d, "device", "auto"));
  {
    const std::string p = opt_get<std::string>(d, "precision", "auto");
    o.ladder = p == "auto";  // the precision ladder (solvers/eigs/eigs.hpp)
    o.precision = parse_storage_precision(p);
  }
  o.seed = opt_get<std::uint64_t>(d, "seed", 1);
  o.want_vectors = opt_get<bool>(d, "want_vectors", true);  // return_eigenvectors=False: values only
  if (d.contains("v0") && !d["v0"].is_none()) {
    F64Array v0 = d["v0"].cast<F64Array>();
    if (v0.ndim() != 2 || v0.shape(0) != n)
      throw InvalidArgument("v0: expected " + std::to_string(n) + " rows");
    o.v0 = std::vector<double>(v0.data(), v0.data() + v0.size());  // F order: n × c column-major
  }
  return o;
}

// ---- inputs ------------------------------------------------------------------------------------

using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using I32Array = py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>;
using D1Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// One copy into the Csr's vectors (the package hands over canonical CSR: sorted, no duplicates).
Csr<double> csr_from_arrays(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                            const D1Array& data) {
  if (indptr.ndim() != 1 || indptr.shape(0) != n + 1)
    throw InvalidArgument("indptr must have n + 1 = " + std::to_string(n + 1) + " entries");
  if (indices.ndim() != 1 || data.ndim() != 1 || indices.shape(0) != data.shape(0))
    throw InvalidArgument("indices and data must be 1-D of the same length");
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.row_ptr.assign(indptr.data(), indptr.data() + indptr.shape(0));
  a.col_idx.assign(indices.data(), indices.data() + indices.shape(0));
  a.values.assign(data.data(), data.data() + data.shape(0));
  validate(a);  // offsets, order, ranges: InvalidArgument naming the first defect
  return a;
}

// A Python callable as an operator on the host: apply() takes the GIL, calls fn(X) with X an
// n × k Fortran-ordered read-only view of the solver's block, and copies the result (checked:
// shape, finite values) into Y. The package wraps LinearOperator.matmat into `fn`.
class PyOperator final : public LinearOperator<double> {
 public:
  PyOperator(py::object fn, std::int64_t n, std::string name)
      : fn_(std::move(fn)), n_(n), name_(std::move(name)) {}
  std::int64_t rows() const override { return n_; }
  std::int64_t cols() const override { return n_; }
  Space space() const override { return Space::host; }
  void apply(MvView<const double> x, MvView<double> y) const override {
    py::gil_scoped_acquire gil;
    // A view without a copy; the capsule base keeps NumPy from owning the solver's memory.
    py::array_t<double> xa({x.rows, x.cols},
                           {static_cast<py::ssize_t>(sizeof(double)),
                            static_cast<py::ssize_t>(sizeof(double) * x.ld)},
                           x.data, py::capsule(x.data, [](void*) {}));
    xa.attr("setflags")(false);  // write=False: the solver's block is not the callback's to change
    py::object r = fn_(xa);
    F64Array ya = F64Array::ensure(r);
    if (!ya) throw py::error_already_set();
    if (ya.ndim() != 2 || ya.shape(0) != y.rows || ya.shape(1) != y.cols)
      throw InvalidArgument(name_ + ": the operator returned an array of shape " +
                            shape_string(ya) + " for an input of shape (" +
                            std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                            "), expected (" + std::to_string(y.rows) + ", " +
                            std::to_string(y.cols) + ")");
    const double* src = ya.data();
    for (std::int64_t j = 0; j < y.cols; ++j)
      for (std::int64_t i = 0; i < y.rows; ++i) {
        const double v = src[i + j * y.rows];
        if (!std::isfinite(v))
          throw InvalidArgument(name_ + ": the operator returned a non-finite value (" +
                                (std::isnan(v) ? std::string("NaN") : std::string("Inf")) +
                                ") at row " + std::to_string(i) + ", column " +
                                std::to_string(j));
        y.data[i + j * y.ld] = v;
      }
  }

 private:
  static std::string shape_string(const F64Array& a) {
    std::string s = "(";
    for (py::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
    return s + (a.ndim() == 1 ? ",)" : ")");
  }
  py::object fn_;
  std::int64_t n_;
  std::string name_;
};

// Per-iteration hook: Ctrl-C stops a long solve (the GIL is taken for a signal check only).
std::function<void(const IterationRecord&)> interrupt_check() {
  return [](const IterationRecord&) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
}

// The interrupt check, and opt["progress"] (a callable, optional) called after every iteration
// with (iteration, Ritz values, residual norms, converged count): lobpcg's verbosityLevel prints
// from it while the solve runs. Held through a shared_ptr (copied where the GIL is released).
std::function<void(const IterationRecord&)> progress_and_interrupt(const py::dict& opt) {
  if (!opt.contains("progress") || opt["progress"].is_none()) return interrupt_check();
  std::shared_ptr<py::object> f(new py::object(opt["progress"]), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [f](const IterationRecord& r) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    py::array_t<double> vals(static_cast<py::ssize_t>(r.values.size()));
    if (!r.values.empty()) std::memcpy(vals.mutable_data(), r.values.data(), r.values.size() * sizeof(double));
    py::array_t<double> rn(static_cast<py::ssize_t>(r.residual_norms.size()));
    if (!r.residual_norms.empty())
      std::memcpy(rn.mutable_data(), r.residual_norms.data(), r.residual_norms.size() * sizeof(double));
    (*f)(r.iteration, vals, rn, r.converged);
  };
}

// ---- results -----------------------------------------------------------------------------------

py::array_t<double> vec(const std::vector<double>& v) {
  py::array_t<double> a(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(double));
  return a;
}

py::array_t<std::int64_t> ivec(const std::vector<std::int64_t>& v) {
  py::array_t<std::int64_t> a(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(std::int64_t));
  return a;
}

// n × k column-major block as an (n, k) Fortran-ordered array.
py::array_t<double> block(const std::vector<double>& v, std::int64_t n) {
  const std::int64_t k = n > 0 ? static_cast<std::int64_t>(v.size()) / n : 0;
  py::array_t<double, py::array::f_style> a({n, k});
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(double));
  return a;
}

// The HDF5 result's history group (docs/hdf5-schema.md): residual norms padded with NaN.
py::dict history_dict(const std::vector<IterationRecord>& h) {
  std::size_t c = 0, cv = 0;
  for (const auto& r : h) c = std::max(c, r.residual_norms.size()), cv = std::max(cv, r.values.size());
  py::array_t<double> vals({static_cast<py::ssize_t>(h.size()), static_cast<py::ssize_t>(cv)});
  std::fill(vals.mutable_data(), vals.mutable_data() + h.size() * cv, NAN);
  for (std::size_t i = 0; i < h.size(); ++i)
    std::copy(h[i].values.begin(), h[i].values.end(), vals.mutable_data() + i * cv);
  std::vector<std::int64_t> it, conv, act;
  std::vector<double> ap, de;
  std::vector<std::string> ortho;
  py::array_t<double> res({static_cast<py::ssize_t>(h.size()), static_cast<py::ssize_t>(c)});
  double* rp = res.mutable_data();
  std::fill(rp, rp + h.size() * c, NAN);
  for (std::size_t i = 0; i < h.size(); ++i) {
    it.push_back(h[i].iteration);
    conv.push_back(h[i].converged);
    act.push_back(h[i].active);
    ap.push_back(h[i].apply_seconds);
    de.push_back(h[i].dense_seconds);
    ortho.emplace_back(to_string(h[i].ortho));
    std::copy(h[i].residual_norms.begin(), h[i].residual_norms.end(), rp + i * c);
  }
  py::dict d;
  d["iteration"] = ivec(it);
  d["residual_norms"] = res;
  d["values"] = vals;  // iterations × k Ritz values (LOBPCG), NaN where a solver keeps none
  d["converged"] = ivec(conv);
  d["active"] = ivec(act);
  d["apply_seconds"] = vec(ap);
  d["dense_seconds"] = vec(de);
  d["ortho"] = ortho;
  return d;
}

std::string device_string(Backend b) { return b == Backend::cuda ? device_name() : "cpu"; }

py::dict eigs_result_dict(const EigsResult& r, const EigsOptions& o) {
  py::dict d;
  d["task"] = "eigs";
  d["status"] = to_string(r.status);
  d["reason"] = r.reason;
  d["eigenvalues"] = vec(r.values);
  d["eigenvectors"] = block(r.vectors, r.n);
  d["rows"] = r.n;
  d["residual_norms"] = vec(r.residual_norms);
  d["residual_bounds"] = vec(r.residual_bounds);
  d["error_bounds"] = vec(r.error_bounds);
  d["convergence_test"] = to_string(r.conv);  // names as in the HDF5 result (apps/job.cpp)
  d["a_norm"] = r.a_norm;
  d["b_norm"] = r.b_norm;
  d["method"] = r.method;
  d["transform"] = r.transform;
  d["sigma"] = r.sigma;
  d["method_reason"] = r.why;
  d["predicted_seconds"] = r.predicted_seconds;
  d["precision_used"] = r.precision;
  d["verification"] = to_string(r.verification);
  d["certified"] = to_string(r.certified);
  d["certificate"] = r.certificate;
  d["factorization"] = r.factor;
  d["iterations"] = r.iterations;
  d["operator_applies"] = r.operator_applies;
  d["history"] = history_dict(r.history);
  d["time_plan"] = r.plan_seconds;
  d["time_setup"] = r.setup_seconds;
  d["time_solve"] = r.solve_seconds;
  d["time_verify"] = r.verify_seconds;
  d["tolerance"] = o.tol;
  d["max_iterations"] = o.max_iterations;
  d["seed"] = static_cast<std::int64_t>(o.seed);
  d["precision"] = to_string(o.precision);
  d["preconditioner"] = o.preconditioner ? "operator" : to_string(o.precond);
  d["backend"] = to_string(o.backend);
  d["device"] = device_string(o.backend);
  return d;
}

py::dict solve_result_dict(const SolveResult& r, const CgOptions& o, Backend backend,
                           const std::string& precond) {
  py::dict d;
  d["task"] = "solve";
  d["method"] = "block_cg";
  d["status"] = to_string(r.status);
  d["reason"] = r.reason;
  d["rows"] = r.n;
  d["residual_norms"] = vec(r.residual_norms);
  d["column_iterations"] = ivec(r.column_iterations);
  d["iterations"] = r.iterations;
  d["operator_applies"] = r.operator_applies;
  d["history"] = history_dict(r.history);
  d["time_solve"] = r.seconds;
  d["precision_used"] = r.precision;  // "fp64", or the fp32 iteration's refinement account
  d["tolerance"] = o.tol;
  d["max_iterations"] = o.max_iterations;
  d["preconditioner"] = precond;
  d["backend"] = to_string(backend);
  d["device"] = device_string(backend);
  return d;
}

// ---- eigenproblems -----------------------------------------------------------------------------

py::dict eigs_csr(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                  const D1Array& data, py::object mass, py::object precond_fn,
                  const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  const auto t0 = std::chrono::steady_clock::now();
  Csr<double> a = csr_from_arrays(n, indptr, indices, data);
  std::unique_ptr<Csr<double>> b;
  if (!mass.is_none()) {
    py::tuple m = mass.cast<py::tuple>();
    b = std::make_unique<Csr<double>>(csr_from_arrays(n, m[0].cast<I64Array>(),
                                                      m[1].cast<I32Array>(),
                                                      m[2].cast<D1Array>()));
  }
  EigsOptions o = eigs_options(opt, n);
  o.on_iteration = progress_and_interrupt(opt);
  std::unique_ptr<PyOperator> pre;
  if (!precond_fn.is_none()) {
    if (o.backend != Backend::cpu)
      throw InvalidArgument("a preconditioner M given as an operator runs on the CPU backend "
                            "(device='cpu')");
    pre = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = pre.get();
  }
  const double convert_s = seconds_since(t0);
  EigsResult r;
  {
    py::gil_scoped_release release;
    r = eigs(a, b.get(), o);  // the driver: plan, set up, solve, verify
  }
  py::dict d = eigs_result_dict(r, o);
  d["nnz"] = a.nnz();
  d["spmm_kernel"] = r.spmm_kernel;
  d["spmm_plan"] = r.spmm_plan;
  d["time_convert"] = convert_s;
  return d;
}

py::dict eigs_operator(std::int64_t n, py::object fa, py::object fb, py::object precond_fn,
                       const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  EigsOptions o = eigs_options(opt, n);
  if (o.backend != Backend::cpu)
    throw InvalidArgument("a LinearOperator runs on the CPU backend (device='cpu'): its matvec "
                          "is Python code on host arrays");
  o.on_iteration = progress_and_interrupt(opt);
  PyOperator a(fa, n, "A");
  std::unique_ptr<PyOperator> b = fb.is_none() ? nullptr : std::make_unique<PyOperator>(fb, n, "M");
  std::unique_ptr<PyOperator> pre;
  if (!precond_fn.is_none()) {
    pre = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = pre.get();
  }
  EigsResult r;
  {
    py::gil_scoped_release release;
    auto ops = make_dense_ops(Backend::cpu);
    r = eigs(a, b.get(), *ops, o);
  }
  py::dict d = eigs_result_dict(r, o);
  d["spmm_kernel"] = "python";
  d["spmm_plan"] = "the LinearOperator's matmat (Python callback)";
  return d;
}

struct DevicePtrs {
  const std::int64_t* indptr;
  const std::int32_t* indices;
  const double* data;
};

DevicePtrs device_ptrs(const py::tuple& t) {
  if (t.size() != 3) throw InvalidArgument("device CSR: expected (indptr, indices, data) addresses");
  return {reinterpret_cast<const std::int64_t*>(t[0].cast<std::uintptr_t>()),
          reinterpret_cast<const std::int32_t*>(t[1].cast<std::uintptr_t>()),
          reinterpret_cast<const double*>(t[2].cast<std::uintptr_t>())};
}

// The CUDA dense ops (a stream, cuBLAS and cuSOLVER handles: 0.1–0.5 s to create) are made once
// per process and reused by every call on CuPy input; a mutex keeps concurrent Python threads
// (the GIL is released during a solve) from sharing them at once.
struct CachedDeviceOps {
  std::mutex mutex;
  std::unique_ptr<DenseBlockOps> ops;
};
CachedDeviceOps& cached_device_ops() {
  static CachedDeviceOps c;
  return c;
}
// The cached ops, made on first use (call with cached_device_ops().mutex held).
DenseBlockOps& device_ops_locked() {
  auto& ops = cached_device_ops().ops;
  if (!ops) ops = make_dense_ops(Backend::cuda);
  return *ops;
}

// CuPy input: the operators view the caller's device arrays (spmm/device_csr_view.hpp); the
// driver's operator form runs on them (no factorization: no shift-invert). The package passes
// ‖A‖∞ and ‖B‖∞ (computed by CuPy on the device).
py::dict eigs_device(std::int64_t n, std::int64_t nnz_a, const py::tuple& pa, py::object pb,
                     std::int64_t nnz_b, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  EigsOptions o = eigs_options(opt, n);
  o.backend = Backend::cuda;
  o.on_iteration = progress_and_interrupt(opt);
  const double a_norm = opt_get<double>(opt, "a_norm", 0.0), b_norm = opt_get<double>(opt, "b_norm", 0.0);
  const DevicePtrs da = device_ptrs(pa);
  EigsResult r;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps* ops = &device_ops_locked();
    auto aop = make_device_csr_view(n, n, nnz_a, da.indptr, da.indices, da.data, ops->stream());
    std::unique_ptr<LinearOperator<double>> bop;
    if (!pb.is_none()) {
      py::gil_scoped_acquire gil;
      const DevicePtrs db = device_ptrs(pb.cast<py::tuple>());
      bop = make_device_csr_view(n, n, nnz_b, db.indptr, db.indices, db.data, ops->stream());
    }
    r = eigs(*aop, bop.get(), *ops, o, a_norm, b_norm);
    ops->synchronize();
  }
  py::dict d = eigs_result_dict(r, o);
  d["nnz"] = nnz_a;
  d["spmm_kernel"] = "csr_view";
  d["spmm_plan"] = "row-split CSR kernel on the CuPy arrays in place (no upload, no trial)";
  return d;
}

// ---- block CG ----------------------------------------------------------------------------------

CgOptions cg_options(const py::dict& d) {
  CgOptions o;
  o.tol = opt_get<double>(d, "tol", o.tol);
  o.max_iterations = opt_get<std::int64_t>(d, "max_iterations", o.max_iterations);
  o.on_iteration = interrupt_check();
  // SciPy's cg(callback=f): f(iteration, X) after every iteration, X the whole n × s iterate (a
  // host copy: on the GPU one device-to-host copy and a wait per iteration, asked for by the
  // caller). Rides on the checkpoint hook with a zero interval; an exception from f ends the solve.
  if (d.contains("callback") && !d["callback"].is_none()) {
    // Held through a shared_ptr: the options are copied where the GIL is released, and copying
    // a py::object would touch its reference count without the GIL.
    std::shared_ptr<py::object> f(new py::object(d["callback"]), [](py::object* p) {
      py::gil_scoped_acquire gil;
      delete p;
    });
    o.checkpoint_every = 1e-300;
    o.on_checkpoint = [f](SolverCheckpoint& c) {
      py::gil_scoped_acquire gil;
      py::array_t<double, py::array::f_style> xk({c.n, c.cols});
      std::memcpy(xk.mutable_data(), c.block.data(), c.block.size() * sizeof(double));
      (*f)(c.iteration, xk);
    };
  }
  return o;
}

// Whether block CG's fp32 iteration may run (solvers/block_cg.hpp): GPU dense ops, Jacobi or no
// preconditioner, at most kCgFp32MaxRhs columns.
bool cg_fp32_fits(const DenseBlockOps& ops, const CgOptions& o, std::int64_t s) {
  return ops.space() == Space::device && ops.fp32_blocks() && !o.preconditioner && s <= kCgFp32MaxRhs;
}

// rhs, x: host blocks n × s (x holds x0 when use_x0, and the solution on return). On the CUDA
// backend they are copied to the device and back (the matrix was uploaded by the operator).
SolveResult run_cg_host(const LinearOperator<double>& a, DenseBlockOps& ops, const double* rhs,
                        double* x, std::int64_t n, std::int64_t s, bool use_x0,
                        const CgOptions& o) {
  BlockCg cg(a, ops, s, o);
  if (ops.space() == Space::host) {
    MvView<const double> bv{rhs, n, s, n, Space::host};
    MvView<double> xv{x, n, s, n, Space::host};
    return cg.solve(bv, xv, use_x0);
  }
  MultiVector<double> bd = ops.allocate(n, s), xd = ops.allocate(n, s);
  ops.from_host(rhs, n, bd.view());
  if (use_x0) ops.from_host(x, n, xd.view());
  SolveResult r = cg.solve(bd.view(), xd.view(), use_x0);
  ops.to_host(xd.view(), x, n);
  ops.synchronize();
  return r;
}

void check_block(const F64Array& arr, std::int64_t n, const char* what) {
  if (arr.ndim() != 2 || arr.shape(0) != n)
    throw InvalidArgument(std::string(what) + ": expected " + std::to_string(n) + " rows");
}

py::dict cg_csr(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                const D1Array& data, const F64Array& rhs, py::array_t<double, py::array::f_style> x,
                bool use_x0, py::object precond_fn, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  Csr<double> a = csr_from_arrays(n, indptr, indices, data);
  check_block(rhs, n, "b");
  if (x.ndim() != 2 || x.shape(0) != n || x.shape(1) != rhs.shape(1) || !x.writeable())
    throw InvalidArgument("x: expected a writable n × s block");
  CgOptions o = cg_options(opt);
  const Backend backend = resolve_backend(opt_get<std::string>(opt, "device", "auto"));
  const Precision precision = parse_storage_precision(opt_get<std::string>(opt, "precision", "auto"));
  std::string precond = opt_get<std::string>(opt, "precond", "jacobi");
  if (precond == "jacobi") o.jacobi_diagonal = csr_diagonal(a);
  std::unique_ptr<PyOperator> m;
  if (!precond_fn.is_none()) {
    if (backend != Backend::cpu)
      throw InvalidArgument("a preconditioner M given as an operator runs on the CPU backend "
                            "(device='cpu')");
    m = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = m.get();
    o.jacobi_diagonal.clear();
    precond = "operator";
  }
  const std::int64_t s = rhs.shape(1);
  const bool mixed = opt_get<std::string>(opt, "precision", "auto") == "auto";  // (read with the GIL)
  SolveResult r;
  std::string kernel, kernel_plan;
  double setup = 0;
  {
    py::gil_scoped_release release;
    const auto ts = std::chrono::steady_clock::now();
    auto ops = make_dense_ops(backend);
    OperatorOptions oo;
    oo.precision = precision;
    oo.stream = ops->stream();
    oo.expected_cols = static_cast<int>(std::min<std::int64_t>(s, 64));
    auto aop = make_sparse_operator(a, backend, oo);
    kernel = to_string(aop->plan().kernel);
    kernel_plan = aop->plan().reason;
    std::unique_ptr<ChebyshevPreconditioner> cheb;
    if (precond == "chebyshev") {
      const bool jacobi = chebyshev_wants_jacobi(a);
      cheb = make_chebyshev_preconditioner(*aop, *ops, s, chebyshev_upper_bound(a, jacobi), 77, nullptr, 0, &a,
                                           backend == Backend::cuda ? Precision::fp32 : Precision::fp64,
                                           jacobi);
      o.preconditioner = cheb.get();
      o.jacobi_diagonal.clear();
      precond = cheb->describe();
    }
    // precision='auto' on the GPU: fp32 iterations inside fp64 refinement (as the command's).
    std::unique_ptr<ChebyshevStep> step32;
    if (mixed && cg_fp32_fits(*ops, o, s)) {
      o.step32 = aop->block_step();
      if (!o.step32) {
        step32 = make_chebyshev_step_on_operator(*aop, a, Precision::fp32, ops->stream());
        o.step32 = step32.get();
      }
    }
    setup = seconds_since(ts);
    r = run_cg_host(*aop, *ops, rhs.data(), x.mutable_data(), n, s, use_x0, o);
    if (cheb) r.operator_applies += cheb->columns_applied();
  }
  py::dict d = solve_result_dict(r, o, backend, precond);
  d["nnz"] = a.nnz();
  d["spmm_kernel"] = kernel;
  d["spmm_plan"] = kernel_plan;
  d["precision"] = to_string(precision);
  d["time_setup"] = setup;
  return d;
}

py::dict cg_operator(std::int64_t n, py::object fa, const F64Array& rhs,
                     py::array_t<double, py::array::f_style> x, bool use_x0, py::object precond_fn,
                     const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  check_block(rhs, n, "b");
  if (x.ndim() != 2 || x.shape(0) != n || x.shape(1) != rhs.shape(1) || !x.writeable())
    throw InvalidArgument("x: expected a writable n × s block");
  if (resolve_backend(opt_get<std::string>(opt, "device", "auto")) != Backend::cpu &&
      opt_get<std::string>(opt, "device", "auto") == "cuda")
    throw InvalidArgument("a LinearOperator runs on the CPU backend (device='cpu'): its matvec "
                          "is Python code on host arrays");
  CgOptions o = cg_options(opt);
  PyOperator a(fa, n, "A");
  std::unique_ptr<PyOperator> m;
  std::string precond = "none";
  if (!precond_fn.is_none()) {
    m = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = m.get();
    precond = "operator";
  }
  SolveResult r;
  {
    py::gil_scoped_release release;
    auto ops = make_dense_ops(Backend::cpu);
    r = run_cg_host(a, *ops, rhs.data(), x.mutable_data(), n, rhs.shape(1), use_x0, o);
  }
  py::dict d = solve_result_dict(r, o, Backend::cpu, precond);
  d["spmm_kernel"] = "python";
  d["spmm_plan"] = "the LinearOperator's matmat (Python callback)";
  d["precision"] = "fp64";
  return d;
}

py::dict cg_device(std::int64_t n, std::int64_t nnz, const py::tuple& pa, std::uintptr_t rhs_ptr,
                   std::uintptr_t x_ptr, std::int64_t s, bool use_x0, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  CgOptions o = cg_options(opt);
  std::string precond = opt_get<std::string>(opt, "precond", "jacobi");
  const double a_norm = opt_get<double>(opt, "a_norm", 0.0);
  const bool mixed = opt_get<std::string>(opt, "precision", "auto") == "auto";  // (read with the GIL)
  const DevicePtrs da = device_ptrs(pa);
  SolveResult r;
  const auto ts = std::chrono::steady_clock::now();
  double setup = 0;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps* ops = &device_ops_locked();
    if (precond == "jacobi") {
      // The diagonal, extracted on the device (one pass) and brought over once for Jacobi.
      MultiVector<double> d = ops->allocate(n, 1);
      check_device_csr(n, nnz, da.indptr, da.indices, da.data, d.data(), ops->stream());
      o.jacobi_diagonal.resize(static_cast<std::size_t>(n));
      ops->to_host(d.view(), o.jacobi_diagonal.data(), n);
    }
    auto aop = make_device_csr_view(n, n, nnz, da.indptr, da.indices, da.data, ops->stream());
    std::unique_ptr<ChebyshevPreconditioner> cheb;
    if (precond == "chebyshev") {
      // The fused step on the CuPy arrays themselves when the rows are short, as the command's:
      // A's values rounded to fp32 on the device (4·nnz bytes) and fp32 blocks in the steps (only
      // M changes; CG's residuals are fp64 on A). Where the fp32 copy does not fit, the step
      // reads the fp64 values in place.
      std::unique_ptr<ChebyshevStep> step;
      Precision storage = Precision::fp64;
      if (chebyshev_step_fuses(n, nnz, Space::device, Precision::fp32)) {
        step = make_chebyshev_step_view32(n, nnz, static_cast<const std::int64_t*>(da.indptr),
                                          static_cast<const std::int32_t*>(da.indices),
                                          static_cast<const double*>(da.data), ops->stream());
        storage = Precision::fp32;
      } else if (chebyshev_step_pays(n, nnz)) {
        step = make_chebyshev_step_view(n, static_cast<const std::int64_t*>(da.indptr),
                                        static_cast<const std::int32_t*>(da.indices),
                                        static_cast<const double*>(da.data), ops->stream());
      }
      cheb = make_chebyshev_preconditioner(*aop, *ops, s, a_norm, 77, nullptr, 0, nullptr, storage,
                                           false, std::move(step));
      o.preconditioner = cheb.get();
      precond = cheb->describe();
    }
    // precision='auto': fp32 iterations inside fp64 refinement on A's values rounded on the device
    // (4·nnz bytes), for short rows (the row-split step).
    std::unique_ptr<ChebyshevStep> step32;
    if (mixed && cg_fp32_fits(*ops, o, s) && chebyshev_step_pays(n, nnz)) {
      step32 = make_chebyshev_step_view32(n, nnz, static_cast<const std::int64_t*>(da.indptr),
                                          static_cast<const std::int32_t*>(da.indices),
                                          static_cast<const double*>(da.data), ops->stream());
      o.step32 = step32.get();
    }
    setup = seconds_since(ts);
    BlockCg cg(*aop, *ops, s, o);
    MvView<const double> bv{reinterpret_cast<const double*>(rhs_ptr), n, s, n, Space::device};
    MvView<double> xv{reinterpret_cast<double*>(x_ptr), n, s, n, Space::device};
    r = cg.solve(bv, xv, use_x0);
    ops->synchronize();
    if (cheb) r.operator_applies += cheb->columns_applied();
  }
  py::dict d = solve_result_dict(r, o, Backend::cuda, precond);
  d["nnz"] = nnz;
  d["spmm_kernel"] = "csr_view";
  d["spmm_plan"] = "row-split CSR kernel on the CuPy arrays in place (no upload, no trial)";
  d["precision"] = "fp64";
  d["time_setup"] = setup;
  return d;
}

// Checks of CuPy CSR arrays in one device pass (spmm/device_csr_view.hpp).
py::dict device_csr_check(std::int64_t n, std::int64_t nnz, const py::tuple& pa) {
  const DevicePtrs da = device_ptrs(pa);
  DeviceCsrCheck c;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps* ops = &device_ops_locked();
    c = check_device_csr(n, nnz, da.indptr, da.indices, da.data, nullptr, ops->stream());
  }
  py::dict d;
  d["max_abs"] = c.max_abs;
  d["symmetry_defect"] = c.symmetry_defect;
  d["inf_norm"] = c.inf_norm;
  d["min_diag"] = c.min_diag;
  d["min_diag_row"] = c.min_diag_row;
  d["max_diag"] = c.max_diag;
  d["nonfinite_at"] = c.nonfinite_at;
  d["unsorted_row"] = c.unsorted_row;
  return d;
}

// CuPy arrays made into what the solvers take, by tcsolve's kernels on the cached ops' stream
// (spmm/device_csr_view.hpp): no CuPy kernel, so nothing for CuPy to compile on a first call.

void device_widen_int32(std::uintptr_t src, std::uintptr_t dst, std::int64_t count) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
  widen_indices(reinterpret_cast<const std::int32_t*>(src), reinterpret_cast<std::int64_t*>(dst), count,
                device_ops_locked().stream());
}

void device_to_column_major(std::uintptr_t src, std::int64_t row_stride, std::int64_t col_stride,
                            std::int64_t n, std::int64_t s, std::uintptr_t dst) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
  to_column_major(reinterpret_cast<const double*>(src), row_stride, col_stride, n, s,
                  reinterpret_cast<double*>(dst), device_ops_locked().stream());
}

// ‖x_j‖₂ of a column-major n × s float64 block on the device (NaN/Inf when a column holds one).
py::array_t<double> device_column_norms(std::uintptr_t ptr, std::int64_t n, std::int64_t s) {
  std::vector<double> out(static_cast<std::size_t>(std::max<std::int64_t>(s, 0)), 0.0);
  if (n > 0 && s > 0) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps& ops = device_ops_locked();
    MvView<const double> x{reinterpret_cast<const double*>(ptr), n, s, n, Space::device};
    ops.column_norms(x, out.data());
  }
  return vec(out);
}

}  // namespace

PYBIND11_MODULE(_tcsolve, m) {
  m.doc() = "tcsolve C++ core (use the `tcsolve` package, not this module)";
  // ValueError for bad input, as the command line's exit status 2; NotImplementedError for a
  // feature this build lacks; MemoryError when the GPU is too small; RuntimeError otherwise.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
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
  });
  m.def("eigs_csr", &eigs_csr);
  m.def("eigs_operator", &eigs_operator);
  m.def("eigs_device", &eigs_device);
  // x is written in place: refuse a converted copy (the package passes F-ordered float64).
  m.def("cg_csr", &cg_csr, py::arg("n"), py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("rhs"), py::arg("x").noconvert(), py::arg("use_x0"), py::arg("precond_fn"),
        py::arg("opt"));
  m.def("cg_operator", &cg_operator, py::arg("n"), py::arg("fa"), py::arg("rhs"),
        py::arg("x").noconvert(), py::arg("use_x0"), py::arg("precond_fn"), py::arg("opt"));
  m.def("cg_device", &cg_device);
  m.def("device_csr_check", &device_csr_check);
  m.def("device_widen_int32", &device_widen_int32);
  m.def("device_to_column_major", &device_to_column_major);
  m.def("device_column_norms", &device_column_norms);
  // The results' matrix_checksum (core/csr.hpp), computed when a Result asks for it.
  m.def("auto_precond_refusal",
        [](bool gpu, std::int64_t n, std::int64_t nnz, bool diagonal_varies) -> py::object {
          AutoPrecondFacts f;
          f.gpu = gpu, f.n = n, f.nnz = nnz, f.diagonal_varies = diagonal_varies;
          const char* why = auto_precond_refusal(f);
          return why ? py::object(py::str(why)) : py::object(py::none());
        },
        "Why cg(M='auto') takes Jacobi (None: the Chebyshev polynomial): solve --precond auto's rule.");
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
  m.def("eigs_method_names", &eigs_method_names);
  m.def("eigs_precond_names", &eigs_precond_names);
  m.def("resolve_device", [](const std::string& d) { return std::string(to_string(resolve_backend(d))); });
  m.def("built_with_cuda", &built_with_cuda);
  m.def("device_count", &device_count);
  // bytes tcsolve holds on the GPU now (core/device.hpp): the tests check that nothing stays behind
  m.def("device_allocated_bytes", [] { return static_cast<std::int64_t>(device_allocated_bytes()); });
  // drops the cached CUDA dense ops (their stream, handles and workspaces: see cached_device_ops)
  m.def("release_device_cache", [] {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    cached_device_ops().ops.reset();
  });
  m.def("device_name", &device_name);
  m.attr("__version__") = TCSOLVE_VERSION;
}
