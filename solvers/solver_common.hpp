// Pieces shared by the solvers (internal header): timed operator applies, the Jacobi diagonal,
// explicit residuals.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/host_memory.hpp"
#include "core/interrupt.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve::detail {

// y = op·x ordered against the dense ops' queue as ApplyOrder says (dense_ops.hpp): after a host
// synchronization (and a device one for device blocks), between external_begin/end events, or
// on the same stream. The one copy of the switch, for every solver's applies.
void apply_ordered(ApplyOrder order, DenseBlockOps& ops, const LinearOperator<double>& op,
                   MvView<const double> x, MvView<double> y);

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Applies operators and accounts their time apart from the dense work. On the GPU the stream of
// the dense ops is drained before the apply and the device after it, so an operator on any
// stream sees finished inputs and leaves finished outputs.
class ApplyClock {
 public:
  explicit ApplyClock(DenseBlockOps& ops) : ops_(ops) {}
  void apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y) {
    if (x.cols == 0) return;
    ops_.synchronize();
    double t0 = now_seconds();
    op.apply(x, y);
    if (ops_.space() == Space::device) device_synchronize();
    apply_seconds_ += now_seconds() - t0;
    columns_ += x.cols;
  }
  double apply_seconds() const { return apply_seconds_; }
  std::int64_t columns() const { return columns_; }

 private:
  DenseBlockOps& ops_;
  double apply_seconds_ = 0.0;
  std::int64_t columns_ = 0;
};

// Per-iteration split of wall time into operator and dense parts.
class IterationTimer {
 public:
  explicit IterationTimer(const ApplyClock& c) : clock_(c) { start(); }
  void start() {
    ops_sync_t0_ = now_seconds();
    apply0_ = clock_.apply_seconds();
  }
  // Returns (apply, dense) seconds since start(); the caller has synchronized.
  std::pair<double, double> split() const {
    double total = now_seconds() - ops_sync_t0_;
    double ap = clock_.apply_seconds() - apply0_;
    return {ap, total - ap};
  }

 private:
  const ApplyClock& clock_;
  double ops_sync_t0_ = 0.0, apply0_ = 0.0;
};

// 1/|a_ii − σ·b_ii| (host); entries with |·| below 1e-300 become 1 (no scaling).
std::vector<double> jacobi_inverse(const std::vector<double>& diag_a,
                                   const std::vector<double>& diag_b, double shift,
                                   std::int64_t n);

void require_operator(const LinearOperator<double>& op, std::int64_t n, Space space,
                      const char* what);

// Power-of-two column scales of a block of right-hand sides (block CG, MINRES, GMRES): per
// column c_j with ‖b_j‖/c_j in [0.5, 1), computed without over- or underflow, so that a solve on
// b_j/c_j (exact) treats columns of any scale alike: bn[j] = ‖b_j‖/c_j, cs[j] = c_j; a zero
// column gets c_j = 1 and bn[j] = zero_bn (block CG and GMRES: 1, their test is absolute there;
// MINRES: 0, the mark of a column never iterated). One norm pass over B; a column whose ‖b_j‖²
// over- or underflowed (‖b_j‖ outside [1e-150, 1e150]) takes one more pass through `scratch`
// (n × ≥ 1 in ops' space). A non-finite entry: InvalidArgument "<who>: right-hand side column j
// has a non-finite entry".
void power_of_two_scales(DenseBlockOps& ops, MvView<const double> rhs, MvView<double> scratch, double* bn,
                         double* cs, const char* who, double zero_bn = 1.0);

// The state every block Krylov solve starts with (block CG, MINRES, GMRES: their Run extends it).
struct RunBase {
  SolveResult res;
  MvView<const double> rhs;  // B (n × s) and X (n × s), in the dense ops' space
  MvView<double> x;
  std::int64_t s = 0;
  std::int64_t it = 0;      // iterations taken (GMRES: Arnoldi steps of the longest column)
  bool want_norms = false;  // a history or a per-iteration callback reads the recurrence's norms
};

