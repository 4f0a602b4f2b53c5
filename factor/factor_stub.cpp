// Build without CHOLMOD/MUMPS: every entry of factor/sparse_factor.hpp throws NotCompiled.
#include "factor/sparse_factor.hpp"

namespace tcsolve {

namespace {
[[noreturn]] void no_factor() {
  throw NotCompiled(
      "tcsolve was built without a sparse direct solver (CHOLMOD and MUMPS): no shift-invert "
      "and no certified counts (install libsuitesparse-dev and libmumps-seq-dev, rebuild)");
}
}  // namespace

bool built_with_factor() { return false; }

EngineThreadsScope::EngineThreadsScope() = default;
EngineThreadsScope::~EngineThreadsScope() = default;
std::unique_ptr<SparseFactor> factor_shifted(const Csr<double>&, const Csr<double>*, double,
                                             const FactorOptions&) {
  no_factor();
}
Inertia inertia_at(const Csr<double>&, const Csr<double>*, double, const FactorOptions&) {
  no_factor();
}
SymbolicAnalysis analyze_factor(const Csr<double>&, const Csr<double>*) { no_factor(); }
void require_positive_definite(const Csr<double>&, const std::string&) { no_factor(); }

}  // namespace tcsolve
