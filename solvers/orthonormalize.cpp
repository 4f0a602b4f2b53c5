// Cholesky-QR twice with SVQB fallback (see orthonormalize.hpp), and the small host helpers.
#include "solvers/orthonormalize.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace tcsolve {

const char* to_string(SolverStatus s) {
  switch (s) {
    case SolverStatus::converged: return "converged";
    case SolverStatus::not_converged: return "not_converged";
    case SolverStatus::breakdown: return "breakdown";
    case SolverStatus::unverified: return "unverified";
    case SolverStatus::interrupted: return "interrupted";
  }
  return "?";
}

const char* to_string(OrthoBranch b) {
  switch (b) {
    case OrthoBranch::none: return "none";
    case OrthoBranch::cholqr2: return "cholqr2";
    case OrthoBranch::svqb: return "svqb";
    case OrthoBranch::svqb_drop: return "svqb_drop";
  }
  return "?";
}

namespace small {

using MatMap = Eigen::Map<Eigen::MatrixXd>;
using CMatMap = Eigen::Map<const Eigen::MatrixXd>;

bool cholesky_upper(const double* g, std::int64_t n, double* r) {
  Eigen::LLT<Eigen::MatrixXd> llt(CMatMap(g, n, n));
  if (llt.info() != Eigen::Success) return false;
  MatMap(r, n, n) = llt.matrixU();
  for (std::int64_t i = 0; i < n; ++i)
    if (!(r[i + i * n] > 0.0) || !std::isfinite(r[i + i * n])) return false;
  return true;
}

void eigh(const double* a, std::int64_t n, double* w, double* v) {
  Eigen::MatrixXd s = CMatMap(a, n, n);
  s = 0.5 * (s + s.transpose()).eval();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(s);
  if (es.info() != Eigen::Success) throw Error("small symmetric eigensolver did not converge");
  Eigen::Map<Eigen::VectorXd>(w, n) = es.eigenvalues();
  MatMap(v, n, n) = es.eigenvectors();
}

bool eigh_generalized(const double* a, const double* b, std::int64_t n, double* w, double* v) {
  Eigen::MatrixXd sa = CMatMap(a, n, n), sb = CMatMap(b, n, n);
  sa = 0.5 * (sa + sa.transpose()).eval();
  sb = 0.5 * (sb + sb.transpose()).eval();
  Eigen::LLT<Eigen::MatrixXd> llt(sb);
  if (llt.info() != Eigen::Success) return false;
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(sa, sb);
  if (es.info() != Eigen::Success) return false;
  Eigen::Map<Eigen::VectorXd>(w, n) = es.eigenvalues();
  MatMap(v, n, n) = es.eigenvectors();
  return true;
}

}  // namespace small

