// The option dict the package passes (keys as the EigsOptions / CgOptions fields) -> the solvers'
// options; host CSR arrays -> Csr. See bindings.hpp.
#include <cstring>
#include <string>
#include <vector>

#include "python/src/bindings.hpp"

namespace tcsolve::pyext {

void bad_option(const char* key, const py::handle& value, const char* what) {
  std::string shown;
  try {
    shown = py::repr(value).cast<std::string>();
  } catch (const py::error_already_set&) {
    shown = "<unprintable>";
  }
  throw InvalidArgument(std::string(key) + "=" + shown + ": expected " + what);
}

EigsOptions eigs_options(const py::dict& d, std::int64_t n) {
  EigsOptions o;
  o.k = opt_get<std::int64_t>(d, "k", 6);
  o.which = parse_which(opt_get<std::string>(d, "which", "smallest"));  // (and SciPy's LM, SM, BE...)
  if (d.contains("sigma") && !d["sigma"].is_none()) {
    o.has_sigma = true;
    o.sigma = opt_get<double>(d, "sigma", 0.0);
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
  if (d.contains("constraints") && !d["constraints"].is_none()) {  // lobpcg's Y
    F64Array y = d["constraints"].cast<F64Array>();
    check_block(y, n, "constraints");
    o.constraints = std::vector<double>(y.data(), y.data() + y.size());
  }
  return o;
}

std::unique_ptr<PyOperator> mass_inverse_operator(const py::dict& d, std::int64_t n, EigsOptions& o) {
  if (!d.contains("mass_inverse") || d["mass_inverse"].is_none()) return nullptr;
  if (o.backend != Backend::cpu)
    throw InvalidArgument("Minv (M^-1 as an operator) runs on the CPU backend (device='cpu')");
  auto op = std::make_unique<PyOperator>(d["mass_inverse"], n, "Minv");
  o.mass_inverse = op.get();
  return op;
}

CgOptions cg_options(const py::dict& d) {
  CgOptions o;
  o.tol = opt_get<double>(d, "tol", o.tol);
  o.max_iterations = opt_get<std::int64_t>(d, "max_iterations", o.max_iterations);
  o.on_iteration = interrupt_check();
  // SciPy's cg(callback=f): f(iteration, X) after every iteration, X the whole n × s iterate (a
  // host copy of its own: on the GPU one device-to-host copy and a wait per iteration, asked for
  // by the caller). Rides on the checkpoint hook with a zero interval; an exception from f ends
  // the solve.
  if (d.contains("callback") && !d["callback"].is_none()) {
    std::shared_ptr<py::object> f = shared_object(d["callback"]);
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

Csr<double> csr_from_arrays(std::int64_t m, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                            const D1Array& data) {
  if (indptr.ndim() != 1 || indptr.shape(0) != m + 1)
    throw InvalidArgument("indptr must have rows + 1 = " + std::to_string(m + 1) + " entries");
  if (indices.ndim() != 1 || data.ndim() != 1 || indices.shape(0) != data.shape(0))
    throw InvalidArgument("indices and data must be 1-D of the same length");
  Csr<double> a;
  a.nrows = m;
  a.ncols = n;
  a.row_ptr.assign(indptr.data(), indptr.data() + indptr.shape(0));
  a.col_idx.assign(indices.data(), indices.data() + indices.shape(0));
  a.values.assign(data.data(), data.data() + data.shape(0));
  validate(a);  // offsets, order, ranges: InvalidArgument naming the first defect
  return a;
}

Csr<double> csr_from_arrays(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                            const D1Array& data) {
  if (indptr.ndim() != 1 || indptr.shape(0) != n + 1)
    throw InvalidArgument("indptr must have n + 1 = " + std::to_string(n + 1) + " entries");
  return csr_from_arrays(n, n, indptr, indices, data);
}

void check_block(const F64Array& arr, std::int64_t n, const char* what) {
  if (arr.ndim() != 2 || arr.shape(0) != n)
    throw InvalidArgument(std::string(what) + ": expected " + std::to_string(n) + " rows");
}

void check_x(const py::array_t<double, py::array::f_style>& x, std::int64_t n, const F64Array& rhs) {
  if (x.ndim() != 2 || x.shape(0) != n || x.shape(1) != rhs.shape(1) || !x.writeable())
    throw InvalidArgument("x: expected a writable n × s block");
}

}  // namespace tcsolve::pyext
