// LOBPCG as a class of named steps (the iteration behind lobpcg(), solvers/eigensolvers.hpp).
//
// State: the basis S = [X | P | W] (n × ns, ns ≤ 3m, B-orthonormal) with A·S and B·S beside it,
// double-buffered: the current basis in one buffer, the next one ([X' P' W']) built in the other.
// Block m = k + guard (m ≤ n/3). Steps, in the order run() calls them:
//   start             X₀ = the start block, B-orthonormalized, A·X₀ (ns = m)
//   rayleigh_ritz     H = SᵀAS, M = SᵀBS; the m wanted (θ, C) of H·c = θ·M·c (M = I when S is
//                     B-orthonormal to 1e-10); X' = S·C, AX' = AS·C, BX' = BS·C (next buffer)
//   residuals         R = AX' − BX'·Θ, ‖r_j‖ (and ‖x_j‖ with B), the per-pair test
//   confirm           when the k wanted pass: A·X', B·X' recomputed and residuals again
//   lock              soft locking: the active set = the pairs that fail the test
//   search_directions P' = S·Q, Q = [0; C(m:, act)] orthonormalized against C in coefficient
//                     space (exactly B-orthonormal to X': no n-sized work but S·Q)
//   precondition      W = T·R(:, act) (T: the caller's operator, Jacobi, or the identity)
//   orthonormalize    W projected out of [X' P'] twice (B-inner product), B-orthonormalized
//                     (Cholesky-QR twice, SVQB dropping what [X' P'] already spans); A·W
//   advance           the next buffer becomes the current basis
// Workspace is sized in the constructor; the host coefficient matrices are members that keep
// their storage while ns and the active count stay the same.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solvers/eigensolvers.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::detail {

class Lobpcg {
 public:
  using Mat = Eigen::MatrixXd;

  // Checks the operators and k; estimates ‖A‖ and ‖B‖ when not given; allocates the workspace.
  Lobpcg(const LinearOperator<double>& a, const LinearOperator<double>* b, DenseBlockOps& ops,
         const EigenOptions& opt);
  // The solver keeps a reference to opt: no temporary.
  Lobpcg(const LinearOperator<double>&, const LinearOperator<double>*, DenseBlockOps&,
         EigenOptions&&) = delete;
  Lobpcg(const Lobpcg&) = delete;
  Lobpcg& operator=(const Lobpcg&) = delete;

  // The algorithm: start, then per iteration rayleigh_ritz · residuals (· confirm) · lock ·
  // search_directions · precondition · orthonormalize · advance; finally the true residuals.
  EigenResult run();

  // ---- the steps (public: each is tested alone)
  void start();
  // False when SᵀBS is not positive definite (the basis lost B-orthonormality).
  bool rayleigh_ritz();
  // Returns how many of the k wanted pass ‖r_j‖ ≤ pair_bound(θ_j)·‖x_j‖.
  std::int64_t residuals();
  std::int64_t confirm();
  // Returns the active count.
  std::int64_t lock();
  // Returns the P' columns (next buffer, from column m).
  std::int64_t search_directions();
  // W into the next buffer at column nu = m + P' columns.
  void precondition(std::int64_t nu);
  // Returns the worst branch; ns = nu + the kept W columns.
  OrthoBranch orthonormalize(std::int64_t nu);
  void advance();

  // ---- state (tests)
  std::int64_t block() const { return m_; }
  std::int64_t width() const { return ns_; }            // columns of the current basis
  std::int64_t next_width() const { return next_width_; }  // of the next one (after orthonormalize)
  MvView<double> basis() { return s_buf_[cur_].columns(0, ns_); }
  MvView<double> a_basis() { return as_buf_[cur_].columns(0, ns_); }
  MvView<double> b_basis() { return b_view(cur_, 0, ns_); }
  // The next buffer: X' (m columns), then P' and W as the steps build them.
  MvView<double> next(std::int64_t cols) { return s_buf_[nxt_].columns(0, cols); }
  MvView<double> next_b(std::int64_t cols) { return b_view(nxt_, 0, cols); }
  const std::vector<double>& theta() const { return theta_; }  // m wanted Ritz values
  const std::vector<double>& residual_norms() const { return rn_; }
  const std::vector<double>& x_norms() const { return xn_; }
  const std::vector<char>& converged() const { return conv_; }
  const std::vector<std::int64_t>& active() const { return act_; }
  double a_norm() const { return res_.a_norm; }
  double b_norm() const { return res_.b_norm; }
  ApplyClock& clock() { return clock_; }

 private:
  MvView<double> b_view(int buf, std::int64_t first, std::int64_t count);
  // Q ← Q − C·(Cᵀ·Q) (ns × cols, C: the m Ritz coefficient vectors).
  void project_out_ritz(Mat& q);
  // The end of the run: the stop reason of the last iteration into status_/reason_.
  void stop_reason(bool done, bool stop, std::int64_t nconv);
  // The final true residuals with fresh applies; the result.
  EigenResult finish();

  const double t_start_;
  const LinearOperator<double>& a_;
  const LinearOperator<double>* b_;
  DenseBlockOps& ops_;
  const EigenOptions& opt_;
  const std::int64_t n_, k_;
  std::int64_t m_ = 0, smax_ = 0;
  const bool with_b_;
  bool jacobi_ = false;

  // Device: S, AS, BS double-buffered (n × 3m each), R and the gathered active R (n × m), Jacobi.
  MultiVector<double> s_buf_[2], as_buf_[2], bs_buf_[2], r_buf_, rg_buf_, dinv_;
  ApplyClock clock_;
  OrthoWorkspace ows_;
  // Host: H, M, all θ and eigenvectors Z (ns × ns); C, Q (ns × m); per-column norms and flags.
  std::vector<double> h_, mg_, theta_all_, z_, c_, q_, rn_, xn_, theta_, neg_, ones_, proj_;
  std::vector<std::int64_t> act_;
  std::vector<char> conv_;
  // The coefficient-space orthonormalization of P' (search_directions): Q, CᵀQ, C·CᵀQ, QᵀQ, a
  // column, the kept and the final Q; each keeps its storage while ns and the active count do.
  Mat pq_, pctq_, pcq_, pg_, pcol_, pqo_, pqk_;
  Eigen::SelfAdjointEigenSolver<Mat> pes_;
  Eigen::HouseholderQR<Mat> pqr_;

  int cur_ = 0, nxt_ = 1;
  std::int64_t ns_ = 0, next_width_ = 0, it_ = 0;
  SolverStatus status_ = SolverStatus::not_converged;
  std::string reason_;
  EigenResult res_;
  std::optional<Checkpointer> checkpoint_;  // from the start of the iteration
};

}  // namespace tcsolve::detail
