// Thick-restart block Golub–Kahan–Lanczos (solvers/svd/bidiag.hpp).
#include "solvers/svd/bidiag.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/interrupt.hpp"
#include "solvers/svd/verify.hpp"

namespace tcsolve::detail {

namespace {
std::int64_t round_up(std::int64_t x, std::int64_t b) { return (x + b - 1) / b * b; }
}  // namespace

GklShape gkl_shape(std::int64_t m, std::int64_t n, const SvdOptions& opt, bool* fits) {
  TCSOLVE_REQUIRE(m >= 1 && n >= 1, "svds: the matrix must have at least one row and one column");
  TCSOLVE_REQUIRE(opt.k >= 1 && opt.k <= std::min(m, n),
                  "svds: k = " + std::to_string(opt.k) + " must lie in [1, min(m, n) = " +
                      std::to_string(std::min(m, n)) + "]");
  TCSOLVE_REQUIRE(opt.tol > 0 && std::isfinite(opt.tol), "svds: tol must be positive and finite");
  TCSOLVE_REQUIRE(opt.block >= 0 && opt.basis >= 0 && opt.max_restarts >= 1,
                  "svds: block, basis must be ≥ 0 and max_restarts ≥ 1");
  GklShape s;
  s.m = m;
  s.n = n;
  s.k = opt.k;
  s.block = opt.block > 0 ? opt.block : std::min<std::int64_t>(opt.k, 16);
  const std::int64_t b = s.block, p = std::min(m, n);
  if (opt.basis > 0) {
    s.basis = round_up(opt.basis, b);
    TCSOLVE_REQUIRE(s.basis >= s.k + b, "svds: basis = " + std::to_string(s.basis) +
                                            " must hold at least k + block = " +
                                            std::to_string(s.k + b) + " columns");
  } else {
    // At least 48 columns, 3k, and six blocks beyond k; shrunk to what min(m, n) holds (then at
    // least k + b, else the dense path). ARPACK's ncv = max(2k + 1, 20) is too small for
    // clusters: L = 24 did not converge in 1000 restarts on adder_dcop_05 (16 singular values
    // within 1e-3 of 0.197·σ₁), L = 48 in 2; olm500 (σ₂ = 0.99988·σ₁) took 436 restarts at
    // L = 24, 33 at 48 (k = 6, tol 1e-10).
    s.basis = round_up(std::max({3 * s.k, s.k + 6 * b, std::int64_t{48}}), b);
    if (s.basis + 2 * b > p) s.basis = std::max<std::int64_t>(0, (p - 2 * b) / b * b);
  }
  // Keep k and half of the rest (at least half a block) of the leading Ritz vectors: the
  // neighbours speed up the wanted ones; at most L − b, so that a restart expands ≥ 1 block.
  // (Half against a quarter on the shared general matrices at L = 48: 1260 against 1848 applies
  // on olm500, 432 against 588 on Franz6_id1959_aug, 432 against 468 on nnc1374.)
  s.keep = std::min(s.basis - b, s.k + std::max({std::int64_t{1}, b / 2, (s.basis - s.k) / 2}));
  // U holds L columns of m, V L + b of n; one more block of room for the refills.
  *fits = s.basis >= s.k + b && s.basis + 2 * b <= p;
  return s;
}

BlockGkl::BlockGkl(const LinearOperator<double>& a, const LinearOperator<double>& at,
                   DenseBlockOps& ops, const SvdOptions& opt, const GklShape& shape)
    : a_(a),
      at_(at),
      ops_(ops),
      opt_(opt),
      shape_(shape),
      clock_(ops),
      refill_seed_(opt.seed * 7919 + 3) {
  const std::int64_t m = shape.m, n = shape.n, b = shape.block, L = shape.basis,
                     w = std::max(b, shape.k);
  u_ = ops.allocate(m, L);
  v_ = ops.allocate(n, L + b);
  tu_ = ops.allocate(m, w);
  tv_ = ops.allocate(n, w);
  ops.reserve(std::max(m, n), L + b, (L + b) * std::max(L, b));
  B_ = Mat::Zero(L, L);
  S_ = Mat::Zero(b, b);
  h_ = Mat::Zero(L + b, b);
  r_ = Mat::Zero(b, b);
  G_ = Mat::Zero(L + b, b);
  coef_.assign(static_cast<std::size_t>((L + b) * b), 0.0);
  est_.assign(static_cast<std::size_t>(shape.k), 0.0);
  a_vals_.assign(static_cast<std::size_t>(w), 0.0);
  b_vals_.assign(static_cast<std::size_t>(w), 1.0);
  res_.m = m;
  res_.n = n;
  res_.k = shape.k;
  res_.tol = opt.tol;
}

// W ← (I − Q·Qᵀ)·W, Q = basis (rows × c): one Gram (2·rows·c·b flops, reads Q and W) and one
// GEMM (the same, writes W). h (c × b) ← Qᵀ·W_in when given.
void BlockGkl::project_out(MvView<const double> basis, MvView<double> w, Mat* h) {
  const std::int64_t c = basis.cols, b = w.cols;
  if (h) h->setZero(c, b);
  if (c == 0) return;
  ops_.gram(basis, w, coef_.data(), c);
  ops_.gemm(-1.0, basis, coef_.data(), c, 1.0, w);
  if (h) *h = Eigen::Map<Mat>(coef_.data(), c, b);
}

// Block `first` (b columns) of `basis`, already projected out of basis(:, 0:first): W_in =
// W_out·r (SVQB with its rank-revealing drop, orthonormalize.hpp). A dropped direction (W did
// not span it: rank deficiency of A or an exhausted Krylov space) is replaced by a random one
// out of the basis, with a zero row in r, which keeps both relations of the header exact.
void BlockGkl::normalize(MultiVector<double>& basis, std::int64_t first, Mat& r, std::int64_t cols) {
  const std::int64_t b = cols > 0 ? cols : shape_.block;
  auto W = basis.columns(first, b);
  const auto o = orthonormalize(ops_, W, MvView<double>{}, ows_);
  r.setZero(b, b);
  if (o.rank > 0)
    r.topRows(o.rank).noalias() = Eigen::Map<Mat>(ows_.t.data(), b, o.rank).transpose() *
                                  Eigen::Map<Mat>(ows_.g_in.data(), b, b);
  std::int64_t rank = o.rank;
  for (int attempt = 0; rank < b && attempt < 3; ++attempt) {
    auto F = basis.columns(first + rank, b - rank);
    ops_.fill_random(F, refill_seed_++);
    for (int pass = 0; pass < 2; ++pass) project_out(basis.columns(0, first + rank), F, nullptr);
    rank += orthonormalize(ops_, F, MvView<double>{}, ows_).rank;
  }
  if (rank < b) throw Error("svds: could not complete a block of the Krylov basis");
}

void BlockGkl::start() {
  const std::int64_t n = shape_.n, b = shape_.block;
  const std::int64_t p = static_cast<std::int64_t>(opt_.start.size()) / n;
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(opt_.start.size()) == p * n,
                  "svds: the start block must hold n = " + std::to_string(n) + " rows per column");
  if (p > b && p <= shape_.basis && resume_restart()) {
    res_.start = format("continued the thick restart of the start block (%lld kept + %lld next)",
                        (long long)(p - b), (long long)b);
    return;
  }
  const std::int64_t given = std::min(p, b);
  if (given > 0) ops_.from_host(opt_.start.data(), n, v_.columns(0, given));
  if (given < b) ops_.fill_random(v_.columns(given, b - given), opt_.seed);
  if (p > 0)
    res_.start = format("the Krylov basis started from the start block's first %lld of %lld columns%s",
                        (long long)given, (long long)p, p > b ? " (they hold no restart of this matrix)" : "");
  normalize(v_, 0, r_);
  c_ = 0;
  B_.setZero();
}

