// The fp32 rung's refinement steps (block_cg_solver.hpp; the mixed-precision solve in
// solvers/block_cg.hpp): the fp32 iteration runs on the corrections d_j of the active columns, and
// fp64 true residuals decide.
#include <algorithm>
#include <string>

#include "core/format.hpp"
#include "solvers/cg/block_cg_solver.hpp"

namespace tcsolve::cg {

// One refinement step's start. The true residuals (fp64) decide which columns go on; for those
// R = fp32((b − A·x)/c), the correction X_a = 0, the inner target, and P = fp32(orth(M·R)) with the
// orthonormalization in fp64. false: nothing left, or no direction (breakdown).
template <class W>
bool BlockCgSolver<W>::begin_refinement(Run& r) {
  true_residuals(r);
  still_.clear();
  for (std::int64_t c : act_) {
    if (rn_[c] <= opt_.tol) {
      if (r.res.column_iterations[c] < 0) r.res.column_iterations[c] = r.it;
    } else {
      still_.push_back(c);
    }
  }
  act_.swap(still_);
  for (std::int64_t c = 0; c < r.s; ++c) rstart_[c] = rn_[c];
  r.na = static_cast<std::int64_t>(act_.size());
  if (r.na == 0) return false;
  ++refinements_;
  for (std::int64_t c : act_) set_inner_target(c);
  auto p0 = p64_.columns(0, r.na);
  ops_.gather_columns(r64_.columns(0, r.s), act_.data(), r.na, p0);
  ops_.cg().convert(p0, residual_block(r.na));
  ops_.fill_zero(iterate_block(r.na));
  if (dinv_.data()) ops_.scale_rows(dinv_.data(), p0, p0);
  auto o = orthonormalize(ops_, p0, MvView<double>{}, ows_, opt_.rank_tol, /*passes=*/1);
  if (o.rank > 0) ops_.cg().convert(p64_.columns(0, o.rank), search_block(o.rank));
  return first_search_block(r, o);
}

// A refinement step inside the iteration, taken when some active column's recurrence residual is
// below its inner target (the queue drained): x += c·d, R = fp32((b − A·x)/c), columns whose true
// residual passes tol leave, the others get new targets, and the iteration goes on with the same
// search block P (α then needs PᵀR explicitly). Keeping P keeps the block's Krylov information
// ("reliable updates"): ending the iteration and restarting from orth(M·R) cost 40–70 % more
// iterations at 7–32 columns (laplacian(23, 19, 17), tol 1e-10). false: no column left, or the
// step did not halve some column's true residual (climb).
template <class W>
bool BlockCgSolver<W>::replace_residuals(Run& r) {
  for (std::int64_t j = 0; j < r.na; ++j) write_back(r, j, act_[j]);
  true_residuals(r);
  still_.clear();
  for (std::int64_t c : act_) {
    if (rn_[c] <= opt_.tol) r.res.column_iterations[c] = r.it;
    else still_.push_back(c);
  }
  if (stalled(still_)) {
    // A step that left a column worse than it found it is undone for that column (x −= c·d), so
    // that the fp64 solve starts from the best x reached.
    for (std::int64_t j = 0; j < r.na; ++j)
      if (rn_[act_[j]] > rstart_[act_[j]])
        ops_.cg().add_converted(xa_.columns(j, 1), r.x.columns(act_[j], 1), -cs_[act_[j]]);
    act_.swap(still_);
    r.na = 0;  // (x holds every correction it keeps: nothing to write back)
    return false;
  }
  act_.swap(still_);
  r.na = static_cast<std::int64_t>(act_.size());
  if (r.na == 0) return false;
  if (refinements_ >= opt_.max_refinements) {
    climb_ = true;
    climb_reason_ = std::to_string(refinements_) + " refinements did not reach the tolerance";
    r.na = 0;
    return false;
  }
  ++refinements_;
  for (std::int64_t c : act_) {
    rstart_[c] = rn_[c];
    last_rn_[c] = rn_[c] * bn_[c];
    set_inner_target(c);
  }
  auto p0 = p64_.columns(0, r.na);
  ops_.gather_columns(r64_.columns(0, r.s), act_.data(), r.na, p0);
  ops_.cg().convert(p0, residual_block(r.na));
  ops_.fill_zero(iterate_block(r.na));
  // Q = A·P and the factor of PᵀQ queued last are still those of P (the drained iteration queued
  // them): only PᵀR of the new R is needed, where the explicit α reads it.
  r.explicit_ptr = true;
  if (r.rk > 0) queue_ptr(r.rk, r.na);
  return true;
}

// A refinement step must cut each active column's true residual: by 10 % at least, and by half
// on all but one step. One that does not is at fp32's limit for this A (the correction solves A
// rounded: contraction about κ·2⁻²⁴): climb (sets climb).
template <class W>
bool BlockCgSolver<W>::stalled(const std::vector<std::int64_t>& cols) {
  for (std::int64_t c : cols) {
    if (rn_[c] > 0.9 * rstart_[c]) return set_climb(c), true;
    if (rn_[c] > 0.5 * rstart_[c] && ++weak_steps_ >= 2) return set_climb(c), true;
  }
  return false;
}

// Column c's inner target from its true residual norms()[c] (relative): max(tol/2,
// inner_reduction·‖r_c‖/‖b_c‖, 4u)·‖b_c‖.
template <class W>
void BlockCgSolver<W>::set_inner_target(std::int64_t c) {
  thr_[c] = bn_[c] * std::max({0.5 * opt_.tol, opt_.inner_reduction * rn_[c], kFloorRel});
}

template <class W>
void BlockCgSolver<W>::set_climb(std::int64_t c) {
  climb_ = true;
  climb_reason_ = format("refinement step %d took column %lld's relative true residual from %.3g to %.3g",
                         refinements_, static_cast<long long>(c), rstart_[c], rn_[c]);
}

// The members defined here, for the fp32 rung only (the class is instantiated in
// block_cg_solver.cpp; the fp64 solver never refines).
#define TCSOLVE_CG_REFINE_MEMBERS(W)                                               \
  template bool BlockCgSolver<W>::begin_refinement(Run&);                          \
  template bool BlockCgSolver<W>::replace_residuals(Run&);                         \
  template bool BlockCgSolver<W>::stalled(const std::vector<std::int64_t>&);       \
  template void BlockCgSolver<W>::set_climb(std::int64_t);                         \
  template void BlockCgSolver<W>::set_inner_target(std::int64_t);
TCSOLVE_CG_REFINE_MEMBERS(float)
#undef TCSOLVE_CG_REFINE_MEMBERS

}  // namespace tcsolve::cg
