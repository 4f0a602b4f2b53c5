// Pseudo-block MINRES's solver: one solve as the named steps of solvers/krylov/minres.cpp's
// recurrence, public so that tests can run them one at a time.
//   solve():  start → per cycle: begin_cycle → (queue_iteration → read_back → retire_done)* →
//             end_cycle → finish
// Files: minres_solver.cpp (set-up, column scales, cycles, the result), minres_iteration.cpp (the
// queued iteration, reading back, retiring columns); the kernels in minres_kernels.{hpp,cpp,cu};
// the public entry points in minres.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "solvers/krylov/minres.hpp"
#include "solvers/krylov/minres_kernels.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::mr {

constexpr double kUnitRoundoff = 1.1102230246251565e-16;  // u = 2⁻⁵³
// The recurrence estimate is not driven below kFloorRel·‖b_j‖ (there it no longer tracks the true
// residual); the true residual decides from there.
constexpr double kFloorRel = 4.0 * kUnitRoundoff;
// Least-squares exit: ‖A·r‖/(‖A‖·‖r‖) ≤ √u (r numerically in A's null space to half the digits).
// For a nonsingular A the ratio is at least 1/κ(A), so a consistent system with κ < 6.7e7 never
// takes it; one with a larger κ may, and then restarts from its true residual (the cycle's ‖A‖
// estimate starts afresh, on the residual's part of the spectrum). An inconsistent system must
// take it before the Krylov space is exhausted: past that point (no reorthogonalization) the
// iterate blows up (a diagonal test matrix: ratio 2.5e-9 one iteration before).
constexpr double kLsTol = 1.4901161193847656e-08;  // 2⁻²⁶
// Cycles (the first solve and its restarts from the true residual), and the gain a cycle must
// make on a column's true residual for it to be restarted (less: it stagnates).
constexpr int kMaxCycles = 4;
constexpr double kRestartGain = 0.5;
// Iterations queued ahead of the host's reading (the host reads iteration t − 1 after queuing t).
constexpr int kQueueDepth = 2;

enum class Precond {
  none,     // Lanczos vectors z = u (no R: φ̄ is ‖r‖₂)
  jacobi,   // z with u = d∘z, d = |diag A| (zeros: 1); R carried
  general,  // u and z = M⁻¹·u both stored (M applied once per iteration); R carried
};

// Why a column missed tol when the solve ended (for the reason).
enum class Miss { none, limit, stagnated, least_squares, singular, non_finite, cycles, interrupted };

class MinresSolver {
 public:
  MinresSolver(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols, KrylovOptions opt);
  MinresSolver(const MinresSolver&) = delete;
  MinresSolver& operator=(const MinresSolver&) = delete;