bool BlockGkl::resume_restart() {
  const std::int64_t n = shape_.n, b = shape_.block, p = static_cast<std::int64_t>(opt_.start.size()) / n;
  const std::int64_t kept = p - b;
  auto V = v_.columns(0, p);
  ops_.from_host(opt_.start.data(), n, V);
  Mat g(p, p);
  ops_.gram(V, V, g.data(), p);
  if (!((g - Mat::Identity(p, p)).cwiseAbs().maxCoeff() <= 1e-10)) return false;
  clock_.apply(a_, v_.columns(0, kept), u_.columns(0, kept));
  Mat r;
  normalize(u_, 0, r, kept);  // A·V_kept = U_kept·r
  const double s1 = Eigen::JacobiSVD<Mat>(r).singularValues()(0);
  // A checkpoint of this matrix: 2e-16 to 3e-15·σ₁ (gen:counts, gen:lap2d, olm500, adder_dcop_05,
  // lp_e226); that of another matrix or of the other centering: O(σ₁).
  if (!(s1 > 0) || !(restart_defect(kept, p) <= std::max(0.1 * opt_.tol, 1e-12) * s1)) return false;
  B_.setZero();
  B_.topLeftCorner(kept, kept) = r;
  c_ = kept;
  return true;
}

double BlockGkl::restart_defect(std::int64_t kept, std::int64_t p) {
  const std::int64_t b = shape_.block;
  std::vector<double> norms(static_cast<std::size_t>(b));
  double worst = 0;
  for (std::int64_t j0 = 0; j0 < kept; j0 += b) {
    const std::int64_t c = std::min(b, kept - j0);
    auto Z = tv_.columns(0, c);
    clock_.apply(at_, u_.columns(j0, c), Z);
    for (int pass = 0; pass < 2; ++pass) project_out(v_.columns(0, p), Z, nullptr);
    ops_.column_norms(Z, norms.data());
    for (std::int64_t j = 0; j < c; ++j) worst = std::max(worst, std::isfinite(norms[j]) ? norms[j] : INFINITY);
  }
  return worst;
}

