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
  // Device blocks: xa (active solutions), qr = [Q | R] with Q ending and R starting at column
  // smax (so that [Q R] is one block for the fused Gram products), p (search block), z
  // (preconditioned residual, next P, scratch).
  MultiVector<double> xa, qr, p, z, dinv;
  OrthoWorkspace ows;
  // Host workspace, sized once.
  std::vector<double> g1, g2, dots, qtz, alpha, beta, rn, bn, neg1, ones;
  Mat ptq, ssc;
  Eigen::VectorXd dsc;
  Eigen::LLT<Mat> llt;
  std::vector<std::int64_t> act, keep_idx, still;

  Impl(const LinearOperator<double>& a_, DenseBlockOps& ops_, std::int64_t s, CgOptions o)
      : a(a_), ops(ops_), n(a_.rows()), smax(s), opt(std::move(o)) {
    detail::require_operator(a, n, ops.space(), "A");
    if (opt.preconditioner) detail::require_operator(*opt.preconditioner, n, ops.space(), "M");
    TCSOLVE_REQUIRE(s >= 1, "block CG: need at least one right-hand side");
    TCSOLVE_REQUIRE(opt.tol > 0, "block CG: tol must be positive");
    ops.reserve(n, s, 2 * s * s);
    xa = ops.allocate(n, s), qr = ops.allocate(n, 2 * s), z = ops.allocate(n, s);
    p = ops.allocate(n, s);
    if (!opt.preconditioner && !opt.jacobi_diagonal.empty()) {
      auto inv = detail::jacobi_inverse(opt.jacobi_diagonal, {}, 0.0, n);
      // M = c·I changes nothing in CG (α and β absorb c): skip the scaling passes.
      bool constant = std::all_of(inv.begin(), inv.end(), [&](double d) { return d == inv[0]; });
      if (!constant) {
        dinv = ops.allocate(n, 1);
        ops.from_host(inv.data(), n, dinv.view());
      }
    }
    g1.resize(2 * s * s), g2.resize(2 * s * s), qtz.resize(s * s), dots.resize(s);
    alpha.resize(s * s), beta.resize(s * s);
    rn.resize(s), bn.resize(s), ones.assign(s, 1.0), neg1.assign(s, -1.0);
    ptq.resize(s, s), ssc.resize(s, s), dsc.resize(s);
    act.reserve(s), keep_idx.reserve(s), still.reserve(s);
  }

  bool preconditioned() const { return opt.preconditioner != nullptr || dinv.data() != nullptr; }

  void precondition(detail::ApplyClock& clock, MvView<const double> in, MvView<double> out) {
    if (opt.preconditioner) clock.apply(*opt.preconditioner, in, out);
    else if (dinv.data()) ops.scale_rows(dinv.data(), in, out);
    else ops.copy(in, out);
  }

  MvView<double> qv(std::int64_t rk) { return qr.columns(smax - rk, rk); }
  MvView<double> rv(std::int64_t na) { return qr.columns(smax, na); }

  // PᵀQ (rk × rk, from g1) → ptq (symmetrized), scaled Cholesky D·PᵀQ·D = LLᵀ.
  // 0: fine; 1: positive definite but a pivot² < 1e-10 (block close to rank deficient);
  // 2: not positive definite.
  int factor_ptq(std::int64_t rk) {
    auto P = ptq.topLeftCorner(rk, rk);
    Eigen::Map<const Mat> G(g1.data(), rk, rk);
    P = 0.5 * (G + G.transpose());
    for (std::int64_t i = 0; i < rk; ++i) {
      if (!(P(i, i) > 0.0) || !std::isfinite(P(i, i))) return 2;
      dsc(i) = 1.0 / std::sqrt(P(i, i));
    }
    auto S = ssc.topLeftCorner(rk, rk);
    S = dsc.head(rk).asDiagonal() * P * dsc.head(rk).asDiagonal();
    llt.compute(S);
    if (llt.info() != Eigen::Success) return 2;
    double piv = 1e300;
    for (std::int64_t i = 0; i < rk; ++i) piv = std::min(piv, llt.matrixLLT()(i, i));
    if (!(piv > 0.0)) return 2;
    return piv * piv < 1e-10 ? 1 : 0;
  }
  // out (rk × cols) = sign·(PᵀQ)⁻¹·rhs (rhs rk × cols, leading dimension ldr), through the
  // scaled factor: (PᵀQ)⁻¹ = D·(D·PᵀQ·D)⁻¹·D.
  void solve_ptq(const double* rhs, std::int64_t ldr, std::int64_t rk, std::int64_t cols,
                 double sign, double* out) {
    Eigen::Map<Mat> o(out, rk, cols);
    Eigen::Map<const Mat, 0, Eigen::OuterStride<>> r(rhs, rk, cols, Eigen::OuterStride<>(ldr));
    o = sign * (dsc.head(rk).asDiagonal() * r);
    llt.solveInPlace(o);
    o = dsc.head(rk).asDiagonal() * o;
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
    const bool pre = preconditioned();
    const bool want_norms = opt.keep_history || static_cast<bool>(opt.on_iteration);
    std::int64_t it = 0;
    // Columns to (re)solve: all at first, then those whose true residual failed.
    act.clear();
    for (std::int64_t j = 0; j < s; ++j) act.push_back(j);
    auto true_residuals = [&](MvView<double> rbuf) {
      // rbuf (n × s) = rhs − A·x; relative norms into rn.
      clock.apply(a, x, rbuf);
      ops.axpby_columns(ones.data(), rhs, neg1.data(), rbuf);
      ops.column_norms(rbuf, rn.data());
      for (std::int64_t j = 0; j < s; ++j) rn[j] /= bn[j];
    };
    for (int cycle = 0; cycle < opt.max_cycles && !act.empty(); ++cycle) {
      const std::int64_t na0 = static_cast<std::int64_t>(act.size());
      // R = (rhs − A·x)(:, act), Xa = x(:, act).
      true_residuals(z.columns(0, s));  // z as scratch (n × s)
      ops.gather_columns(z.columns(0, s), act.data(), na0, rv(na0));
      ops.gather_columns(x, act.data(), na0, xa.columns(0, na0));
      std::int64_t na = na0;
      // Drop columns already below tol (their x stays).
      keep_idx.clear(), still.clear();
      for (std::int64_t j = 0; j < na; ++j) {
        if (rn[act[j]] <= opt.tol) {
          if (res.column_iterations[act[j]] < 0) res.column_iterations[act[j]] = it;
        } else {
          keep_idx.push_back(j);
          still.push_back(act[j]);
        }
      }
      if (static_cast<std::int64_t>(still.size()) < na) {
        na = compact(na);
        act.swap(still);
      }
      if (na == 0) break;
      precondition(clock, rv(na), p.columns(0, na));
      auto o = orthonormalize_once(p.columns(0, na));
      std::int64_t rk = o.rank;
      OrthoBranch branch = o.branch;
      while (na > 0 && it < opt.max_iterations) {
        detail::IterationTimer timer(clock);
        IterationRecord rec;
        rec.iteration = it;
        if (rk == 0) {
          res.status = SolverStatus::breakdown;
          res.reason = "search block lost all rank (no new directions)";
          break;
        }
        // Q = A·P; [PᵀQ PᵀR] = Pᵀ·[Q R] (round trip 1).
        clock.apply(a, p.columns(0, rk), qv(rk));
        ops.gram_deferred(p.columns(0, rk), qr.columns(smax - rk, rk + na), g1.data(), rk);
        ops.fetch();
        int f = factor_ptq(rk);
        if (f != 0) {
          // The block is (nearly) rank deficient: rank-revealing orthonormalization, A·P again.
          auto o2 = orthonormalize_once(p.columns(0, rk));
          branch = std::max(branch, o2.branch);
          rk = o2.rank;
          if (rk == 0) {
            res.status = SolverStatus::breakdown;
            res.reason = "search block lost all rank (no new directions)";
            break;
          }
          clock.apply(a, p.columns(0, rk), qv(rk));
          ops.gram_deferred(p.columns(0, rk), qr.columns(smax - rk, rk + na), g1.data(), rk);
          ops.fetch();
          f = factor_ptq(rk);
          if (f == 2) {
            Eigen::SelfAdjointEigenSolver<Mat> es(ptq.topLeftCorner(rk, rk),
                                                  Eigen::EigenvaluesOnly);
            double lmin = es.eigenvalues().minCoeff();
            res.status = SolverStatus::breakdown;
            res.reason = "A is not positive definite: pᵀAp = " + std::to_string(lmin) +
                         " ≤ 0 for a search direction p (‖p‖ = 1) at iteration " +
                         std::to_string(it);
            break;
          }
        }
        rec.ortho = branch;
        branch = OrthoBranch::none;
        auto P = p.columns(0, rk);
        auto Q = qv(rk);
        auto R = rv(na);
        // α = (PᵀQ)⁻¹·PᵀR; X += P·α; R −= Q·α.
        solve_ptq(g1.data() + rk * rk, rk, rk, na, 1.0, alpha.data());
        ops.gemm(1.0, P, alpha.data(), rk, 1.0, xa.columns(0, na));
        ops.gemm(-1.0, Q, alpha.data(), rk, 1.0, R);
        // QᵀZ and ‖r_j‖² (round trip 2).
        std::int64_t ldq = rk;
        if (pre) {
          precondition(clock, R, z.columns(0, na));
          ops.gram_deferred(Q, z.columns(0, na), g2.data(), rk);
          ops.column_dots_deferred(R, R, dots.data());
        } else {
          // [Q R]ᵀ·R: QᵀR in rows 0:rk, RᵀR below (its diagonal: ‖r_j‖²).
          ldq = rk + na;
          ops.gram_deferred(qr.columns(smax - rk, rk + na), R, g2.data(), ldq);
        }
        ops.fetch();
        for (std::int64_t j = 0; j < na; ++j)
          rn[j] = std::sqrt(std::max(0.0, pre ? dots[j] : g2[(rk + j) + j * ldq]));
        ++it;
        keep_idx.clear(), still.clear();
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
        if (want_norms) rec.residual_norms.assign(rn.begin(), rn.begin() + na);
        rec.converged = nconv;
        rec.active = na - nconv;
        // QᵀZ of the columns that stay (compact, rk × |keep|).
        for (std::size_t jj = 0; jj < keep_idx.size(); ++jj)
          std::copy(g2.data() + keep_idx[jj] * ldq, g2.data() + keep_idx[jj] * ldq + rk,
                    qtz.data() + jj * rk);
        if (nconv > 0) {
          // Converged columns of Xa go back to x; the rest is compacted.
          for (std::int64_t j = 0; j < na; ++j)
            if (rn[j] <= opt.tol * bn[act[j]]) ops.copy(xa.columns(j, 1), x.columns(act[j], 1));
          na = compact(na);
          act.swap(still);
          if (pre && na > 0) precondition(clock, rv(na), z.columns(0, na));
        }
        if (na > 0) {
          // β = −(PᵀQ)⁻¹·QᵀZ; P = Z + P·β (into z, then swapped).
          solve_ptq(qtz.data(), rk, rk, na, -1.0, beta.data());
          if (!pre) ops.copy(rv(na), z.columns(0, na));
          ops.gemm(1.0, p.columns(0, rk), beta.data(), rk, 1.0, z.columns(0, na));
          std::swap(p, z);
          rk = na;
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
  std::int64_t compact(std::int64_t na) {
    const std::int64_t nk = static_cast<std::int64_t>(keep_idx.size());
    if (nk == na) return na;
    if (nk > 0) {
      ops.gather_columns(xa.columns(0, na), keep_idx.data(), nk, z.columns(0, nk));
      ops.copy(z.columns(0, nk), xa.columns(0, nk));
      ops.gather_columns(rv(na), keep_idx.data(), nk, z.columns(0, nk));
      ops.copy(z.columns(0, nk), rv(nk));
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