  // rhs, x: n × s (s ≤ max_cols) in ops.space(); x is the initial guess when use_x0, else zeroed.
  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0);

  struct Run : tcsolve::detail::RunBase {
    std::int64_t na = 0;  // columns in the cycle's blocks (act()[0:na] their indices in rhs / x)
    int cycle = 0;
  };

  // ---- Steps (minres_solver.cpp)
  // Checks shapes, sets the column scales (InvalidArgument for a non-finite entry of B), zeroes x
  // unless use_x0 and the columns of zero right-hand sides; every other column is active.
  Run start(MvView<const double> rhs, MvView<double> x, bool use_x0);
  // Per column a power of two c_j with ‖b_j‖/c_j in [0.5, 1) (a zero column: 1); the solve runs on
  // b_j/c_j and x_j/c_j (exact), so that no β², φ̄ or ‖A·z‖² overflows for columns of any scale.
  void column_scales(MvView<const double> rhs);
  // The true relative residuals ‖b_j − A·x_j‖/‖b_j‖ of columns cols[0:m] into norms() (uses the
  // Q and Z_c blocks as scratch).
  void true_residuals(Run& r, const std::int64_t* cols, std::int64_t m);
  // X_a = x(:, act)/c, R_0 = B(:, act)/c − A·X_a; columns already within tol leave; z_1 = M⁻¹·r_0,
  // β_1 and the rotation's start on the device, W = W_p = 0, the targets. false: none left.
  bool begin_cycle(Run& r);
  // Ends the cycle: drains the queue, completes x of the columns still in the block (a flush
  // pass), accepts the cycle's iterates that improved on its start, and decides from the true
  // residuals which columns restart.
  void end_cycle(Run& r);
  // The true residuals of the cycle's iterates (X_a: the active columns and those parked at its
  // back); an iterate replaces x_j only when its true residual is at most the cycle start's (MINRES
  // never increases it in exact arithmetic; past an exhausted Krylov space of a singular A it can
  // blow up), else x_j stays and the rejected residual is kept for the reason.
  void accept_iterates(Run& r);
  // The final true residuals, status, reason.
  SolveResult finish(Run& r, double t0);

  // ---- Steps of one iteration (minres_iteration.cpp)
  // Queues iteration r.it: Q = A·Z_c, the dot pass and coefficients, the update pass (with
  // another preconditioner: Z = M⁻¹·U and β² = uᵀz), the rotations, the swaps of Z (U) and W,
  // and the asynchronous download of (estimate, state, reason) per column.
  void queue_iteration(Run& r);
  // Consumes the oldest queued iteration (history, progress); when some column is done, waits for
  // all queued ones. true: drained, and some column is done (states() holds the latest states).
  bool read_back(Run& r);
  // Waits for every queued iteration (their records).
  void drain(Run& r) {
    while (queued_ > 0) read_back(r);
  }
  // Done columns leave the block: their iterates parked at X_a's back (accept_iterates decides at
  // the cycle's end), their reason kept, the blocks and S compacted.
  void retire_done(Run& r);
  // Keeps columns keep (in order) of every per-column block and of S; of X_a also the columns park
  // (leaving), placed at its back before those parked earlier in the cycle.
  void compact(std::int64_t na, const std::vector<std::int64_t>& keep, const std::vector<std::int64_t>& park);

  // ---- Views of the workspace and host state (tests read them)
  MvView<double> scalars(std::int64_t na) { return s_.columns(0, na); }         // S (kFields × na)
  MvView<double> iterate_block(std::int64_t na) { return xa_.columns(0, na); }  // X_a: x_{k−1}/c
  MvView<double> residual_block(std::int64_t na) { return r_.columns(0, na); }  // R: r_{k−1}/c
  std::vector<double>& norms() { return rn_; }                                  // true relative residuals
  const std::vector<double>& states() const { return state_; }  // latest drained: 3 × na (est, state, why)
  std::vector<std::int64_t>& act() { return act_; }
  const std::vector<double>& scales() const { return cs_; }
  Precond precond() const { return mode_; }
  double a_norm() const { return a_norm_; }

 private:
  struct Pending {  // a queued iteration: its downloaded scalars and timing marks
    std::uint64_t ticket = 0;
    std::int64_t it = 0, na = 0;
    std::vector<double> buf;  // 3 × na: est, state, why (S's first rows)
    int mark0 = -1, mark1 = -1, a0 = -1, a1 = -1, m0 = -1, m1 = -1;
  };

  void apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y);
  bool timing() const { return opt_.keep_history || static_cast<bool>(opt_.on_iteration); }
  ScalarParams params() const { return {mode_ != Precond::none, kLsTol}; }
  UpdateBlocks update_blocks(std::int64_t na);
  void set_targets(Run& r);
  void retire_initial(Run& r);
  void write_back(Run& r, std::int64_t c, std::int64_t pos);
  void park_iterates(std::int64_t na, const std::vector<std::int64_t>& keep,
                     const std::vector<std::int64_t>& park);
  void read_column_extras(std::int64_t na);
  void record(Run& r, Pending& q);
  void flush(Run& r);
  void decide_restarts(Run& r, const std::vector<std::int64_t>& cycle_cols);
  std::string not_converged_reason(Run& r);

  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  std::int64_t n_, smax_;
  KrylovOptions opt_;
  Precond mode_ = Precond::none;
  std::unique_ptr<MinresKernels> kern_;
  // Tall blocks (n × smax): Lanczos vectors z_k, z_{k−1} (and u_k, u_{k−1} with another
  // preconditioner), directions w_{k−1}, w_{k−2}, the active iterates X_a, Q = A·z_k (scratch
  // between iterations), R (preconditioned). Jacobi: d = |diag A| and 1/d (n × 1).
  MultiVector<double> zc_, zp_, uc_, up_, w_, wp_, xa_, q_, r_, d_, dinv_;
  // Per-column scalars S (kFields × smax) and its compaction twin, β² of the general mode (smax × 1).
  MultiVector<double> s_, s2_, beta2_;
  // Host state, sized once: true relative residuals, scaled ‖b_j‖, scales c_j, 1/c_j, −1/c_j,
  // the true residual at each column's cycle start, the cycle's 1/c_j per active column, −1s,
  // zeros, targets, the drained states, extras (‖A‖ and ‖A·r‖ estimates) per column, rejected
  // iterates' true residuals (0: none).
  std::vector<double> rn_, bn_, cs_, inv_cs_, neg_inv_cs_, rstart_, ascale_, nscale_, minus_, zero_, tgt_;
  std::vector<double> state_, extra_, ls_, rej_;
  // act_: the block's columns; cyc_: the cycle's; parked_: columns whose iterate is parked at X_a's
  // back (parked_[i] in column smax − |parked_| + i); pos_: each cycle column's X_a column.
  std::vector<std::int64_t> act_, keep_, still_, park_, left_at_, cyc_, parked_, pos_, idx_;
  std::vector<int> why_;
  std::vector<Miss> miss_;
  std::array<Pending, kQueueDepth + 1> ring_;
  int head_ = 0, queued_ = 0;
  double a_norm_ = 0.0;       // largest ‖A·z‖/‖z‖ seen (≤ ‖A‖₂)
  std::int64_t columns_ = 0;  // columns multiplied by A
};

}  // namespace tcsolve::mr