// One block step. Left side, block classical Gram–Schmidt twice with the block normalized after
// each pass (BCGS2): W_in = U·h1 + W1·r1, W1 = U·h2 + W2·r2, so
//   A·V_c = U(:, 0:c)·(h1 + h2·r1) + U_c·(r2·r1)      (B's column block c)
// Right side the same with Aᵀ·U_c against V(:, 0:c+b); its coefficients duplicate Bᵀ and are not
// kept, only the coupling S = s2·s1 of the new block.
void BlockGkl::expand() {
  const std::int64_t b = shape_.block, c = c_;
  TCSOLVE_REQUIRE(c + b <= shape_.basis, "svds: expand past the basis");
  auto Uc = u_.columns(c, b);
  clock_.apply(a_, v_.columns(c, b), Uc);
  Mat h1, h2, r1 = Mat::Zero(b, b);
  project_out(u_.columns(0, c), Uc, &h1);
  normalize(u_, c, r1);
  project_out(u_.columns(0, c), Uc, &h2);
  normalize(u_, c, r_);
  if (c > 0) B_.block(0, c, c, b) = h1 + h2 * r1;
  B_.block(c, c, b, b) = r_ * r1;
  B_.block(c, 0, b, c).setZero();

  auto Vn = v_.columns(c + b, b);
  clock_.apply(at_, Uc, Vn);
  project_out(v_.columns(0, c + b), Vn, nullptr);
  normalize(v_, c + b, r1);
  project_out(v_.columns(0, c + b), Vn, nullptr);
  normalize(v_, c + b, r_);
  S_ = r_ * r1;
  c_ = c + b;
}

