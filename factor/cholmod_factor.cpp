// CHOLMOD engine: LLᵀ of a positive definite S = A − σB (64-bit "cholmod_l_" API, so factors
// with more than 2³¹ entries work), supernodal where CHOLMOD's switch says so and the
// factorization has 1e7 flops or more, simplicial below. Ordering: CHOLMOD's default strategy
// (AMD, then METIS when AMD's fill is high; the one with less fill is kept).
//   analyze:  symbolic factorization → entries of L and the supernodal storage, checked against
//             the memory limit before any numeric work;
//   factor:   numeric LLᵀ (BLAS-3 on the supernodes, or up-looking by rows; fails at the first
//             non-positive pivot);
//   solve:    cholmod_l_solve2 with workspace kept between calls (no allocation once warm);
//   export:   a simplicial copy of L (CSC) and the permutation, for GPU triangular solves.
#include <cholmod.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "factor/cholmod_header.hpp"
#include "factor/engines.hpp"

namespace tcsolve::detail {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// cholmod_common plus what is allocated through it; freed by the destructor, also when the
// factor's constructor throws.
struct CholmodHandles {
  cholmod_common c{};
  ::cholmod_factor* l = nullptr;
  cholmod_dense *xw = nullptr, *yw = nullptr, *ew = nullptr;
  // Quiet: failures are read from c.status and reported by the caller.
  CholmodHandles() {
    cholmod_l_start(&c);
    c.print = 0;
    c.error_handler = nullptr;
  }
  ~CholmodHandles() {
    if (xw) cholmod_l_free_dense(&xw, &c);
    if (yw) cholmod_l_free_dense(&yw, &c);
    if (ew) cholmod_l_free_dense(&ew, &c);
    if (l) cholmod_l_free_factor(&l, &c);
    cholmod_l_finish(&c);
  }
  CholmodHandles(const CholmodHandles&) = delete;
  CholmodHandles& operator=(const CholmodHandles&) = delete;
};

// A header over S's lower triangle (sorted, packed) for CHOLMOD's 64-bit API, without a copy of
// the values: cp and ri receive S's column offsets and row indices as SuiteSparse_long and must
// outlive the header.
cholmod_sparse lower_header(const LowerCsc& s, std::vector<SuiteSparse_long>& cp,
                            std::vector<SuiteSparse_long>& ri) {
  cp.assign(s.col_ptr.begin(), s.col_ptr.end());
  ri.assign(s.row_idx.begin(), s.row_idx.end());
  return csc_header(s.n, s.n, s.values.size(), cp.data(), ri.data(),
                    const_cast<double*>(s.values.data()), -1);
}

const char* cholmod_ordering_name(int ordering);

class CholmodFactor final : public SparseFactor {
 public:
  CholmodFactor(const LowerCsc& s, double sigma, const FactorOptions& opt, std::int64_t* minor)
      : n_(s.n), sigma_(sigma), h_(std::make_unique<CholmodHandles>()), c_(h_->c), l_(h_->l),
        xw_(h_->xw), yw_(h_->yw), ew_(h_->ew) {
    cholmod_sparse a = lower_header(s, col_ptr_, row_idx_);
    double t0 = now();
    // Supernodal (BLAS-3 on dense blocks) where CHOLMOD's own switch says the supernodes pay
    // (flops per factor entry ≥ c_.supernodal_switch, 40), unless the whole factorization is
    // below 1e7 flops: there the supernodes are too small for BLAS-3, and the simplicial
    // factorization is faster (2-core CPU, 2026-11-24: bcsstk21, 4.2e6 flops, 22 → 6 ms; dwt_2680
    // 8 → 1 ms). LLᵀ either way (final_ll): a non-positive pivot still fails the factorization.
    c_.supernodal = CHOLMOD_AUTO;
    c_.final_ll = 1;
    const SymbolicAnalysis* given = opt.analysis.get();
    if (given && (!given->perm || static_cast<std::int64_t>(given->perm->size()) != n_))
      throw InvalidArgument("factor: the given analysis is of a matrix with " +
                            std::to_string(given->perm ? given->perm->size() : 0) + " rows, S has " +
                            std::to_string(n_));
    if (given) {
      // The ordering is known: the analysis is the elimination tree and the counts only, and
      // the form is chosen from the given flops up front (one symbolic pass).
      if (given->flops < kSimplicialBelowFlops) c_.supernodal = CHOLMOD_SIMPLICIAL;
      analyze_given(&a, given->perm->data());
      ordering_name_ = given->ordering + " (the plan's)";
    } else {
      l_ = cholmod_l_analyze(&a, &c_);
      const int ordering = c_.selected >= 0 ? c_.method[c_.selected].ordering : -1;
      if (l_ && l_->is_super && c_.fl < kSimplicialBelowFlops) {
        // Simplicial after all: the same permutation again, without ordering twice.
        std::vector<SuiteSparse_long> perm(static_cast<const SuiteSparse_long*>(l_->Perm),
                                           static_cast<const SuiteSparse_long*>(l_->Perm) + n_);
        cholmod_l_free_factor(&l_, &c_);
        c_.supernodal = CHOLMOD_SIMPLICIAL;
        analyze_given(&a, perm.data());
      }
      ordering_name_ = cholmod_ordering_name(ordering);
    }
    if (!l_) fail("cholmod_l_analyze");
    analyze_s_ = now() - t0;
    flops_ = c_.fl;
    // Storage of the numeric factor: supernodal values (xsize doubles) and indices (ssize).
    const double xsize = l_->is_super ? static_cast<double>(l_->xsize) : c_.lnz;
    const double ssize = l_->is_super ? static_cast<double>(l_->ssize) : c_.lnz;
    est_bytes_ = 8.0 * xsize + 8.0 * ssize + 8.0 * 6.0 * static_cast<double>(n_);
    if (opt.exportable) est_bytes_ += 12.0 * c_.lnz;  // the simplicial copy
    const double limit = factor_memory_limit(opt);
    if (est_bytes_ > limit)
      throw FactorTooLarge(est_bytes_, limit, "CHOLMOD LL^T of A - sigma*B (" + entries_str(c_.lnz) + ")");
    t0 = now();
    cholmod_l_factorize(&a, l_, &c_);
    factor_s_ = now() - t0;
    if (c_.status == CHOLMOD_NOT_POSDEF || l_->minor < static_cast<std::size_t>(n_)) {
      *minor = static_cast<std::int64_t>(l_->minor);
      positive_ = false;
      return;
    }
    if (c_.status < CHOLMOD_OK) fail("cholmod_l_factorize");
    positive_ = true;
    entries_ = c_.lnz;
    // Singular to working precision: cholmod_l_rcond = (min L_ii / max L_ii)² = d_min / d_max
    // (the pivots d of LDLᵀ), and for positive definite S, d_min/d_max ≥ 1/κ(S). Below 1e-15,
    // κ(S) > 1e15: S is singular to working precision. (bcsstk20, κ = 3.9e12, passes.)
    const double rc = cholmod_l_rcond(l_, &c_);
    rcond_ = rc;
    if (!(rc > 1e-15)) {
      const double scale = std::max(std::abs(sigma), s.max_abs * 1e-8);
      throw SingularShift(sigma, sigma - 1e-6 * scale,
                          "CHOLMOD's reciprocal condition estimate is " + std::to_string(rc));
    }
    if (opt.exportable) {
      const double te = now();
      export_factor();
      export_s_ = now() - te;
    }
  }

