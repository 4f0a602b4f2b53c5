// KLU engine (factor/lu_factor.hpp, detail::try_factor_klu): LU of small sparse A whose fill is
// low, the circuit-like matrices where UMFPACK's frontal machinery costs more than the numbers.
// KLU (SuiteSparse) orders by BTF and AMD and factors each diagonal block left-looking
// (Gilbert–Peierls: work ∝ flops, no dense kernels), so it is chosen only where its own
// symbolic estimate of the flops is small; elsewhere UMFPACK (BLAS-3 fronts) is the engine.
// 2-core Xeon, analysis + factorization + one solve, ../shared/matrices/general: olm500 0.14 ms
// against UMFPACK's 0.34, west0479 0.47 against 0.99, adder_dcop_05 1.14 against 3.3.
// As with UMFPACK, A's CSR arrays are read as the CSC form of Aᵀ: A·x = b is KLU's transposed
// solve (klu_l_tsolve), Aᵀ·x = b its plain one.
#include <klu.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "factor/lu_factor.hpp"

namespace tcsolve {

namespace {

static_assert(sizeof(SuiteSparse_long) == sizeof(std::int64_t), "KLU's l interface needs 64-bit longs");

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class KluFactor final : public detail::LuFactorFigures {
 public:
  // Takes the analysis made by try_factor_klu (and its Common, whose settings stay).
  KluFactor(std::int64_t n, std::vector<SuiteSparse_long>& p, std::vector<SuiteSparse_long>& i,
            std::vector<double>& x, klu_l_symbolic* sym, const klu_l_common& c, double analyze_s)
      : LuFactorFigures(n), sym_(sym), c_(c) {
    analyze_s_ = analyze_s;
    const double t0 = now();
    num_ = klu_l_factor(p.data(), i.data(), x.data(), sym_, &c_);
    factor_s_ = now() - t0;
    if (!num_ || c_.status < 0) {
      const long st = static_cast<long>(c_.status);
      release();
      throw Error("KLU: klu_l_factor failed (status " + std::to_string(st) +
                  (st == KLU_OUT_OF_MEMORY ? ", out of memory)" : ")"));
    }
    // A zero pivot: KLU's status says so, or (where the factorization kept going without
    // flagging it: KLU 1.3.8 on a 3 × 3 A with two equal rows) its rcond, min|u_kk|/max|u_kk|, is
    // 0 (or NaN, a pivot's division having left Inf in U).
    singular_ = c_.status == KLU_SINGULAR;
    if (klu_l_rcond(sym_, num_, &c_)) rcond_ = c_.rcond;
    if (!(rcond_ > 0)) singular_ = true, rcond_ = 0.0;
    if (klu_l_flops(sym_, num_, &c_)) flops_ = c_.flops;
    entries_ = static_cast<double>(num_->lnz + num_->unz + num_->nzoff) - static_cast<double>(n_);
    bytes_ = static_cast<double>(c_.mempeak);
  }
  ~KluFactor() override { release(); }
  KluFactor(const KluFactor&) = delete;
  KluFactor& operator=(const KluFactor&) = delete;

  const char* engine_name() const override { return kKluEngineName; }

  // X = A⁻¹·B: B copied into X, solved there in place (KLU's solves take one leading dimension).
  void solve(MvView<const double> b, MvView<double> x, bool transpose) const override {
    TCSOLVE_REQUIRE(b.space == Space::host && x.space == Space::host, "klu solve: host blocks");
    TCSOLVE_REQUIRE(b.rows == n_ && x.rows == n_ && b.cols == x.cols, "klu solve: shapes");
    TCSOLVE_REQUIRE(!singular_, "klu solve: the matrix is singular (zero pivot)");
    if (n_ == 0 || x.cols == 0) return;
    for (std::int64_t j = 0; j < x.cols; ++j)
      std::memcpy(x.col(j), b.col(j), sizeof(double) * static_cast<std::size_t>(n_));
    const SuiteSparse_long ok = transpose ? klu_l_solve(sym_, num_, x.ld, x.cols, x.data, &c_)
                                          : klu_l_tsolve(sym_, num_, x.ld, x.cols, x.data, &c_);
    if (!ok) throw Error("KLU: the solve failed (status " + std::to_string(static_cast<long>(c_.status)) + ")");
  }

 private:
  void release() {
    if (num_) klu_l_free_numeric(&num_, &c_);
    if (sym_) klu_l_free_symbolic(&sym_, &c_);
  }
  klu_l_symbolic* sym_ = nullptr;
  klu_l_numeric* num_ = nullptr;
  mutable klu_l_common c_;  // the solves write their status in it (not for two threads at once)
};

}  // namespace

namespace detail {

std::unique_ptr<LuFactor> try_factor_klu(const Csr<double>& a, double max_flops) {
  const std::int64_t n = a.nrows;
  if (!a.square() || n == 0) return nullptr;
  std::vector<SuiteSparse_long> p(a.row_ptr.begin(), a.row_ptr.end()), i(a.col_idx.begin(), a.col_idx.end());
  std::vector<double> x = a.values;
  klu_l_common c;
  klu_l_defaults(&c);
  c.tol = 0.1;               // threshold partial pivoting, as UMFPACK's unsymmetric default
  // TCSOLVE_KLU_PIVOT_TOL: another threshold (tests: a tiny one forces KLU's diagonal pivots,
  // whose growth the direct solve must catch and give to UMFPACK).
  if (const char* t = std::getenv("TCSOLVE_KLU_PIVOT_TOL"); t && *t) {
    const double v = std::strtod(t, nullptr);
    if (v > 0 && v <= 1) c.tol = v;
  }
  c.halt_if_singular = 0;    // a zero pivot is reported (singular()), not a failure
  const double t0 = now();
  klu_l_symbolic* sym = klu_l_analyze(n, p.data(), i.data(), &c);
  const double analyze_s = now() - t0;
  if (!sym) return nullptr;  // (KLU refused the pattern: UMFPACK decides)
  if (!(sym->est_flops <= max_flops)) {
    klu_l_free_symbolic(&sym, &c);
    return nullptr;
  }
  return std::make_unique<KluFactor>(n, p, i, x, sym, c, analyze_s);
}

}  // namespace detail

}  // namespace tcsolve
