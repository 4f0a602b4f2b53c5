// Thick-restart block Lanczos with full reorthogonalization, standard or generalized: the steps
// of BlockLanczos (solvers/lanczos/block_lanczos.hpp).
//
// Standard problems (the fast path): one expansion step from the current block V_c (columns
// [c, c+b)) of the orthonormal basis V (n × nx, nx = c + b) is
//   W = A·V_c                                            (one operator apply of b columns)
//   pass 1, 2 (block classical Gram-Schmidt with Pythagorean Cholesky-QR, "BCGS-PIP2"):
//     G = [V W]ᵀ·W        ((nx + b) × b: ONE GEMM and the only host round trip of the pass)
//     C = G(0:nx, :),  S = G(nx:, :) − CᵀC   (= WᵀW after the projection, by Pythagoras)
//     W −= V·C,  S = RᵀR (Cholesky on the host, b × b),  W ← W·R⁻¹
//   so a step costs 2 syncs, 2 Gram GEMMs, 2 update GEMMs and 2 b-column in-place products
//   (memory traffic ≈ 4·n·nx·8 bytes), with ‖VᵀV − I‖ = O(eps) as long as the block is not
//   close to rank deficient (Carson, Lund & Rozložník 2021). When S is not safely positive
//   definite (its diagonal lost more than 8 digits to cancellation, or the scaled Cholesky has
//   a pivot² < 1e-12) the pass only projects and a further pass follows; after 3 passes the
//   block goes through the rank-revealing path below.
//   H(0:nx, c:c+b) = C₁ + C₂·R₁ (+ C₃·R₂R₁),  H(nx:nx+b, c:c+b) = M = R₂·R₁, mirrored above.
// Generalized problems run on Op = B⁻¹·A, self-adjoint in the B-inner product: W = B⁻¹·(A·V_c);
// BV is stored beside V, B·W is recomputed after the projection (and B·V at each restart)
// rather than carried along, because B⁻¹ is usually inexact (an inner CG); two passes of
// projection against the whole basis, then the rank-revealing orthonormalization.
// Rank-revealing path: Cholesky-QR twice / SVQB with dropping (orthonormalize()); directions
// the block lost (rank r < b) are replaced by random vectors orthogonalized against the basis,
// with zero coupling: that keeps the block width b, which is what lets the method find every
// copy of an eigenvalue of multiplicity ≤ b.
//
// When V holds p ≤ m columns (plus the newest block), Rayleigh-Ritz on H(0:p, 0:p) = Y·Θ·Yᵀ on
// the host (Eigen; p ≤ ~130, a few ms at most, cheaper than a cuSOLVER call chain at this size);
// the residual of Ritz pair i is ‖E·y_i‖ with E = H(p:p+b, 0:p), the coupling of the newest
// block. Thick restart: [V(:, 0:l) | newest] = [V(:, 0:p) | newest]·[Y_keep 0; 0 I] (one GEMM),
// H = [diag(θ_keep) (E·Y_keep)ᵀ; E·Y_keep ·]. Pairs whose estimated residual passes the test are
// checked with explicit applies of A (and B) before the solver reports them converged; if the
// explicit check fails the iteration goes on.
// Memory: n × (m + b) basis (+ the same for B·V), n × max(b, k) and n × k (×2 with B) blocks.
// Traffic per expansion step (standard, basis nx columns, block b): the SpMM (A once, n·b in and
// out) plus 2 Gram passes over [V W] (n·(nx+b)·8 bytes each) and 2 updates W −= V·C (n·nx·8 read,
// n·b·8 read+write), i.e. ≈ 4·n·nx·8 bytes of dense traffic.
#include "solvers/lanczos/block_lanczos.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/trace.hpp"
#include "solvers/dense/small_dense.hpp"