DenseSvd checked_svd(const Eigen::Ref<const Eigen::MatrixXd>& d, bool full) {
  const unsigned flags = full ? (Eigen::ComputeFullU | Eigen::ComputeFullV) : (Eigen::ComputeThinU | Eigen::ComputeThinV);
  DenseSvd out;
  auto take = [&](const auto& svd) {
    out.sigma = svd.singularValues();
    out.x = svd.matrixU();
    out.y = svd.matrixV();
  };
  take(Eigen::BDCSVD<Eigen::MatrixXd>(d, flags));
  const std::int64_t p = std::min(d.rows(), d.cols());
  if (p == 0) return out;
  const double bound = 64.0 * std::numeric_limits<double>::epsilon() * static_cast<double>(p) * out.sigma(0);
  const double defect = (d * out.y.leftCols(p) - out.x.leftCols(p) * out.sigma.asDiagonal()).norm();
  if (!(defect <= bound)) {  // (NaN too)
    take(Eigen::JacobiSVD<Eigen::MatrixXd>(d, flags));
    out.redone = true;
  }
  return out;
}

// B(0:c, 0:c) = X·Σ·Yᵀ. The Ritz triplet (σ_j, U·x_j, V·y_j) has A·v − σ·u = U·(B·y_j − σ_j·x_j)
// = 0 and Aᵀ·u − σ·v = V_next·S·x_j(c−b:c), whose norm is the estimate.
std::int64_t BlockGkl::ritz(IterationRecord& rec) {
  const std::int64_t c = c_, b = shape_.block, k = shape_.k;
  DenseSvd svd = checked_svd(B_.topLeftCorner(c, c), true);
  sigma_ = std::move(svd.sigma);
  X_ = std::move(svd.x);
  Y_ = std::move(svd.y);
  a_norm_ = std::max(a_norm_, sigma_(0));
  std::int64_t nconv = 0;
  for (std::int64_t j = 0; j < k; ++j) {
    est_[j] = (S_ * X_.block(c - b, j, b, 1)).norm();
    if (est_[j] <= opt_.tol * a_norm_) ++nconv;
  }
  rec.residual_norms = est_;
  rec.values.assign(sigma_.data(), sigma_.data() + k);
  rec.converged = nconv;
  rec.active = c;
  return nconv;
}

// Thick restart: the keep leading Ritz vectors become the bases' first columns, the next block
// moves behind them (through tv_, as the ranges may overlap). 2 in-place GEMMs (rows·c·keep).
void BlockGkl::restart() {
  const std::int64_t c = c_, b = shape_.block, keep = std::min(shape_.keep, c);
  ops_.copy(v_.columns(c, b), tv_.columns(0, b));
  ops_.multiply_inplace(u_.columns(0, c), X_.data(), c, keep);
  ops_.multiply_inplace(v_.columns(0, c), Y_.data(), c, keep);
  ops_.copy(tv_.columns(0, b), v_.columns(keep, b));
  B_.setZero();
  for (std::int64_t j = 0; j < keep; ++j) B_(j, j) = sigma_(j);
  c_ = keep;
}

bool BlockGkl::verify() {
  const double t0 = now_seconds();
  const std::int64_t k = shape_.k;
  res_.values.assign(sigma_.data(), sigma_.data() + k);
  res_.a_norm = a_norm_;
  measure_residuals(a_, at_, ops_, clock_, u_.columns(0, k), v_.columns(0, k), res_.values,
                    tu_.columns(0, k), tv_.columns(0, k), res_.residual_av, res_.residual_atu);
  res_.phases.verify_s += now_seconds() - t0;
  return all_pass(res_);
}

void BlockGkl::download() {
  const std::int64_t k = shape_.k;
  res_.u.assign(static_cast<std::size_t>(shape_.m * k), 0.0);
  res_.v.assign(static_cast<std::size_t>(shape_.n * k), 0.0);
  ops_.to_host(u_.columns(0, k), res_.u.data(), shape_.m);
  ops_.to_host(v_.columns(0, k), res_.v.data(), shape_.n);
}

