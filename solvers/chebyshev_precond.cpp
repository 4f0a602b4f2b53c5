#include "solvers/chebyshev_precond.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve {

ChebyshevPreconditioner::ChebyshevPreconditioner(const LinearOperator<double>& a, DenseBlockOps& ops,
                                                 std::int64_t max_cols, double lower, double upper,
                                                 int degree, std::unique_ptr<ChebyshevStep> fused,
                                                 const std::vector<double>* diagonal, bool vectors32)
    : a_(a), ops_(ops), max_cols_(max_cols), lower_(lower), upper_(upper), degree_(degree),
      fused_(std::move(fused)), vectors32_(vectors32) {
  if (!(lower > 0) || !(upper > lower) || !std::isfinite(upper))
    throw InvalidArgument("chebyshev preconditioner: need 0 < lower < upper (got lower " +
                          std::to_string(lower) + ", upper " + std::to_string(upper) + ")");
  if (degree < 1) throw InvalidArgument("chebyshev preconditioner: degree must be at least 1");
  if (a.rows() != a.cols()) throw InvalidArgument("chebyshev preconditioner: A must be square");
  if (a.space() != ops.space() || (fused_ && fused_->space() != ops.space()))
    throw InvalidArgument("chebyshev preconditioner: A and the dense ops live in different spaces");
  // z_{j+1} = (2ρ_j/δ)·(θ·z_j + r − A·z_j) − ρ_j·ρ_{j−1}·z_{j−1}, ρ_0 = 1/σ (j = 1: z_0 = 0, so
  // c = 0 and the buffer it would be read from is not read).
  const double theta = 0.5 * (upper + lower), delta = 0.5 * (upper - lower), sigma = theta / delta;
  double rho_prev = 1.0 / sigma;
  for (int j = 1; j <= degree; ++j) {
    const double rho = 1.0 / (2.0 * sigma - rho_prev);
    steps_.push_back({-2.0 * rho / delta, 2.0 * rho * sigma, j == 1 ? 0.0 : -rho * rho_prev, 2.0 * rho / delta});
    rho_prev = rho;
  }
  const auto mc = static_cast<std::size_t>(max_cols);
  e_.assign(mc, 0.0), ones_.assign(mc, 1.0), zeros_h_.assign(mc, 0.0);
  if (vectors32_) {
    if (!fused_ || diagonal)
      throw InvalidArgument("chebyshev preconditioner: fp32 blocks need the fused step and no Jacobi scaling");
    const Space sp = ops.space();
    r32_ = MultiVector<float>(a.rows(), max_cols, sp);
    za32_ = MultiVector<float>(a.rows(), max_cols, sp);
    zb32_ = MultiVector<float>(a.rows(), max_cols, sp);
    // Step j's r coefficient, the same for every column, in space() for step32.
    std::vector<double> coef(static_cast<std::size_t>(degree) * mc);
    for (int j = 0; j < degree; ++j) std::fill(coef.begin() + j * max_cols, coef.begin() + (j + 1) * max_cols, steps_[j].er);
    coef32_ = ops.allocate(degree * max_cols, 1);
    ops.from_host(coef.data(), degree * max_cols, coef32_.view());
    zeros_ = ops.allocate(max_cols, 1);
    ops.from_host(zeros_h_.data(), max_cols, zeros_.view());
    return;
  }
  w_ = ops.allocate(a.rows(), max_cols);
  z0_ = ops.allocate(a.rows(), max_cols);
  if (diagonal) {
    if (static_cast<std::int64_t>(diagonal->size()) != a.rows())
      throw InvalidArgument("chebyshev preconditioner: the diagonal has the wrong length");
    std::vector<double> inv(diagonal->size());
    for (std::size_t i = 0; i < inv.size(); ++i) {
      if (!((*diagonal)[i] > 0))
        throw InvalidArgument("chebyshev preconditioner: a_ii = " + std::to_string((*diagonal)[i]) +
                              " at row " + std::to_string(i + 1) + " (Jacobi scaling needs a positive diagonal)");
      inv[i] = 1.0 / (*diagonal)[i];
    }
    dinv_ = ops.allocate(a.rows(), 1);
    ops.from_host(inv.data(), a.rows(), dinv_.view());
    rs_ = ops.allocate(a.rows(), max_cols);
  }
}

