// Chebyshev polynomial preconditioner for block CG: Z = p_m(A)·R, where z = p_m(A)·r is the
// iterate after m + 1 steps of the Chebyshev iteration for A·z = r on [lower, upper] from z = 0.
//
// With θ = (upper + lower)/2, δ = (upper − lower)/2, σ = θ/δ and the residual polynomial
// R_j(λ) = T_j((θ − λ)/δ) / T_j(σ), z_j = p_{j−1}(A)·r with 1 − λ·p(λ) = R_j(λ):
//   z_1 = r/θ
//   z_{j+1} = (2ρ_j/δ)·(θ·z_j + r − A·z_j) − ρ_j·ρ_{j−1}·z_{j−1},  ρ_0 = 1/σ, ρ_j = 1/(2σ − ρ_{j−1})
// (from T_{j+1} = 2μ·T_j − T_{j−1} and ρ_j = T_j(σ)/T_{j+1}(σ)).
// M = p_m(A) is symmetric, and positive definite whenever upper ≥ λmax(A): for 0 < λ < lower the
// argument (θ − λ)/δ lies in (1, σ), so 0 < R < 1 there as on [lower, upper], and p = (1 − R)/λ
// > 0. `lower` only shapes the polynomial (any 0 < lower < upper is safe); `upper` must bound
// λmax (the ∞-norm of A does). Block CG's answer does not depend on M, only its iteration count.
//
// Jacobi-scaled (a diagonal D given): the same polynomial in D⁻¹A applied to D⁻¹r, i.e.
// M = p_m(D⁻¹A)·D⁻¹ = D^{-1/2}·p_m(D^{-1/2}AD^{-1/2})·D^{-1/2}, symmetric positive definite when
// upper ≥ λmax(D⁻¹A) (‖D⁻¹A‖∞ bounds it). For matrices whose diagonal varies (elasticity).
//
// Cost of one apply to s columns: m applies of A, and per step one fused pass Z = a·W + b·Z_j +
// c·Z_{j−1} (3 reads, 1 write) plus Z += e·R (2 reads, 1 write): 8·m·n·s·7 bytes besides A.
// Fused (one kernel per step: cur gathered, r and next read, next written): 8·m·n·s·4 bytes.
// Fused on fp32 blocks (vectors32: the iterates and r in fp32, fp32 accumulation; the fp32 rung's
// step32): one pass r → (fp32 r, fp32 r/θ) (8 read, 8 written per entry), 16·m·n·s bytes for the
// steps, one pass back to fp64 (12 read, 8 written): about half the fused fp64 path's bytes.
// M then carries fp32 rounding (relative 1e-7 of each iterate): it changes M slightly, not the
// answer, which block CG measures as fp64 residuals of A.
// Workspace: two n × max_cols fp64 blocks (A·z_j and one iterate; the other is the output), or
// with vectors32 three n × max_cols fp32 blocks, allocated at construction.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/multivector.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve {

class ChebyshevPreconditioner final : public LinearOperator<double> {
 public:
  // degree m ≥ 1 (m applies of A per apply); 0 < lower < upper. fused (optional): the same A as
  // a fused step (spmm/chebyshev_step.hpp) in ops.space() on ops.stream(); each step is then one
  // kernel instead of an apply of `a` and two block passes.
  // vectors32: the steps on fp32 blocks (needs `fused`, and no diagonal).
  ChebyshevPreconditioner(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols,
                          double lower, double upper, int degree,
                          std::unique_ptr<ChebyshevStep> fused = nullptr,
                          const std::vector<double>* diagonal = nullptr, bool vectors32 = false);
  std::int64_t rows() const override { return a_.rows(); }
  std::int64_t cols() const override { return a_.cols(); }
  Space space() const override { return ops_.space(); }
  void apply(MvView<const double> r, MvView<double> z) const override;
  int degree() const { return degree_; }
  bool vectors32() const { return vectors32_; }
  double lower() const { return lower_; }
  double upper() const { return upper_; }
  std::string describe() const;  // "chebyshev degree m on [lower, upper]"

  // The degree for a spectrum in [lower, upper] (κ = upper/lower): m = ceil(√κ) clamped to
  // [1, 32]. Each outer block CG iteration costs more than a fused step (its dense passes), so
  // higher degrees win until the polynomial saturates: on the H200, lap3d:100 with 32 and 128
  // right-hand sides got faster from degree 4 to 32 (docs/performance.md), where √κ ≈ 22.
  static int degree_for(double lower, double upper);

  // Columns multiplied by A inside the applies so far (m per column per apply).
  std::int64_t columns_applied() const { return columns_; }

