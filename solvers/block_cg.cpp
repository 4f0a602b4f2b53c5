// Breakdown-free block CG (see block_cg.hpp for the recurrence, the device-resident iteration,
// memory and traffic).
#include "solvers/block_cg.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <memory>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <type_traits>

#include "core/device.hpp"
#include "core/error.hpp"
#include "solvers/host_result.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve {

namespace {
using Mat = Eigen::MatrixXd;
constexpr double kPivTol = 1e-10;  // scaled pivot² below which P is re-orthonormalized
}  // namespace

// One block CG on blocks of W (double: the fp64 solver; float: the fp32 iteration of the
// mixed-precision solve, see block_cg.hpp). With W = float, xa holds the active columns'
// corrections since the last refinement step (x itself stays fp64: read for the true residuals,
// added to at each step), R is the fp32 image of the true residual at that step, and a step is
// taken when some column's recurrence residual is below its inner target thr (max(tol/2,
// inner_reduction·its true residual at the last step), times ‖b_j‖).
template <class W>
struct CgImpl {
  static constexpr bool kFp32 = std::is_same_v<W, float>;
  const LinearOperator<double>& a;
  DenseBlockOps& ops;
  std::int64_t n, smax;
  CgOptions opt;
  // Device blocks: xa (active solutions), qr = [Q | R] with Q ending and R starting at column
  // smax (so that [Q R] is one block for the fused Gram products), p (search block), z
  // (preconditioned residual; scratch), dinv (Jacobi). fp32: r64 (true residuals) and p64 (the
  // cycle's first search block, orthonormalized in fp64 before it is rounded).
  MultiVector<W> xa, qr, p, z;
  MultiVector<double> dinv, r64, p64;
  std::vector<double> thr, rstart;  // per column: the inner target (absolute), and rn at the start
  bool climb = false;               // fp32: the refinement stalled, or the fp32 iteration broke down
  std::string climb_reason;
  int refinements = 0;
  int weak_steps = 0;  // refinement steps that cut some column's true residual by less than half

  // Small backend matrices: g1 = Pᵀ[Q R] (s × 2s), f = scaled Cholesky factor (s × (s + 1)),
  // alpha, beta (s × s), g2 = [Q R]ᵀZ ((2s + 1) × s: Jacobi puts ‖r_j‖² in the row after),
  // rz (s × s: ZᵀR for the next α), nrm2 (‖r_j‖²), st (factor status).
  MultiVector<double> g1, f, alpha, beta, g2, rz, nrm2, st;
  OrthoWorkspace ows;
  // Host workspace, sized once.
  std::vector<double> rn, bn, neg1, ones, hg, hst;
  std::vector<std::int64_t> act, keep_idx, still;
  // Per queued iteration: its fetched norms and status (host), marks, size.
  // Stream marks around one apply: of A, or of the preconditioner M.
  struct ApplyMark {
    int from = -1, to = -1;
    bool precond = false;
  };
  struct Pending {
    std::uint64_t ticket = 0;
    std::int64_t it = 0, na = 0;
    std::vector<double> norms2;
    double status = 0.0;
    int mark0 = -1, mark1 = -1;
    std::vector<ApplyMark> apply_marks;
    OrthoBranch ortho = OrthoBranch::none;
  };
  std::deque<Pending> queue;
  std::vector<std::vector<double>> spare;  // recycled norms2 buffers (no allocation once warm)
  std::vector<std::vector<ApplyMark>> spare_marks;  // recycled apply_marks buffers (likewise)

  MultiVector<W> alloc(std::int64_t rows, std::int64_t cols) {
    if constexpr (kFp32) return ops.allocate32(rows, cols);
    else return ops.allocate(rows, cols);
  }

  CgImpl(const LinearOperator<double>& a_, DenseBlockOps& ops_, std::int64_t s, CgOptions o)
      : a(a_), ops(ops_), n(a_.rows()), smax(s), opt(std::move(o)) {
    detail::require_operator(a, n, ops.space(), "A");
    if (opt.preconditioner) detail::require_operator(*opt.preconditioner, n, ops.space(), "M");
    TCSOLVE_REQUIRE(s >= 1, "block CG: need at least one right-hand side");
    TCSOLVE_REQUIRE(opt.tol > 0, "block CG: tol must be positive");
    ops.reserve(n, s, 2 * s * s);
    ops.reserve_small(s);
    if constexpr (kFp32) {
      TCSOLVE_REQUIRE(opt.step32 && ops.fp32_blocks() && !opt.preconditioner && s <= kCgFp32MaxRhs,
                      "block CG: the fp32 iteration needs A's fp32 step, dense ops with fp32 blocks, "
                      "at most 32 right-hand sides and no preconditioner other than Jacobi");
      TCSOLVE_REQUIRE(opt.step32->space() == ops.space(), "block CG: A's fp32 step in another memory space");
      r64 = ops.allocate(n, s), p64 = ops.allocate(n, s);
    }
    xa = alloc(n, s), qr = alloc(n, 2 * s), z = alloc(n, s);
    p = alloc(n, s);
    g1 = ops.allocate(s, 2 * s), f = ops.allocate(s, s + 1), alpha = ops.allocate(s, s);
    beta = ops.allocate(s, s), g2 = ops.allocate(2 * s + 1, s), rz = ops.allocate(s, s);
    nrm2 = ops.allocate(s, 1), st = ops.allocate(1, 1);
    if (!opt.preconditioner && !opt.jacobi_diagonal.empty()) {
      auto inv = detail::jacobi_inverse(opt.jacobi_diagonal, {}, 0.0, n);
      // M = c·I changes nothing in CG (α and β absorb c): skip the scaling passes.
      bool constant = opt.drop_constant_jacobi &&
                      std::all_of(inv.begin(), inv.end(), [&](double d) { return d == inv[0]; });
      if (!constant) {
        dinv = ops.allocate(n, 1);
        ops.from_host(inv.data(), n, dinv.view());
      }
    }
    rn.resize(s), bn.resize(s), ones.assign(s, 1.0), neg1.assign(s, -1.0);
    thr.resize(s), rstart.resize(s);
    hg.resize(2 * s * s), hst.resize(1);
    act.reserve(s), keep_idx.reserve(s), still.reserve(s);
    for (int i = 0; i < 4; ++i) spare.emplace_back(s + 1), spare_marks.emplace_back().reserve(4);
  }

