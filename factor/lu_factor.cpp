// UMFPACK engine (factor/lu_factor.hpp; small low-fill A go to KLU, factor/klu_factor.cpp): LU of Aᵀ, read from A's CSR arrays as a CSC matrix, and
// solves of A·x = b through the transposed system, on a copy of the factors (lu_triangular.hpp).
#include "factor/lu_factor.hpp"

#include <umfpack.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/interrupt.hpp"
#include "factor/engines.hpp"
#include "factor/lu_triangular.hpp"

namespace tcsolve {

namespace {

static_assert(sizeof(SuiteSparse_long) == sizeof(std::int64_t), "UMFPACK's dl interface needs 64-bit longs");

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A's CSR arrays with 64-bit column indices: the CSC form of Aᵀ that UMFPACK reads (n × n).
struct Csc64 {
  std::int64_t n = 0;
  std::vector<SuiteSparse_long> p, i;
  std::vector<double> x;
};
std::shared_ptr<const Csc64> csc_of_transpose(const Csr<double>& a) {
  if (!a.square())
    throw InvalidArgument("umfpack LU: A must be square (it is " + std::to_string(a.nrows) + " x " +
                          std::to_string(a.ncols) + "); a rectangular A needs least squares (spqr)");
  auto c = std::make_shared<Csc64>();
  c->n = a.nrows;
  c->p.assign(a.row_ptr.begin(), a.row_ptr.end());
  c->i.assign(a.col_idx.begin(), a.col_idx.end());
  c->x = a.values;
  return c;
}

std::string umfpack_status(double status) {
  switch (static_cast<int>(status)) {
    case UMFPACK_ERROR_out_of_memory: return "out of memory";
    case UMFPACK_ERROR_invalid_matrix: return "invalid matrix";
    case UMFPACK_ERROR_different_pattern: return "different pattern";
    case UMFPACK_ERROR_internal_error: return "internal error";
    default: return "status " + std::to_string(static_cast<int>(status));
  }
}

// Symbolic analysis (the ordering) of the pattern; throws Error on UMFPACK's failure.
struct Symbolic {
  void* obj = nullptr;
  double info[UMFPACK_INFO];
  double control[UMFPACK_CONTROL];
  Symbolic(const Csc64& c) {
    umfpack_dl_defaults(control);
    control[UMFPACK_PRL] = 0;
    const SuiteSparse_long st =
        umfpack_dl_symbolic(c.n, c.n, c.p.data(), c.i.data(), c.x.data(), &obj, control, info);
    if (st != UMFPACK_OK) throw Error("UMFPACK: umfpack_dl_symbolic failed (" + umfpack_status(st) + ")");
  }
  ~Symbolic() {
    if (obj) umfpack_dl_free_symbolic(&obj);
  }
  Symbolic(const Symbolic&) = delete;
  Symbolic& operator=(const Symbolic&) = delete;
  // UMFPACK's estimates (upper bounds), and the bytes with our 64-bit copy of A.
  LuAnalysis estimate(const Csc64& c) const {
    LuAnalysis e;
    e.factor_entries = info[UMFPACK_LNZ_ESTIMATE] + info[UMFPACK_UNZ_ESTIMATE] - static_cast<double>(c.n);
    e.flops = info[UMFPACK_FLOPS_ESTIMATE];
    e.bytes = info[UMFPACK_PEAK_MEMORY_ESTIMATE] * info[UMFPACK_SIZE_OF_UNIT] + copy_bytes(c);
    return e;
  }
  static double copy_bytes(const Csc64& c) { return 16.0 * static_cast<double>(c.x.size()) + 8.0 * (c.n + 1); }
};

// UMFPACK's factors P·R·M·Q = L·U copied out of the Numeric object (umfpack_dl_get_numeric:
// L by rows and U by columns, each with its diagonal) into LuFactors' form: strictly triangular
// parts by rows with 32-bit columns, U's diagonal apart, R's diagonal as multipliers.
detail::LuFactors extract_factors(void* numeric, std::int64_t n) {
  SuiteSparse_long lnz = 0, unz = 0, nr = 0, nc = 0, nz_udiag = 0;
  SuiteSparse_long st = umfpack_dl_get_lunz(&lnz, &unz, &nr, &nc, &nz_udiag, numeric);
  if (st != UMFPACK_OK) throw Error("UMFPACK: umfpack_dl_get_lunz failed (" + umfpack_status(st) + ")");
  std::vector<SuiteSparse_long> lp(n + 1), lj(lnz), up(n + 1), ui(unz);
  std::vector<double> lx(lnz), ux(unz);
  detail::LuFactors f;
  f.n = n;
  f.p.resize(n), f.q.resize(n), f.u_diag.resize(n), f.r.resize(n);
  SuiteSparse_long recip = 0;
  st = umfpack_dl_get_numeric(lp.data(), lj.data(), lx.data(), up.data(), ui.data(), ux.data(),
                              reinterpret_cast<SuiteSparse_long*>(f.p.data()),
                              reinterpret_cast<SuiteSparse_long*>(f.q.data()), f.u_diag.data(), &recip, f.r.data(),
                              numeric);
  if (st != UMFPACK_OK) throw Error("UMFPACK: umfpack_dl_get_numeric failed (" + umfpack_status(st) + ")");
  if (!recip)
    for (double& r : f.r) r = 1.0 / r;  // UMFPACK divided row i by Rs[i]
  f.set_pivot_reciprocals();
  // L: each row's last entry is its unit diagonal.
  f.lp.assign(n + 1, 0);
  f.lj.reserve(lnz - n), f.lx.reserve(lnz - n);
  for (std::int64_t k = 0; k < n; ++k) {
    for (SuiteSparse_long p = lp[k]; p < lp[k + 1]; ++p)
      if (lj[p] != k) f.lj.push_back(static_cast<std::int32_t>(lj[p])), f.lx.push_back(lx[p]);
    f.lp[k + 1] = static_cast<std::int64_t>(f.lj.size());
  }
  // U by columns (rows ascending within each) to rows, dropping the diagonal: a counting sort
  // by row, columns visited in order, leaves each row's columns ascending.
  f.up.assign(n + 1, 0);
  for (std::int64_t j = 0; j < n; ++j)
    for (SuiteSparse_long p = up[j]; p < up[j + 1]; ++p)
      if (ui[p] != j) ++f.up[ui[p] + 1];
  for (std::int64_t k = 0; k < n; ++k) f.up[k + 1] += f.up[k];
  f.uj.resize(f.up[n]), f.ux.resize(f.up[n]);
  std::vector<std::int64_t> at(f.up.begin(), f.up.end() - 1);
  for (std::int64_t j = 0; j < n; ++j)
    for (SuiteSparse_long p = up[j]; p < up[j + 1]; ++p)
      if (ui[p] != j) f.uj[at[ui[p]]] = static_cast<std::int32_t>(j), f.ux[at[ui[p]]++] = ux[p];
  return f;
}

std::string count_str(double e) { return e >= 1e6 ? format("%.1f M", e / 1e6) : format("%.0f", e); }

class UmfpackFactor final : public detail::LuFactorFigures {
 public:
  UmfpackFactor(std::shared_ptr<const Csc64> c, const FactorOptions& opt)
      : LuFactorFigures(c->n), c_(std::move(c)) {
    double t0 = now();
    Symbolic sym(*c_);
    analyze_s_ = now() - t0;
    const LuAnalysis est = sym.estimate(*c_);
    bytes_ = est.bytes;
    const double limit = detail::factor_memory_limit(opt);
    if (bytes_ > limit)
      throw FactorTooLarge(bytes_, limit, "UMFPACK LU of A (" + count_str(est.factor_entries) + " entries estimated)");
    std::copy(sym.control, sym.control + UMFPACK_CONTROL, control_);
    t0 = now();
    const SuiteSparse_long st = umfpack_dl_numeric(c_->p.data(), c_->i.data(), c_->x.data(), sym.obj,
                                                   &numeric_, control_, info_);
    factor_s_ = now() - t0;
    if (st == UMFPACK_WARNING_singular_matrix) singular_ = true;
    else if (st != UMFPACK_OK) throw Error("UMFPACK: umfpack_dl_numeric failed (" + umfpack_status(st) + ")");
    rcond_ = singular_ ? 0.0 : info_[UMFPACK_RCOND];
    entries_ = info_[UMFPACK_LNZ] + info_[UMFPACK_UNZ] - static_cast<double>(c_->n);
    flops_ = info_[UMFPACK_FLOPS];
    if (info_[UMFPACK_PEAK_MEMORY] > 0)
      bytes_ = info_[UMFPACK_PEAK_MEMORY] * info_[UMFPACK_SIZE_OF_UNIT] + Symbolic::copy_bytes(*c_);
    // The solves run on a copy of the factors (lu_triangular.hpp); UMFPACK's object and the
    // 64-bit copy of A go (n_ stays).
    if (!singular_) {
      f_ = extract_factors(numeric_, n_);
      umfpack_dl_free_numeric(&numeric_);
      w_.resize(static_cast<std::size_t>(n_ * detail::kLuChunk));
    }
    c_.reset();
  }
  ~UmfpackFactor() override {
    if (numeric_) umfpack_dl_free_numeric(&numeric_);
  }
  UmfpackFactor(const UmfpackFactor&) = delete;
  UmfpackFactor& operator=(const UmfpackFactor&) = delete;

