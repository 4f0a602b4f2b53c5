// The block CG planner (solve, one process or the ranks of an MPI launch): the preconditioner that
// `--precond auto` takes, how many right-hand sides one block CG run holds when the GPU memory is
// short, and whether the iterations run on fp32 blocks inside fp64 refinement. The eigs planner's
// sibling (solvers/eigs/plan.hpp); the apps and the Python module read their choice from here.
//
//   preconditioner   auto: the Chebyshev polynomial where it was measured to win
//                    (auto_precond_refusal, solvers/chebyshev_precond.hpp), else Jacobi; the
//                    note says which and why.
//   batch            all right-hand sides, or (fit_columns − reserve) / per-column of them when the
//                    blocks do not fit beside the matrices: block CG holds 8 n-vectors a column
//                    (b, x, a 5-block workspace, the dense scratch) and a diagonal; the polynomial
//                    3 more a column (A·z, an iterate, D⁻¹r) and, while it is set up, its Lanczos
//                    probe's basis (up to 12 n-vectors here; fewer when memory is short).
//   fp32 iterations  --precision auto on the GPU: block CG's iterations on fp32 blocks inside fp64
//                    refinement (solvers/block_cg.hpp; the answer is still checked on A's fp64 true
//                    residuals) where A's fp32 step is at hand, for Jacobi or no preconditioner, A
//                    in its own order and at most kCgFp32MaxRhs columns a run. H200
//                    (docs/performance.md): elast3d:64 with 32 right-hand sides 0.150–0.156 s
//                    against 0.193–0.198 s in fp64, lap3d:100 with no preconditioner 0.205 against
//                    0.255 s. TCSOLVE_CG_FP32=0: fp64 only (A/B benchmarks).
#pragma once
#include <cstdint>
#include <string>

#include "solvers/chebyshev_precond.hpp"

namespace tcsolve {

enum class CgPrecond { automatic, none, jacobi, chebyshev };
const char* to_string(CgPrecond p);

struct SolvePlanFacts {
  CgPrecond asked = CgPrecond::automatic;
  AutoPrecondFacts facts;           // for automatic (facts.tight is set from fit_columns here)
  const char* refusal = nullptr;    // the caller's own reason against the polynomial (else nullptr)
  std::int64_t rhs = 0;             // right-hand sides
  std::int64_t fit_columns = 0;     // n-vectors that fit beside the matrices (0: no limit)
};

struct SolvePlan {
  CgPrecond precond = CgPrecond::jacobi;  // none | jacobi | chebyshev
  // automatic: what it chose and why — "jacobi (auto: not the Chebyshev polynomial, for ...)", or
  // " (auto: short rows, ...)" to follow the polynomial's own description; "" when asked.
  std::string note;
  std::int64_t batch = 0;  // right-hand sides per block CG run (all of them when they fit)
};

SolvePlan plan_solve(const SolvePlanFacts& f);

// Whether block CG runs its iterations on fp32 blocks (see above): --precision auto, a device
// whose dense ops have fp32 blocks, no reordering applied, Jacobi or no preconditioner, and a run
// of at most kCgFp32MaxRhs columns.
bool cg_fp32_iterations(const SolvePlan& p, bool precision_auto, bool on_device_fp32, bool reordered);

}  // namespace tcsolve