  bool preconditioned() const { return opt.preconditioner != nullptr || dinv.data() != nullptr; }
  bool timing() const { return opt.keep_history || static_cast<bool>(opt.on_iteration) || opt.stats; }

  // ---- operator applies, ordered as the options say
  std::int64_t applies = 0, columns = 0;
  std::vector<ApplyMark>* apply_marks = nullptr;
  void apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y) {
    if (x.cols == 0) return;
    const int m0 = apply_marks ? ops.mark() : -1;
    switch (opt.apply_order) {
      case ApplyOrder::synchronize:
        ops.synchronize();
        op.apply(x, y);
        if (ops.space() == Space::device) device_synchronize();
        break;
      case ApplyOrder::events:
        ops.external_begin();
        op.apply(x, y);
        ops.external_end();
        break;
      case ApplyOrder::same_stream:
        op.apply(x, y);
        break;
    }
    if (apply_marks) apply_marks->push_back({m0, ops.mark(), &op != &a});
    ++applies;
    if (&op == &a) columns += x.cols;
  }
  // Q = A·P on W blocks: the operator (fp64), or A's fp32 step (step32: A as stored there, sums
  // in fp32) on ops' stream.
  void apply_w(MvView<const W> x, MvView<W> y) {
    if constexpr (!kFp32) {
      apply(a, x, y);
    } else {
      if (x.cols == 0) return;
      const int m0 = apply_marks ? ops.mark() : -1;
      opt.step32->step32(1.0, x, 0.0, 0.0, y, MvView<const float>{}, nullptr);
      if (apply_marks) apply_marks->push_back({m0, ops.mark(), false});
      ++applies;
      columns += x.cols;
    }
  }
  void precondition(MvView<const double> in, MvView<double> out) {
    if (opt.preconditioner) apply(*opt.preconditioner, in, out);
    else if (dinv.data()) ops.scale_rows(dinv.data(), in, out);
    else ops.copy(in, out);
  }

  MvView<W> qv(std::int64_t rk) { return qr.columns(smax - rk, rk); }
  MvView<W> rv(std::int64_t na) { return qr.columns(smax, na); }
  MvView<double> small(MultiVector<double>& m, std::int64_t r0, std::int64_t rows,
                       std::int64_t c0, std::int64_t cols) {
    return {m.data() + r0 + c0 * m.rows(), rows, cols, m.rows(), ops.space()};
  }

  double budget_words = 0.0;
  std::int64_t fused_iterations = 0, robust_steps = 0;
  double apply_s = 0.0, dense_s = 0.0;

  // One queued iteration with rk search directions and na active columns; Q = A·P and
  // g1 = PᵀQ (explicit: Pᵀ[Q R]) already formed, the factor of PᵀQ in f with status st.
  // Leaves P with na columns.
  void queue_update(std::int64_t rk, std::int64_t na, bool explicit_ptr) {
    auto F = small(f, 0, rk, 0, rk + 1);
    auto S = small(st, 0, 1, 0, 1);
    auto A_ = small(alpha, 0, rk, 0, na);
    auto B_ = small(beta, 0, rk, 0, na);
    // α = (PᵀQ)⁻¹·PᵀR (PᵀR = ZᵀR of the last residual pass unless explicit).
    ops.spd_solve(F, explicit_ptr ? small(g1, 0, rk, rk, na) : small(rz, 0, rk, 0, na), 1.0, S, A_);
    auto Q = qv(rk);
    auto R = rv(na);
    auto P = p.columns(0, std::max(rk, na));
    MvView<W> Z = R;
    if (!preconditioned()) {
      auto G2 = small(g2, 0, rk + na, 0, na);
      ops.cg_residual_update(Q, A_, R, G2);  // R −= Q·α, G2 = [Q R]ᵀR
      budget_words += n * (rk + 2.0 * na);
      ops.spd_solve(F, small(g2, 0, rk, 0, na), -1.0, S, B_);
      ops.copy(small(g2, rk, na, 0, na), small(rz, 0, na, 0, na));
      // ‖r_j‖² = diagonal of RᵀR: a strided view (ld + 1).
      MvView<const double> dg{g2.data() + rk, 1, na, g2.rows() + 1, ops.space()};
      ops.copy(dg, MvView<double>{nrm2.data(), 1, na, 1, ops.space()});
    } else if (!opt.preconditioner) {
      // Jacobi: R −= Q·α, Z = D⁻¹R, G2 = [Q R]ᵀZ and ‖r_j‖² (its last row) in one pass.
      Z = z.columns(0, na);
      auto G2 = small(g2, 0, rk + na + 1, 0, na);
      ops.cg_residual_update_jacobi(Q, A_, dinv.data(), R, Z, G2);
      budget_words += n * (rk + 3.0 * na + 1.0);
      ops.spd_solve(F, small(g2, 0, rk, 0, na), -1.0, S, B_);
      ops.copy(small(g2, rk, na, 0, na), small(rz, 0, na, 0, na));
      MvView<const double> nr{g2.data() + rk + na, 1, na, g2.rows(), ops.space()};
      ops.copy(nr, MvView<double>{nrm2.data(), 1, na, 1, ops.space()});
    } else if constexpr (!kFp32) {
      ops.gemm_into(-1.0, Q, A_, 1.0, R);
      Z = z.columns(0, na);
      precondition(R, Z);
      auto G2 = small(g2, 0, rk + na, 0, na);
      ops.gram_into(1.0, qr.columns(smax - rk, rk + na), Z, 0.0, G2);  // [QᵀZ; RᵀZ]
      ops.column_dots_into(R, R, nrm2.columns(0, 1));
      budget_words += n * (rk + 2.0 * na) + 3.0 * n * na + n * (rk + 2.0 * na) + n * na;
      ops.spd_solve(F, small(g2, 0, rk, 0, na), -1.0, S, B_);
      ops.copy(small(g2, rk, na, 0, na), small(rz, 0, na, 0, na));
    }
    // X += P·α; P(:, 0:na) = Z + P·β.
    ops.cg_direction_update(A_, B_, Z, P, xa.columns(0, na));
    budget_words += n * (rk + 4.0 * na);
  }

  // Q = A·P and the Gram products of the next α; the factor of PᵀQ into f (status st).
  void queue_gram(std::int64_t rk, std::int64_t na, bool explicit_ptr, double piv_tol) {
    apply_w(p.columns(0, rk), qv(rk));
    if (explicit_ptr) {
      ops.gram_into(1.0, p.columns(0, rk), qr.columns(smax - rk, rk + na), 0.0,
                    small(g1, 0, rk, 0, rk + na));
      budget_words += n * (2.0 * rk + na);
    } else {
      ops.gram_into(1.0, p.columns(0, rk), qv(rk), 0.0, small(g1, 0, rk, 0, rk));
      budget_words += 2.0 * n * rk;
    }
    ops.spd_factor(small(g1, 0, rk, 0, rk), small(f, 0, rk, 0, rk + 1), small(st, 0, 1, 0, 1),
                   piv_tol);
  }

  // ---- One solve, as named steps; solve() below is their flow:
  //   start → per cycle: begin_cycle → (queue_iteration → read_back → retire_converged →
  //   recover_rank)* → end_cycle → finish.
  struct Run {
    SolveResult res;
    MvView<const double> rhs;
    MvView<double> x;
    std::int64_t s = 0, it = 0;
    std::int64_t na = 0;  // active columns (act[0:na] are their indices in rhs/x)
    std::int64_t rk = 0;  // search directions in P
    bool explicit_ptr = true;  // PᵀR must be formed (cycle start, after a compaction or re-orth)
    bool sync_mode = false;    // a factor was flagged: check every iteration before the next
    bool want_norms = false;
    OrthoBranch branch = OrthoBranch::none;
  };

  Run start(MvView<const double> rhs, MvView<double> x, bool use_x0) {
    TCSOLVE_REQUIRE(rhs.rows == n && x.rows == n && x.cols == rhs.cols, "block CG: shape mismatch");
    TCSOLVE_REQUIRE(rhs.cols <= smax, "block CG: more right-hand sides than the workspace holds");
    TCSOLVE_REQUIRE(rhs.space == ops.space() && x.space == ops.space(),
                    "block CG: blocks in another memory space than the dense ops");
    Run r;
    r.rhs = rhs, r.x = x, r.s = rhs.cols;
    r.res.n = n;
    r.res.column_iterations.assign(r.s, -1);
    r.want_norms = opt.keep_history || static_cast<bool>(opt.on_iteration);
    applies = columns = 0;
    budget_words = 0.0;
    fused_iterations = robust_steps = 0;
    apply_s = dense_s = 0.0;
    ops.column_norms(rhs, bn.data());
    for (std::int64_t j = 0; j < r.s; ++j) {
      if (bn[j] == 0.0) bn[j] = 1.0;  // b = 0: absolute test, x = 0 is exact
      thr[j] = opt.tol * bn[j];        // (fp32: each refinement sets its own)
    }
    climb = false, climb_reason.clear(), refinements = 0, weak_steps = 0;
    if (!use_x0) ops.fill_zero(x);
    act.clear();  // columns to (re)solve: all at first, then those whose true residual failed
    for (std::int64_t j = 0; j < r.s; ++j) act.push_back(j);
    return r;
  }

  // Z (n × s, scratch) = rhs − A·x; relative norms ‖b_j − A·x_j‖/‖b_j‖ into rn.
  void true_residuals(Run& r) {
    MvView<double> rbuf;
    if constexpr (kFp32) rbuf = r64.columns(0, r.s);
    else rbuf = z.columns(0, r.s);
    apply(a, r.x, rbuf);
    ops.axpby_columns(ones.data(), r.rhs, neg1.data(), rbuf);
    ops.column_norms(rbuf, rn.data());
    for (std::int64_t j = 0; j < r.s; ++j) rn[j] /= bn[j];
  }

  // R = (rhs − A·x)(:, act) and Xa = x(:, act); columns already below tol leave; P = orth(M·R);
  // Q = A·P and Pᵀ[Q R] with the factor of PᵀQ queued. false: nothing left, or breakdown.
  bool begin_cycle(Run& r) {
    if constexpr (kFp32) return begin_refinement(r);
    else return begin_cycle64(r);
  }
  bool begin_cycle64(Run& r) {
    const std::int64_t na0 = static_cast<std::int64_t>(act.size());
    true_residuals(r);
    ops.gather_columns(z.columns(0, r.s), act.data(), na0, rv(na0));
    ops.gather_columns(r.x, act.data(), na0, xa.columns(0, na0));
    r.na = na0;
    keep_idx.clear(), still.clear();
    for (std::int64_t j = 0; j < r.na; ++j) {
      if (rn[act[j]] <= opt.tol) {
        if (r.res.column_iterations[act[j]] < 0) r.res.column_iterations[act[j]] = r.it;
      } else {
        keep_idx.push_back(j);
        still.push_back(act[j]);
      }
    }
    if (static_cast<std::int64_t>(still.size()) < r.na) {
      r.na = compact(r.na);
      act.swap(still);
    }
    if (r.na == 0) return false;
    precondition(rv(r.na), p.columns(0, r.na));
    auto o = orthonormalize_once(p.columns(0, r.na));
    r.rk = o.rank;
    r.branch = o.branch;
    r.explicit_ptr = true;
    r.sync_mode = false;
    if (r.rk == 0) {
      r.res.status = SolverStatus::breakdown;
      r.res.reason = "search block lost all rank (no new directions)";
      return false;
    }
    queue_gram(r.rk, r.na, true, kPivTol);
    return true;
  }

  // fp32: one refinement step's start. The true residuals (fp64) decide which columns go on; for
  // those R = fp32(b − A·x), the correction xa = 0, the inner target thr, and P = fp32(orth(M·R))
  // with the orthonormalization in fp64. false: nothing left, or no direction (breakdown).
  bool begin_refinement(Run& r) {
    true_residuals(r);
    still.clear();
    for (std::int64_t c : act) {
      if (rn[c] <= opt.tol) {
        if (r.res.column_iterations[c] < 0) r.res.column_iterations[c] = r.it;
      } else {
        still.push_back(c);
      }
    }
    act.swap(still);
    for (std::int64_t c = 0; c < r.s; ++c) rstart[c] = rn[c];
    r.na = static_cast<std::int64_t>(act.size());
    if (r.na == 0) return false;
    ++refinements;
    for (std::int64_t c : act) thr[c] = bn[c] * std::max(0.5 * opt.tol, opt.inner_reduction * rn[c]);
    auto p0 = p64.columns(0, r.na);
    ops.gather_columns(r64.columns(0, r.s), act.data(), r.na, p0);
    ops.convert(p0, rv(r.na));
    ops.fill_zero(xa.columns(0, r.na));
    r.explicit_ptr = true;
    r.sync_mode = false;
    if (dinv.data()) ops.scale_rows(dinv.data(), p0, p0);
    auto o = orthonormalize(ops, p0, MvView<double>{}, ows, opt.rank_tol, /*passes=*/1);
    r.rk = o.rank;
    r.branch = o.branch;
    if (r.rk == 0) {
      r.res.status = SolverStatus::breakdown;
      r.res.reason = "search block lost all rank (no new directions)";
      return false;
    }
    ops.convert(p64.columns(0, r.rk), p.columns(0, r.rk));
    queue_gram(r.rk, r.na, true, kPivTol);
    return true;
  }

  // fp32: a refinement step inside the iteration, taken when some active column's recurrence
  // residual is below its inner target (the queue drained): x += the corrections, R = fp32(the
  // true residuals b − A·x), columns whose true residual passes tol leave, the others get new
  // targets, and the iteration goes on with the same search block P (α then needs PᵀR
  // explicitly). Keeping P keeps the block's Krylov information ("reliable updates"): ending the
  // iteration and restarting from orth(M·R) cost 40–70 % more iterations at 7–32 columns
  // (laplacian(23, 19, 17), tol 1e-10). false: no column left, or the step did not halve some
  // column's true residual (climb).
  bool replace_residuals(Run& r) {
    for (std::int64_t j = 0; j < r.na; ++j) write_back(r, j, act[j]);
    true_residuals(r);
    still.clear();
    for (std::int64_t c : act) {
      if (rn[c] <= opt.tol) r.res.column_iterations[c] = r.it;
      else still.push_back(c);
    }
    if (stalled(still)) {
      // A step that left a column worse than it found it is undone for that column (x −= its
      // correction), so that the fp64 solve starts from the best x reached.
      for (std::int64_t j = 0; j < r.na; ++j)
        if (rn[act[j]] > rstart[act[j]]) ops.add_converted(xa.columns(j, 1), r.x.columns(act[j], 1), -1.0);
      act.swap(still);
      r.na = 0;  // (x holds every correction it keeps: nothing to write back)
      return false;
    }
    act.swap(still);
    r.na = static_cast<std::int64_t>(act.size());
    if (r.na == 0) return false;
    if (refinements >= opt.max_refinements) {
      climb = true;
      climb_reason = std::to_string(refinements) + " refinements did not reach the tolerance";
      r.na = 0;
      return false;
    }
    ++refinements;
    for (std::int64_t c : act) {
      rstart[c] = rn[c];
      thr[c] = bn[c] * std::max(0.5 * opt.tol, opt.inner_reduction * rn[c]);
    }
    auto p0 = p64.columns(0, r.na);
    ops.gather_columns(r64.columns(0, r.s), act.data(), r.na, p0);
    ops.convert(p0, rv(r.na));
    ops.fill_zero(xa.columns(0, r.na));
    // Q = A·P and the factor of PᵀQ queued last are still those of P (the drained iteration
    // queued them): only PᵀR of the new R is needed, where the explicit α reads it.
    r.explicit_ptr = true;
    ops.gram_into(1.0, p.columns(0, r.rk), rv(r.na), 0.0, small(g1, 0, r.rk, r.rk, r.na));
    budget_words += n * (r.rk + r.na);
    return true;
  }
  // A refinement step must cut each active column's true residual: by 10 % at least, and by half
  // on all but one step. One that does not is at fp32's limit for this A (the correction solves
  // A rounded: contraction about κ·2⁻²⁴): climb (sets climb).
  bool stalled(const std::vector<std::int64_t>& cols) {
    for (std::int64_t c : cols) {
      if (rn[c] > 0.9 * rstart[c]) return set_climb(c), true;
      if (rn[c] > 0.5 * rstart[c] && ++weak_steps >= 2) return set_climb(c), true;
    }
    return false;
  }
  void set_climb(std::int64_t c) {
    climb = true;
    climb_reason = "refinement step " + std::to_string(refinements) + " took column " +
                   std::to_string(c) + "'s relative true residual from " + fmt_g(rstart[c]) +
                   " to " + fmt_g(rn[c]);
  }

  // x(:, c) ← the active column j's iterate: a copy (fp64), or x += its correction (fp32).
  void write_back(Run& r, std::int64_t j, std::int64_t c) {
    if constexpr (kFp32) ops.add_converted(xa.columns(j, 1), r.x.columns(c, 1), 1.0);
    else ops.copy(xa.columns(j, 1), r.x.columns(c, 1));
  }

  // Queues iteration r.it (α, R, β, X, P; the norms and the factor status to download) and the
  // next Q = A·P with its factor, without waiting; a checkpoint first when one is due.
  void queue_iteration(Run& r, detail::Checkpointer& checkpoint) {
    // Checkpoint: X with the active columns' current iterate (xa, after the queued updates; the
    // copy waits for them) in place: a CG iterate, nothing restarted.
    if (checkpoint.due()) {
      if constexpr (kFp32) {
        checkpoint.write(ops, r.x, r.it, 0);  // x of the last refinement (the corrections are apart)
      } else {
        checkpoint.write(ops, r.x, r.it, 0, [&](double* host) {
          for (std::int64_t j = 0; j < r.na; ++j) ops.to_host(xa.columns(j, 1), host + act[j] * n, n);
        });
      }
    }
    Pending pd;
    pd.it = r.it;
    pd.na = r.na;
    pd.ortho = r.branch;
    r.branch = OrthoBranch::none;
    if (timing()) {
      pd.mark0 = ops.mark();
      if (!spare_marks.empty()) pd.apply_marks.swap(spare_marks.back()), spare_marks.pop_back();
      apply_marks = &pd.apply_marks;
    }
    queue_update(r.rk, r.na, r.explicit_ptr);
    r.rk = r.na;
    r.explicit_ptr = false;
    ++fused_iterations;
    ++r.it;
    // Host destinations live in the heap buffer of norms2 (it moves with pd; a member of pd
    // would not): ‖r_j‖² in [0, na), the factor status in [na].
    if (!spare.empty()) pd.norms2.swap(spare.back()), spare.pop_back();
    pd.norms2.resize(r.na + 1);
    ops.download_deferred(MvView<const double>{nrm2.data(), r.na, 1, smax, ops.space()},
                          pd.norms2.data(), r.na);
    ops.download_deferred(small(st, 0, 1, 0, 1), pd.norms2.data() + r.na, 1);
    queue_gram(r.rk, r.na, false, kPivTol);
    if (timing()) pd.mark1 = ops.mark(), apply_marks = nullptr;
    pd.ticket = ops.fetch_async();
    queue.push_back(std::move(pd));
  }

  // Reads queued iterations back, oldest first, keeping the newest queued while nothing happened
  // (no column converged, no factor flagged). true: drained, rn holds the latest norms.
  bool read_back(Run& r) {
    bool drain = false;
    while (!queue.empty()) {
      Pending& q = queue.front();
      ops.fetch_wait(q.ticket);
      q.status = q.norms2[q.na];
      const bool bad = q.status != 0.0;
      std::int64_t nconv = 0;
      for (std::int64_t j = 0; j < q.na; ++j) {
        rn[j] = std::sqrt(std::max(0.0, q.norms2[j]));
        if (rn[j] <= thr[act[j]]) ++nconv;
      }
      record(r.res, q, nconv, r.want_norms);
      recycle(q);
      queue.pop_front();
      if (bad) r.sync_mode = true;
      if (bad || nconv > 0 || r.sync_mode) drain = true;
      if (!drain) break;  // keep the newest iteration queued
    }
    return drain;
  }

  // Converged columns leave the block (their x written back). false: none is left.
  bool retire_converged(Run& r) {
    keep_idx.clear(), still.clear();
    for (std::int64_t j = 0; j < r.na; ++j) {
      if (rn[j] <= thr[act[j]]) {
        if constexpr (!kFp32) r.res.column_iterations[act[j]] = r.it;  // (fp32: the next true residual decides)
        write_back(r, j, act[j]);
      } else {
        keep_idx.push_back(j);
        still.push_back(act[j]);
      }
    }
    if (static_cast<std::int64_t>(still.size()) < r.na) {
      r.na = compact(r.na);
      act.swap(still);
      if (r.na == 0) return false;
      r.explicit_ptr = true;
    }
    return true;
  }

  // The queued factor of PᵀQ failed (α = β = 0 were applied): P = orth(P) with dropping, Q = A·P
  // again; PᵀQ of the orthonormal block not positive definite: breakdown (false).
  bool recover_rank(Run& r) {
    ++robust_steps;
    auto o2 = orthonormalize_once(p.columns(0, r.rk));
    r.branch = std::max(r.branch, o2.branch);
    r.rk = o2.rank;
    if (r.rk == 0) {
      r.res.status = SolverStatus::breakdown;
      r.res.reason = "search block lost all rank (no new directions)";
      return false;
    }
    r.explicit_ptr = true;
    queue_gram(r.rk, r.na, true, 0.0);
    ops.download_deferred(small(st, 0, 1, 0, 1), hst.data(), 1);
    ops.fetch();
    if (hst[0] != 2.0) return true;
    std::vector<double> ptq(r.rk * r.rk);
    ops.download_deferred(small(g1, 0, r.rk, 0, r.rk), ptq.data(), r.rk);
    ops.fetch();
    Mat pm = Eigen::Map<Mat>(ptq.data(), r.rk, r.rk);
    Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (pm + pm.transpose()), Eigen::EigenvaluesOnly);
    const double lmin = es.eigenvalues().minCoeff();
    r.res.status = SolverStatus::breakdown;
    r.res.reason = "A is not positive definite: pᵀAp = " + std::to_string(lmin) +
                   " ≤ 0 for a search direction p (‖p‖ = 1) at iteration " + std::to_string(r.it);
    return false;
  }

  // Drains what is still queued (iteration limit, breakdown), writes the active iterate back;
  // unless broken down, the true residuals of every column decide the next cycle's columns.
  void end_cycle(Run& r) {
    while (!queue.empty()) {
      Pending& q = queue.front();
      ops.fetch_wait(q.ticket);
      std::int64_t nconv = 0;
      for (std::int64_t j = 0; j < q.na; ++j)
        if (std::sqrt(std::max(0.0, q.norms2[j])) <= thr[act[j]]) ++nconv;
      record(r.res, q, nconv, r.want_norms);
      recycle(q);
      queue.pop_front();
    }
    ops.synchronize();
    for (std::int64_t j = 0; j < r.na; ++j) write_back(r, j, act[j]);
    if (r.res.status == SolverStatus::breakdown) return;
    true_residuals(r);
    act.clear();
    for (std::int64_t j = 0; j < r.s; ++j) {
      if (rn[j] > opt.tol) act.push_back(j);
      else if (r.res.column_iterations[j] < 0) r.res.column_iterations[j] = r.it;  // (fp32: here)
    }
  }

  // Final true residuals, status and statistics.
  SolveResult finish(Run& r, double t0) {
    SolveResult& res = r.res;
    const std::int64_t s = r.s;
    true_residuals(r);
    res.residual_norms.assign(rn.begin(), rn.begin() + s);
    bool ok = true;
    for (std::int64_t j = 0; j < s; ++j) ok = ok && rn[j] <= opt.tol;
    if (res.status != SolverStatus::breakdown) {
      res.status = ok ? SolverStatus::converged : SolverStatus::not_converged;
      if (!ok && interrupt_requested()) {
        std::int64_t passed = 0;
        for (std::int64_t j = 0; j < s; ++j) passed += rn[j] <= opt.tol;
        res.status = SolverStatus::interrupted;
        res.reason = detail::interrupted_reason(r.it, passed, s, "columns converged");
      } else if (!ok) {
        res.reason = "iteration limit " + std::to_string(opt.max_iterations) +
                     " reached (or true residual above tol after " + std::to_string(opt.max_cycles) + " cycles)";
      }
    }
    res.iterations = r.it;
    res.operator_applies = columns;
    res.seconds = detail::now_seconds() - t0;
    if (opt.stats) {
      CgStats& cs = *opt.stats;
      cs.applies = applies;
      cs.fused_iterations = fused_iterations;
      cs.robust_steps = robust_steps;
      cs.dense_budget_words = budget_words;
      cs.apply_seconds = apply_s;
      cs.dense_seconds = dense_s;
    }
    return std::move(r.res);
  }

  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
    const double t0 = detail::now_seconds();
    Run r = start(rhs, x, use_x0);
    detail::Checkpointer checkpoint(opt.checkpoint_every, opt.on_checkpoint);
    const int cycles = kFp32 ? opt.max_refinements : opt.max_cycles;
    for (int cycle = 0; cycle < cycles && !act.empty(); ++cycle) {
      if (!begin_cycle(r)) break;
      // Iterations are queued without waiting; the host reads iteration t − 1's norms and
      // factor status once iteration t is queued (at once in sync mode).
      while (r.na > 0 && r.it < opt.max_iterations && !interrupt_requested()) {
        queue_iteration(r, checkpoint);
        if (!r.sync_mode && queue.size() < 2 && r.it < opt.max_iterations) continue;
        if (!read_back(r)) continue;
        ops.synchronize();  // drained: rn holds the latest norms of the na columns
        const bool bad_now = hst_status() != 0.0;
        if constexpr (kFp32) {
          // A flagged factor: the next refinement restarts from a fresh search block.
          if (bad_now || !replace_residuals(r)) break;
        } else {
          if (!retire_converged(r)) break;
          if (bad_now) {
            if (!recover_rank(r)) break;
          } else if (r.explicit_ptr) {
            queue_gram(r.rk, r.na, true, kPivTol);  // after a compaction: Q = A·P, Pᵀ[Q R]
          }
        }
      }
      end_cycle(r);
      if (r.res.status == SolverStatus::breakdown) break;
      if (r.it >= opt.max_iterations || interrupt_requested()) break;
      if constexpr (kFp32) {
        // (a flagged factor ended the iteration: the same test as a refinement step's)
        if (climb || stalled(act)) break;
      }
    }
    if constexpr (kFp32) {
      if (r.res.status == SolverStatus::breakdown) {
        climb = true;
        climb_reason = "the fp32 iteration broke down (" + r.res.reason + ")";
        r.res.status = SolverStatus::not_converged;
        r.res.reason.clear();
      } else if (!act.empty() && !climb && r.it < opt.max_iterations && !interrupt_requested()) {
        climb = true;
        climb_reason = std::to_string(refinements) + " refinements did not reach the tolerance";
      }
    }
    return finish(r, t0);
  }

  static std::string fmt_g(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return b;
  }

  // The factor status of the newest queued iteration (after a synchronize).
  double hst_status() {
    ops.download_deferred(small(st, 0, 1, 0, 1), hst.data(), 1);
    ops.fetch();
    return hst[0];
  }

  // A consumed iteration's host buffers go back to the spares (no allocation once warm).
  void recycle(Pending& q) {
    spare.push_back(std::move(q.norms2));
    q.apply_marks.clear();
    spare_marks.push_back(std::move(q.apply_marks));
  }

  void record(SolveResult& res, Pending& q, std::int64_t nconv, bool want_norms) {
    IterationRecord rec;
    rec.iteration = q.it;
    rec.ortho = q.ortho;
    rec.converged = nconv;
    rec.active = q.na - nconv;
    if (want_norms)
      for (std::int64_t j = 0; j < q.na; ++j) rec.residual_norms.push_back(std::sqrt(std::max(0.0, q.norms2[j])));
    if (q.mark0 >= 0) {
      double ap = 0.0, pc = 0.0;
      for (auto& m : q.apply_marks) {
        const double t = ops.elapsed_seconds(m.from, m.to);
        ap += t;
        if (m.precond) pc += t;
      }
      const double total = ops.elapsed_seconds(q.mark0, q.mark1);
      rec.apply_seconds = ap;
      rec.precond_seconds = pc;
      rec.dense_seconds = std::max(0.0, total - ap);
      apply_s += ap;
      dense_s += rec.dense_seconds;
    }
    if (opt.on_iteration) opt.on_iteration(rec);
    if (opt.keep_history) res.history.push_back(std::move(rec));
  }

  // Keeps columns keep_idx of Xa and R (in order), through z as scratch. Returns the new count.
  std::int64_t compact(std::int64_t na) {
    const std::int64_t nk = static_cast<std::int64_t>(keep_idx.size());
    if (nk == na) return na;
    if (nk > 0) {
      ops.gather_columns(xa.columns(0, na), keep_idx.data(), nk, z.columns(0, nk));
      ops.copy(z.columns(0, nk), xa.columns(0, nk));
      ops.gather_columns(rv(na), keep_idx.data(), nk, z.columns(0, nk));
      ops.copy(z.columns(0, nk), rv(nk));
    }
    return nk;
  }

  // One SVQB/Cholesky pass is enough here: P only has to span the block well conditioned; α and
  // β use (PᵀQ)⁻¹ exactly. Rank-revealing: directions with relative singular value < sqrt(rank_tol)
  // are dropped (breakdown-free block CG).
  OrthoOutcome orthonormalize_once(MvView<double> w) {
    return orthonormalize(ops, w, MvView<double>{}, ows, opt.rank_tol, /*passes=*/1);
  }
};

