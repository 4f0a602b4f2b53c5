// UMFPACK's LU as the solver of a small indefinite S = A − σB (FactorOptions::lu_solves).
//   why:     MUMPS's solve phase walks the elimination tree front by front; on a 3000-row chain
//            (a 1-D Laplacian shifted into its spectrum) that is 2.5 ms a solve, 106 ms of a
//            0.14 s shift-invert run, where SciPy's SuperLU run takes 0.011 s in all;
//   solves:  eight columns at a time on a copy of the factors, without refinement (as MUMPS's
//            are), O(nnz(L+U)) a chunk (factor/lu_triangular.hpp), of the factored matrix's own
//            system (S is symmetric);
//   inertia: not in an LU with row pivoting: a MUMPS LDLᵀ of S on the first inertia() call
//            (the certificate counts by inertia_at anyway: solvers/eigs/certificate.cpp).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "factor/engines.hpp"
#include "factor/lu_factor.hpp"

namespace tcsolve::detail {
namespace {

// The whole symmetric S in CSR from its lower triangle by columns (row i: column i's entries
// below the diagonal mirrored, then row i of the lower triangle read from the columns ≤ i).
Csr<double> whole_from_lower(const LowerCsc& s) {
  const std::int64_t n = s.n;
  Csr<double> w;
  w.nrows = w.ncols = n;
  w.symmetry = Symmetry::general;
  std::vector<std::int64_t> count(n + 1, 0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = s.col_ptr[j]; p < s.col_ptr[j + 1]; ++p) {
      ++count[s.row_idx[p] + 1];                 // (i, j), i ≥ j: row i
      if (s.row_idx[p] != j) ++count[j + 1];     // (j, i): row j
    }
  for (std::int64_t i = 0; i < n; ++i) count[i + 1] += count[i];
  w.row_ptr = count;
  w.col_idx.resize(count[n]);
  w.values.resize(count[n]);
  std::vector<std::int64_t> at(count.begin(), count.end() - 1);
  // Columns in increasing order fill each row's entries in increasing column order: row i gets
  // (i, j) for j < i from columns j < i, then its own column's (i, i) and (i, r > i) entries.
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = s.col_ptr[j]; p < s.col_ptr[j + 1]; ++p) {
      const std::int64_t i = s.row_idx[p];
      w.col_idx[at[i]] = static_cast<std::int32_t>(j), w.values[at[i]++] = s.values[p];
      if (i != j) w.col_idx[at[j]] = static_cast<std::int32_t>(i), w.values[at[j]++] = s.values[p];
    }
  return w;
}

class ShiftedLu final : public SparseFactor {
 public:
  ShiftedLu(std::shared_ptr<const LowerCsc> s, double sigma, const FactorOptions& opt)
      : s_(std::move(s)), sigma_(sigma), opt_(opt) {
    lu_ = factor_lu(whole_from_lower(*s_), opt_);
    if (lu_->singular()) {
      const double scale = std::max(std::abs(sigma_), 1e-8 * std::max(s_->max_abs, 1.0));
      throw SingularShift(sigma_, sigma_ + 1e-6 * scale, std::string("a zero pivot in ") + lu_->engine_name());
    }
  }
  std::int64_t n() const override { return s_->n; }
  double sigma() const override { return sigma_; }
  FactorEngine engine() const override { return FactorEngine::umfpack; }
  bool positive_definite() const override { return false; }  // (CHOLMOD's LLᵀ failed first)
  Inertia inertia() const override {
    std::call_once(inertia_once_, [this] { inertia_ = mumps_factor(*s_, sigma_, opt_, /*with_solve=*/false)->inertia(); });
    return inertia_;
  }
  double factor_entries() const override { return lu_->factor_entries(); }
  double factor_bytes() const override { return lu_->factor_bytes(); }
  double rcond() const override { return lu_->rcond(); }
  double factor_flops() const override { return lu_->factor_flops(); }
  double analyze_seconds() const override { return lu_->analyze_seconds(); }
  double factor_seconds() const override { return lu_->factor_seconds(); }
  std::string describe() const override { return lu_->describe() + " (the solves of the indefinite A - sigma*B)"; }
  void solve(MvView<const double> rhs, MvView<double> x) const override {
    TCSOLVE_REQUIRE(rhs.space == Space::host && x.space == Space::host, "umfpack solve: host blocks");
    // S = Sᵀ: the factored matrix's own system (LuFactor's transpose), whose triangular solves
    // run as row dot products (the transposed ones as row axpys).
    lu_->solve(rhs, x, /*transpose=*/true);
  }
  const ExportedFactor& export_lower() const override {
    throw InvalidArgument("an UMFPACK LU cannot be exported for GPU solves");
  }

 private:
  std::shared_ptr<const LowerCsc> s_;
  double sigma_;
  FactorOptions opt_;
  std::unique_ptr<LuFactor> lu_;
  mutable std::once_flag inertia_once_;
  mutable Inertia inertia_;
};

}  // namespace

bool use_lu_solves(const FactorOptions& opt, std::int64_t n) {
  if (!opt.lu_solves || opt.engine != FactorEngine::automatic || !built_with_lu_qr()) return false;
  const char* env = std::getenv("TCSOLVE_SHIFT_LU");  // (A/B: 0 never, else at any size)
  if (env && *env) return std::string(env) != "0";
  return n <= kLuSolvesMaxRows;
}

std::unique_ptr<SparseFactor> lu_shifted(std::shared_ptr<const LowerCsc> s, double sigma, const FactorOptions& opt) {
  return std::make_unique<ShiftedLu>(std::move(s), sigma, opt);
}

}  // namespace tcsolve::detail
