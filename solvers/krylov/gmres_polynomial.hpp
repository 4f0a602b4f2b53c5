// The GMRES polynomial as a right preconditioner (Loe & Morgan, "Toward efficient polynomial
// preconditioning for GMRES", NLAA 2022; Embree, Loe & Morgan 2021): M⁻¹ = p(A), where
// π(z) = 1 − z·p(z) = ∏_i (1 − z/θ_i) is the residual polynomial of d steps of GMRES from a random
// vector, its roots θ_i the harmonic Ritz values of that Arnoldi process. A Krylov method then
// solves B·y = b with B = A·p(A) = I − π(A), and x = p(A)·y: the residual b − A·x = b − B·y is the
// one the method minimizes (right preconditioning), and B is symmetric whenever A is (a polynomial
// in A), so MINRES takes it too.
//
// Why: restarted GMRES(m) on a stiff operator (a convection–diffusion stencil: GMRES(30) takes ~670
// steps on 1M rows) spends its time in the orthogonalization (about 1.5·m + 8.5 passes over the
// n × s basis a step, gmres.cpp) and little in A. With B of degree d the number of products with A
// stays about the same while the number of Arnoldi steps falls about d-fold (bench: 3D
// convection–diffusion, d = 10: 349 → 40 steps, 362 → 430 products).
//
// Applying π(A) to a block in real arithmetic, in Leja order (θ real / a ± bi, μ = a² + b²):
//   real θ:  v ← v − (1/θ)·A·v                                   (one product)
//   pair:    t = 2a·v − A·v;  v ← v − (1/μ)·A·t                  (two products)
// and p(A)·v = Σ_i (the i-th factor's input)·c_i with c = 1/θ (real; the input itself) or 1/μ
// (pair; the input t). Each line is one fused step of spmm/chebyshev_step.hpp (next = a·A·cur +
// b·cur + c·next + e·r: 4 block passes besides A), or an apply and two block passes without one.
// The last factor of B·v folds in v − π(A)·v (the step's r term), so that B costs d steps.
//
// Jacobi-scaled (a diagonal D given, for GMRES where diag(A) varies): the polynomial in K = D⁻¹A,
// M⁻¹ = p(K)·D⁻¹, so B = A·M⁻¹ = D·(I − π(K))·D⁻¹ and P = p(K)·D⁻¹: B·v is D·(u − π(K)·u) with
// u = D⁻¹·v (two row scalings more), the steps scale A·cur by D⁻¹ (the fused step's d), and the
// roots are K's (Arnoldi on RowScaledOperator). B is not symmetric then: GMRES only.
//
// Stability (Loe & Morgan §3): a root whose "product of other factors" pof(k) = ∏_{i≠k}|1 − θ_k/θ_i|
// exceeds 1e4 gets extra copies (one per 14 decades beyond 4), so that the product form does not
// amplify rounding; the roots are then ordered by modified Leja (pairs adjacent).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/multivector.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::krylov {

// A root of π: θ = re (im == 0), or the conjugate pair re ± i·im (im > 0).
struct PolyRoot {
  double re = 0.0, im = 0.0;
  bool pair() const { return im != 0.0; }
};

// Σ over roots of 1 (real) or 2 (pair): the degree of π, the products with A of one B·v.
int polynomial_degree(const std::vector<PolyRoot>& roots);

// The harmonic Ritz values of the Arnoldi relation A·V_k = V_{k+1}·H (H (k+1) × k, column-major,
// ld = k + 1): the eigenvalues of H_k + h²_{k+1,k}·f·e_kᵀ with H_kᵀ·f = e_k (the ordinary Ritz
// values of H_k where H_k is singular). Roots within 1e-14·max|θ| of 0 are dropped (1/θ would
// blow up; a zero root means A is singular on the Krylov space). Conjugate pairs once, im > 0.
std::vector<PolyRoot> harmonic_ritz_roots(const std::vector<double>& h, int k);
// Extra copies of roots whose pof exceeds 1e4 (above), then modified Leja order: the root of
// largest modulus first, then each next maximizing Σ log|θ − θ_chosen| over the chosen ones and
// their conjugates.
std::vector<PolyRoot> stable_leja_order(std::vector<PolyRoot> roots);