namespace tcsolve::detail {

namespace {
// Indices of the p Ritz values θ (ascending in `w`) in wanted order.
void wanted_order(const Eigen::VectorXd& w, std::int64_t p, Which which,
                  std::vector<std::int64_t>& order) {
  order.resize(p);
  for (std::int64_t j = 0; j < p; ++j) order[j] = which == Which::smallest ? j : p - 1 - j;
  if (which == Which::largest_magnitude)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t x, std::int64_t y) { return std::abs(w(x)) > std::abs(w(y)); });
}

// Two passes of projection of the columns [c, c+w) of V against [0, c) (B-inner product when
// with_b: coefficients (BV)ᵀ·F, and B·F updated by the same combination).
void project_out_range(DenseBlockOps& ops, MultiVector<double>& v, MultiVector<double>& bv,
                       bool with_b, std::int64_t c, std::int64_t w, std::vector<double>& proj) {
  if (c == 0) return;
  auto F = v.columns(c, w);
  for (int pass = 0; pass < 2; ++pass) {
    ops.gram(with_b ? bv.columns(0, c) : v.columns(0, c), F, proj.data(), c);
    ops.gemm(-1.0, v.columns(0, c), proj.data(), c, 1.0, F);
    if (with_b) ops.gemm(-1.0, bv.columns(0, c), proj.data(), c, 1.0, bv.columns(c, w));
  }
}
}  // namespace

LanczosShape lanczos_shape(std::int64_t n, Which which, const EigenOptions& opt) {
  LanczosShape s;
  s.n = n;
  s.k = opt.k;
  const std::int64_t k = opt.k;
  if (k < 1 || k >= n)
    throw InvalidArgument("block_lanczos: need 1 <= k < n (k = " + std::to_string(k) +
                          ", n = " + std::to_string(n) + ")");
  TCSOLVE_REQUIRE(opt.block_size >= 0 && opt.max_basis >= 0 && opt.restart_keep >= 0,
                  "block_lanczos: block_size, max_basis and restart_keep must be >= 0");
  TCSOLVE_REQUIRE(which == Which::smallest || which == Which::largest ||
                      which == Which::largest_magnitude,
                  "block_lanczos: which must be smallest, largest or largest_magnitude");
  std::int64_t bs = opt.block_size > 0 ? opt.block_size : default_lanczos_block(k);
  bs = std::min(bs, n);
  // Basis m: at least 2k + 2b, at least 16 blocks, whole blocks (on gen:lap2d:200, k = 16,
  // b = 8: m = 64 / 96 / 128 need 19304 / 8592 / 5296 applies with keep = k + (m − k)/2).
  std::int64_t L = opt.max_basis > 0 ? opt.max_basis : default_lanczos_basis(k, bs);
  L = std::min(L, n - bs);  // basis plus the newest block fit in n columns
  std::int64_t keep = opt.restart_keep > 0 ? opt.restart_keep : k + std::max(bs, (L - k) / 2);
  keep = std::min(keep, L - bs);
  if (L < k + bs || keep < k)
    throw InvalidArgument("block_lanczos: basis too small for k = " + std::to_string(k) +
                          " with block size " + std::to_string(bs) + " (n = " + std::to_string(n) +
                          "); lower k or the block size");
  s.block = bs;
  s.basis = L;
  s.keep = keep;
  return s;
}

