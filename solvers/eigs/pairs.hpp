// Internal to the eigs driver (solvers/eigs/): the problem as the steps see it, sets of pairs in
// the ops' space, their true residuals and the convergence tests (solvers/eigs/eigs.hpp states
// the tests and the rounding floors).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/multivector.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::eigs_detail {

std::string fmt(const char* f, double v);
std::string g17(double v);
bool is_diagonal(const Csr<double>& a);
// A diagonal and B absent or diagonal (PlanFacts::diagonal; run_dense reads such pairs off).
inline bool is_diagonal_pencil(const Csr<double>& a, const Csr<double>* b) {
  return is_diagonal(a) && (!b || is_diagonal(*b));
}

constexpr double kUnitRoundoff = 1.1102230246251565e-16;

// Everything the steps need about the problem.
struct Problem {
  const Csr<double>* a = nullptr;  // host matrices (matrix form only)
  const Csr<double>* b = nullptr;
  const LinearOperator<double>* aop = nullptr;  // in ops.space()
  const LinearOperator<double>* bop = nullptr;
  DenseBlockOps* ops = nullptr;
  std::int64_t n = 0;  // rows of the blocks here (this process's share when distributed)
  // The problem's size (the sum over the ranks of a distributed problem; else n): what the
  // choices and limits are computed from, so that every rank makes the same ones.
  std::int64_t global_n() const { return ops ? ops->global_rows(n) : n; }
  double a_norm = 0, b_norm = 1, binv_norm = 1;  // ‖A‖, ‖B‖, ‖B⁻¹‖ (estimates or bounds)
  // The pencil's spectral radius as zero_scale reads it (0: a_norm·binv_norm). With B, at most
  // max_i |a_ii|/b_ii, a lower bound on max|λ| (the Rayleigh quotients of the unit vectors):
  // ‖A‖·‖B⁻¹‖ can exceed the radius by far (bcsstk20/bcsstm20: 6.7e13 against 2.7e10), and
  // the rel test's zone at λ ≈ 0 must not reach eigenvalues a solve resolves (there λ = 1618).
  double radius = 0;
  ConvTest conv = ConvTest::rel;
  // A's diagonal: the caller's (EigsPrebuilt::a_diagonal) or diag_a_own; B's, computed here.
  const std::vector<double>* diag_a = nullptr;
  std::vector<double> diag_a_own, diag_b;
  // Operators that are not ours (a Python LinearOperator) may launch on any stream.
  bool foreign_operator = false;
  // The fused Chebyshev step of A (runs.hpp fused_step_for), built at the first need and kept
  // for the re-check (its copy of A is made once).
  mutable std::shared_ptr<const ChebyshevStep> fused_own;
  mutable bool fused_tried = false;
};

// The convergence test as the solvers' formula ‖r‖ ≤ tol·(a_eff + |θ|·b_eff)·‖x‖:
//   rel  (1e-12·‖A‖, 1)   norm (‖A‖, ‖B‖)   abs (1, 0).
struct TestNorms {
  double a_eff, b_eff;
};
TestNorms test_norms(ConvTest c, double a_norm, double b_norm);

// The solvers' rounding floor (EigenOptions::floor_a / floor_b): 4u·‖A‖ and 4u·‖B‖, about what
// an iteration in double reaches for a pair whose test lies below it (Chebyshev: 2.7u·‖A‖ on
// the null vector of a Neumann Laplacian; at u·‖A‖ it never locked and ran to its limit, 51 s
// instead of 0.4). The final test (test_pairs) allows 10u·‖|A|·|x| + |λ|·|B|·|x|‖.
inline double floor_a(const Problem& p) { return 4.0 * kUnitRoundoff * p.a_norm; }
inline double floor_b(const Problem& p) { return 4.0 * kUnitRoundoff * p.b_norm; }

// A set of pairs in the ops space with its true residuals.
struct PairSet {
  std::vector<double> values;
  MultiVector<double> x;  // n × m, B-orthonormal
  // ‖A·x − λ·B·x‖₂, and the norm the convergence test scales with: ‖B·x‖₂ for rel (so that
  // the test is invariant under B → c·B, λ → λ/c; ‖x‖₂ when B = I), ‖x‖₂ for norm and abs.
  std::vector<double> rn, xn;
  std::vector<double> rq_dev;  // |λ − xᵀAx/xᵀBx| (0 when λ is the Rayleigh quotient)
};

