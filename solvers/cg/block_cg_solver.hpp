// Block CG's solver: one solve on blocks of W (double: the fp64 solver; float: the fp32 iteration
// of the mixed-precision solve) as the named steps of the recurrence in solvers/block_cg.hpp,
// public so that tests run them one at a time (tests/solvers/test_block_cg_steps.cpp).
//   solve():  start → per cycle: begin_cycle → (queue_iteration → read_back → after_drain)* →
//             end_cycle → finish
// Files: block_cg_solver.cpp (set-up, column scales, cycles, the result), block_cg_iteration.cpp
// (the queued iteration, deflation, convergence), block_cg_refine.cpp (the fp32 rung's refinement
// steps); solvers/block_cg.cpp holds the public entry points (the rungs, and the chunks of a block
// wider than A).
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <type_traits>
#include <vector>

#include "solvers/block_cg.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::cg {

// Scaled pivot² of PᵀQ below which spd_factor flags the factor (status 1: the block is losing
// rank; it is then re-orthonormalized with dropping).
constexpr double kPivTol = 1e-10;
// 4u. The recurrence residual is not driven below kFloorRel·‖b_j‖: there it no longer tracks the
// true residual ‖b_j − A·x_j‖, whose rounding floor (about u·‖A‖·‖x_j‖ ≥ u·‖b_j‖) it cannot see;
// the true residual decides from there (a restart, or the floor reported: floor_reached).
constexpr double kUnitRoundoff = 1.1102230246251565e-16;  // u = 2⁻⁵³
constexpr double kFloorRel = 4.0 * kUnitRoundoff;
// A column's recurrence residual falling by more than this in one iteration (without passing its
// target) means the search space is exhausted (s ≥ n, say): the residual is rounding noise from
// then on, and the cycle ends (the true residual decides: a restart, or convergence). Genuine CG
// progress never cuts a residual by 10 orders in one step.
constexpr double kExhaustedDrop = 1e-10;

template <class W>
class BlockCgSolver {
 public:
  static constexpr bool kFp32 = std::is_same_v<W, float>;
  // Workspace for up to max_cols right-hand sides (see block_cg.hpp for its size).
  BlockCgSolver(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols,
                CgOptions opt);
  BlockCgSolver(const BlockCgSolver&) = delete;
  BlockCgSolver& operator=(const BlockCgSolver&) = delete;

