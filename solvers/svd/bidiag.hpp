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
//   start        V(:, 0:b) random from the seed (or the start block's first columns),
//                orthonormalized; c = 0. A start block that holds a restart's state continues it
//                instead (resume_restart: V(:, 0:p) given, U and B rebuilt from A·V; c = p − b).
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
//   checkpoint   after a restart when due: V(:, 0:c + b) to the host and opt.on_checkpoint
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

// The SVD of a small dense D = X·diag(σ)·Yᵀ (thin or full), checked: Eigen 3.4.0's BDCSVD (divide
// and conquer from 16 columns) returned ‖D·Y − X·Σ‖ = 6.7e-5 with ‖D‖ = 10 and X, Y orthonormal
// to 3e-15 on the 16 × 16 B of a 5-fold value and a 193-fold tail (b = 4; found 2026-11-30: the
// thick restart carried the error into A·V = U·B and the run stalled for 1000 restarts). Where
// ‖D·Y − X·Σ‖_F > 64·ε·min(m, n)·σ₁ (one product), JacobiSVD redoes it (`redone`).
struct DenseSvd {
  Eigen::VectorXd sigma;
  Eigen::MatrixXd x, y;
  bool redone = false;
};
DenseSvd checked_svd(const Eigen::Ref<const Eigen::MatrixXd>& d, bool full);

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
  // The state after a thick restart from opt.start = V(:, 0:p), p = kept + b (b < p ≤ L):
  //   U(:, 0:kept)·B = A·V(:, 0:kept)   (orthonormalized; B = that factor, kept × kept)
  // accepted when V is orthonormal (‖VᵀV − I‖ ≤ 1e-10) and the restart's relation
  //   Aᵀ·U(:, 0:kept) ∈ span V(:, 0:p)  (each column's remainder ≤ max(tol/10, 1e-12)·σ₁,
  //                                        twice projected)
  // holds, as it does for a checkpoint of this matrix (then c = kept); false otherwise, the
  // bases' contents then undefined. Cost: 2·kept applied columns, Grams of p columns.
  bool resume_restart();
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
  // `cols` columns (default b).
  void normalize(MultiVector<double>& basis, std::int64_t first, Mat& r, std::int64_t cols = 0);
  // The largest remainder ‖(I − V·Vᵀ)·Aᵀ·u_j‖ of U(:, 0:kept) against V = V(:, 0:p), in
  // blocks of b through tv_.
  double restart_defect(std::int64_t kept, std::int64_t p);
  // One restart of run(): expand until the basis is full or all k estimates pass, ritz, restart
  // (verify when they pass); true when verified.
  bool cycle(IterationRecord& rec);

  const LinearOperator<double>& a_;
  const LinearOperator<double>& at_;
  DenseBlockOps& ops_;
  const SvdOptions& opt_;  // (the caller's: the start block is not copied)
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
