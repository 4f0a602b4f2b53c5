// Block CG's iteration steps: the queued updates, the Gram products and factor, reading the
// scalars back, convergence per column, and the deflation of a search block that lost rank
// (block_cg_solver.hpp; the recurrence and its traffic in solvers/block_cg.hpp).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "solvers/cg/block_cg_solver.hpp"

namespace tcsolve::cg {

template <class W>
void BlockCgSolver<W>::queue_gram(std::int64_t rk, std::int64_t na, bool explicit_ptr, double piv_tol) {
  apply_w(search_block(rk), product_block(rk));
  if (explicit_ptr) {
    ops_.gram_into(1.0, search_block(rk), qr_.columns(smax_ - rk, rk + na), 0.0,
                   small(g1_, 0, rk, 0, rk + na));
    budget_words_ += n_ * (2.0 * rk + na);
  } else {
    ops_.gram_into(1.0, search_block(rk), product_block(rk), 0.0, small(g1_, 0, rk, 0, rk));
    budget_words_ += 2.0 * n_ * rk;
  }
  ops_.small().spd_factor(small(g1_, 0, rk, 0, rk), small(f_, 0, rk, 0, rk + 1), small(st_, 0, 1, 0, 1), piv_tol);
}

template <class W>
void BlockCgSolver<W>::queue_ptr(std::int64_t rk, std::int64_t na) {
  ops_.gram_into(1.0, search_block(rk), residual_block(na), 0.0, small(g1_, 0, rk, rk, na));
  budget_words_ += n_ * (rk + na);
}

template <class W>
void BlockCgSolver<W>::residual_update(std::int64_t rk, std::int64_t na, bool explicit_ptr) {
  auto F = small(f_, 0, rk, 0, rk + 1);
  auto S = small(st_, 0, 1, 0, 1);
  auto A_ = alpha(rk, na);
  auto B_ = beta(rk, na);
  // α = (PᵀQ)⁻¹·PᵀR (PᵀR = ZᵀR of the last residual pass unless explicit).
  ops_.small().spd_solve(F, explicit_ptr ? small(g1_, 0, rk, rk, na) : small(rz_, 0, rk, 0, na), 1.0, S, A_);
  auto Q = product_block(rk);
  auto R = residual_block(na);
  if (!preconditioned()) {
    auto G2 = small(g2_, 0, rk + na, 0, na);
    ops_.cg().cg_residual_update(Q, A_, R, G2);  // R −= Q·α, G2 = [Q R]ᵀR
    budget_words_ += n_ * (rk + 2.0 * na);
    // ‖r_j‖² = diagonal of RᵀR: a strided view (ld + 1).
    MvView<const double> dg{g2_.data() + rk, 1, na, g2_.rows() + 1, ops_.space()};
    ops_.copy(dg, MvView<double>{nrm2_.data(), 1, na, 1, ops_.space()});
  } else if (!opt_.preconditioner) {
    // Jacobi: R −= Q·α, Z = D⁻¹R, G2 = [Q R]ᵀZ and ‖r_j‖² (its last row) in one pass.
    auto G2 = small(g2_, 0, rk + na + 1, 0, na);
    ops_.cg().cg_residual_update_jacobi(Q, A_, dinv_.data(), R, z_.columns(0, na), G2);
    budget_words_ += n_ * (rk + 3.0 * na + 1.0);
    MvView<const double> nr{g2_.data() + rk + na, 1, na, g2_.rows(), ops_.space()};
    ops_.copy(nr, MvView<double>{nrm2_.data(), 1, na, 1, ops_.space()});
  } else if constexpr (!kFp32) {
    ops_.gemm_into(-1.0, Q, A_, 1.0, R);
    auto Z = z_.columns(0, na);
    precondition(R, Z);
    // [QᵀZ; RᵀZ]
    ops_.gram_into(1.0, qr_.columns(smax_ - rk, rk + na), Z, 0.0, small(g2_, 0, rk + na, 0, na));
    ops_.column_dots_into(R, R, nrm2_.columns(0, 1));
    budget_words_ += n_ * (rk + 2.0 * na) + 3.0 * n_ * na + n_ * (rk + 2.0 * na) + n_ * na;
  }
  // β = −(PᵀQ)⁻¹·QᵀZ; the next PᵀR = ZᵀR.
  ops_.small().spd_solve(F, small(g2_, 0, rk, 0, na), -1.0, S, B_);
  ops_.copy(small(g2_, rk, na, 0, na), small(rz_, 0, na, 0, na));
}

template <class W>
void BlockCgSolver<W>::direction_update(std::int64_t rk, std::int64_t na) {
  // X += P·α; P(:, 0:na) = Z + P·β.
  ops_.cg().cg_direction_update(alpha(rk, na), beta(rk, na), preconditioned_block(na),
                           p_.columns(0, std::max(rk, na)), iterate_block(na));
  budget_words_ += n_ * (rk + 4.0 * na);
}

// One SVQB/Cholesky pass is enough here: P only has to span the block well conditioned; α and β
// use (PᵀQ)⁻¹ exactly. Rank-revealing: directions with relative singular value < sqrt(rank_tol)
// (after scaling the columns to unit norm) are dropped (breakdown-free block CG).
template <class W>
OrthoOutcome BlockCgSolver<W>::orthonormalize_search(std::int64_t cols) {
  if constexpr (!kFp32) {
    return orthonormalize(ops_, search_block(cols), MvView<double>{}, ows_, opt_.rank_tol, /*passes=*/1);
  } else {
    auto p64 = p64_.columns(0, cols);
    ops_.fill_zero(p64);
    ops_.cg().add_converted(search_block(cols), p64, 1.0);
    auto o = orthonormalize(ops_, p64, MvView<double>{}, ows_, opt_.rank_tol, /*passes=*/1);
    if (o.rank > 0) ops_.cg().convert(p64_.columns(0, o.rank), search_block(o.rank));
    return o;
  }
}

// Checkpoint: x with the active columns' current iterate (X_a after the queued updates, scaled
// back; the copy waits for them) in place: a CG iterate, nothing restarted.
template <class W>
void BlockCgSolver<W>::checkpoint_if_due(Run& r, detail::Checkpointer& checkpoint) {
  if (!checkpoint.due()) return;
  const bool whole = checkpoint_x_.data != nullptr;
  const MvView<const double> x = whole ? checkpoint_x_ : MvView<const double>(r.x);
  const std::int64_t c0 = whole ? checkpoint_c0_ : 0;
  if constexpr (kFp32) {
    checkpoint.write(ops_, x, r.it, 0);  // x of the last refinement (the corrections are apart)
  } else {
    checkpoint.write(ops_, x, r.it, 0, [&](double* host) {
      for (std::int64_t j = 0; j < r.na; ++j) {
        double* col = host + (c0 + act_[j]) * n_;
        ops_.to_host(xa_.columns(j, 1), col, n_);
        for (std::int64_t i = 0; i < n_; ++i) col[i] *= cs_[act_[j]];
      }
    });
  }
}

template <class W>
void BlockCgSolver<W>::queue_iteration(Run& r, detail::Checkpointer& checkpoint) {
  checkpoint_if_due(r, checkpoint);
  Pending pd;
  pd.it = r.it;
  pd.na = r.na;
  pd.ortho = r.branch;
  r.branch = OrthoBranch::none;
  if (timing()) {
    pd.mark0 = ops_.queue().mark();
    if (!spare_marks_.empty()) pd.apply_marks.swap(spare_marks_.back()), spare_marks_.pop_back();
    apply_marks_ = &pd.apply_marks;
  }
  residual_update(r.rk, r.na, r.explicit_ptr);
  direction_update(r.rk, r.na);
  r.dim += r.rk;
  r.rk = r.na;
  // Synchronous once the next block cannot have full rank (the cycle's directions and its na
  // would exceed n): when the space is exhausted its columns are rounding noise, which must not
  // be searched before the host has seen this iteration's norms (read_back: an abrupt drop ends
  // the cycle).
  r.sync_mode = r.sync_mode || r.dim + r.na > nglob_;
  r.explicit_ptr = false;
  ++fused_iterations_;
  ++r.it;
  // Host destinations live in the heap buffer of norms2 (it moves with pd; a member of pd would
  // not): ‖r_j‖² in [0, na), the factor status in [na].
  if (!spare_.empty()) pd.norms2.swap(spare_.back()), spare_.pop_back();
  pd.norms2.resize(r.na + 1);
  ops_.queue().download_deferred(MvView<const double>{nrm2_.data(), r.na, 1, smax_, ops_.space()},
                         pd.norms2.data(), r.na);
  ops_.queue().download_deferred(small(st_, 0, 1, 0, 1), pd.norms2.data() + r.na, 1);
  double piv_tol = kPivTol;
  if (r.deflating) {
    // Breakdown-free block CG: P = orth(Z + P·β) with dropping, while the block is rank deficient
    // (a host Gram: this iteration is synchronous anyway). The factor of an orthonormal P is
    // flagged only when PᵀAP is not positive definite.
    auto o = orthonormalize_search(r.na);
    ++robust_steps_;
    r.rk = o.rank;
    r.branch = o.branch;
    r.deflating = r.rk < r.na;
    r.explicit_ptr = true;
    piv_tol = 0.0;
  }
  if (r.rk > 0) queue_gram(r.rk, r.na, r.explicit_ptr, piv_tol);
  if (timing()) pd.mark1 = ops_.queue().mark(), apply_marks_ = nullptr;
  pd.ticket = ops_.queue().fetch_async();
  queue_.push_back(std::move(pd));
}

template <class W>
bool BlockCgSolver<W>::read_back(Run& r) {
  bool drain = false;
  while (!queue_.empty()) {
    Pending& q = queue_.front();
    ops_.queue().fetch_wait(q.ticket);
    const bool bad = q.norms2[q.na] != 0.0;
    std::int64_t nconv = 0;
    for (std::int64_t j = 0; j < q.na; ++j) {
      const std::int64_t c = act_[j];
      rn_[j] = std::sqrt(std::max(0.0, q.norms2[j]));
      if (rn_[j] <= thr_[c]) {
        ++nconv;
      } else if (last_rn_[c] <= thr_[c] && rn_[j] > 1e3 * last_rn_[c]) {
        // The column had converged in the iteration before and the pipelined next one threw it
        // 1000× back (CG's own oscillation is a small factor): its residual was at rounding
        // level (CG ended exactly: A = c·I, a diagonal A with Jacobi, few distinct eigenvalues),
        // where PᵀR = ZᵀR no longer holds and α is noise. The cycle ends; the next ones restart
        // from the true residual and read each iteration back before queuing the next.
        r.exhausted = true;
        sync_cycles_ = true;
      } else if (rn_[j] < kExhaustedDrop * last_rn_[c]) {
        r.exhausted = true;
      }
      last_rn_[c] = rn_[j];
    }
    record(r.res, q, nconv, r.want_norms);
    recycle(q);
    queue_.pop_front();
    if (bad) r.sync_mode = r.flagged = true;
    if (bad || nconv > 0 || r.sync_mode || r.exhausted) drain = true;
    if (!drain) break;  // keep the newest iteration queued
  }
  return drain;
}

template <class W>
bool BlockCgSolver<W>::retire_converged(Run& r) {
  const bool left = retire_where(r, [&](std::int64_t j) {
    if (!(rn_[j] <= thr_[act_[j]])) return false;
    // (fp32: the next true residual decides)
    if constexpr (!kFp32) r.res.column_iterations[act_[j]] = r.it;
    write_back(r, j, act_[j]);
    return true;
  });
  if (!left) return true;
  if (r.na == 0) return false;
  r.explicit_ptr = true;
  return true;
}

template <class W>
bool BlockCgSolver<W>::deflate(Run& r) {
  ++robust_steps_;
  auto o = orthonormalize_search(r.rk);
  r.branch = std::max(r.branch, o.branch);
  r.rk = o.rank;
  if (r.rk == 0) return no_direction(r, "M·R + P·β");
  r.explicit_ptr = true;
  r.sync_mode = true;
  r.deflating = r.rk < r.na;
  queue_gram(r.rk, r.na, true, 0.0);
  if (factor_status() != 2.0) return true;
  return not_positive_definite(r);
}

// PᵀAP of an orthonormal P (rk columns) failed its Cholesky factorization: its eigenvalues say
// whether A is not positive definite (a clearly negative one: pᵀAp < 0 for a unit vector p) or
// PᵀAP is singular to working precision (what the evidence supports then).
template <class W>
bool BlockCgSolver<W>::not_positive_definite(Run& r) {
  const std::int64_t k = r.rk;
  std::vector<double> ptq(static_cast<std::size_t>(k * k));
  ops_.queue().download_deferred(small(g1_, 0, k, 0, k), ptq.data(), k);
  ops_.queue().fetch();
  r.res.status = SolverStatus::breakdown;
  const long long it = static_cast<long long>(r.it);
  Eigen::MatrixXd pm = Eigen::Map<Eigen::MatrixXd>(ptq.data(), k, k);
  if (!pm.allFinite()) {
    r.res.reason = format("PᵀAP of the search block has non-finite entries at iteration %lld "
                          "(A·P overflowed or A holds a non-finite value)", it);
    return false;
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (pm + pm.transpose()), Eigen::EigenvaluesOnly);
  const double lmin = es.eigenvalues().minCoeff(), lmax = es.eigenvalues().maxCoeff();
  if (lmin < -1e-12 * std::abs(lmax)) {
    r.res.reason = format("A is not positive definite: pᵀAp = %.3g < 0 for a unit vector p of the "
                          "orthonormalized search block at iteration %lld (its largest pᵀAp is %.3g)",
                          lmin, it, lmax);
  } else {
    r.res.reason = format("PᵀAP of the orthonormalized search block (%lld columns) is singular to "
                          "working precision at iteration %lld: its eigenvalues run from %.3g to %.3g "
                          "(A is singular or nearly so, or not positive definite by less than rounding)",
                          static_cast<long long>(k), it, lmin, lmax);
  }
  return false;
}

// The search block has no direction left although na columns are still above their targets.
template <class W>
bool BlockCgSolver<W>::no_direction(Run& r, const char* block) {
  r.res.status = SolverStatus::breakdown;
  r.res.reason = format("the search block %s had no direction left at iteration %lld: its %lld columns "
                        "were zero or dependent (relative singular values below %.1g) while their "
                        "residuals were above tol",
                        block, static_cast<long long>(r.it), static_cast<long long>(r.na),
                        std::sqrt(opt_.rank_tol));
  return false;
}

template <class W>
std::int64_t BlockCgSolver<W>::compact(std::int64_t na, const std::vector<std::int64_t>& keep) {
  const std::int64_t nk = static_cast<std::int64_t>(keep.size());
  if (nk == na) return na;
  if (nk > 0) {
    ops_.gather_columns(iterate_block(na), keep.data(), nk, z_.columns(0, nk));
    ops_.copy(z_.columns(0, nk), iterate_block(nk));
    ops_.gather_columns(residual_block(na), keep.data(), nk, z_.columns(0, nk));
    ops_.copy(z_.columns(0, nk), residual_block(nk));
  }
  return nk;
}

// A consumed iteration's host buffers go back to the spares (no allocation once warm).
template <class W>
void BlockCgSolver<W>::recycle(Pending& q) {
  spare_.push_back(std::move(q.norms2));
  q.apply_marks.clear();
  spare_marks_.push_back(std::move(q.apply_marks));
}

// The record of a consumed iteration; its residual norms unscaled (c_j·‖r_j/c_j‖).
template <class W>
void BlockCgSolver<W>::record(SolveResult& res, Pending& q, std::int64_t nconv, bool want_norms) {
  IterationRecord rec;
  rec.iteration = q.it;
  rec.ortho = q.ortho;
  rec.converged = nconv;
  rec.active = q.na - nconv;
  if (want_norms)
    for (std::int64_t j = 0; j < q.na; ++j)
      rec.residual_norms.push_back(std::sqrt(std::max(0.0, q.norms2[j])) * cs_[act_[j]]);
  if (q.mark0 >= 0) {
    double ap = 0.0, pc = 0.0;
    for (auto& m : q.apply_marks) {
      const double t = ops_.queue().elapsed_seconds(m.from, m.to);
      ap += t;
      if (m.precond) pc += t;
    }
    const double total = ops_.queue().elapsed_seconds(q.mark0, q.mark1);
    rec.apply_seconds = ap;
    rec.precond_seconds = pc;
    rec.dense_seconds = std::max(0.0, total - ap);
    apply_s_ += ap;
    dense_s_ += rec.dense_seconds;
  }
  if (opt_.on_iteration) opt_.on_iteration(rec);
  if (opt_.keep_history) res.history.push_back(std::move(rec));
}

// The members defined here, for both block types (the class is instantiated in
// block_cg_solver.cpp).
#define TCSOLVE_CG_ITERATION_MEMBERS(W)                                                        \
  template void BlockCgSolver<W>::queue_gram(std::int64_t, std::int64_t, bool, double);        \
  template void BlockCgSolver<W>::queue_ptr(std::int64_t, std::int64_t);                       \
  template void BlockCgSolver<W>::residual_update(std::int64_t, std::int64_t, bool);           \
  template void BlockCgSolver<W>::direction_update(std::int64_t, std::int64_t);                \
  template OrthoOutcome BlockCgSolver<W>::orthonormalize_search(std::int64_t);                 \
  template void BlockCgSolver<W>::checkpoint_if_due(Run&, detail::Checkpointer&);              \
  template void BlockCgSolver<W>::queue_iteration(Run&, detail::Checkpointer&);                \
  template bool BlockCgSolver<W>::read_back(Run&);                                             \
  template bool BlockCgSolver<W>::retire_converged(Run&);                                      \
  template bool BlockCgSolver<W>::deflate(Run&);                                               \
  template bool BlockCgSolver<W>::not_positive_definite(Run&);                                 \
  template bool BlockCgSolver<W>::no_direction(Run&, const char*);                             \
  template std::int64_t BlockCgSolver<W>::compact(std::int64_t, const std::vector<std::int64_t>&); \
  template void BlockCgSolver<W>::recycle(Pending&);                                           \
  template void BlockCgSolver<W>::record(SolveResult&, Pending&, std::int64_t, bool);
TCSOLVE_CG_ITERATION_MEMBERS(double)
TCSOLVE_CG_ITERATION_MEMBERS(float)
#undef TCSOLVE_CG_ITERATION_MEMBERS

}  // namespace tcsolve::cg