  // rhs, x: n × s (s ≤ max_cols) in ops.space(); x is the initial guess when use_x0, else zeroed.
  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0);
  // Checkpoints show x_all (n × S, whose columns c0 : c0 + s are the solve's x) rather than x: a
  // chunk of a wider block reports the whole block (BlockCg).
  void set_checkpoint_block(MvView<const double> x_all, std::int64_t c0) {
    checkpoint_x_ = x_all, checkpoint_c0_ = c0;
  }
  void set_iteration_limit(std::int64_t m) { opt_.max_iterations = m; }

  // ---- The state of one solve.
  struct Run : tcsolve::detail::RunBase {
    std::int64_t na = 0;   // active columns (act()[0:na] are their indices in rhs / x)
    std::int64_t rk = 0;   // search directions in P
    std::int64_t dim = 0;  // directions the cycle has searched (Σ rk over its iterations)
    bool explicit_ptr = true;  // α needs PᵀR formed (cycle start, compaction, re-orthonormalization)
    bool sync_mode = false;    // the host reads each iteration before queuing the next
    bool flagged = false;      // a queued iteration's factor was flagged in this cycle
    bool deflating = false;    // P = orth(M·R + P·β) at every iteration (the block lost rank)
    bool exhausted = false;    // an abrupt drop (kExhaustedDrop) was seen: the cycle ends
    OrthoBranch branch = OrthoBranch::none;
  };

  // ---- Steps (block_cg_solver.cpp)
  // Checks shapes, sets the column scales, zeroes x unless use_x0; every column is active.
  Run start(MvView<const double> rhs, MvView<double> x, bool use_x0);
  // Per column a power of two c_j with ‖b_j‖/c_j in [0.5, 1) (a zero column: 1), computed without
  // overflow or underflow; the solve runs on b_j/c_j and x_j/c_j (exact: powers of two), so that
  // columns of any scale converge alike. Non-finite entries: InvalidArgument.
  void column_scales(MvView<const double> rhs);
  // The scaled true residuals (b_j − A·x_j)/c_j into the scratch block, ‖·‖/‖b_j‖ into norms().
  void true_residuals(Run& r);
  // R = the active columns' true residuals, X_a = their iterates; columns already below tol
  // leave; P = orth(M·R) with dropping; Q = A·P and Pᵀ[Q R] with PᵀQ's factor queued.
  // false: no column left, or no search direction (breakdown).
  bool begin_cycle(Run& r);
  // After the queue was drained: converged columns leave, a flagged factor deflates P (fp32: a
  // refinement step when some column reached its inner target). false: the cycle ends.
  bool after_drain(Run& r);
  // Drains the queue, writes the active iterate back; unless broken down, the true residuals of
  // every column decide the next cycle's columns.
  void end_cycle(Run& r);
  // The final true residuals, status, reason and statistics.
  SolveResult finish(Run& r, double t0);

  // ---- Steps of one iteration (block_cg_iteration.cpp)
  // Q = A·P (rk columns) and the Gram products of the next α: PᵀQ (and PᵀR when explicit_ptr);
  // the factor of PᵀQ into F with its status.
  void queue_gram(std::int64_t rk, std::int64_t na, bool explicit_ptr, double piv_tol);
  // The PᵀR of the current R (na columns) alone, next to the queued PᵀQ (after a compaction).
  void queue_ptr(std::int64_t rk, std::int64_t na);
  // α = (PᵀQ)⁻¹·PᵀR; R −= Q·α; Z = M·R; G2 = [Q R]ᵀZ (and ‖r_j‖²); β = −(PᵀQ)⁻¹·QᵀZ; the next
  // PᵀR = ZᵀR kept for the next α.
  void residual_update(std::int64_t rk, std::int64_t na, bool explicit_ptr);
  // X_a += P·α and P(:, 0:na) = Z + P(:, 0:rk)·β (in place).
  void direction_update(std::int64_t rk, std::int64_t na);
  // P(:, 0:cols) = orth(P(:, 0:cols)) with dropping (SVQB, one pass; fp32: in fp64 through the
  // fp64 copy): the rank-revealing step of breakdown-free block CG. Returns the rank kept.
  OrthoOutcome orthonormalize_search(std::int64_t cols);
  // Queues iteration r.it (the two updates, the norms and factor status to download, in
  // deflating mode the re-orthonormalization of P) and the next Q = A·P with its factor.
  void queue_iteration(Run& r, detail::Checkpointer& checkpoint);
  // Reads queued iterations back, oldest first, keeping the newest queued while nothing happened.
  // true: drained, norms() holds the latest.
  bool read_back(Run& r);
  // Columns whose recurrence residual passed their target leave (x written back, X_a and R
  // compacted). false: none is left.
  bool retire_converged(Run& r);
  // The factor of PᵀQ was flagged: P = orth(P) with dropping, Q = A·P, Pᵀ[Q R], factor again;
  // the cycle goes on deflating while columns are dropped. false: breakdown (no direction left, or
  // PᵀAP of the orthonormal block not positive definite; the reason says what was seen).
  bool deflate(Run& r);
  // Keeps columns keep of X_a and R (in order), through the scratch block. Returns their count.
  std::int64_t compact(std::int64_t na, const std::vector<std::int64_t>& keep);

  // ---- The fp32 rung's refinement steps (block_cg_refine.cpp)
  bool begin_refinement(Run& r);
  bool replace_residuals(Run& r);
  bool stalled(const std::vector<std::int64_t>& cols);

  // ---- Views of the workspace and host state (tests set and read them; the rungs read them)
  MvView<W> search_block(std::int64_t cols) { return p_.columns(0, cols); }
  MvView<W> product_block(std::int64_t rk) { return qr_.columns(smax_ - rk, rk); }
  MvView<W> residual_block(std::int64_t na) { return qr_.columns(smax_, na); }
  MvView<W> iterate_block(std::int64_t na) { return xa_.columns(0, na); }
  MvView<W> preconditioned_block(std::int64_t na);  // Z (R itself without a preconditioner)
  MvView<double> alpha(std::int64_t rk, std::int64_t na) { return small(alpha_, 0, rk, 0, na); }
  MvView<double> beta(std::int64_t rk, std::int64_t na) { return small(beta_, 0, rk, 0, na); }
  // [Q R]ᵀZ of the last residual update ((rk + na) × na).
  MvView<double> residual_gram(std::int64_t rk, std::int64_t na) { return small(g2_, 0, rk + na, 0, na); }
  // spd_factor's status of the factor queued last (waits for it).
  double factor_status();
  std::vector<double>& norms() { return rn_; }          // recurrence or true residual norms
  std::vector<std::int64_t>& act() { return act_; }     // active columns
  const std::vector<double>& scales() const { return cs_; }
  const std::vector<double>& scaled_rhs_norms() const { return bn_; }
  double target(std::int64_t c) const { return thr_[c]; }  // recurrence target of column c
  std::int64_t global_rows() const { return nglob_; }
  int refinements() const { return refinements_; }
  bool climbed() const { return climb_; }
  const std::string& climb_reason() const { return climb_reason_; }

 private:
  struct ApplyMark {  // stream marks around one apply (of A, or of the preconditioner M)
    int from = -1, to = -1;
    bool precond = false;
  };
  struct Pending {  // a queued iteration: its fetched norms and status, marks, size
    std::uint64_t ticket = 0;
    std::int64_t it = 0, na = 0;
    std::vector<double> norms2;
    int mark0 = -1, mark1 = -1;
    std::vector<ApplyMark> apply_marks;
    OrthoBranch ortho = OrthoBranch::none;
  };

  MultiVector<W> alloc(std::int64_t rows, std::int64_t cols);
  bool preconditioned() const { return opt_.preconditioner != nullptr || dinv_.data() != nullptr; }
  bool timing() const { return opt_.keep_history || static_cast<bool>(opt_.on_iteration) || opt_.stats; }
  void apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y);
  void apply_w(MvView<const W> x, MvView<W> y);
  void precondition(MvView<const double> in, MvView<double> out);
  MvView<double> small(MultiVector<double>& m, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                       std::int64_t cols) {
    return {m.data() + r0 + c0 * m.rows(), rows, cols, m.rows(), ops_.space()};
  }
  MvView<double> scratch(std::int64_t cols);  // n × cols fp64 (Z, or the fp32 rung's r64)
  void write_back(Run& r, std::int64_t j, std::int64_t c);
  void checkpoint_if_due(Run& r, detail::Checkpointer& checkpoint);
  bool retire_initial(Run& r);
  // The active columns j with leaves(j) (which may write them back) leave; X_a and R keep the
  // rest, in order. Returns whether any left. The one partition of both retire steps.
  template <class Leaves>
  bool retire_where(Run& r, Leaves leaves);
  bool first_search_block(Run& r, OrthoOutcome o);
  void absorb_rayleigh();
  bool no_direction(Run& r, const char* block);
  bool not_positive_definite(Run& r);
  void drain_queue(Run& r);
  void set_climb(std::int64_t c);
  void set_inner_target(std::int64_t c);
  void set_targets(double rel);
  void recycle(Pending& q);
  void record(SolveResult& res, Pending& q, std::int64_t nconv, bool want_norms);
  std::string not_converged_reason(Run& r);

  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  std::int64_t n_, smax_, nglob_;
  CgOptions opt_;
  // Device blocks: xa_ (active solutions; fp32: their corrections), qr_ = [Q | R] with Q ending and
  // R starting at column smax_ (one block for the fused Gram products), p_ (search block), z_
  // (preconditioned residual; scratch), dinv_ (Jacobi). fp32: r64_ (true residuals) and p64_
  // (the search block in fp64 for its orthonormalization).
  MultiVector<W> xa_, qr_, p_, z_;
  MultiVector<double> dinv_, r64_, p64_;
  // Small backend matrices: g1_ = Pᵀ[Q R] (s × 2s), f_ = scaled Cholesky factor (s × (s + 1)),
  // alpha_, beta_ (s × s), g2_ = [Q R]ᵀZ ((2s + 1) × s: Jacobi puts ‖r_j‖² in the row after),
  // rz_ (s × s: ZᵀR for the next α), nrm2_ (‖r_j‖²), st_ (factor status).
  MultiVector<double> g1_, f_, alpha_, beta_, g2_, rz_, nrm2_, st_;
  OrthoWorkspace ows_;
  // Host state, sized once: norms, scaled ‖b_j‖, scales c_j and 1/c_j, targets, true residuals at
  // the cycle's start, Rayleigh quotients of the cycle's first block.
  // (ascale_: 1/c_j of the active columns; zero_: zeros.)
  // last_rn_: each column's latest recurrence residual (scaled; for kExhaustedDrop).
  std::vector<double> rn_, bn_, cs_, inv_cs_, neg_inv_cs_, thr_, rstart_, rq_, ascale_, last_rn_;
  // A pipelined iteration moved a converged column off (read_back): later cycles run synchronously.
  bool sync_cycles_ = false;
  std::vector<double> hst_, zero_;
  std::vector<std::int64_t> act_, keep_idx_, still_;
  double a_norm_ = 0.0;        // largest Rayleigh quotient pᵀAp of a unit p seen (≤ ‖A‖)
  std::int64_t rq_count_ = 0;  // quotients in rq_ not yet absorbed into a_norm_
  std::deque<Pending> queue_;
  std::vector<std::vector<double>> spare_;             // recycled norms2 buffers
  std::vector<std::vector<ApplyMark>> spare_marks_;    // recycled apply_marks buffers
  std::vector<ApplyMark>* apply_marks_ = nullptr;
  MvView<const double> checkpoint_x_;
  std::int64_t checkpoint_c0_ = 0;
  // fp32 rung
  bool climb_ = false;  // the refinement stalled, or the fp32 iteration broke down
  std::string climb_reason_;
  int refinements_ = 0;
  int weak_steps_ = 0;  // refinement steps that cut some column's true residual by less than half
  // Statistics
  std::int64_t applies_ = 0, columns_ = 0, fused_iterations_ = 0, robust_steps_ = 0;
  double budget_words_ = 0.0, apply_s_ = 0.0, dense_s_ = 0.0;
};

template <class W>
template <class Leaves>
bool BlockCgSolver<W>::retire_where(Run& r, Leaves leaves) {
  keep_idx_.clear(), still_.clear();
  for (std::int64_t j = 0; j < r.na; ++j)
    if (!leaves(j)) keep_idx_.push_back(j), still_.push_back(act_[j]);
  if (static_cast<std::int64_t>(still_.size()) == r.na) return false;
  r.na = compact(r.na, keep_idx_);
  act_.swap(still_);
  return true;
}

extern template class BlockCgSolver<double>;
extern template class BlockCgSolver<float>;

}  // namespace tcsolve::cg