  bool ok() const { return positive_; }

  std::int64_t n() const override { return n_; }
  double sigma() const override { return sigma_; }
  FactorEngine engine() const override { return FactorEngine::cholmod; }
  bool positive_definite() const override { return true; }
  Inertia inertia() const override { return {0, 0, n_}; }
  double factor_entries() const override { return entries_; }
  double factor_bytes() const override { return est_bytes_; }
  double factor_flops() const override { return flops_; }
  double rcond() const override { return rcond_; }
  double analyze_seconds() const override { return analyze_s_; }
  double factor_seconds() const override { return factor_s_; }
  std::string describe() const override {
    char b[200];
    std::snprintf(b, sizeof b, "cholmod LL^T (%s, %s), %s entries, analyze %.3f s, factor %.3f s%s",
                  l_ && l_->is_super ? "supernodal" : "simplicial", ordering_name_.c_str(), entries_str(entries_).c_str(),
                  analyze_s_, factor_s_,
                  exported_.n ? (", export " + std::to_string(export_s_).substr(0, 5) + " s").c_str() : "");
    return b;
  }

  void solve(MvView<const double> rhs, MvView<double> x) const override {
    TCSOLVE_REQUIRE(rhs.space == Space::host && x.space == Space::host, "cholmod solve: host blocks");
    TCSOLVE_REQUIRE(rhs.rows == n_ && x.rows == n_ && rhs.cols == x.cols, "cholmod solve: shapes");
    if (rhs.cols == 0) return;
    cholmod_dense b{};
    b.nrow = static_cast<std::size_t>(n_);
    b.ncol = static_cast<std::size_t>(rhs.cols);
    b.nzmax = b.nrow * b.ncol + static_cast<std::size_t>(rhs.ld - n_) * (b.ncol - 1);
    b.d = static_cast<std::size_t>(rhs.ld);
    b.x = const_cast<double*>(rhs.data);
    b.xtype = CHOLMOD_REAL;
    b.dtype = CHOLMOD_DOUBLE;
    if (!cholmod_l_solve2(CHOLMOD_A, l_, &b, nullptr, &xw_, nullptr, &yw_, &ew_, &c_))
      fail("cholmod_l_solve2");
    const double* xs = static_cast<const double*>(xw_->x);
    for (std::int64_t j = 0; j < rhs.cols; ++j)
      std::copy(xs + j * xw_->d, xs + j * xw_->d + n_, x.col(j));
  }