// Expand until the basis is full, looking at the Ritz estimates after every block step once
// c ≥ k + b (an SVD of the c × c B on the host: O(c³), small against the step's two products)
// and stopping early when all k pass: 116 → 80 applied columns on gen:counts:20000:5000 at
// k = 10.
bool BlockGkl::cycle(IterationRecord& rec) {
  std::int64_t nconv = 0;
  for (;;) {
    expand();
    const bool full = c_ + shape_.block > shape_.basis;
    if (c_ >= shape_.k + shape_.block || full) nconv = ritz(rec);
    if (nconv == shape_.k || full) break;
  }
  restart();
  return nconv == shape_.k && verify();
}

// Restarts in a row whose estimates pass while the true residuals fail: the relations broke
// (a wrong small SVD did that, checked_svd); restarting only repeats it.
constexpr std::int64_t kEstimatesOnlyLimit = 5;

void BlockGkl::run() {
  const double t0 = now_seconds();
  Checkpointer checkpoint(opt_.checkpoint_every, opt_.on_checkpoint);
  start();
  res_.method = "block GKL (b = " + std::to_string(shape_.block) +
                ", L = " + std::to_string(shape_.basis) + ", keep " + std::to_string(shape_.keep) + ")";
  res_.status = SolverStatus::not_converged;
  bool verified = false;
  std::int64_t restarts = 0, estimates_only = 0;  // restarts in a row whose estimates all passed, verify not
  for (; restarts < opt_.max_restarts && !verified && estimates_only < kEstimatesOnlyLimit; ++restarts) {
    if (interrupt_requested()) {
      res_.status = SolverStatus::interrupted;
      res_.reason = interrupted_reason(restarts, 0, shape_.k, "triplets verified");
      break;
    }
    const double ap0 = clock_.apply_seconds(), t_it = now_seconds();
    IterationRecord rec;
    rec.iteration = restarts;
    verified = cycle(rec);
    estimates_only = !verified && rec.converged == shape_.k ? estimates_only + 1 : 0;
    rec.apply_seconds = clock_.apply_seconds() - ap0;
    rec.dense_seconds = now_seconds() - t_it - rec.apply_seconds;
    res_.history.push_back(std::move(rec));
    if (opt_.on_iteration) opt_.on_iteration(res_.history.back());
    // the kept Ritz vectors and the next block: a resumed run continues from this restart
    if (!verified && checkpoint.due()) checkpoint.write(ops_, v_.columns(0, c_ + shape_.block), restarts + 1, 0);
  }
  if (verified) {
    res_.status = SolverStatus::converged;
  } else {
    if (sigma_.size() == 0) {  // interrupted before the first Ritz step: nothing to report
      res_.iterations = restarts;
      return;
    }
    verify();  // the measured residuals of the best approximations
    if (res_.status != SolverStatus::interrupted && estimates_only >= kEstimatesOnlyLimit)
      res_.status = SolverStatus::breakdown;  // (more restarts cannot help: svds.cpp's dense answer may)
    if (res_.status != SolverStatus::interrupted)
      res_.reason = estimates_only >= kEstimatesOnlyLimit
                        ? "stopped after " + std::to_string(restarts) + " restarts: the last " +
                              std::to_string(kEstimatesOnlyLimit) + " passed on the iteration's estimates but not on " +
                              "the true residuals (A·V = U·B no longer holds to the tolerance; more restarts cannot "
                              "repair it; tol " + format("%g", opt_.tol) + " relative to σ₁)"
                        : "not converged after " + std::to_string(restarts) + " restarts (tol " +
                              format("%g", opt_.tol) + " relative to σ₁; a larger --basis helps clusters)";
  }
  res_.iterations = restarts;
  res_.operator_applies = clock_.columns();
  res_.seconds = now_seconds() - t0;
  download();
}

}  // namespace tcsolve::detail
