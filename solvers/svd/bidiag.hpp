// Thick-restart block Golub–Kahan–Lanczos bidiagonalization as a class of named steps (internal
// to solvers/svd; the entry point is svds() in svds.hpp).
//
// State, with c = current() (a multiple of nothing in particular after a restart):
//   V  n × (L + b)  orthonormal; V(:, 0:c) the expanded right basis, V(:, c:c+b) the next block
//   U  m × L        orthonormal; U(:, 0:c) the left basis
//   B  c × c (host) B = U(:, 0:c)ᵀ·A·V(:, 0:c), built from the projection coefficients, so that
//        A·V(:, 0:c) = U(:, 0:c)·B                                         (exact to rounding)
//        Aᵀ·U(:, 0:c) = V(:, 0:c)·Bᵀ + V(:, c:c+b)·S·E_lastᵀ               (E_last: last b columns)
//   Before the first restart B is upper block bidiagonal; after one it is diag(σ_keep) bordered
//   by the next block's coefficients (the "arrow"), which the SVD of B does not care about.
// Steps, in the order run() calls them:
//   start        V(:, 0:b) random from the seed (the first columns from opt.start), orthonormalized; c = 0
//   expand       W = A·V_c → U(:, c:c+b), projected out of U(:, 0:c) twice (B's column block c),
//                normalized (B's diagonal block R); Z = Aᵀ·U_c → V(:, c+b:c+2b), projected out of
//                V(:, 0:c+b) twice, normalized (the coupling S); c += b. Directions lost to rank
//                deficiency are refilled with random vectors (their rows of R or S are zero).
//   ritz         SVD of B = X·Σ·Yᵀ (c × c, host); the estimates ‖Aᵀu_j − σ_j v_j‖ = ‖S·X(c−b:c, j)‖
//                (A·v_j − σ_j·u_j = 0 by the first relation); run() looks after every block
//                step once c ≥ k + b and stops expanding when all k estimates pass
//   restart      U(:, 0:keep) = U·X_keep, V(:, 0:keep) = V·Y_keep, the next block moved to
//                V(:, keep:keep+b), B = diag(σ_keep); c = keep. The first k columns are then the
//                Ritz triplets.
//   verify       the true residuals of the first k triplets (one A and one Aᵀ apply of k columns)
// Memory: (m·(L + w) + n·(L + b + w))·8 bytes in the backend's space, w = max(b, k), plus the operators;
// O(L²) on the host. Nothing is allocated inside the loop except the history records.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::detail {

// Sizes of one GKL solve.
struct GklShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t block = 0;  // b
  std::int64_t basis = 0;  // L (columns of U)
  std::int64_t keep = 0;   // columns kept at a restart, k ≤ keep ≤ L − b
};
// The shape for (m, n, opt); fits == false when min(m, n) cannot hold a basis of k + 2 blocks
// (then the dense path solves). Throws InvalidArgument for k < 1 or k > min(m, n).
GklShape gkl_shape(std::int64_t m, std::int64_t n, const SvdOptions& opt, bool* fits);

class BlockGkl {
 public:
  using Mat = Eigen::MatrixXd;

  BlockGkl(const LinearOperator<double>& a, const LinearOperator<double>& at, DenseBlockOps& ops,
           const SvdOptions& opt, const GklShape& shape);
  BlockGkl(const BlockGkl&) = delete;
  BlockGkl& operator=(const BlockGkl&) = delete;

  // start, then expand until the basis is full · ritz · restart · (verify when the estimates
  // pass), until verified or opt.max_restarts. Fills result() (values, residuals, status; the
  // vectors stay in the backend until download()).
  void run();

  // ---- the steps (public: each is tested alone)
  void start();
  void expand();
  // SVD of B(0:c, 0:c); returns how many of the k wanted pass their estimate (tol·σ₁).
  std::int64_t ritz(IterationRecord& rec);
  void restart();
  // True residuals of the first k columns after a restart into result(); true when all pass.
  bool verify();
  // U(:, 0:k), V(:, 0:k) to result().u, result().v (host).
  void download();

  // ---- state (tests)
  const GklShape& shape() const { return shape_; }
  std::int64_t current() const { return c_; }
  MvView<double> left(std::int64_t cols) { return u_.columns(0, cols); }
  MvView<double> right(std::int64_t cols) { return v_.columns(0, cols); }
  const Mat& projection() const { return B_; }
  const Eigen::VectorXd& sigma() const { return sigma_; }  // Ritz values of the last ritz()
  const std::vector<double>& estimates() const { return est_; }
  double a_norm() const { return a_norm_; }
  SvdResult& result() { return res_; }

 private:
  // Projects W (rows × b) out of basis (rows × c) twice; the coefficients summed into h (c × b).
  void project_out(MvView<const double> basis, MvView<double> w, Mat* h);
  // Orthonormalizes block `first` of `basis` (b columns) against nothing but itself; W_in =
  // W_out·r (b × b); lost directions refilled (random, projected out of basis(:, 0:first)).
  void normalize(MultiVector<double>& basis, std::int64_t first, Mat& r);

  const LinearOperator<double>& a_;
  const LinearOperator<double>& at_;
  DenseBlockOps& ops_;
  const SvdOptions opt_;
  const GklShape shape_;
  ApplyClock clock_;
  OrthoWorkspace ows_;
  MultiVector<double> u_, v_, tu_, tv_;  // bases; scratch m × max(b, k), n × max(b, k)
  Mat B_, S_, X_, Y_, h_, r_, G_;
  Eigen::VectorXd sigma_;
  std::vector<double> est_, coef_, a_vals_, b_vals_;
  std::uint64_t refill_seed_;
  std::int64_t c_ = 0;
  double a_norm_ = 0;
  SvdResult res_;
};

}  // namespace tcsolve::detail
