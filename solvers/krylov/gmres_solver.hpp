// Pseudo-block GMRES(m)'s solver: one solve as the named steps of the method in gmres.cpp, public
// so that tests run them one at a time.
//   solve():  start → per cycle: true_residuals → select_columns → begin_cycle →
//             (queue_iteration → read_back)* → end_cycle;  then finish
// The kernels: gmres_kernels.hpp (CPU gmres_kernels.cpp, CUDA gmres_kernels.cu).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/krylov/gmres_kernels.hpp"
#include "solvers/krylov/krylov_options.hpp"
#include "solvers/result.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::krylov::gmres {

// Largest restart m: the CUDA pass keeps m + 1 coefficients and (m + 2)·8 partial sums of a
// column in shared memory (36 KB at 500), and the basis is (m + 1)·n·s doubles anyway.
constexpr int kMaxRestart = 500;
// Stagnation: a column whose true residual has not fallen by 1 % (to kStagnationFactor of the
// residual at its last such gain) over window(m) = max(2, ⌈kStagnationSteps/m⌉) consecutive
// cycles leaves the solve, reported not converged. Restarted GMRES is a fixed map of the
// residual: a cycle that gains nothing from r gains about as little from r' ≈ r, so waiting
// costs iterations without hope; the window spans at least two restarts and kStagnationSteps
// inner iterations, so that GMRES(1)'s small steps are not mistaken for it (< 1 % over 30 steps
// is ≥ 50,000 steps for 8 digits).
constexpr double kStagnationFactor = 0.99;
constexpr int kStagnationSteps = 30;
inline int stagnation_window(int m) { return std::max(2, (kStagnationSteps + m - 1) / m); }

class GmresSolver {
 public:
  // Workspace for up to max_cols right-hand sides ((m + 3)·n·max_cols doubles at most).
  GmresSolver(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols, KrylovOptions opt);
  GmresSolver(const GmresSolver&) = delete;
  GmresSolver& operator=(const GmresSolver&) = delete;