// ---- workspace, once per solve (device blocks and every host matrix of the loop)
BlockLanczos::BlockLanczos(const LanczosProblem& prob, DenseBlockOps& ops, const EigenOptions& opt)
    : t_start_(now_seconds()),
      prob_(prob),
      ops_(ops),
      opt_(opt),
      shape_(lanczos_shape(prob.n, prob.which, opt)),
      with_b_(prob.b != nullptr),
      cap_(shape_.basis + shape_.block),
      clock_(ops),
      refill_seed_(opt.seed * 7919 + 1) {
  const std::int64_t n = shape_.n, k = shape_.k, bs = shape_.block, cap = cap_;
  res_.n = n;
  ops_.reserve(n, cap, cap * cap);
  v_ = ops_.allocate(n, cap);
  tmp_ = ops_.allocate(n, std::max(bs, k));
  if (with_b_) bv_ = ops_.allocate(n, cap);
  H_ = Mat::Zero(cap, cap), hp_.resize(cap, cap), hc_.resize(cap, bs), mblk_.resize(bs, bs);
  mrob_.resize(bs, bs), sgram_.resize(bs, bs), ssc_.resize(bs, bs), rfac_.resize(bs, bs);
  tfac_.resize(bs, bs), racc_.resize(bs, bs), rtmp_.resize(bs, bs), gww_.resize(bs, bs);
  ysel_.resize(cap, cap), ey_.resize(bs, cap), restart_m_ = Mat::Zero(cap, cap);
  dsc_.resize(bs);
  llt_ = Eigen::LLT<Mat>(bs);
  es_ = Eigen::SelfAdjointEigenSolver<Mat>(cap);
  g_.resize(cap * bs), proj_.resize(cap * bs), theta_.resize(k), theta_keep_.resize(cap);
  yk_.resize(cap * cap);
  order_.reserve(cap);
}

MvView<double> BlockLanczos::b_columns(std::int64_t first, std::int64_t count) {
  return with_b_ ? bv_.columns(first, count) : v_.columns(first, count);
}

std::int64_t BlockLanczos::round_up(std::int64_t x) const {
  const std::int64_t bs = shape_.block;
  return bs * ((x + bs - 1) / bs);
}

// Two passes of projection of the block at [c, c+w) against [0, c) (B-inner product); the
// coefficients are added to hcol (c × w) when given.
void BlockLanczos::project_out(std::int64_t c, std::int64_t w, Mat* hcol) {
  auto W = v_.columns(c, w);
  auto BW = with_b_ ? bv_.columns(c, w) : MvView<double>{};
  if (c == 0) return;
  for (int pass = 0; pass < 2; ++pass) {
    ops_.gram(b_columns(0, c), W, proj_.data(), c);
    ops_.gemm(-1.0, v_.columns(0, c), proj_.data(), c, 1.0, W);
    if (with_b_) ops_.gemm(-1.0, bv_.columns(0, c), proj_.data(), c, 1.0, BW);
    if (hcol) hcol->topLeftCorner(c, w) += Eigen::Map<Mat>(proj_.data(), c, w);
  }
}

// Rank-revealing orthonormalization of the block at [c, c+w) (already projected); lost
// directions refilled with random vectors out of the basis. W_in = W_out·m_out (w × w, rows
// past the rank zero). Returns the worst branch taken.
OrthoBranch BlockLanczos::normalize_block(std::int64_t c, std::int64_t w, Mat& m_out) {
  auto W = v_.columns(c, w);
  auto BW = with_b_ ? bv_.columns(c, w) : MvView<double>{};
  auto o = orthonormalize(ops_, W, BW, ows_);
  m_out.setZero();
  if (o.rank > 0)
    m_out.topRows(o.rank).noalias() = Eigen::Map<Mat>(ows_.t.data(), w, o.rank).transpose() *
                                      Eigen::Map<Mat>(ows_.g_in.data(), w, w);
  std::int64_t r = o.rank;
  for (int attempt = 0; r < w && attempt < 3; ++attempt) {
    auto F = v_.columns(c + r, w - r);
    ops_.fill_random(F, refill_seed_++);
    if (with_b_) clock_.apply(*prob_.b, F, bv_.columns(c + r, w - r));
    project_out_range(ops_, v_, bv_, with_b_, c + r, w - r, proj_);
    auto of = orthonormalize(ops_, F, with_b_ ? bv_.columns(c + r, w - r) : MvView<double>{}, ows_);
    r += of.rank;
  }
  if (r < w) throw Error("block Lanczos: could not complete the block (n too small?)");
  return o.branch;
}

