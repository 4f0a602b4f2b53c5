// Build without UMFPACK / SuiteSparseQR: every entry of factor/lu_factor.hpp and
// factor/qr_factor.hpp throws NotCompiled.
#include "factor/lu_factor.hpp"
#include "factor/qr_factor.hpp"

namespace tcsolve {

namespace {
[[noreturn]] void no_lu_qr() {
  throw NotCompiled(
      "tcsolve was built without UMFPACK and SuiteSparseQR: no direct solve of unsymmetric, "
      "singular or rectangular matrices (install libsuitesparse-dev, rebuild)");
}
}  // namespace

bool built_with_lu_qr() { return false; }
LuAnalysis analyze_lu(const Csr<double>&) { no_lu_qr(); }
std::unique_ptr<LuFactor> factor_lu(const Csr<double>&, const FactorOptions&) { no_lu_qr(); }
QrAnalysis analyze_qr(const Csr<double>&) { no_lu_qr(); }
QrSolution qr_least_squares(const Csr<double>&, const double*, std::int64_t, std::int64_t, const FactorOptions&,
                            bool, double) {
  no_lu_qr();
}

}  // namespace tcsolve
