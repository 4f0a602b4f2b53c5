// Pseudo-block restarted GMRES(m) (Saad & Schultz 1986) for A·X = B, A any square matrix,
// s right-hand sides: s independent Arnoldi processes that share each product A·V (one SpMM of
// s columns instead of s SpMVs), every per-column scalar kept in the dense ops' space. See
// gmres.cpp for the orthogonalization, the restarts, the passes per iteration and why pseudo-block, not block.
#pragma once
#include <cstdint>
#include <memory>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/krylov/krylov_options.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

class BlockGmres {
 public:
  // Workspace for up to max_rhs columns, allocated here (none inside the iteration).
  BlockGmres(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs, KrylovOptions opt);
  ~BlockGmres();
  BlockGmres(const BlockGmres&) = delete;
  BlockGmres& operator=(const BlockGmres&) = delete;
  // rhs and x (n × s, s ≤ max_rhs) in ops.space(); x is the initial guess when use_x0, else
  // zeroed. Fills everything of the result but `solutions`.
  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0 = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Host convenience (as block_cg): rhs n × s (ldb), solutions returned on the host.
SolveResult gmres(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb, std::int64_t s,
                  DenseBlockOps& ops, const KrylovOptions& opt, const double* x0 = nullptr);

}  // namespace tcsolve
