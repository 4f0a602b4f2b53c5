// Shared solver pieces: Jacobi diagonal, operator checks, the ‖Op‖₂ estimate.
#include <algorithm>
#include "solvers/solver_common.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/orthonormalize.hpp"

namespace tcsolve {
namespace detail {

std::vector<double> jacobi_inverse(const std::vector<double>& diag_a,
                                   const std::vector<double>& diag_b, double shift,
                                   std::int64_t n) {
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(diag_a.size()) == n, "Jacobi diagonal length != n");
  TCSOLVE_REQUIRE(diag_b.empty() || static_cast<std::int64_t>(diag_b.size()) == n,
                  "Jacobi mass diagonal length != n");
  std::vector<double> inv(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double d = diag_a[i] - (diag_b.empty() ? shift : shift * diag_b[i]);
    d = std::abs(d);
    inv[i] = d > 1e-300 && std::isfinite(d) ? 1.0 / d : 1.0;
  }
  return inv;
}

void require_operator(const LinearOperator<double>& op, std::int64_t n, Space space,
                      const char* what) {
  if (op.rows() != n || op.cols() != n)
    throw InvalidArgument(std::string(what) + " must be " + std::to_string(n) + " × " +
                          std::to_string(n) + ", is " + std::to_string(op.rows()) + " × " +
                          std::to_string(op.cols()));
  if (op.space() != space)
    throw InvalidArgument(std::string(what) + " lives in another memory space than the dense ops");
}

namespace {
// ‖b_j‖ overflowed, underflowed, is 0 or not finite: the norm of 2^∓600·b_j (one pass through
// scratch), finite unless b_j holds a non-finite entry.
void rescue_scale(DenseBlockOps& ops, MvView<const double> rhs, MvView<double> scratch, std::int64_t j,
                  double& bn, double& cs, const char* who, double zero_bn) {
  const int k = bn > 1.0 ? -600 : 600;
  const double f = std::ldexp(1.0, k), zero = 0.0;
  auto t = scratch.columns(0, 1);
  ops.axpby_columns(&f, rhs.columns(j, 1), &zero, t);
  double nu = 0.0;
  ops.column_norms(t, &nu);
  if (!std::isfinite(nu))
    throw InvalidArgument(std::string(who) + ": right-hand side column " + std::to_string(j) +
                          " has a non-finite entry");
  if (nu == 0.0) {  // a zero column: x = 0 is exact
    cs = 1.0, bn = zero_bn;
    return;
  }
  int e = 0;
  const double m = std::frexp(nu, &e);
  e -= k;
  const int ec = std::clamp(e, -1020, 1020);
  cs = std::ldexp(1.0, ec);
  bn = std::ldexp(m, e - ec);
}
}  // namespace

void begin_run(RunBase& r, const char* who, std::string method, MvView<const double> rhs, MvView<double> x,
               std::int64_t n, std::int64_t smax, Space space, bool want_norms) {
  const std::string w(who);
  TCSOLVE_REQUIRE(rhs.rows == n && x.rows == n && x.cols == rhs.cols, w + ": shape mismatch");
  TCSOLVE_REQUIRE(rhs.cols <= smax, w + ": more right-hand sides than the workspace holds");
  TCSOLVE_REQUIRE(rhs.space == space && x.space == space, w + ": blocks in another memory space than the dense ops");
  r.rhs = rhs, r.x = x, r.s = rhs.cols;
  r.res.n = n;
  r.res.method = std::move(method);
  r.res.column_iterations.assign(r.s, -1);
  r.want_norms = want_norms;
}

void power_of_two_scales(DenseBlockOps& ops, MvView<const double> rhs, MvView<double> scratch, double* bn,
                         double* cs, const char* who, double zero_bn) {
  ops.column_norms(rhs, bn);
  for (std::int64_t j = 0; j < rhs.cols; ++j) {
    const double v = bn[j];
    if (v >= 1e-150 && v <= 1e150) {  // ‖b_j‖² was formed without overflow or underflow
      int e = 0;
      bn[j] = std::frexp(v, &e);
      cs[j] = std::ldexp(1.0, e);
    } else {
      rescue_scale(ops, rhs, scratch, j, bn[j], cs[j], who, zero_bn);
    }
  }
}

}  // namespace detail

void initial_block(DenseBlockOps& ops, MvView<double> x, const EigenOptions& opt) {
  ops.fill_random(x, opt.seed);
  const std::int64_t c = opt.start ? std::min(x.cols, opt.start_cols) : 0;
  if (c > 0) ops.from_host(opt.start, x.rows, x.columns(0, c));
}

double estimate_norm(const LinearOperator<double>& op, DenseBlockOps& ops, int steps, int cols,
                     std::uint64_t seed) {
  const std::int64_t n = op.rows();
  cols = static_cast<int>(std::min<std::int64_t>(cols, n));
  MultiVector<double> x = ops.allocate(n, cols), y = ops.allocate(n, cols);
  ops.reserve(n, cols, cols * cols);
  ops.fill_random(x.view(), seed);
  OrthoWorkspace ws;
  detail::ApplyClock clock(ops);
  double est = 0.0;
  std::vector<double> g(cols * cols);
  for (int s = 0; s < steps; ++s) {
    auto o = orthonormalize(ops, x.view(), MvView<double>{}, ws);
    if (o.rank == 0) break;
    auto xv = x.columns(0, o.rank);
    clock.apply(op, xv, y.columns(0, o.rank));
    // ‖Op·X‖² over the orthonormal block: largest eigenvalue of (OpX)ᵀ(OpX).
    ops.gram(y.columns(0, o.rank), y.columns(0, o.rank), g.data(), o.rank);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(
        Eigen::Map<Eigen::MatrixXd>(g.data(), o.rank, o.rank));
    est = std::max(est, std::sqrt(std::max(0.0, es.eigenvalues().maxCoeff())));
    ops.copy(y.columns(0, o.rank), xv);
    if (o.rank < cols) break;
  }
  return est;
}

}  // namespace tcsolve

namespace tcsolve::detail {

void apply_ordered(ApplyOrder order, DenseBlockOps& ops, const LinearOperator<double>& op,
                   MvView<const double> x, MvView<double> y) {
  switch (order) {
    case ApplyOrder::synchronize:
      ops.synchronize();
      op.apply(x, y);
      if (ops.space() == Space::device) device_synchronize();
      break;
    case ApplyOrder::events:
      ops.queue().external_begin();
      op.apply(x, y);
      ops.queue().external_end();
      break;
    case ApplyOrder::same_stream:
      op.apply(x, y);
      break;
  }
}

}  // namespace tcsolve::detail
