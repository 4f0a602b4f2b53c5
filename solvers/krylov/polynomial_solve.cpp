// The polynomial-preconditioned Krylov solve (polynomial_solve.hpp): B-phase, p(A)·Y, the true
// residuals of A, and the plain method for what is left.
#include "solvers/krylov/polynomial_solve.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/device.hpp"
#include "core/format.hpp"
#include "core/trace.hpp"
#include "solvers/host_result.hpp"
#include "solvers/krylov/gmres.hpp"
#include "solvers/krylov/minres.hpp"
#include "solvers/solution_check.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::krylov {

SolveResult run(KrylovMethod m, const LinearOperator<double>& op, DenseBlockOps& ops, const KrylovOptions& o,
                MvView<const double> b, MvView<double> x, bool use_x0) {
  if (m == KrylovMethod::gmres) return BlockGmres(op, ops, b.cols, o).solve(b, x, use_x0);
  return BlockMinres(op, ops, b.cols, o).solve(b, x, use_x0);
}

namespace {
// FGMRES where the polynomial has its fp32 apply and, on the GPU, its blocks fit: GMRES's
// (m + 3)·n·s doubles, Z's m·n·s and the fp32 apply's four fp32 blocks (2·n·s), with a tenth to
// spare (GMRES on B needs (m + 4)·n·s; on a GPU too small for Z, the run keeps that path rather
// than failing).
bool use_fgmres(KrylovMethod m, const GmresPolynomial& poly, DenseBlockOps& ops, const KrylovOptions& o,
                std::int64_t n, std::int64_t s) {
  if (m != KrylovMethod::gmres || !poly.has_fp32()) return false;
  if (ops.space() != Space::device) return true;
  const double need = 8.0 * static_cast<double>(n) * static_cast<double>(s) * (2.0 * o.restart + 5.0);
  return 1.1 * need <= static_cast<double>(device_free_bytes());
}
}  // namespace

SolveResult polynomial_solve(KrylovMethod m, const LinearOperator<double>& a, const GmresPolynomial& poly,
                             MvView<const double> rhs, MvView<double> x, DenseBlockOps& ops,
                             const KrylovOptions& opt) {
  const double t0 = tcsolve::detail::now_seconds();
  const std::int64_t n = a.rows(), s = rhs.cols, d = poly.degree();
  const std::int64_t applied0 = poly.columns_applied();
  KrylovOptions o = opt;
  o.jacobi_diagonal.clear();
  o.preconditioner = nullptr;
  o.max_iterations = std::max<std::int64_t>(1, opt.max_iterations / d);
  trace_mark("polynomial solve: start");
  SolveResult r;
  std::string method;
  std::vector<double> rel;
  const bool flexible = use_fgmres(m, poly, ops, o, n, s);
  if (flexible) {
    // FGMRES on A with M⁻¹ = p(A) in fp32 steps: x comes out of the cycle's update (x += Z·y) and
    // GMRES's own true residuals; no p(A)·y in fp64 after it (H200, convdiff3d:100, 32 columns,
    // the command's seconds.solve at degree 30 / 40: 0.247 / 0.235 s on B in fp64, 0.240 / 0.218 s
    // this way).
    poly.reserve_fp32();
    o.preconditioner = &poly.polynomial32();
    o.flexible = true;
    r = run(m, a, ops, o, rhs, x, false);
    method = "f" + r.method + format(" with p(A) in fp32 steps, p of degree %lld", static_cast<long long>(d - 1));
    rel = r.residual_norms;
    trace_mark("polynomial solve: FGMRES with p(A) in fp32 done");
  } else {
    MultiVector<double> y = ops.allocate(n, s);
    r = run(m, poly.preconditioned(), ops, o, rhs, y.view(), false);
    trace_mark("polynomial solve: the method on A·p(A) done");
    method = r.method + format(" on A·p(A), p of degree %lld", static_cast<long long>(d - 1));
    poly.apply_polynomial(y.view(), x);
    rel = relative_residuals_in_space(a, ops, rhs, x, y.view());
    trace_mark("polynomial solve: x = p(A)·y and the true residuals");
  }
  std::vector<std::int64_t> above;
  for (std::int64_t j = 0; j < s; ++j)
    if (!(rel[j] <= opt.tol)) above.push_back(j);
  const std::int64_t used = r.iterations * d;
  // B's and p(A)'s products and A·x; FGMRES: p(A)'s and its own (A·z_j, the true residuals)
  r.operator_applies = poly.columns_applied() - applied0 + (flexible ? r.operator_applies : s);
  r.residual_norms = rel;
  r.method = method;
  for (std::int64_t j : above)
    if (j < static_cast<std::int64_t>(r.column_iterations.size())) r.column_iterations[j] = -1;
  if (above.empty()) {
    r.status = SolverStatus::converged;
    r.reason.clear();
    r.seconds = tcsolve::detail::now_seconds() - t0;
    return r;
  }
  const std::string first = format("%lld of %lld columns above tol %g after %lld %s (worst true "
                                   "residual %.3g; %s)",
                                   static_cast<long long>(above.size()), static_cast<long long>(s), opt.tol,
                                   static_cast<long long>(r.iterations),
                                   flexible ? "FGMRES steps with p(A) in fp32" : "steps on A·p(A)",
                                   *std::max_element(rel.begin(), rel.end()),
                                   r.reason.empty() ? to_string(r.status) : r.reason.c_str());
  if (r.status == SolverStatus::interrupted || r.status == SolverStatus::breakdown ||
      used >= opt.max_iterations) {
    if (r.status == SolverStatus::converged) r.status = SolverStatus::not_converged;
    r.reason = first;
    r.seconds = tcsolve::detail::now_seconds() - t0;
    return r;
  }
  // The plain method on A from X, for the iterations left (converged columns leave at once); a
  // column the polynomial left worse than x = 0 (‖b − A·x‖ > ‖b‖: a polynomial from roots that
  // do not describe A, e.g. a nilpotent one's) starts again from 0.
  for (std::int64_t j : above)
    if (!(rel[j] <= 1.0)) ops.fill_zero(x.columns(j, 1));
  KrylovOptions o2 = opt;
  o2.max_iterations = opt.max_iterations - used;
  SolveResult r2 = run(m, a, ops, o2, rhs, x, true);
  r2.method = method + ", then " + r2.method + " on A";
  r2.reason = r2.status == SolverStatus::converged ? std::string() : first + "; then " + r2.reason;
  r2.iterations += r.iterations;
  r2.operator_applies += r.operator_applies;
  r.history.insert(r.history.end(), r2.history.begin(), r2.history.end());
  r2.history = std::move(r.history);
  r2.seconds = tcsolve::detail::now_seconds() - t0;
  return r2;
}

SolveResult polynomial_solve(KrylovMethod m, const LinearOperator<double>& a, const GmresPolynomial& poly,
                             const double* rhs, std::int64_t ldb, std::int64_t s, DenseBlockOps& ops,
                             const KrylovOptions& opt) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(s >= 1 && ldb >= n, "polynomial_solve: need s >= 1 and ldb >= n");
  return tcsolve::detail::solve_from_host(ops, n, rhs, ldb, s, nullptr,
                                          [&](MvView<const double> b, MvView<double> x, bool) {
                                            return polynomial_solve(m, a, poly, b, x, ops, opt);
                                          });
}

}  // namespace tcsolve::krylov