 private:
  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  std::int64_t max_cols_;
  double lower_, upper_;
  int degree_;
  std::unique_ptr<ChebyshevStep> fused_;
  MultiVector<double> dinv_;             // D⁻¹ (n × 1) when Jacobi-scaled
  mutable MultiVector<double> w_, z0_, rs_;  // A·z_j; the second iterate; D⁻¹·r
  // vectors32: fp32 r and the two iterates; s zeros and the steps' r coefficients (degree ×
  // max_cols, step j's 2ρ_j/δ repeated per column), in ops.space().
  // The recurrence's coefficients (apply()), fixed by [lower, upper] and the degree: step j's
  // next = a·A·cur + b·cur + c·next + er·r, ρ_j = 1/(2σ − ρ_{j−1}).
  struct StepCoef {
    double a, b, c, er;
  };
  std::vector<StepCoef> steps_;
  // Host coefficient rows for axpby_columns (max_cols each): 1/θ, er of the step, ones, zeros.
  mutable std::vector<double> e_;
  std::vector<double> ones_, zeros_h_;
  bool vectors32_ = false;
  mutable MultiVector<float> r32_, za32_, zb32_;
  MultiVector<double> zeros_, coef32_;
  mutable std::int64_t columns_ = 0;  // A·z_j, and the second of the two iterates
};

// The preconditioner with its bounds and degree chosen here: upper = `upper_bound` (≥ λmax(A),
// e.g. ‖A‖∞), lower = the smallest Ritz value of a 40-step Lanczos probe (≥ λmin: any positive
// value is safe), degree = `degree` if > 0, else degree_for(lower, upper). `seconds` (optional)
// gets the probe's time. csr (optional): A as a matrix in the basis of `a`, for the fused step,
// with A stored in `storage` there (fp64 or fp32; a rounded A changes M, not the answer; upper is
// then raised by 1e-6 relative so that it still bounds λmax of the rounded matrix). A fused step
// without Jacobi scaling runs on fp32 blocks (vectors32), unless TCSOLVE_PRECOND_VECTORS=fp64
// (A/B benchmarks) or storage is fp64 (the exact-M path the tests compare with). jacobi: scale
// by the diagonal of csr (required then) when it is not constant; upper_bound must then bound
// λmax(D⁻¹A) (‖D⁻¹A‖∞), and the probe runs on D^{-1/2}AD^{-1/2}.
std::unique_ptr<ChebyshevPreconditioner> make_chebyshev_preconditioner(
    const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols, double upper_bound,
    std::uint64_t seed, double* seconds = nullptr, int degree = 0, const Csr<double>* csr = nullptr,
    Precision storage = Precision::fp64, bool jacobi = false,
    std::unique_ptr<ChebyshevStep> fused_given = nullptr);  // a ready step on `a` (no csr needed)

// ‖D⁻¹A‖∞ (jacobi) or ‖A‖∞: the preconditioner's bound of λmax.
double chebyshev_upper_bound(const Csr<double>& a, bool jacobi);
// True when A's diagonal is positive and not constant (Jacobi scaling changes the polynomial).
bool chebyshev_wants_jacobi(const Csr<double>& a);
// Whether make_chebyshev_preconditioner fuses each polynomial step into one kernel for A: rows of
// at most 16 non-zeros on average (longer rows: the operator's own kernel is faster) and, on the
// device, A's copy in `storage` within a tenth of the free memory.
bool chebyshev_step_fuses(std::int64_t n, std::int64_t nnz, Space space, Precision storage);
inline bool chebyshev_step_fuses(const Csr<double>& a, Space space, Precision storage) {
  return chebyshev_step_fuses(a.nrows, a.nnz(), space, storage);
}

// Block CG's automatic preconditioner (`solve --precond auto`, Python `cg(M='auto')`): the
// Chebyshev polynomial where it was measured to win — on the GPU, its steps fused (fp32 copy of A,
// chebyshev_step_fuses), no Jacobi scaling (a constant diagonal), the matrix in its own order, at
// least kAutoChebyshevRows rows, and the right-hand sides not in batches (`tight`: the
// polynomial's 3 more blocks a column and its copy of A would narrow them further). H200, 32
// right-hand sides, seconds.total Jacobi → polynomial (docs/performance.md): lap3d:40 (64k rows)
// 0.070 → 0.073, lap3d:52 (141k) 0.140 → 0.106, lap3d:100 0.43 → 0.26; else Jacobi: elast3d:64's
// ~80-entry rows 1.00 → 1.36, gen:random:1000000:6's varying diagonal 0.33 → 0.47.
constexpr std::int64_t kAutoChebyshevRows = 1 << 17;
struct AutoPrecondFacts {
  bool gpu = false, tight = false, reordered = false, diagonal_varies = false;
  std::int64_t n = 0, nnz = 0;
};
// nullptr: the polynomial; else why Jacobi ("the CPU", "fewer than 131072 rows", ...).
const char* auto_precond_refusal(const AutoPrecondFacts& f);

}  // namespace tcsolve