namespace {

// One pass on the Gram matrix g (p × p): fills t (p × r) and returns r and the branch.
std::int64_t one_pass(const double* g_raw, std::int64_t p, double drop_tol, std::vector<double>& t,
                      OrthoBranch& branch) {
  Eigen::MatrixXd g = Eigen::Map<const Eigen::MatrixXd>(g_raw, p, p);
  g = 0.5 * (g + g.transpose()).eval();
  Eigen::VectorXd d(p);
  double dmax = 0.0;
  for (std::int64_t i = 0; i < p; ++i) dmax = std::max(dmax, g(i, i));
  for (std::int64_t i = 0; i < p; ++i)
    d(i) = g(i, i) > 1e-300 && g(i, i) > 1e-28 * dmax ? 1.0 / std::sqrt(g(i, i)) : 0.0;
  Eigen::MatrixXd gs = d.asDiagonal() * g * d.asDiagonal();
  bool all_nonzero = (d.array() > 0.0).all();
  if (all_nonzero) {
    Eigen::LLT<Eigen::MatrixXd> llt(gs);
    if (llt.info() == Eigen::Success) {
      Eigen::MatrixXd l = llt.matrixL();
      double mn = l.diagonal().minCoeff();
      if (std::isfinite(mn) && mn * mn >= 1e-10) {
        // T = D·L⁻ᵀ: W·T has Gram L⁻¹·Gs·L⁻ᵀ = I.
        Eigen::MatrixXd lt_inv = l.transpose().triangularView<Eigen::Upper>().solve(
            Eigen::MatrixXd::Identity(p, p));
        t.resize(p * p);
        Eigen::Map<Eigen::MatrixXd>(t.data(), p, p) = d.asDiagonal() * lt_inv;
        branch = std::max(branch, OrthoBranch::cholqr2);
        return p;
      }
    }
  }
  // SVQB: Gs = V·Λ·Vᵀ, keep λ > drop_tol·λmax, T = D·V_keep·Λ_keep^(-1/2).
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(gs);
  if (es.info() != Eigen::Success) throw Error("orthonormalize: eigensolver failed on the Gram matrix");
  const Eigen::VectorXd& lam = es.eigenvalues();
  double lmax = lam.size() ? lam.maxCoeff() : 0.0;
  std::int64_t r = 0;
  for (std::int64_t i = 0; i < p; ++i)
    if (lmax > 0 && lam(i) > drop_tol * lmax && lam(i) > 0) ++r;
  t.resize(p * std::max<std::int64_t>(r, 1));
  Eigen::Map<Eigen::MatrixXd> tm(t.data(), p, r);
  std::int64_t c = 0;
  // Largest first, so the kept columns are ordered by importance.
  for (std::int64_t i = p - 1; i >= 0; --i) {
    if (!(lmax > 0 && lam(i) > drop_tol * lmax && lam(i) > 0)) continue;
    tm.col(c++) = d.asDiagonal() * es.eigenvectors().col(i) / std::sqrt(lam(i));
  }
  branch = std::max(branch, r < p ? OrthoBranch::svqb_drop : OrthoBranch::svqb);
  return r;
}

}  // namespace

OrthoOutcome orthonormalize(DenseBlockOps& ops, MvView<double> w, MvView<double> bw,
                            OrthoWorkspace& ws, double drop_tol, int passes) {
  const std::int64_t p = w.cols;
  OrthoOutcome out;
  if (p == 0) return out;
  const bool with_b = bw.cols > 0;
  ws.g_in.resize(p * p);
  ops.gram(w, with_b ? MvView<const double>(bw) : MvView<const double>(w), ws.g_in.data(), p);
  std::int64_t r1 = one_pass(ws.g_in.data(), p, drop_tol, ws.t, out.branch);
  if (r1 == 0) {
    out.rank = 0;
    ws.t.assign(p, 0.0);
    return out;
  }
  ops.multiply_inplace(w, ws.t.data(), p, r1);
  if (with_b) ops.multiply_inplace(bw, ws.t.data(), p, r1);
  if (passes < 2) {
    out.rank = r1;
    return out;
  }
  auto w1 = w.columns(0, r1);
  auto bw1 = with_b ? bw.columns(0, r1) : MvView<double>{};
  ws.g.resize(r1 * r1);
  ops.gram(w1, with_b ? MvView<const double>(bw1) : MvView<const double>(w1), ws.g.data(), r1);
  OrthoBranch b2 = OrthoBranch::none;
  std::int64_t r2 = one_pass(ws.g.data(), r1, drop_tol, ws.t2, b2);
  if (b2 == OrthoBranch::cholqr2 && out.branch == OrthoBranch::cholqr2) {
    // both passes Cholesky
  } else {
    out.branch = std::max(out.branch, b2);
  }
  if (r2 == 0) {
    out.rank = 0;
    return out;
  }
  ops.multiply_inplace(w1, ws.t2.data(), r1, r2);
  if (with_b) ops.multiply_inplace(bw1, ws.t2.data(), r1, r2);
  // T = T1·T2 (p × r2).
  ws.tmp.resize(p * r2);
  Eigen::Map<Eigen::MatrixXd>(ws.tmp.data(), p, r2).noalias() =
      Eigen::Map<const Eigen::MatrixXd>(ws.t.data(), p, r1) *
      Eigen::Map<const Eigen::MatrixXd>(ws.t2.data(), r1, r2);
  ws.t.swap(ws.tmp);
  out.rank = r2;
  return out;
}

}  // namespace tcsolve
