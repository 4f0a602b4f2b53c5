// UMFPACK engine (factor/lu_factor.hpp): LU of Aᵀ, read from A's CSR arrays as a CSC matrix, and
// solves of A·x = b through the transposed system (UMFPACK_At).
#include "factor/lu_factor.hpp"

#include <umfpack.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/interrupt.hpp"
#include "factor/engines.hpp"

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

std::string count_str(double e) { return e >= 1e6 ? format("%.1f M", e / 1e6) : format("%.0f", e); }

class UmfpackFactor final : public LuFactor {
 public:
  UmfpackFactor(std::shared_ptr<const Csc64> c, const FactorOptions& opt) : c_(std::move(c)) {
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
    wi_.resize(static_cast<std::size_t>(c_->n));
    w_.resize(5 * static_cast<std::size_t>(c_->n));
  }
  ~UmfpackFactor() override {
    if (numeric_) umfpack_dl_free_numeric(&numeric_);
  }
  UmfpackFactor(const UmfpackFactor&) = delete;
  UmfpackFactor& operator=(const UmfpackFactor&) = delete;

  std::int64_t n() const override { return c_->n; }
  bool singular() const override { return singular_; }
  double rcond() const override { return rcond_; }
  double factor_entries() const override { return entries_; }
  double factor_flops() const override { return flops_; }
  double factor_bytes() const override { return bytes_; }
  double analyze_seconds() const override { return analyze_s_; }
  double factor_seconds() const override { return factor_s_; }
  std::string describe() const override {
    return format("umfpack LU, %s entries, rcond %.2g%s, analyze %.3f s, factor %.3f s", count_str(entries_).c_str(),
                  rcond_, singular_ ? " (zero pivot)" : "", analyze_s_, factor_s_);
  }

  void solve(MvView<const double> b, MvView<double> x, bool transpose, bool refine) const override {
    TCSOLVE_REQUIRE(b.space == Space::host && x.space == Space::host, "umfpack solve: host blocks");
    TCSOLVE_REQUIRE(b.rows == c_->n && x.rows == c_->n && b.cols == x.cols, "umfpack solve: shapes");
    TCSOLVE_REQUIRE(!singular_, "umfpack solve: the matrix is singular (zero pivot)");
    // The factored matrix is Aᵀ: A·x = b is its transposed system.
    const SuiteSparse_long sys = transpose ? UMFPACK_A : UMFPACK_At;
    double control[UMFPACK_CONTROL];
    std::copy(control_, control_ + UMFPACK_CONTROL, control);
    control[UMFPACK_IRSTEP] = refine ? 2 : 0;
    double info[UMFPACK_INFO];
    for (std::int64_t j = 0; j < b.cols; ++j) {
      const SuiteSparse_long st = umfpack_dl_wsolve(sys, c_->p.data(), c_->i.data(), c_->x.data(), x.col(j),
                                                    b.col(j), numeric_, control, info, wi_.data(), w_.data());
      if (st != UMFPACK_OK && st != UMFPACK_WARNING_singular_matrix)
        throw Error("UMFPACK: umfpack_dl_wsolve failed (" + umfpack_status(st) + ")");
    }
  }

 private:
  std::shared_ptr<const Csc64> c_;
  void* numeric_ = nullptr;
  double control_[UMFPACK_CONTROL];
  double info_[UMFPACK_INFO];
  bool singular_ = false;
  double rcond_ = 0, entries_ = 0, flops_ = 0, bytes_ = 0, analyze_s_ = 0, factor_s_ = 0;
  mutable std::vector<SuiteSparse_long> wi_;
  mutable std::vector<double> w_;
};

}  // namespace

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
  auto c = csc_of_transpose(a);
  const std::string phase = "the LU factorization (UMFPACK) of A (n = " + std::to_string(a.nrows) + ")";
  detail::configure_engine_threads();
  return run_interruptible(phase, run_inline_small(a.nrows, a.nnz()), [c, opt]() -> std::unique_ptr<LuFactor> {
    detail::configure_engine_threads();
    return std::make_unique<UmfpackFactor>(c, opt);
  });
}

bool built_with_lu_qr() { return true; }

}  // namespace tcsolve