// The solver's rungs: the fp32 iteration inside fp64 refinement when CgOptions::step32 is given,
// climbing to the fp64 block CG (made on the first climb) from the current x when it must.
struct BlockCg::Impl {
  const LinearOperator<double>& a;
  DenseBlockOps& ops;
  std::int64_t smax;
  CgOptions opt;
  std::unique_ptr<CgImpl<float>> f32;
  std::unique_ptr<CgImpl<double>> f64;

  Impl(const LinearOperator<double>& a_, DenseBlockOps& ops_, std::int64_t s, CgOptions o)
      : a(a_), ops(ops_), smax(s), opt(std::move(o)) {
    if (opt.step32) f32 = std::make_unique<CgImpl<float>>(a, ops, s, opt);
    else f64 = std::make_unique<CgImpl<double>>(a, ops, s, opt);
  }

  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
    if (!f32) return f64->solve(rhs, x, use_x0);
    SolveResult r = f32->solve(rhs, x, use_x0);
    r.fp32_iterations = r.iterations;
    r.refinements = f32->refinements;
    r.precision = "fp32 iterations inside fp64 refinement (" + std::to_string(r.refinements) +
                  (r.refinements == 1 ? " step)" : " steps)");
    if (!f32->climb) return r;
    // Climb: the fp64 block CG from the x reached, with the iterations left. The fp32 workspace
    // goes first (the fp64 one is larger), and later solves of this A stay in fp64.
    const std::string why = f32->climb_reason;
    f32.reset();
    CgOptions o = opt;
    o.step32 = nullptr;
    f64 = std::make_unique<CgImpl<double>>(a, ops, smax, o);
    f64->opt.max_iterations = std::max<std::int64_t>(1, opt.max_iterations - r.iterations);
    SolveResult r2 = f64->solve(rhs, x, true);
    for (std::size_t j = 0; j < r2.column_iterations.size(); ++j)
      if (r.column_iterations[j] < 0 && r2.column_iterations[j] >= 0)
        r.column_iterations[j] = r2.column_iterations[j] + r.iterations;
    for (auto& h : r2.history) h.iteration += r.iterations;
    r.history.insert(r.history.end(), std::make_move_iterator(r2.history.begin()),
                     std::make_move_iterator(r2.history.end()));
    r.status = r2.status;
    r.reason = r2.reason;
    r.residual_norms = std::move(r2.residual_norms);
    r.iterations += r2.iterations;
    r.operator_applies += r2.operator_applies;
    r.seconds += r2.seconds;
    r.precision += ", then fp64 (" + why + ")";
    return r;
  }
};