  const ExportedFactor& export_lower() const override {
    if (exported_.n == 0) throw InvalidArgument("cholmod factor: not exported (FactorOptions::exportable)");
    return exported_;
  }

 private:
  static std::string entries_str(double e) {
    char b[64];
    if (e >= 1e6) std::snprintf(b, sizeof b, "%.1f M", e / 1e6);
    else std::snprintf(b, sizeof b, "%.0f", e);
    return b;
  }
  // cholmod_l_analyze_p with perm (S's rows in elimination order) as the only method; the
  // perm is postordered again (a no-op for a postordered one).
  void analyze_given(cholmod_sparse* a, const std::int64_t* perm) {
    c_.nmethods = 1;
    c_.method[0].ordering = CHOLMOD_GIVEN;
    c_.postorder = 1;
    l_ = cholmod_l_analyze_p(a, const_cast<SuiteSparse_long*>(reinterpret_cast<const SuiteSparse_long*>(perm)),
                             nullptr, 0, &c_);
  }
  [[noreturn]] void fail(const char* call) const {
    const int st = c_.status;
    throw Error(std::string("CHOLMOD: ") + call + " failed (status " + std::to_string(st) +
                (st == CHOLMOD_OUT_OF_MEMORY ? ", out of memory" : "") + ")");
  }
  void export_factor() {
    ::cholmod_factor* lc = cholmod_l_copy_factor(l_, &c_);
    if (!lc) fail("cholmod_l_copy_factor");
    // Simplicial LLᵀ, packed, columns in order (diagonal first in each column).
    if (!cholmod_l_change_factor(CHOLMOD_REAL, /*to_ll=*/1, /*to_super=*/0, /*to_packed=*/1,
                                 /*to_monotonic=*/1, lc, &c_)) {
      cholmod_l_free_factor(&lc, &c_);
      fail("cholmod_l_change_factor");
    }
    const auto* p = static_cast<const std::int64_t*>(lc->p);
    const auto* i = static_cast<const std::int64_t*>(lc->i);
    const auto* x = static_cast<const double*>(lc->x);
    const auto* perm = static_cast<const std::int64_t*>(lc->Perm);
    exported_.n = n_;
    exported_.col_ptr.assign(p, p + n_ + 1);
    const std::int64_t nnz = exported_.col_ptr.back();
    exported_.row_idx.resize(nnz);
    for (std::int64_t k = 0; k < nnz; ++k) exported_.row_idx[k] = static_cast<std::int32_t>(i[k]);
    exported_.values.assign(x, x + nnz);
    exported_.perm.resize(n_);
    for (std::int64_t k = 0; k < n_; ++k)
      exported_.perm[k] = perm ? static_cast<std::int32_t>(perm[k]) : static_cast<std::int32_t>(k);
    cholmod_l_free_factor(&lc, &c_);
  }

