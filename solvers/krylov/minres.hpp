// Pseudo-block MINRES (Paige & Saunders 1975) for A·X = B, A symmetric (indefinite allowed),
// s right-hand sides: s independent MINRES recurrences that share each product A·V (one SpMM of
// s columns instead of s SpMVs), every per-column scalar kept in the dense ops' space. See
// minres.cpp for the recurrence, the passes per iteration and why pseudo-block, not block.
#pragma once
#include <cstdint>
#include <memory>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/krylov/krylov_options.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

class BlockMinres {
 public:
  // Workspace for up to max_rhs columns, allocated here (none inside the iteration).
  BlockMinres(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs, KrylovOptions opt);
  ~BlockMinres();
  BlockMinres(const BlockMinres&) = delete;
  BlockMinres& operator=(const BlockMinres&) = delete;
  // rhs and x (n × s, s ≤ max_rhs) in ops.space(); x is the initial guess when use_x0, else
  // zeroed. Fills everything of the result but `solutions`.
  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0 = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Host convenience (as block_cg): rhs n × s (ldb), solutions returned on the host.
SolveResult minres(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb, std::int64_t s,
                   DenseBlockOps& ops, const KrylovOptions& opt, const double* x0 = nullptr);

}  // namespace tcsolve