int ChebyshevPreconditioner::degree_for(double lower, double upper) {
  const double kappa = upper / lower;
  if (!(kappa > 1)) return 1;
  return static_cast<int>(std::clamp(std::ceil(std::sqrt(kappa)), 1.0, 32.0));
}

std::string ChebyshevPreconditioner::describe() const {
  char b[160];
  std::snprintf(b, sizeof b, "chebyshev%s degree %d on [%.6g, %.6g]", dinv_.data() ? " (Jacobi-scaled)" : "",
                degree_, lower_, upper_);
  return fused_ ? std::string(b) + " (" + fused_->describe() + (vectors32_ ? ", fp32 blocks" : "") + ")"
                : std::string(b);
}

void ChebyshevPreconditioner::apply(MvView<const double> r, MvView<double> z) const {
  const std::int64_t n = a_.rows(), s = r.cols;
  if (r.rows != n || z.rows != n || z.cols != s || s > max_cols_)
    throw InvalidArgument("chebyshev preconditioner: block of " + std::to_string(s) +
                          " columns, workspace for " + std::to_string(max_cols_));
  const double theta = 0.5 * (upper_ + lower_);
  if (vectors32_) {
    // The recurrence below on fp32 blocks: (r32, z_1) = fp32(r, r/θ) in one pass, the steps
    // (step32: next = a·A·cur + b·cur + c·next + f·r32), then z = fp64(z_{m+1}) (0·r + z).
    const Space sp = ops_.space();
    MvView<float> r32{r32_.data(), n, s, n, sp};
    MvView<float> zf[2] = {{za32_.data(), n, s, n, sp}, {zb32_.data(), n, s, n, sp}};
    fused_->residual32(1.0, r, r, zeros_.data(), 1.0 / theta, r32, zf[1]);
    for (int j = 1; j <= degree_; ++j) {
      const StepCoef& k = steps_[j - 1];
      fused_->step32(k.a, zf[j % 2], k.b, k.c, zf[(j + 1) % 2], r32, coef32_.data() + (j - 1) * max_cols_);
      columns_ += s;
    }
    fused_->combine32(r, zeros_.data(), zf[(degree_ + 1) % 2], z);
    return;
  }
  // Two buffers alternate: z_{j+1} overwrites z_{j−1}; the parity is chosen so that z_{m+1}
  // is written into z itself.
  MvView<double> buf[2] = {z, z0_.columns(0, s)};
  MvView<double> w = w_.columns(0, s);
  const int off = (degree_ + 1) % 2;
  auto slot = [&](int j) { return buf[(j + off) % 2]; };
  // Jacobi-scaled: the recurrence for D⁻¹A on D⁻¹r (rs = D⁻¹r once).
  const double* d = dinv_.data();
  MvView<const double> rr = r;
  if (d) {
    ops_.scale_rows(d, r, rs_.columns(0, s));
    rr = rs_.columns(0, s);
  }
  // z_1 = r/θ (z_0 = 0).
  std::fill(e_.begin(), e_.begin() + s, 1.0 / theta);
  ops_.axpby_columns(e_.data(), rr, zeros_h_.data(), slot(1));
  for (int j = 1; j <= degree_; ++j) {
    const StepCoef& k = steps_[j - 1];
    MvView<double> cur = slot(j), next = slot(j + 1);
    columns_ += s;
    if (fused_) {  // one kernel: next = a·D⁻¹·A·cur + b·cur + c·next + er·rr
      fused_->step(k.a, cur, k.b, k.c, next, k.er, rr, d);
      continue;
    }
    ops_.queue().external_begin();
    a_.apply(cur, w);  // W = A·z_j
    ops_.queue().external_end();
    if (d) ops_.scale_rows(d, w, w);  // W = D⁻¹·A·z_j (element-wise: in place is safe)
    ops_.chebyshev().axpbypcz(k.a, w, k.b, cur, k.c, next);
    std::fill(e_.begin(), e_.begin() + s, k.er);
    ops_.axpby_columns(e_.data(), rr, ones_.data(), next);  // += (2ρ_j/δ)·rr
  }
}

