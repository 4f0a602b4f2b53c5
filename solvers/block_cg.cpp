// Breakdown-free block CG (see block_cg.hpp for the recurrence, memory and cost).
#include "solvers/block_cg.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve {

namespace {
using Mat = Eigen::MatrixXd;
using MatMap = Eigen::Map<Mat>;
}  // namespace

struct BlockCg::Impl {
  const LinearOperator<double>& a;
  DenseBlockOps& ops;
  std::int64_t n, smax;
  CgOptions opt;
  MultiVector<double> xa, r, z, p, q, dinv;
  OrthoWorkspace ows;
  std::vector<double> ptq, ptr, qtz, alpha, beta, rn, bn, coef, ones;
  std::vector<std::int64_t> act, keep_idx;

  Impl(const LinearOperator<double>& a_, DenseBlockOps& ops_, std::int64_t s, CgOptions o)
      : a(a_), ops(ops_), n(a_.rows()), smax(s), opt(std::move(o)) {
    detail::require_operator(a, n, ops.space(), "A");
    if (opt.preconditioner) detail::require_operator(*opt.preconditioner, n, ops.space(), "M");
    TCSOLVE_REQUIRE(s >= 1, "block CG: need at least one right-hand side");
    TCSOLVE_REQUIRE(opt.tol > 0, "block CG: tol must be positive");
    ops.reserve(n, s, s * s);
    xa = ops.allocate(n, s), r = ops.allocate(n, s), z = ops.allocate(n, s);
    p = ops.allocate(n, s), q = ops.allocate(n, s);
    if (!opt.preconditioner && !opt.jacobi_diagonal.empty()) {
      auto inv = detail::jacobi_inverse(opt.jacobi_diagonal, {}, 0.0, n);
      dinv = ops.allocate(n, 1);
      ops.from_host(inv.data(), n, dinv.view());
    }
    for (auto* v : {&ptq, &ptr, &qtz, &alpha, &beta, &coef}) v->resize(s * s);
    rn.resize(s), bn.resize(s), ones.assign(s, 1.0);
    act.reserve(s), keep_idx.reserve(s);
  }

