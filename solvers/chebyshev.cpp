// Chebyshev-filtered subspace iteration (see chebyshev.hpp for the algorithm, the memory and the
// traffic budget): the block width, the a priori cost, and the entry, which runs the class of
// named steps in solvers/chebyshev/subspace_iteration.hpp.
#include "solvers/chebyshev.hpp"

#include <algorithm>
#include <cmath>

#include "solvers/chebyshev/subspace_iteration.hpp"

namespace tcsolve {

std::int64_t chebyshev_block(std::int64_t n, std::int64_t k, std::int64_t guard,
                             const ChebyshevOptions& copt) {
  std::int64_t m = copt.block;
  if (m <= 0) {
    const std::int64_t g = guard >= 0 ? guard : std::max<std::int64_t>(8, (k + 1) / 2);
    m = k + g;
    if (guard < 0) m = (m + 7) / 8 * 8;
  }
  m = std::min(m, n / 2);
  return m;
}

ChebyshevCost chebyshev_cost(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                             double rel_gap, const ChebyshevOptions& copt, std::int64_t guard,
                             double calibration) {
  ChebyshevCost c;
  c.block = chebyshev_block(n, k, guard, copt);
  const double m = static_cast<double>(c.block);
  // Damped interval [λ_{m+1}, λmax] of relative width ≈ 1 − rel_gap: t_k = −1 − 2·gap/width.
  const double g = std::clamp(rel_gap, 1e-12, 0.5);
  const double tk = 1.0 + 2.0 * g / (1.0 - g);
  const double lnrho = std::acosh(tk);
  c.total_degree = std::log(4.0 / std::max(tol, 1e-16)) / lnrho;
  const double filt_cols = calibration * (m - k + 0.6 * k) * c.total_degree;
  c.outer_iterations = std::ceil(c.total_degree / std::max(copt.max_degree, 2)) + 2;
  c.column_applies = filt_cols + c.outer_iterations * m + k + copt.lanczos_steps;
  const double a_bytes = 12.0 * nnz + 8.0 * (n + 1);
  // Applies: A once per apply (degree steps × outer iterations), 16 bytes per row and column.
  const double applies = c.total_degree + 2 * c.outer_iterations;
  const double dense_per_outer = 8.0 * n * (4.0 * m + 8.0 * m + 8.0 * m);  // ortho + RR words
  c.bytes = applies * a_bytes + filt_cols * 8.0 * n * 6.0 + c.outer_iterations * dense_per_outer;
  return c;
}

EigenResult chebyshev_subspace(const LinearOperator<double>& a, DenseBlockOps& ops,
                               const EigenOptions& opt, const ChebyshevOptions& copt) {
  chebyshev::SubspaceIteration solver(a, ops, opt, copt);
  return solver.run();
}

}  // namespace tcsolve