// Y = op(X) between host synchronizations (any operator on any stream): how the composite
// operators (LowRankUpdate below, the folded and constrained operators) apply the ones inside.
void fenced_apply(DenseBlockOps& ops, const LinearOperator<double>& op, MvView<const double> x, MvView<double> y);
// The first `cols` columns of a composite operator's workspace block, sized at construction for
// the widest block expected; a wider one (not expected: the runs apply at most k + guard columns)
// regrows it to n × cols once.
MvView<double> workspace_view(DenseBlockOps& ops, MultiVector<double>& m, std::int64_t n, std::int64_t cols);

// y = op(x) + U·diag(c)·(Wᵀ·x): Wielandt / shift deflation of found pairs, as an operator in
// ops.space() (U, W: n × m blocks owned by the caller).
class LowRankUpdate final : public LinearOperator<double> {
 public:
  LowRankUpdate(const LinearOperator<double>& op, DenseBlockOps& ops, MvView<const double> u,
                MvView<const double> w, std::vector<double> c)
      : op_(op), ops_(ops), u_(u), w_(w), c_(std::move(c)) {}
  std::int64_t rows() const override { return op_.rows(); }
  std::int64_t cols() const override { return op_.cols(); }
  Space space() const override { return op_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override;

 private:
  const LinearOperator<double>& op_;
  DenseBlockOps& ops_;
  MvView<const double> u_, w_;
  std::vector<double> c_;
  mutable std::vector<double> g_;
};

// B-normalizes X in place (xᵀBx = 1), sets λ to the Rayleigh quotients — or to `given` values
// where those are more accurate (a Rayleigh quotient computed in double loses ~u·|x|ᵀ|A||x| to
// cancellation, ≫ u·λ for the small eigenvalues of ill-conditioned A; σ + 1/θ from a shift-invert
// Ritz value θ does not) — and computes the true residuals. rq_dev = |λ − Rayleigh quotient|.
// ax, bx: n × m work blocks (bx unused without B).
void rayleigh_and_residuals(const Problem& s, detail::ApplyClock& clock, MvView<double> x,
                            MvView<double> ax, MvView<double> bx, std::vector<double>& lam,
                            std::vector<double>& rn, std::vector<double>& xn,
                            std::vector<double>& rq_dev, const std::vector<double>* given = nullptr);

// tol·(a_eff + |λ|·b_eff)·xn: what the test allows (before the floor at λ ≈ 0, below).
double bound_of(ConvTest c, double tol, double lam, double xn, const Problem& s);

// The rel test at λ ≈ 0 (eigs.hpp). An eigenvalue with |λ| ≤ u^(2/3)·‖A‖·‖B⁻¹‖ (ARPACK's ε^(2/3),
// scaled to the problem: 2.3e-11 of the spectrum's radius) is zero to working precision: the
// rel test's tol·|λ|·‖B·x‖ lies far below what any computation in double resolves,
// u·(‖A‖ + |λ|·‖B‖)·‖x‖ (the rounding of A·x alone). There a pair passes at that floor times
// kZeroFloorFactor: its eigenvalue is then within 8u·‖A‖·‖B⁻¹‖ of a true one (backward stable,
// what a dense solve gives), as its error bound says. 8: the solvers stop at 4u (floor_a), and the
// driver measures again, which differs by about u·‖A‖. Every copy of 0 (a graph Laplacian's
// components, rigid modes) passes so; a pair between that zone and the one where tol·|λ| exceeds
// the floor (a stiff matrix's eigenvalue 1 beside ‖A‖ = 4e9) keeps the plain test, which shift-
// invert meets (its vectors' own rounding is small: residual_floor).
constexpr double kZeroFloorFactor = 8.0;
// u^(2/3)·radius (‖A‖·‖B⁻¹‖ unless Problem::radius is set): below it an eigenvalue is zero to
// working precision.
double zero_scale(const Problem& s);
// kZeroFloorFactor·u·(‖A‖ + |λ|·‖B‖)·x_norm (x_norm = ‖x‖₂).
double zero_floor(double lam, double x_norm, const Problem& s);
// u·(‖A‖ + |λ|·‖B‖)·xn: the rounding floor no iteration in double gets much below.
double attainable_floor(double lam, double xn, const Problem& s);
// A failing pair whose residual is within kFloorZoneFactor of that floor stopped at it: the
// residual the solvers compute in double sits at 2–9 u·‖A‖ there (neumann2d:250's null vector:
// 8.7u; Chebyshev locks such a pair once it stalls, solvers/chebyshev/lock.cpp, in the same zone).
constexpr double kFloorZoneFactor = 16.0;
inline bool at_rounding_floor(double rn, double lam, double xn, const Problem& s) {
  return rn <= kFloorZoneFactor * attainable_floor(lam, xn, s);
}
// 10·u·‖|A|·|x| + |λ|·|B|·|x|‖₂ (host CSR, host x): the rounding error of the residual's own
// computation. Matrix form only.
double residual_floor(const Problem& s, const double* x, double lam);
// Rayleigh quotient and residual in extended precision (host CSR, long double). Matrix form only.
void extended_pair(const Problem& s, const double* x, double& rho_out, double& rn_out);
// The pairs whose double-precision Rayleigh quotient may have lost more than the tolerance can
// notice: u·(‖A‖ + |λ|·‖B‖)·‖x‖² > max(1e-13, 1e-3·tol)·|λ| (x2[j] = ‖x_j‖², matrix form only;
// none in operator form). At tol = 1e-8 that is a loss above 1e-11 relative: stiff problems
// (κ ≈ 1e10), not lap3d's smallest (4.6e-13).
std::vector<std::int64_t> pairs_to_refine(const Problem& s, double tol, const std::vector<double>& lam,
                                          const std::vector<double>& x2);
// Extended-precision quotients and residuals of the pairs `which` (their columns, n each, in
// cols[i] for which[i]); every other pair's error bound gets its quotient's own rounding,
// 10·u·(‖A‖ + |λ|·‖B‖)·‖x‖², added to rq_dev.
void refine_rayleigh(const Problem& s, const std::vector<const double*>& cols, const std::vector<std::int64_t>& which,
                     const std::vector<double>& x2, std::vector<double>& lam, std::vector<double>& rn,
                     std::vector<double>& rq_dev);
// What the convergence test allows each pair (bounds), remeasuring failing ones in extended
// precision (matrix form); under rel, pairs with |λ| ≤ zero_scale are allowed zero_floor (above).
// floored (optional): 1 for each pair whose bound is that floor. Returns whether all pairs pass.
bool test_pairs(const Problem& s, const EigsOptions& opt, MvView<const double> x,
                std::vector<double>& lam, std::vector<double>& rn, const std::vector<double>& xn,
                std::vector<double>& bounds, std::vector<char>* floored = nullptr);

// Order of the wanted values: ascending (smallest, both_ends), descending (largest), by |λ − σ|
// (nearest), by |λ| descending (largest_magnitude) or ascending (smallest_magnitude).
std::vector<std::int64_t> wanted_order(const std::vector<double>& v, Which w, double sigma);
// Columns of `src` (n × m) in `order` into a fresh block.
MultiVector<double> reorder_columns(DenseBlockOps& ops, MvView<const double> src,
                                    const std::vector<std::int64_t>& order);
// Merges found pairs and new pairs (both in the ops space), keeps the k best in wanted order.
PairSet merge_pairs(DenseBlockOps& ops, PairSet& a, PairSet& b, std::int64_t k, Which w,
                    double sigma);
// Error bounds of a set: ‖r_j‖_{B⁻¹}, sharpened to ‖r‖²/gap where the gap is known (+ rq_dev).
std::vector<double> error_bounds(const Problem& s, const std::vector<double>& v,
                                 const std::vector<double>& rn, const std::vector<double>& rq_dev);
// Half-width of the window around a value that the verification treats as "the same value".
double cert_width(const Problem& s, const PairSet& p, std::int64_t j);

}  // namespace tcsolve::eigs_detail