  const char* engine_name() const override { return kUmfpackEngineName; }

  // The factored matrix is Aᵀ: A·x = b is its transposed system.
  void solve(MvView<const double> b, MvView<double> x, bool transpose) const override {
    TCSOLVE_REQUIRE(b.space == Space::host && x.space == Space::host, "umfpack solve: host blocks");
    TCSOLVE_REQUIRE(b.rows == n_ && x.rows == n_ && b.cols == x.cols, "umfpack solve: shapes");
    TCSOLVE_REQUIRE(!singular_, "umfpack solve: the matrix is singular (zero pivot)");
    detail::lu_solve(f_, b, x, /*transpose=*/!transpose, w_.data());
  }

 private:
  std::shared_ptr<const Csc64> c_;  // until the factors are copied out
  void* numeric_ = nullptr;
  double control_[UMFPACK_CONTROL];
  double info_[UMFPACK_INFO];
  detail::LuFactors f_;
  mutable std::vector<double> w_;  // n × kLuChunk, the solves' chunk
};

}  // namespace

std::string detail::LuFactorFigures::describe() const {
  return format("%s, %s entries, rcond %.2g%s, analyze %.3f s, factor %.3f s", engine_name(), count_str(entries_).c_str(),
                rcond_, singular_ ? " (zero pivot)" : "", analyze_s_, factor_s_);
}

LuAnalysis analyze_lu(const Csr<double>& a) {
  auto c = csc_of_transpose(a);
  const std::string phase = "the symbolic analysis (UMFPACK) of A (n = " + std::to_string(a.nrows) + ")";
  detail::configure_engine_threads();
  return run_interruptible(phase, run_inline_small(a.nrows, a.nnz()), [c] {
    detail::configure_engine_threads();
    const double t0 = now();
    Symbolic sym(*c);
    LuAnalysis e = sym.estimate(*c);
    e.seconds = now() - t0;
    return e;
  });
}

std::unique_ptr<LuFactor> factor_lu(const Csr<double>& a, const FactorOptions& opt) {
  const std::string phase = "the LU factorization (UMFPACK) of A (n = " + std::to_string(a.nrows) + ")";
  detail::configure_engine_threads();
  const bool small = run_inline_small(a.nrows, a.nnz());
  if (small && opt.engine != FactorEngine::umfpack) {
    // KLU makes its own copy of A's arrays; UMFPACK's only where KLU declines (inline: `a` lives
    // throughout).
    return run_interruptible(phase, true, [&a, opt]() -> std::unique_ptr<LuFactor> {
      detail::configure_engine_threads();
      if (auto k = detail::try_factor_klu(a, kKluMaxFlops)) return k;
      return std::make_unique<UmfpackFactor>(csc_of_transpose(a), opt);
    });
  }
  auto c = csc_of_transpose(a);  // shared: a worker left behind by an interrupt keeps it
  return run_interruptible(phase, small, [c, opt]() -> std::unique_ptr<LuFactor> {
    detail::configure_engine_threads();
    return std::make_unique<UmfpackFactor>(c, opt);
  });
}

bool built_with_lu_qr() { return true; }

}  // namespace tcsolve