  std::int64_t n_;
  double sigma_;
  std::unique_ptr<CholmodHandles> h_;
  cholmod_common& c_;  // the handles' members, by their short names
  ::cholmod_factor*& l_;
  cholmod_dense *&xw_, *&yw_, *&ew_;
  std::vector<SuiteSparse_long> col_ptr_, row_idx_;
  bool positive_ = false;
  double entries_ = 0, est_bytes_ = 0, analyze_s_ = 0, factor_s_ = 0, export_s_ = 0, flops_ = 0, rcond_ = 0;
  std::string ordering_name_;
  ExportedFactor exported_;
};

const char* cholmod_ordering_name(int ordering) {
  switch (ordering) {
    case CHOLMOD_NATURAL: return "natural";
    case CHOLMOD_GIVEN: return "given";
    case CHOLMOD_AMD: return "amd";
    case CHOLMOD_METIS: return "metis";
    case CHOLMOD_NESDIS: return "nesdis";
    case CHOLMOD_COLAMD: return "colamd";
    default: return "?";
  }
}

}  // namespace

SymbolicAnalysis cholmod_symbolic(const LowerCsc& s) {
  CholmodHandles h;
  // Simplicial: the ordering, the elimination tree and the column counts, which give nnz(L), the
  // flops and the permutation: all the plan needs. The factorization analyzes again with this
  // permutation (supernodal where it pays), so the supernodal symbolic pass here was repeated
  // work (2-core CPU, the same lnz and flops: dwt_2680 1.4–1.9 → 1.2 ms, bcsstk10 0.34–0.54 →
  // 0.22 ms, crack's Laplacian 5.1 → 4.3 ms).
  h.c.supernodal = CHOLMOD_SIMPLICIAL;
  std::vector<SuiteSparse_long> cp, ri;
  cholmod_sparse a = lower_header(s, cp, ri);
  // AMD alone (postordered, as in the default strategy's first method).
  h.c.nmethods = 1;
  h.c.method[0].ordering = CHOLMOD_AMD;
  h.c.postorder = 1;
  const double t0 = now();
  h.l = cholmod_l_analyze(&a, &h.c);
  if (!h.l)
    throw Error("CHOLMOD: cholmod_l_analyze failed (status " + std::to_string(h.c.status) + ")");
  SymbolicAnalysis out;
  out.seconds = now() - t0;
  out.factor_entries = h.c.lnz;
  out.flops = h.c.fl;
  out.ordering = h.c.selected >= 0 ? cholmod_ordering_name(h.c.method[h.c.selected].ordering) : "?";
  // CHOLMOD's default strategy (nmethods = 0, cholmod_core.h) tries METIS after AMD unless
  // fl/lnz < 500 or lnz/anz < 5 (anz: entries of the stored triangle).
  const double anz = static_cast<double>(s.values.size());
  out.metis_follows = h.c.lnz > 0 && h.c.fl >= 500.0 * h.c.lnz && h.c.lnz >= 5.0 * anz;
  const auto* p = static_cast<const SuiteSparse_long*>(h.l->Perm);
  out.perm = std::make_shared<const std::vector<std::int64_t>>(p, p + s.n);
  out.n = static_cast<double>(s.n);
  return out;
}

std::unique_ptr<SparseFactor> cholmod_factor(const LowerCsc& s, double sigma,
                                             const FactorOptions& opt, std::int64_t* minor) {
  auto f = std::make_unique<CholmodFactor>(s, sigma, opt, minor);
  if (!f->ok()) return nullptr;
  return f;
}

}  // namespace tcsolve::detail