  // rhs, x: n × s (s ≤ max_cols) in ops.space(); x is the initial guess when use_x0, else zeroed.
  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0);

  // ---- The state of one solve.
  struct Run : tcsolve::detail::RunBase {  // it: Arnoldi steps (the longest column's, all cycles)
    std::int64_t cycle_it0 = 0;  // it at the current cycle's start
    std::int64_t queued = 0;     // iterations queued in the current cycle (≥ its steps)
    std::int64_t na = 0;         // active columns: act()[0:na], slots 0:na of the workspace
    int cycles = 0;
    bool x_zero = false;         // x is zero (no x0, nothing added yet): skip A·x
    bool all_frozen = false;     // the host has seen every active column stop
  };

  // ---- Steps
  // Checks shapes and the right-hand sides (InvalidArgument on a non-finite entry), sets the
  // column scales, zeroes x unless use_x0.
  Run start(MvView<const double> rhs, MvView<double> x, bool use_x0);
  // Per column a power of two c_j with ‖b_j‖/c_j in [0.5, 1) (a zero column: 1); the solve runs
  // on b_j/c_j (exact), so that no norm over- or underflows whatever the scale of b_j.
  void column_scales(MvView<const double> rhs);
  // U = (b − A·x)/c for every column (one apply of s columns; none while x is zero), and
  // true_residuals()[j] = ‖b_j − A·x_j‖/‖b_j‖ (absolute for a zero b_j).
  void true_residuals(Run& r);
  // From the true residuals: columns at tol converge (their column_iterations set), the
  // stagnation test (kStagnationFactor), and act() = the rest. false: none left, or a
  // non-finite residual (breakdown).
  bool select_columns(Run& r);
  // V_0 = U(:, act)/β (β_c = ‖U(:, act_c)‖), Z = M⁻¹·V_0 (Jacobi), the targets tol·‖b_c‖/c_c
  // uploaded and every column's state started (g = β·e_1).
  void begin_cycle(Run& r);
  // Arnoldi step j = r.queued for every active column, queued without waiting: w = A·M⁻¹·V_j
  // into V_{j+1}, CGS2 in three fused passes (h1 = Vᵀw; w −= V·h1 with h2 = Vᵀw; w −= V·h2 with
  // ‖w‖²), the per-column Givens step, V_{j+1} = w/h_{j+1,j} (and Z = M⁻¹·V_{j+1} for Jacobi),
  // the columns' estimates, flags and lengths queued for the host (fetch_async).
  void queue_iteration(Run& r);
  // Consumes queued iterations' scalars, oldest first, down to `keep` still queued (0: drain);
  // sets r.all_frozen when every active column has stopped.
  void read_back(Run& r, std::size_t keep);
  // y_c = R_c⁻¹·g_c, x_c += c_c·M⁻¹·Σ_i V_i(:,c)·y_c(i) (flexible: c_c·Σ_i Z_i(:,c)·y_c(i));
  // r.it advances by the cycle's longest column.
  void end_cycle(Run& r);
  // Status, reason and statistics from the last true residuals.
  SolveResult finish(Run& r, double t0);

  // ---- Views of the workspace and host state (tests read them)
  MvView<double> basis_block(std::int64_t i, std::int64_t na) { return basis_.columns(i * smax_, na); }
  MvView<double> state(std::int64_t na) { return state_.columns(0, na); }
  const StateLayout& layout() const { return layout_; }
  const std::vector<double>& true_residual_norms() const { return rn_; }
  const std::vector<double>& estimates() const { return est_; }  // scaled, slots 0:na
  const std::vector<std::int64_t>& act() const { return act_; }
  const std::vector<double>& scales() const { return cs_; }
  int restart() const { return m_; }

 private:
  struct Pending {  // a queued iteration: its ticket, fetched scalars and stream marks
    std::uint64_t ticket = 0;
    std::int64_t it = 0, na = 0;
    std::vector<double> buf;  // 3 × na: estimate, frozen, length per column
    int mark0 = -1, mark1 = -1;
    std::array<int, 4> apply_marks{{-1, -1, -1, -1}};
  };

  bool preconditioned() const { return opt_.preconditioner != nullptr || dinv_.data() != nullptr; }
  bool flexible() const { return opt_.flexible && opt_.preconditioner != nullptr; }
  // FGMRES's Z_j = M⁻¹·V_j (blocks of n × s, as the basis)
  MvView<double> zblock(std::int64_t j, std::int64_t na) { return zb_.columns(j * smax_, na); }
  bool timing() const { return opt_.keep_history || static_cast<bool>(opt_.on_iteration); }
  Basis basis(std::int64_t na) { return {basis_.data(), n_, n_, n_ * smax_, na}; }
  MvView<double> small(MultiVector<double>& m, std::int64_t na) { return m.columns(0, na); }
  void apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y, int* marks);
  void set_jacobi();
  void record(Run& r, Pending& p);
  std::string not_converged_reason(const Run& r) const;

  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  std::int64_t n_, smax_;
  int m_;
  KrylovOptions opt_;
  StateLayout layout_;
  Kernels k_;
  Context ctx_;
  // Tall blocks: basis_ = (m + 1) blocks of n × s (V_i = columns i·s : i·s + na), u_ (true
  // residuals; the cycle's update), z_ (M⁻¹·V_j; only with a preconditioner), dinv_ (Jacobi).
  // Small: h1_, h2_ ((m + 2) × s: the passes' coefficients, ‖w‖² in row m + 1 of h2_), state_
  // (layout_.rows() × s), beta_ (s × 1), partial_ (the kernels' reductions).
  // zb_: FGMRES's m blocks Z_j = M⁻¹·V_j (flexible only; z_ is not allocated then).
  MultiVector<double> basis_, u_, z_, zb_, dinv_, h1_, h2_, state_, beta_, partial_;
  // Host, sized once: ‖b_j‖/c_j, c_j, 1/c_j, −1/c_j, true residuals, stagnation reference and
  // count, flags; per slot: estimates, frozen flags, lengths, targets.
  std::vector<double> bn_, cs_, inv_cs_, neg_inv_cs_, rn_, ref_, est_, frozen_, len_, tgt_, zero_, one_;
  std::vector<int> stall_;
  std::vector<char> stagnant_;
  std::vector<std::int64_t> act_, slot_;
  std::vector<Pending> ring_;  // queued iterations (a ring of 4: fetch_async's limit)
  std::size_t ring_head_ = 0, ring_count_ = 0;
  std::size_t lag_ = 0;        // iterations left queued by read_back (1 on the GPU, 0 on the CPU)
  std::int64_t columns_ = 0;   // columns multiplied by A
};

}  // namespace tcsolve::krylov::gmres