// Checks a solve's blocks (n rows, s ≤ smax columns, in `space`; InvalidArgument "<who>: ..."
// otherwise) and starts its run: rhs, x, s, res.n, res.method, res.column_iterations (−1 each:
// not done) and want_norms.
void begin_run(RunBase& r, const char* who, std::string method, MvView<const double> rhs, MvView<double> x,
               std::int64_t n, std::int64_t smax, Space space, bool want_norms);

// Timing of checkpoints: due() once `every` seconds have passed since the start or the end of
// the last write; write() copies the block to the host (a synchronization: only then) and calls
// the callback. The host buffer is reused: whatever the callback leaves in `block` (a buffer of an
// earlier checkpoint whose write has finished, say) is the next copy's destination, so that the
// solve does not pay the first touch of n·cols fresh pages at every checkpoint (1.5 GB: ~0.5 s).
class Checkpointer {
 public:
  Checkpointer(double every, const CheckpointFn& fn)
      : every_(fn && every > 0 ? every : 0.0), fn_(fn), t0_(now_seconds()), next_(t0_ + every_) {}
  bool due() const { return every_ > 0 && now_seconds() >= next_; }
  // x: n × cols in the ops' space; `patch` (optional) then overwrites parts of the host copy
  // (block CG: the active columns kept apart).
  void write(DenseBlockOps& ops, MvView<const double> x, std::int64_t iteration, std::int64_t locked,
             const std::function<void(double*)>& patch = {}) {
    SolverCheckpoint c;
    c.iteration = iteration;
    c.n = x.rows;
    c.cols = x.cols;
    c.locked = locked;
    const double t = now_seconds();
    c.block.swap(spare_);
    const auto size = static_cast<std::size_t>(x.rows * x.cols);
    if (c.block.size() != size) {
      c.block = {};
      resize_huge(c.block, size);
    }
    ops.to_host(x, c.block.data(), x.rows);
    if (patch) patch(c.block.data());
    c.copy_seconds = now_seconds() - t;
    c.seconds = now_seconds() - t0_;
    fn_(c);
    spare_ = std::move(c.block);
    next_ = now_seconds() + every_;
  }

 private:
  double every_;
  const CheckpointFn& fn_;
  double t0_, next_;
  std::vector<double> spare_;
};

// The reason of a run stopped by interrupt_requested() (core/interrupt.hpp).
inline std::string interrupted_reason(std::int64_t iterations, std::int64_t done, std::int64_t of,
                                      const char* what) {
  const int sig = interrupt_signal();
  return std::string("interrupted (") + (sig == 2 ? "SIGINT" : sig == 15 ? "SIGTERM" : "on request") +
         ") after " + std::to_string(iterations) + " iterations with " + std::to_string(done) + " of " +
         std::to_string(of) + " " + what;
}

// The end of a block solve (block CG, MINRES, GMRES) from its columns' true residuals rn[0:s]:
// converged when every one is within tol; else interrupted (an interrupt was requested: the
// reason counts the columns within tol) or not converged with reason(). A breakdown the solve
// set stays. Then the iterations (r.it), operator applies and seconds since t0.
template <class Reason>
void finish_run(RunBase& r, const std::vector<double>& rn, double tol, std::int64_t applies,
                double t0, Reason&& reason) {
  SolveResult& res = r.res;
  if (res.status != SolverStatus::breakdown) {
    std::int64_t passed = 0;
    for (std::int64_t j = 0; j < r.s; ++j) passed += rn[j] <= tol;
    if (passed == r.s) {
      res.status = SolverStatus::converged;
    } else if (interrupt_requested()) {
      res.status = SolverStatus::interrupted;
      res.reason = interrupted_reason(r.it, passed, r.s, "columns converged");
    } else {
      res.status = SolverStatus::not_converged;
      res.reason = reason();
    }
  }
  res.iterations = r.it;
  res.operator_applies = applies;
  res.seconds = now_seconds() - t0;
}

}  // namespace tcsolve::detail