double chebyshev_upper_bound(const Csr<double>& a, bool jacobi) {
  double upper = 0;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double row = 0, diag = 0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      row += std::abs(a.values[p]);
      if (a.col_idx[p] == i) diag = a.values[p];
    }
    upper = std::max(upper, jacobi ? (diag > 0 ? row / diag : INFINITY) : row);
  }
  return upper;
}

bool chebyshev_wants_jacobi(const Csr<double>& a) {
  const std::vector<double> d = csr_diagonal(a);
  if (d.empty() || !(d[0] > 0)) return false;
  for (double v : d)
    if (!(v > 0)) return false;
  return std::any_of(d.begin(), d.end(), [&](double v) { return v != d[0]; });
}

namespace {
// The probe only bounds the spectrum here: local reorthogonalization (spectral_probe.hpp).
// TCSOLVE_PRECOND_PROBE_FULL=1 restores the full one (A/B).
bool probe_full_reorth() {
  const char* e = std::getenv("TCSOLVE_PRECOND_PROBE_FULL");
  return e && std::atoi(e) != 0;
}
}  // namespace

std::unique_ptr<ChebyshevPreconditioner> make_chebyshev_preconditioner(
    const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols, double upper_bound,
    std::uint64_t seed, double* seconds, int degree, const Csr<double>* csr, Precision storage,
    bool jacobi, std::unique_ptr<ChebyshevStep> fused_given) {
  const double t0 = detail::now_seconds();
  if (!(upper_bound > 0) || !std::isfinite(upper_bound))
    throw InvalidArgument("chebyshev preconditioner: the bound of λmax must be positive and finite");
  if (jacobi && !csr) throw InvalidArgument("chebyshev preconditioner: Jacobi scaling needs the matrix");
  const std::int64_t n = a.rows();
  std::vector<double> diag;
  MultiVector<double> dhalf, tmp;
  if (jacobi) {
    diag = csr_diagonal(*csr);
    std::vector<double> h(diag.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = diag[i] > 0 ? 1.0 / std::sqrt(diag[i]) : 0.0;
    dhalf = ops.allocate(n, 1);
    ops.from_host(h.data(), n, dhalf.view());
    tmp = ops.allocate(n, 1);
  }
  // Probe steps: 40, fewer when its basis (steps + 1 n-vectors) would take more than a quarter of
  // the free device memory (at least 8: the lower end only shapes the polynomial).
  // The same on every rank of a distributed block (its collectives run step by step): from the
  // global rows, and the memory of the fullest GPU (an uneven split of 64 rows over 3 ranks,
  // 22/21/21, took 22 and 21 steps and hung).
  const std::int64_t ng = ops.global_rows(n);
  int probe_steps = static_cast<int>(std::min<std::int64_t>(40, ng));
  if (const char* ps = std::getenv("TCSOLVE_PRECOND_PROBE_STEPS"))  // bench knob (A/B only)
    probe_steps = static_cast<int>(std::min<std::int64_t>(std::max(2, std::atoi(ps)), ng));
  if (ops.space() == Space::device) {
    const double vecs = ops.global_min(0.25 * static_cast<double>(device_free_bytes()) / (8.0 * static_cast<double>(n)));
    probe_steps = static_cast<int>(std::max<double>(std::min<double>(probe_steps, vecs - 1), std::min<std::int64_t>(8, ng)));
  }
  // The probe on the symmetric operator whose spectrum the polynomial covers: A, or
  // D^{-1/2}·A·D^{-1/2} (the spectrum of D⁻¹A).
  const SpectralProbe pr = spectral_probe([&](MvView<const double> x, MvView<double> y) {
    MvView<const double> in = x;
    if (jacobi) {
      ops.scale_rows(dhalf.data(), x, tmp.columns(0, x.cols));
      in = tmp.columns(0, x.cols);
    }
    ops.queue().external_begin();
    a.apply(in, y);
    ops.queue().external_end();
    if (jacobi) ops.scale_rows(dhalf.data(), y, y);
  }, ops, n, probe_steps, seed, probe_full_reorth());
  trace_mark("precond: spectral probe");
  const double lower = pr.lower > 1e-12 * upper_bound ? std::min(pr.lower, 0.5 * upper_bound) : 1e-6 * upper_bound;
  std::unique_ptr<ChebyshevStep> fused = std::move(fused_given);
  double upper = upper_bound;
  if (csr && !fused) {
    if (csr->nrows != n) throw InvalidArgument("chebyshev preconditioner: the matrix and the operator differ in size");
    if (chebyshev_step_fuses(*csr, ops.space(), storage)) {
      // On the GPU, the operator's own device CSR of A when it holds one (fp64, A's row order):
      // the step reads its indices in place and rounds the values there, instead of rounding
      // on the host and uploading a second copy of A (lap3d:100: 64 MB, 26–36 ms on the H200).
      if (ops.space() == Space::device) fused = make_chebyshev_step_on_operator(a, *csr, storage, ops.stream());
      if (!fused) fused = make_chebyshev_step(*csr, ops.backend(), storage, ops.stream());
      trace_mark("precond: fused step ready");
    }
  }
  // A rounded step (built here or given) applies Ã, |Ã − A| ≤ 2^-24·|A| elementwise: the bound
  // of λmax widens with it, so that p(Ã) stays positive definite.
  if (fused && storage != Precision::fp64) upper *= 1.0 + 1e-6;
  // fp32 blocks in the steps where the step is fused and unscaled, and A is rounded anyway.
  const char* pv = std::getenv("TCSOLVE_PRECOND_VECTORS");
  const bool vectors32 = fused && !jacobi && storage != Precision::fp64 && !(pv && std::string(pv) == "fp64");
  auto pc = std::make_unique<ChebyshevPreconditioner>(
      a, ops, max_cols, lower, upper,
      degree > 0 ? degree : ChebyshevPreconditioner::degree_for(lower, upper), std::move(fused),
      jacobi ? &diag : nullptr, vectors32);
  if (seconds) *seconds = detail::now_seconds() - t0;
  return pc;
}

bool chebyshev_step_fuses(std::int64_t n, std::int64_t nnz, Space space, Precision storage) {
  // Short rows only (chebyshev_step_pays). Its copy of A is made only when it takes at most a
  // tenth of the free device memory.
  if (!chebyshev_step_pays(n, nnz)) return false;
  const double step_bytes = (storage == Precision::fp32 ? 8.0 : 12.0) * static_cast<double>(nnz) +
                            8.0 * static_cast<double>(n + 1);
  return space == Space::host || step_bytes <= 0.1 * static_cast<double>(device_free_bytes());
}

const char* auto_precond_refusal(const AutoPrecondFacts& f) {
  if (!f.gpu) return "the CPU";
  if (f.tight) return "GPU memory that holds the right-hand sides only in batches";
  if (f.reordered) return "--reorder";
  if (f.n < kAutoChebyshevRows) return "fewer than 131072 rows";
  if (f.diagonal_varies) return "a diagonal that varies (Jacobi scaling)";
  if (!chebyshev_step_fuses(f.n, f.nnz, Space::device, Precision::fp32))  // (the GPU's step stores A in fp32)
    return "rows too long to fuse its steps, or no room for its copy of A";
  return nullptr;
}

}  // namespace tcsolve