// Cholesky factor of the b × b Gram S = RᵀR with T = R⁻¹, through the diagonally scaled
// S (pivots relative to 1). `gww` is the Gram S came from by cancellation (S = Gww − CᵀC):
// S is trusted only when no diagonal entry lost more than 8 digits. Returns min pivot² or −1.
double BlockLanczos::chol_pip(const Mat& s_in, const Mat& gww) {
  const std::int64_t bs = shape_.block;
  for (std::int64_t i = 0; i < bs; ++i) {
    double d = s_in(i, i);
    if (!(d > kPipCancel * gww(i, i)) || !(d > 1e-300) || !std::isfinite(d)) return -1.0;
    dsc_(i) = 1.0 / std::sqrt(d);
  }
  ssc_.noalias() = dsc_.asDiagonal() * s_in * dsc_.asDiagonal();
  llt_.compute(ssc_);
  if (llt_.info() != Eigen::Success) return -1.0;
  double piv = 1e300;
  for (std::int64_t i = 0; i < bs; ++i) piv = std::min(piv, llt_.matrixLLT()(i, i));
  if (!(piv * piv >= kPipMinPivot2)) return -1.0;
  // R = Lᵀ·D⁻¹ (S = D⁻¹·L·Lᵀ·D⁻¹),  T = R⁻¹ = D·L⁻ᵀ.
  rfac_.setZero();
  rfac_.triangularView<Eigen::Upper>() = llt_.matrixU();
  rfac_ = rfac_ * dsc_.cwiseInverse().asDiagonal();
  tfac_.setIdentity();
  llt_.matrixU().solveInPlace(tfac_);
  tfac_ = dsc_.asDiagonal() * tfac_;
  return piv * piv;
}

// ---- start: opt.start's columns first, the rest random from opt.seed (checked: a given start
// block must have independent, finite columns), B-orthonormalized.
void BlockLanczos::start() {
  const std::int64_t bs = shape_.block;
  initial_block(ops_, v_.columns(0, bs), opt_);
  check_start_block(ops_, v_.columns(0, bs), opt_, "block_lanczos");
  if (with_b_) clock_.apply(*prob_.b, v_.columns(0, bs), bv_.columns(0, bs));
  normalize_block(0, bs, mrob_);
  c_ = 0;
  checkpoint_.emplace(opt_.checkpoint_every, opt_.on_checkpoint);
}

void BlockLanczos::apply_operator() {
  const std::int64_t bs = shape_.block, nx = c_ + bs;
  auto Vc = v_.columns(c_, bs);
  if (with_b_) prob_.apply(clock_, Vc, bv_.columns(c_, bs), v_.columns(nx, bs), bv_.columns(nx, bs));
  else prob_.apply(clock_, Vc, Vc, v_.columns(nx, bs), tmp_.columns(0, bs));
}

OrthoBranch BlockLanczos::reorthogonalize() {
  const std::int64_t nx = c_ + shape_.block;
  hc_.topRows(nx).setZero();
  return with_b_ ? reorthogonalize_generalized(nx) : reorthogonalize_standard(nx);
}

OrthoBranch BlockLanczos::reorthogonalize_generalized(std::int64_t nx) {
  project_out(nx, shape_.block, &hc_);
  // B·W recomputed (one B apply of b columns): with an inexact Op the carried B·W drifts
  // from B times the carried W, and over many restarts that drift destroys B-orthogonality.
  clock_.apply(*prob_.b, v_.columns(nx, shape_.block), bv_.columns(nx, shape_.block));
  return normalize_block(nx, shape_.block, mblk_);
}