struct PolyRoots {
  std::vector<PolyRoot> roots;  // ordered, with the extra copies
  int arnoldi_steps = 0;        // steps taken (fewer than asked on an invariant subspace)
  double seconds = 0.0;
};
// `degree` Arnoldi steps (GMRES's fused CGS2 passes, queued; one download at the end) on the
// operator from a random start (seed) in ops.space(), the harmonic Ritz values, ordered. No root
// (roots empty) where A·v vanishes on the start vector: the caller goes without the polynomial.
PolyRoots gmres_polynomial_roots(const LinearOperator<double>& a, DenseBlockOps& ops, int degree,
                                 std::uint64_t seed);

// K = diag(dinv)·A as an operator (dinv: n values in ops.space(), e.g. a GmresPolynomial's): the
// operator the Jacobi-scaled polynomial's roots come from.
class RowScaledOperator final : public LinearOperator<double> {
 public:
  RowScaledOperator(const LinearOperator<double>& a, DenseBlockOps& ops, const double* dinv)
      : a_(a), ops_(ops), dinv_(dinv) {}
  std::int64_t rows() const override { return a_.rows(); }
  std::int64_t cols() const override { return a_.cols(); }
  Space space() const override { return a_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override;

 private:
  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  const double* dinv_;
};

// 1/d_i for the Jacobi scaling (a zero or non-finite d_i: 1 there, as GMRES's Jacobi), uploaded
// into an n × 1 block of ops.space().
MultiVector<double> inverse_diagonal(DenseBlockOps& ops, const std::vector<double>& d);

class GmresPolynomial {
 public:
  // roots from gmres_polynomial_roots (not empty); fused (optional): A as a fused step in
  // ops.space() on ops.stream(). Workspace: three n × max_cols blocks (four without `fused`).
  // dinv (optional, n values in ops.space(), outliving this): the Jacobi-scaled polynomial (above),
  // roots then from RowScaledOperator(a, ops, dinv); one more n × max_cols block of workspace.
  // fp32_on_host: the fp32 apply (below) on the CPU backend too (tests); on the GPU it is there
  // wherever a fused step is given and dinv is not.
  GmresPolynomial(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols,
                  std::vector<PolyRoot> roots, std::unique_ptr<ChebyshevStep> fused = nullptr,
                  const double* dinv = nullptr, bool fp32_on_host = false);
  GmresPolynomial(const GmresPolynomial&) = delete;
  GmresPolynomial& operator=(const GmresPolynomial&) = delete;

  // w = A·p(A)·v = v − π(A)·v: degree() products with A. v, w: n × s (s ≤ max_cols), no alias.
  void apply_preconditioned(MvView<const double> v, MvView<double> w) const;
  // y = p(A)·v: degree() − 1 products with A.
  void apply_polynomial(MvView<const double> v, MvView<double> y) const;
  // y ≈ p(A)·v in fp32 steps with fp32 accumulation (A's fused step32), in the Richardson form
  //   y_0 = 0;  a real root θ:  y ← y + (1/θ)·(v − A·y)                   (one step)
  //             a pair θ, θ̄ (α = Re θ, μ = |θ|²):  t = v − A·y;
  //                           y ← y + (2α/μ)·t − (1/μ)·A·t                  (two steps)
  // which is Σ_i c_i·(factor i's input) of polynomial_sum in exact arithmetic (A·y_i = v − π_i(A)·v),
  // with no separate accumulation pass: v rounded to fp32 once, y to fp64 once at the end; each
  // step reads A, gathers y (4 bytes an entry), reads v (4), writes y (4). An inexact p(A) (a
  // relative error of fp32 size: under 1e-5 in the tests), for FGMRES (KrylovOptions::flexible), where it changes M, not the
  // answer. Only where has_fp32(), after reserve_fp32().
  void apply_polynomial32(MvView<const double> v, MvView<double> y) const;
  bool has_fp32() const { return fp32_; }
  // The fp32 apply's workspace: four fp32 n × max_cols blocks and its coefficients, made by the
  // caller that takes that apply, before its iterations (FGMRES in polynomial_solve); a second call
  // does nothing. InvalidArgument where !has_fp32().
  void reserve_fp32() const;

  // The applies as operators (in ops.space()): B = A·p(A), P = p(A), and P in fp32 steps.
  const LinearOperator<double>& preconditioned() const { return b_; }
  const LinearOperator<double>& polynomial() const { return p_; }
  const LinearOperator<double>& polynomial32() const { return p32_; }

