// Thick-restart block Lanczos as a class of named steps: the iteration behind
// detail::lanczos_core (solvers/lanczos_core.hpp) for any Op self-adjoint in the B-inner product
// (block_lanczos(): Op = A or B⁻¹A; the eigs driver's shift-invert: Op = (A − σB)⁻¹·B).
//
// State: the basis V (n × (L + b), B-orthonormal; B·V beside it with B) and the projection H
// (host, (L + b) × (L + b)). With c = current(): V(:, 0:c) is the expanded basis, V(:, c:c+b) the
// current block V_c, and the Lanczos relation
//   Op·V(:, 0:c) = V(:, 0:c+b)·H(0:c+b, 0:c)
// holds (H(0:c, 0:c) symmetric; after a thick restart its leading keep × keep block is diagonal).
// Steps, in the order run() calls them:
//   start            V_0 = the start block, B-orthonormalized (c = 0)
//   expand           apply_operator (W = Op·V_c) · reorthogonalize (W against all of V, then
//                    normalized; H's column block c and the coupling) · c += b
//   expand_basis     expand until c + b > L (in the first pass with looks: ritz + check at
//                    k + 2b columns and every quarter of growth, the early stop); polls the
//                    interrupt flag after every block step
//   ritz             Rayleigh–Ritz on H(0:p, 0:p): wanted θ, Y, the coupling E·Y and the
//                    estimated residuals ‖E·y_j‖
//   ritz_vectors     X = V(:, 0:p)·Y_k
//   check            the problem's explicit check of (θ, X) (prob.verify)
//   restart          thick restart: keep the `keep` wanted Ritz vectors and the newest block
// Workspace (device blocks and every host matrix) is sized in the constructor; the loop
// allocates nothing but the history records (and Eigen's p × p eigensolver storage when p
// changes: at the first pass's looks).
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solvers/lanczos_core.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::detail {

// Sizes of one solve, resolved once from the options.
struct LanczosShape {
  std::int64_t n = 0, k = 0;
  std::int64_t block = 0;  // b
  std::int64_t basis = 0;  // L: basis columns before a restart (whole blocks), L + b ≤ n
  std::int64_t keep = 0;   // Ritz vectors kept at a thick restart, k ≤ keep ≤ L − b
};
// Throws InvalidArgument when k, the block or the basis do not fit n.
LanczosShape lanczos_shape(std::int64_t n, Which which, const EigenOptions& opt);

class BlockLanczos {
 public:
  using Mat = Eigen::MatrixXd;
  // How a pass of expansions ended: the basis is full, a look's explicit check passed (early
  // stop), or an interrupt was seen after a block step.
  enum class Fill { full, early, interrupted };

  BlockLanczos(const LanczosProblem& prob, DenseBlockOps& ops, const EigenOptions& opt);
  // The solver keeps references to prob and opt: no temporaries.
  BlockLanczos(LanczosProblem&&, DenseBlockOps&, const EigenOptions&) = delete;
  BlockLanczos(const LanczosProblem&, DenseBlockOps&, EigenOptions&&) = delete;
  BlockLanczos(const BlockLanczos&) = delete;
  BlockLanczos& operator=(const BlockLanczos&) = delete;

  // The algorithm: start, then per restart expand_basis · ritz · (check) · restart.
  EigenResult run();

  // ---- the steps (public: each is tested alone)
  void start();
  // W = Op·V_c into the next block V(:, c+b : c+2b) (one apply of b columns).
  void apply_operator();
  // Full reorthogonalization of W against V(:, 0:c+b) and its normalization, W_in =
  // V(:, 0:c+b)·coefficients().topRows(c+b) + W_out·coupling(). Standard problems: block
  // classical Gram–Schmidt with Pythagorean Cholesky-QR (up to 3 passes, then the rank-revealing
  // path); generalized: two projections in the B-inner product, B·W recomputed, rank-revealing
  // orthonormalization. Returns the worst branch taken.
  OrthoBranch reorthogonalize();
  // apply_operator · reorthogonalize · H's column block c and coupling · c += b.
  OrthoBranch expand();
  // Expands until the basis holds L columns (see the header comment); `looks` enables the first
  // pass's early stop. rec gets the estimates of the last look.
  Fill expand_basis(bool looks, IterationRecord& rec);
  // Rayleigh–Ritz on H(0:p, 0:p) (p ≥ k, and after a restart at least one block step later: E
  // must be the coupling of the newest block alone, not the restart's arrow): the wanted Ritz
  // values theta() and vectors (coefficients), the estimates ‖E·y_j‖ into rec. Returns how many
  // of the k pass prob.estimate_passes, or −1 when the projected eigenproblem failed. O(p³) host.
  std::int64_t ritz(std::int64_t p, IterationRecord& rec);
  // X = V(:, 0:p)·Y_k into ritz_block() (one GEMM).
  void ritz_vectors(std::int64_t p);
  // The explicit check of (theta(), ritz_block()) through prob.verify; res.values cleared first.
  bool check(bool last);
  void trace_step(const char* what, std::int64_t columns) const;
  // Thick restart after ritz(c): [V(:, 0:keep) | newest] = [V(:, 0:c) | newest]·[Y_keep 0; 0 I],
  // H = [diag(θ_keep) (E·Y_keep)ᵀ; E·Y_keep ·]; c = keep. With B, B·V_keep is recomputed.
  void restart();

  // ---- state (tests, checkpoints)
  const LanczosShape& shape() const { return shape_; }
  std::int64_t current() const { return c_; }
  MvView<double> basis(std::int64_t cols) { return v_.columns(0, cols); }  // V(:, 0:cols)
  MvView<double> next_block() { return v_.columns(c_ + shape_.block, shape_.block); }
  MvView<double> ritz_block() { return tmp_.columns(0, shape_.k); }
  const Mat& projection() const { return H_; }           // H, cap × cap
  const Mat& coefficients() const { return hc_; }        // projection coefficients of the last step
  const Mat& coupling() const { return mblk_; }          // b × b, upper triangular on the fast path
  const std::vector<double>& theta() const { return theta_; }            // k wanted Ritz values
  const std::vector<double>& kept_theta() const { return theta_keep_; }  // the wanted, keep of them
  const Mat& ritz_coefficients() const { return ysel_; }                 // Y (columns: wanted order)
  ApplyClock& clock() { return clock_; }
  EigenResult& result() { return res_; }

 private:
  MvView<double> b_columns(std::int64_t first, std::int64_t count);
  void project_out(std::int64_t c, std::int64_t w, Mat* hcol);
  OrthoBranch normalize_block(std::int64_t c, std::int64_t w, Mat& m_out);
  double chol_pip(const Mat& s_in, const Mat& gww);
  OrthoBranch reorthogonalize_generalized(std::int64_t nx);
  OrthoBranch reorthogonalize_standard(std::int64_t nx);
  std::int64_t round_up(std::int64_t x) const;
  // The end of a restart whose Ritz pairs were (or are now) checked; true: stop.
  bool settle(bool early, bool last, bool stop, std::int64_t nconv);

  const double t_start_;
  const LanczosProblem& prob_;
  DenseBlockOps& ops_;
  const EigenOptions& opt_;
  const LanczosShape shape_;
  const bool with_b_;
  const std::int64_t cap_;  // L + b

  // Device blocks: V, B·V (with B), and tmp (n × max(b, k): the apply's scratch, then X).
  MultiVector<double> v_, bv_, tmp_;
  ApplyClock clock_;
  OrthoWorkspace ows_;
  // Host: H, its symmetric part hp, the step's coefficients hc (cap × b) and coupling M (b × b),
  // the Cholesky-QR factors, Ritz coefficients and the restart matrix.
  Mat H_, hp_, hc_, mblk_, mrob_, sgram_, ssc_, rfac_, tfac_, racc_, rtmp_, gww_;
  Mat ysel_, ey_, restart_m_;
  Eigen::VectorXd dsc_;
  Eigen::LLT<Mat> llt_;
  Eigen::SelfAdjointEigenSolver<Mat> es_;
  std::vector<double> g_, proj_, theta_, theta_keep_, yk_;
  std::vector<std::int64_t> order_;
  std::uint64_t refill_seed_;

  std::int64_t c_ = 0;        // first column of the current block
  std::int64_t restart_ = 0;  // restarts done (the iteration count)
  std::int64_t failed_checks_ = 0;
  SolverStatus status_ = SolverStatus::not_converged;
  std::string reason_;
  EigenResult res_;
  std::optional<Checkpointer> checkpoint_;  // from the start of the iteration
};

}  // namespace tcsolve::detail