OrthoBranch BlockLanczos::reorthogonalize_standard(std::int64_t nx) {
  const std::int64_t bs = shape_.block;
  auto W = v_.columns(nx, bs);
  racc_.setIdentity();
  bool done = false;
  for (int pass = 0; pass < 3 && !done; ++pass) {
    // G = [V W]ᵀ·W, (nx + bs) × bs, ld nx + bs.
    ops_.gram(v_.columns(0, nx + bs), W, g_.data(), nx + bs);
    Eigen::Map<Mat> G(g_.data(), nx + bs, bs);
    gww_ = G.bottomRows(bs);
    sgram_ = gww_;
    sgram_.noalias() -= G.topRows(nx).transpose() * G.topRows(nx);
    ops_.gemm(-1.0, v_.columns(0, nx), g_.data(), nx + bs, 1.0, W);
    hc_.topRows(nx).noalias() += G.topRows(nx) * racc_;
    double piv = chol_pip(sgram_, gww_);
    if (piv < 0) continue;  // project again; S becomes trustworthy or the block is lost
    ops_.multiply_inplace(W, tfac_.data(), bs, bs);
    rtmp_.noalias() = rfac_ * racc_;
    racc_ = rtmp_;
    // After a second pass W·R⁻¹ is orthonormal to O(eps·κ²) with κ² ≤ 10 here. A single
    // column may stop after one pass when it kept at least 1/√2 of its norm (S/Gww =
    // ‖w'‖²/‖w‖² ≥ 1/2: the Daniel–Gragg–Kaufman–Stewart criterion, ARPACK's): the pass then
    // lost less than one digit to cancellation and w' is orthogonal to the basis to O(eps).
    const bool dgks = bs == 1 && sgram_(0, 0) >= 0.5 * gww_(0, 0);
    done = (pass >= 1 && piv >= 0.1) || (pass == 0 && dgks);
  }
  if (done) {
    mblk_ = racc_;
    return OrthoBranch::cholqr2;
  }
  const OrthoBranch branch = normalize_block(nx, bs, mrob_);
  mblk_.noalias() = mrob_ * racc_;
  return branch;
}

// One expansion step from the block at [c, c+bs): fills H's column block c and the coupling.
OrthoBranch BlockLanczos::expand() {
  const std::int64_t bs = shape_.block, c = c_, nx = c + bs;
  apply_operator();
  const OrthoBranch branch = reorthogonalize();
  H_.block(0, c, nx, bs) = hc_.topRows(nx);
  H_.block(nx, c, bs, bs) = mblk_;
  H_.block(c, nx, bs, bs) = mblk_.transpose();
  H_.block(c, 0, bs, c) = H_.block(0, c, c, bs).transpose();
  c_ = nx;
  return branch;
}

// Expand until the basis holds up to L columns before the newest block. In the first pass
// a look (Rayleigh–Ritz) also at k + 2b columns and then at every quarter of growth: an
// easy problem (shift-invert, a well-separated end) stops once every wanted pair passes,
// without filling the basis. The looks cost a geometric series of O(p³), at most about
// twice the Rayleigh–Ritz of the last one; a look whose explicit check fails goes on
// expanding (the check's applies are the only other cost).
// The interrupt flag (an atomic load) is read after every block step, once the basis holds k
// columns (and, after a restart, at least one new block: ritz() needs the arrow of the restart
// closed): an interrupt costs at most one block step (plus the final check), not a restart.
BlockLanczos::Fill BlockLanczos::expand_basis(bool looks, IterationRecord& rec) {
  const std::int64_t bs = shape_.block, L = shape_.basis, k = shape_.k;
  OrthoBranch worst = OrthoBranch::none;
  std::int64_t next_look = looks ? round_up(k + 2 * bs) : L + 1;
  Fill fill = Fill::full;
  while (c_ + bs <= L) {
    worst = std::max(worst, expand());
    if (trace_enabled()) trace_step("block step", c_);
    if (c_ >= k && interrupt_requested()) {
      fill = Fill::interrupted;
      break;
    }
    if (c_ < next_look || c_ + bs > L) continue;
    next_look = round_up(std::max(c_ + bs, c_ + c_ / 4));
    if (ritz(c_, rec) != k) continue;
    ritz_vectors(c_);
    if (trace_enabled()) trace_step("look: every estimate passes", c_);
    if (check(false)) {
      fill = Fill::early;
      break;
    }
    next_look = L + 1;  // the estimates ran ahead of the true residuals: no more looks
  }
  rec.ortho = worst;
  return fill;
}