  int degree() const { return degree_; }
  const std::vector<PolyRoot>& roots() const { return roots_; }
  std::string describe() const;  // "GMRES polynomial p of degree d − 1 (π = 1 − z·p: r real roots, q pairs)"
  std::int64_t columns_applied() const { return columns_; }  // columns multiplied by A so far

 private:
  class Op final : public LinearOperator<double> {
   public:
    enum Kind { b, p, p32 };
    Op(const GmresPolynomial& p, Kind k) : p_(p), k_(k) {}
    std::int64_t rows() const override { return p_.a_.rows(); }
    std::int64_t cols() const override { return p_.a_.cols(); }
    Space space() const override { return p_.ops_.space(); }
    void apply(MvView<const double> x, MvView<double> y) const override {
      k_ == b ? p_.apply_preconditioned(x, y) : k_ == p ? p_.apply_polynomial(x, y) : p_.apply_polynomial32(x, y);
    }

   private:
    const GmresPolynomial& p_;
    Kind k_;
  };
  // next = a·A·cur + b·cur + c·next + e·r (c == 0: next not read; e == 0: r not read).
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r) const;
  void check(MvView<const double> v, MvView<double> out, const char* what) const;
  // The unscaled applies (on u = D⁻¹·v when scaled): w = u − π(K)·u, y = p(K)·u.
  void residual_polynomial(MvView<const double> v, MvView<double> w) const;
  void polynomial_sum(MvView<const double> v, MvView<double> y) const;

  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  std::int64_t max_cols_;
  std::vector<PolyRoot> roots_;
  int degree_;
  std::unique_ptr<ChebyshevStep> fused_;
  const double* dinv_ = nullptr;                 // D⁻¹ (scaled) or nullptr
  MultiVector<double> d_;                        // D (scaled)
  mutable MultiVector<double> t0_, t1_, t2_, w_, u_;  // iterates, the pair's t, A·cur (no fused step), D⁻¹·v
  mutable std::vector<double> coef_, ones_, zeros_;  // per-column coefficients (host)
  // The fp32 apply's blocks (v, two iterates, the pair's t) and per-column coefficients in
  // ops.space(): f_ (max_cols × factors: 1/θ of a real root, 1 for a pair's t), first_ (−1/θ_0 or
  // −1: the rounding of v), zero_ (0: y's fp64 copy).
  bool fp32_ = false;  // the fp32 apply is there: A's fused step, no row scaling, the GPU (or asked)
  mutable MultiVector<float> v32_, ya32_, yb32_, t32_;
  mutable MultiVector<double> f_, first_, zero_;
  mutable std::int64_t columns_ = 0;
  Op b_{*this, Op::b}, p_{*this, Op::p}, p32_{*this, Op::p32};
};

// The degrees the command and Python take without --precond-degree (H200 sweeps: docs/decisions.md;
// GMRES 40 since FGMRES with p in fp32: convdiff3d:100 solve 0.240 s at 30, 0.218 at 40).
constexpr int kDegreeGmres = 40;
constexpr int kDegreeMinres = 15;

struct BuiltPolynomial {
  std::unique_ptr<GmresPolynomial> poly;  // nullptr: no root (A·v vanished on the start vector)
  int arnoldi_steps = 0;
};
// The polynomial the command and Python use: roots from `degree` Arnoldi steps on A (on D⁻¹A when
// dinv is given), and A's fused step where csr (A as the operator holds it, unpermuted; nullptr:
// none) has short rows: the operator's own device CSR, else a copy.
BuiltPolynomial make_gmres_polynomial(const LinearOperator<double>& a, const Csr<double>* csr, DenseBlockOps& ops,
                                      std::int64_t max_cols, int degree, std::uint64_t seed,
                                      const double* dinv = nullptr);
// The same with A's fused step given by the caller (nullptr: none; e.g. the step on CuPy's own
// arrays, make_chebyshev_step_view), no row scaling.
BuiltPolynomial make_gmres_polynomial(const LinearOperator<double>& a, std::unique_ptr<ChebyshevStep> step,
                                      DenseBlockOps& ops, std::int64_t max_cols, int degree, std::uint64_t seed);

}  // namespace tcsolve::krylov
