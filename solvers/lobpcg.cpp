// lobpcg(): the entry point of solvers/eigensolvers.hpp; the iteration is detail::Lobpcg
// (solvers/lobpcg/lobpcg.hpp).
#include "solvers/eigensolvers.hpp"
#include "solvers/lobpcg/lobpcg.hpp"

namespace tcsolve {

EigenResult lobpcg(const LinearOperator<double>& a, const LinearOperator<double>* b,
                   DenseBlockOps& ops, const EigenOptions& opt) {
  detail::Lobpcg solver(a, b, ops, opt);
  return solver.run();
}

}  // namespace tcsolve