// TCSOLVE_TRACE=1: a mark per block step and per pass (where a pass's time goes). Host times: on the
// GPU a step ends in host round trips (the Gram), a look's Ritz vectors may still be queued, and
// only the pass's mark follows a synchronize.
void BlockLanczos::trace_step(const char* what, std::int64_t columns) const {
  char b[120];
  std::snprintf(b, sizeof b, "lanczos: pass %lld, %s at %lld columns", static_cast<long long>(restart_ + 1), what,
                static_cast<long long>(columns));
  trace_mark(b);
}

// Rayleigh–Ritz on the first p columns: the wanted Ritz values and vectors (ysel, theta_keep),
// the coupling E·Y of the newest block (ey), and the estimated residuals ‖E·y_j‖ of the k
// wanted (rec); returns how many of them pass. O(p³) on the host.
std::int64_t BlockLanczos::ritz(std::int64_t p, IterationRecord& rec) {
  const std::int64_t bs = shape_.block, k = shape_.k;
  hp_.resize(p, p);
  hp_ = 0.5 * (H_.topLeftCorner(p, p) + H_.topLeftCorner(p, p).transpose());
  es_.compute(hp_);
  if (es_.info() != Eigen::Success) return -1;
  wanted_order(es_.eigenvalues(), p, prob_.which, order_);
  const std::int64_t nsel = std::min(std::max(shape_.keep, k), p);
  for (std::int64_t j = 0; j < nsel; ++j) {
    ysel_.col(j).head(p) = es_.eigenvectors().col(order_[j]);
    theta_keep_[j] = es_.eigenvalues()(order_[j]);
  }
  // E·Y (bs × nsel); E = H(p:p+bs, 0:p) is non-zero only in its last bs columns.
  ey_.leftCols(nsel).noalias() = H_.block(p, p - bs, bs, bs) * ysel_.block(p - bs, 0, bs, nsel);
  std::int64_t nconv = 0;
  rec.residual_norms.resize(k);
  for (std::int64_t j = 0; j < k; ++j) {
    theta_[j] = theta_keep_[j];
    const double est = ey_.col(j).norm();
    rec.residual_norms[j] = est;
    if (prob_.estimate_passes(theta_[j], est)) ++nconv;
  }
  rec.converged = nconv;
  rec.active = k - nconv;
  return nconv;
}

// Ritz vectors X = V(:, 0:p)·Y_k into tmp.
void BlockLanczos::ritz_vectors(std::int64_t p) {
  const std::int64_t k = shape_.k;
  for (std::int64_t j = 0; j < k; ++j)
    std::copy(ysel_.col(j).data(), ysel_.col(j).data() + p, yk_.data() + j * p);
  ops_.gemm(1.0, v_.columns(0, p), yk_.data(), p, 0.0, tmp_.columns(0, k));
}

bool BlockLanczos::check(bool last) {
  res_.values.clear();
  return prob_.verify(clock_, tmp_.columns(0, shape_.k), theta_, last, res_);
}

// ---- thick restart: [V(:, 0:keep) | newest] = [V(:, 0:p) | newest]·[Y_keep 0; 0 I].
void BlockLanczos::restart() {
  const std::int64_t bs = shape_.block, keep = shape_.keep, p = c_, cap = cap_;
  const std::int64_t rr = p + bs, rc = keep + bs;
  restart_m_.topLeftCorner(rr, rc).setZero();
  restart_m_.topLeftCorner(p, keep) = ysel_.topLeftCorner(p, keep);
  restart_m_.block(p, keep, bs, bs).setIdentity();
  for (std::int64_t j = 0; j < rc; ++j)
    std::copy(restart_m_.col(j).data(), restart_m_.col(j).data() + rr, yk_.data() + j * rr);
  ops_.multiply_inplace(v_.columns(0, rr), yk_.data(), rr, rc);
  if (with_b_) {
    ops_.multiply_inplace(bv_.columns(0, rr), yk_.data(), rr, rc);
    clock_.apply(*prob_.b, v_.columns(0, keep), bv_.columns(0, keep));  // resync B·V (see above)
  }
  H_.topLeftCorner(cap, cap).setZero();
  for (std::int64_t j = 0; j < keep; ++j) H_(j, j) = theta_keep_[j];
  H_.block(keep, 0, bs, keep) = ey_.leftCols(keep);
  H_.block(0, keep, keep, bs) = ey_.leftCols(keep).transpose();
  c_ = keep;
}