BlockCg::BlockCg(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs,
                 CgOptions opt)
    : impl_(std::make_unique<Impl>(a, ops, max_rhs, std::move(opt))) {}
BlockCg::~BlockCg() = default;
SolveResult BlockCg::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  return impl_->solve(rhs, x, use_x0);
}

SolveResult block_cg(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb,
                     std::int64_t s, DenseBlockOps& ops, const CgOptions& opt, const double* x0) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "block CG: A must be square");
  TCSOLVE_REQUIRE(s >= 1 && ldb >= n, "block CG: need s >= 1 and ldb >= n");
  BlockCg cg(a, ops, s, opt);
  MultiVector<double> b = ops.allocate(n, s), x = ops.allocate(n, s);
  ops.from_host(rhs, ldb, b.view());
  if (x0) ops.from_host(x0, ldb, x.view());
  // The host result buffer (n × s, first touch and page locking) is prepared on another thread
  // while the solve runs, so that the final copy runs at pinned speed.
  std::vector<double> sol;
  detail::HostResult prep(ops, sol, n * s);
  SolveResult res = cg.solve(b.view(), x.view(), x0 != nullptr);
  prep.wait();
  ops.to_host(x.view(), sol.data(), n);
  prep.release();
  res.solutions = std::move(sol);
  return res;
}

SolveResult block_cg_random(const LinearOperator<double>& a, std::uint64_t seed, std::int64_t s,
                            DenseBlockOps& ops, const CgOptions& opt, bool copy_solutions) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "block CG: A must be square");
  TCSOLVE_REQUIRE(s >= 1, "block CG: need s >= 1");
  BlockCg cg(a, ops, s, opt);
  MultiVector<double> b = ops.allocate(n, s), x = ops.allocate(n, s);
  ops.fill_random(b.view(), seed);
  std::vector<double> sol;
  std::unique_ptr<detail::HostResult> prep;
  if (copy_solutions) prep = std::make_unique<detail::HostResult>(ops, sol, n * s);
  SolveResult res = cg.solve(b.view(), x.view(), false);
  if (copy_solutions) {
    prep->wait();
    ops.to_host(x.view(), sol.data(), n);
    prep->release();
    res.solutions = std::move(sol);
  }
  ops.synchronize();
  return res;
}

}  // namespace tcsolve