  void precondition(detail::ApplyClock& clock, MvView<const double> in, MvView<double> out) {
    if (opt.preconditioner) clock.apply(*opt.preconditioner, in, out);
    else if (dinv.data()) ops.scale_rows(dinv.data(), in, out);
    else ops.copy(in, out);
  }

  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
    const double t0 = detail::now_seconds();
    const std::int64_t s = rhs.cols;
    TCSOLVE_REQUIRE(rhs.rows == n && x.rows == n && x.cols == s, "block CG: shape mismatch");
    TCSOLVE_REQUIRE(s <= smax, "block CG: more right-hand sides than the workspace holds");
    TCSOLVE_REQUIRE(rhs.space == ops.space() && x.space == ops.space(),
                    "block CG: blocks in another memory space than the dense ops");
    SolveResult res;
    res.n = n;
    res.column_iterations.assign(s, -1);
    detail::ApplyClock clock(ops);
    ops.column_norms(rhs, bn.data());
    for (std::int64_t j = 0; j < s; ++j)
      if (bn[j] == 0.0) bn[j] = 1.0;  // b = 0: absolute test, x = 0 is exact
    if (!use_x0) ops.fill_zero(x);
    std::int64_t it = 0;
    // Columns to (re)solve: all at first, then those whose true residual failed.
    act.clear();
    for (std::int64_t j = 0; j < s; ++j) act.push_back(j);
    auto true_residuals = [&](MvView<double> rbuf) {
      // rbuf (n × s) = rhs − A·x; returns relative norms in rn.
      clock.apply(a, x, rbuf);
      std::vector<double> neg1(s, -1.0);
      ops.axpby_columns(ones.data(), rhs, neg1.data(), rbuf);
      ops.column_norms(rbuf, rn.data());
      for (std::int64_t j = 0; j < s; ++j) rn[j] /= bn[j];
    };
    for (int cycle = 0; cycle < opt.max_cycles && !act.empty(); ++cycle) {
      const std::int64_t na0 = static_cast<std::int64_t>(act.size());
      // R = (rhs − A·x)(:, act), Xa = x(:, act).
      true_residuals(z.columns(0, s));  // z as scratch (n × s)
      if (cycle == 0 && !use_x0) {
        // Zero start: R = rhs exactly.
      }
      ops.gather_columns(z.columns(0, s), act.data(), na0, r.columns(0, na0));
      ops.gather_columns(x, act.data(), na0, xa.columns(0, na0));
      std::int64_t na = na0;
      // Drop columns already below tol (their x stays).
      {
        keep_idx.clear();
        std::vector<std::int64_t> still;
        for (std::int64_t j = 0; j < na; ++j) {
          if (rn[act[j]] <= opt.tol) {
            if (res.column_iterations[act[j]] < 0) res.column_iterations[act[j]] = it;
          } else {
            keep_idx.push_back(j);
            still.push_back(act[j]);
          }
        }
        if (static_cast<std::int64_t>(still.size()) < na) {
          na = compact(keep_idx, na);
          act = still;
        }
      }
      if (na == 0) break;
      precondition(clock, r.columns(0, na), p.columns(0, na));
      auto o = orthonormalize_once(p.columns(0, na));
      std::int64_t rk = o.rank;
      OrthoBranch branch = o.branch;
      while (na > 0 && it < opt.max_iterations) {
        detail::IterationTimer timer(clock);
        IterationRecord rec;
        rec.iteration = it;
        rec.ortho = branch;
        if (rk == 0) {
          res.status = SolverStatus::breakdown;
          res.reason = "search block lost all rank (no new directions)";
          break;
        }
        auto P = p.columns(0, rk);
        auto Q = q.columns(0, rk);
        auto R = r.columns(0, na);
        clock.apply(a, P, Q);
        ops.gram(P, Q, ptq.data(), rk);
        ops.gram(P, R, ptr.data(), rk);
        Mat PtQ = MatMap(ptq.data(), rk, rk);
        PtQ = 0.5 * (PtQ + PtQ.transpose()).eval();
        Eigen::LLT<Mat> llt(PtQ);
        if (llt.info() != Eigen::Success) {
          Eigen::SelfAdjointEigenSolver<Mat> es(PtQ);
          double lmin = es.eigenvalues().minCoeff();
          res.status = SolverStatus::breakdown;
          res.reason = "A is not positive definite: pᵀAp = " + std::to_string(lmin) +
                       " ≤ 0 for a search direction p (‖p‖ = 1) at iteration " + std::to_string(it);
          break;
        }
        {
          double dmin = llt.matrixL().toDenseMatrix().diagonal().minCoeff();
          if (!(dmin > 0)) {
            res.status = SolverStatus::breakdown;
            res.reason = "A is not positive definite: pᵀAp ≤ 0 at iteration " + std::to_string(it);
            break;
          }
        }
        // α = (PᵀQ)⁻¹·PᵀR; X += P·α; R −= Q·α.
        MatMap(alpha.data(), rk, na) = llt.solve(MatMap(ptr.data(), rk, na));
        ops.gemm(1.0, P, alpha.data(), rk, 1.0, xa.columns(0, na));
        ops.gemm(-1.0, Q, alpha.data(), rk, 1.0, R);
        ops.column_norms(R, rn.data());
        ++it;
        keep_idx.clear();
        std::vector<std::int64_t> still;
        still.reserve(na);
        std::int64_t nconv = 0;
        for (std::int64_t j = 0; j < na; ++j) {
          if (rn[j] <= opt.tol * bn[act[j]]) {
            ++nconv;
            res.column_iterations[act[j]] = it;
          } else {
            keep_idx.push_back(j);
            still.push_back(act[j]);
          }
        }
        if (opt.keep_history) {
          rec.residual_norms.assign(rn.begin(), rn.begin() + na);
          rec.converged = nconv;
          rec.active = na - nconv;
        }
        if (nconv > 0) {
          // Converged columns of Xa go back to x; the rest is compacted.
          for (std::int64_t j = 0; j < na; ++j)
            if (rn[j] <= opt.tol * bn[act[j]])
              ops.copy(xa.columns(j, 1), x.columns(act[j], 1));
          na = compact(keep_idx, na);
          act = still;
        }
        if (na > 0) {
          // Z = M·R; β = −(PᵀQ)⁻¹·QᵀZ; P = orth(Z + P·β).
          auto Z = z.columns(0, na);
          precondition(clock, r.columns(0, na), Z);
          ops.gram(Q, Z, qtz.data(), rk);
          MatMap(beta.data(), rk, na) = -llt.solve(MatMap(qtz.data(), rk, na));
          ops.gemm(1.0, P, beta.data(), rk, 1.0, Z);
          std::swap(p, z);
          auto o2 = orthonormalize_once(p.columns(0, na));
          rk = o2.rank;
          branch = o2.branch;
        }
        ops.synchronize();
        auto [ap, de] = timer.split();
        rec.apply_seconds = ap, rec.dense_seconds = de;
        if (opt.on_iteration) opt.on_iteration(rec);
        if (opt.keep_history) res.history.push_back(std::move(rec));
      }
      // Unconverged active columns: write back their current iterate.
      for (std::int64_t j = 0; j < na; ++j) ops.copy(xa.columns(j, 1), x.columns(act[j], 1));
      if (res.status == SolverStatus::breakdown) break;
      // True residuals of every column; the failing ones start another cycle.
      true_residuals(z.columns(0, s));
      act.clear();
      for (std::int64_t j = 0; j < s; ++j)
        if (rn[j] > opt.tol) act.push_back(j);
      if (it >= opt.max_iterations) break;
    }
    // Final true residuals.
    true_residuals(z.columns(0, s));
    res.residual_norms.assign(rn.begin(), rn.begin() + s);
    bool ok = true;
    for (std::int64_t j = 0; j < s; ++j) ok = ok && rn[j] <= opt.tol;
    if (res.status != SolverStatus::breakdown) {
      res.status = ok ? SolverStatus::converged : SolverStatus::not_converged;
      if (!ok) res.reason = "iteration limit " + std::to_string(opt.max_iterations) +
                            " reached (or true residual above tol after " +
                            std::to_string(opt.max_cycles) + " cycles)";
    }
    res.iterations = it;
    res.operator_applies = clock.columns();
    res.seconds = detail::now_seconds() - t0;
    return res;
  }

  // Keeps columns keep_idx of Xa and R (in order), through z as scratch. Returns the new count.
  std::int64_t compact(const std::vector<std::int64_t>& idx, std::int64_t na) {
    const std::int64_t nk = static_cast<std::int64_t>(idx.size());
    if (nk == na) return na;
    if (nk > 0) {
      ops.gather_columns(xa.columns(0, na), idx.data(), nk, z.columns(0, nk));
      ops.copy(z.columns(0, nk), xa.columns(0, nk));
      ops.gather_columns(r.columns(0, na), idx.data(), nk, z.columns(0, nk));
      ops.copy(z.columns(0, nk), r.columns(0, nk));
    }
    return nk;
  }

  // One SVQB/Cholesky pass is enough here: P only has to span the block well conditioned; α and
  // β use (PᵀQ)⁻¹ exactly. Rank-revealing: directions with relative singular value < sqrt(rank_tol)
  // are dropped (breakdown-free block CG).
  OrthoOutcome orthonormalize_once(MvView<double> w) {
    return orthonormalize(ops, w, MvView<double>{}, ows, opt.rank_tol, /*passes=*/1);
  }
};

BlockCg::BlockCg(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs,
                 CgOptions opt)
    : impl_(std::make_unique<Impl>(a, ops, max_rhs, std::move(opt))) {}
BlockCg::~BlockCg() = default;
SolveResult BlockCg::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  return impl_->solve(rhs, x, use_x0);
}

SolveResult block_cg(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb,
                     std::int64_t s, DenseBlockOps& ops, const CgOptions& opt) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "block CG: A must be square");
  TCSOLVE_REQUIRE(s >= 1 && ldb >= n, "block CG: need s >= 1 and ldb >= n");
  BlockCg cg(a, ops, s, opt);
  MultiVector<double> b = ops.allocate(n, s), x = ops.allocate(n, s);
  ops.from_host(rhs, ldb, b.view());
  SolveResult res = cg.solve(b.view(), x.view(), false);
  res.solutions.resize(n * s);
  ops.to_host(x.view(), res.solutions.data(), n);
  return res;
}

}  // namespace tcsolve