// The explicit check decides (already done when the pass stopped early); if it fails and
// iterations remain, go on. True: the run ends here.
bool BlockLanczos::settle(bool early, bool last, bool stop, std::int64_t nconv) {
  const std::int64_t k = shape_.k;
  res_.iterations = restart_ + 1;
  const bool ok = early || check(last);
  // Estimates that keep passing while the explicit check keeps failing: the residuals sit
  // at a level the iteration cannot lower (rounding, an inexact Op). Stop and say so.
  const bool stagnant = !ok && ++failed_checks_ >= 8;
  if (!(ok || last || stagnant)) return false;
  status_ = ok ? SolverStatus::converged : stop ? SolverStatus::interrupted : SolverStatus::not_converged;
  if (stop && !ok)
    reason_ = interrupted_reason(restart_ + 1, nconv, k, "estimated to pass");
  else if (stagnant && !last)
    reason_ = "stagnation: the estimated residuals pass but the explicit check failed 8 "
              "times in a row (the true residuals no longer decrease)";
  else if (!ok)
    reason_ = "iteration limit " + std::to_string(opt_.max_iterations) +
              " reached before every true residual passed";
  if (res_.values.empty()) res_.values.assign(theta_.begin(), theta_.end());
  if (res_.vectors.empty() && prob_.copy_vectors) {
    res_.vectors.resize(shape_.n * k);
    ops_.to_host(tmp_.columns(0, k), res_.vectors.data(), shape_.n);
  }
  return true;
}

// The algorithm. Per restart: expand the basis (possibly stopping early or on an interrupt),
// Rayleigh–Ritz, the explicit check when every estimate passes (or at the end), thick restart.
EigenResult BlockLanczos::run() {
  const std::int64_t k = shape_.k;
  start();
  for (;; ++restart_) {
    IterationTimer timer(clock_);
    IterationRecord rec;
    rec.iteration = restart_;
    const Fill fill = expand_basis(opt_.early_stop && restart_ == 0, rec);
    const bool early = fill == Fill::early;
    std::int64_t nconv = k;
    if (!early) {
      nconv = ritz(c_, rec);  // Rayleigh–Ritz on the whole basis
      if (nconv < 0) {
        status_ = SolverStatus::breakdown;
        reason_ = "projected eigenproblem failed";
        break;
      }
    }
    const bool stop = fill == Fill::interrupted || (nconv < k && interrupt_requested());
    const bool last = restart_ + 1 >= opt_.max_iterations || stop;
    const bool check_now = !early && (nconv == k || last);
    if (check_now) ritz_vectors(c_);
    ops_.synchronize();
    if (trace_enabled()) trace_step(early ? "pass ended early" : "pass: Rayleigh-Ritz", c_);
    {
      auto [ap, de] = timer.split();
      rec.apply_seconds = ap, rec.dense_seconds = de;
    }
    if (opt_.on_iteration) opt_.on_iteration(rec);
    if (opt_.keep_history) res_.history.push_back(std::move(rec));
    if ((check_now || early) && settle(early, last, stop, nconv)) break;
    restart();
    // The kept Ritz vectors (wanted order) are the state a later run starts from (its start
    // block takes the first b of them: the rest of the basis is rebuilt).
    if (checkpoint_->due()) checkpoint_->write(ops_, v_.columns(0, shape_.keep), restart_ + 1, 0);
  }
  res_.status = status_;
  res_.reason = reason_;
  res_.operator_applies = clock_.columns();
  res_.seconds = now_seconds() - t_start_;
  return std::move(res_);
}

EigenResult lanczos_core(const LanczosProblem& prob, DenseBlockOps& ops, const EigenOptions& opt) {
  BlockLanczos solver(prob, ops, opt);
  return solver.run();
}

}  // namespace tcsolve::detail
