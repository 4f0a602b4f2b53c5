// The direct solves of tcsolve._tcsolve (solvers/direct/direct_solve.hpp), on the host:
//   direct_csr(m, n, indptr, indices, data, rhs, opt)   A m × n (rectangular allowed), rhs m × s
//        (F order, float64). Returns the result dict (results.cpp) with `solution` (n × s: the
//        solution, or the least-squares / minimum-norm one), `matrix_kind` and the kind's facts.
//        opt: engine ('auto', 'cholmod', 'mumps_ldlt', 'umfpack', 'spqr'), backward_tol,
//        optimality_tol, memory_limit_bytes (0: the engines' default).
//   classify_csr(m, n, indptr, indices, data)   core/matrix_kind.hpp's facts as a dict
// The solve runs with the GIL released and Ctrl-C bridged (run_interruptible). A factorization
// over the memory limit (FactorTooLarge) is a MemoryError.
#include <cstring>
#include <string>

#include "core/matrix_kind.hpp"
#include "factor/sparse_factor.hpp"
#include "python/src/bindings.hpp"
#include "solvers/direct/direct_solve.hpp"

namespace tcsolve::pyext {

namespace {

DirectEngine parse_engine(const std::string& e) {
  if (e == "auto") return DirectEngine::automatic;
  if (e == "cholmod") return DirectEngine::cholmod;
  if (e == "mumps_ldlt") return DirectEngine::mumps_ldlt;
  if (e == "umfpack") return DirectEngine::umfpack;
  if (e == "spqr") return DirectEngine::spqr;
  throw InvalidArgument("engine '" + e + "': expected auto, cholmod, mumps_ldlt, umfpack or spqr");
}

void put_facts(py::dict& d, const MatrixKindFacts& f) {
  d["matrix_kind"] = to_string(f.kind);
  d["asymmetry"] = f.asymmetry;
  d["nonpositive_diagonal"] = f.nonpositive_diagonal;
  d["empty_rows"] = f.empty_rows;
  d["empty_cols"] = f.empty_cols;
}

py::dict classify_csr(std::int64_t m, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                      const D1Array& data) {
  Csr<double> a = csr_from_arrays(m, n, indptr, indices, data);
  MatrixKindFacts f;
  {
    py::gil_scoped_release release;
    f = classify_matrix(a);
  }
  py::dict d;
  put_facts(d, f);
  return d;
}

struct DirectRun {
  MatrixKindFacts facts;
  SolveResult r;
  double classify_seconds = 0;
};

py::dict direct_csr(std::int64_t m, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                    const D1Array& data, const F64Array& rhs, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  Csr<double> a = csr_from_arrays(m, n, indptr, indices, data);
  check_block(rhs, m, "b");
  DirectOptions o;
  o.engine = parse_engine(opt_get<std::string>(opt, "engine", "auto"));
  o.backward_tol = opt_get<double>(opt, "backward_tol", o.backward_tol);
  o.optimality_tol = opt_get<double>(opt, "optimality_tol", o.optimality_tol);
  o.memory_limit_bytes = opt_get<double>(opt, "memory_limit_bytes", o.memory_limit_bytes);
  const double* bp = rhs.data();
  const std::int64_t s = rhs.shape(1);
  DirectRun run;
  try {
    run = run_interruptible([&] {
      DirectRun out;
      const auto tc = std::chrono::steady_clock::now();
      out.facts = classify_matrix(a);
      out.classify_seconds = seconds_since(tc);
      const auto ts = std::chrono::steady_clock::now();
      out.r = direct_solve(a, out.facts.kind, bp, m, s, o);
      out.r.seconds = seconds_since(ts);
      return out;
    });
  } catch (const FactorTooLarge& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
    throw py::error_already_set();
  }
  SolveResult& r = run.r;
  if (static_cast<std::int64_t>(r.solutions.size()) != n * s)
    throw Error("direct_solve returned " + std::to_string(r.solutions.size()) + " solution entries, expected " +
                std::to_string(n) + " x " + std::to_string(s));
  const bool least_squares = !r.optimality.empty();
  const std::string factorization = r.method;
  // the solution (n × s) comes back as the record's dataset, the (n, s) Fortran array
  ResultRecord rec = solve_record(r, least_squares ? o.optimality_tol : o.backward_tol, 0, Backend::cpu, "none");
  rec.rows = m, rec.right_hand_sides = s, rec.nnz = a.nnz();
  rec.spmm_kernel = "none (direct)", rec.spmm_plan = "", rec.precision = "fp64", rec.time_setup = run.classify_seconds;
  py::dict d = result_dict(rec);
  d["cols"] = n;
  d["factorization"] = factorization;
  put_facts(d, run.facts);
  return d;
}

}  // namespace

void define_direct(py::module_& m) {
  m.def("direct_csr", &direct_csr, py::arg("m"), py::arg("n"), py::arg("indptr"), py::arg("indices"),
        py::arg("data"), py::arg("rhs"), py::arg("opt"));
  m.def("classify_csr", &classify_csr, py::arg("m"), py::arg("n"), py::arg("indptr"), py::arg("indices"),
        py::arg("data"));
}

}  // namespace tcsolve::pyext
