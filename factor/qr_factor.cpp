// SuiteSparseQR engine (factor/qr_factor.hpp): minimum-norm least squares of any shape.
#include "factor/qr_factor.hpp"

#include <SuiteSparseQR.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "factor/cholmod_header.hpp"
#include "factor/engines.hpp"

namespace tcsolve {

namespace {

static_assert(sizeof(SuiteSparse_long) == sizeof(std::int64_t), "SPQR's cholmod_l interface needs 64-bit longs");

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What the worker owns: A's CSR arrays (64-bit indices: the CSC of Aᵀ) and B (m × s, ld m).
struct QrInput {
  std::int64_t m = 0, n = 0, s = 0;
  bool known_singular = false;  // skip the full-rank attempt
  double tol = SPQR_DEFAULT_TOL;  // Heath's column-norm threshold (SPQR_DEFAULT_TOL: 20·(m+n)·ε·max ‖a_j‖)
  std::vector<SuiteSparse_long> p, i;
  std::vector<double> x, b;
};
std::shared_ptr<QrInput> qr_input(const Csr<double>& a) {
  auto in = std::make_shared<QrInput>();
  in->m = a.nrows;
  in->n = a.ncols;
  in->p.assign(a.row_ptr.begin(), a.row_ptr.end());
  in->i.assign(a.col_idx.begin(), a.col_idx.end());
  in->x = a.values;
  return in;
}

// cholmod_common and what is allocated through it (freed before cholmod_l_finish).
struct Spqr {
  cholmod_common c{};
  Spqr() {
    cholmod_l_start(&c);
    c.print = 0;
    c.error_handler = nullptr;
  }
  ~Spqr() { cholmod_l_finish(&c); }
  Spqr(const Spqr&) = delete;
  Spqr& operator=(const Spqr&) = delete;
  [[noreturn]] void fail(const char* call) const {
    throw Error(std::string("SuiteSparseQR: ") + call + " failed (status " + std::to_string(c.status) +
                (c.status == CHOLMOD_OUT_OF_MEMORY ? ", out of memory)" : ")"));
  }
};
struct SparseDel {
  cholmod_common* c;
  void operator()(cholmod_sparse* p) const { cholmod_l_free_sparse(&p, c); }
};
struct DenseDel {
  cholmod_common* c;
  void operator()(cholmod_dense* p) const { cholmod_l_free_dense(&p, c); }
};
struct QrDel {
  cholmod_common* c;
  void operator()(SuiteSparseQR_factorization<double>* p) const { SuiteSparseQR_free<double>(&p, c); }
};
using SparsePtr = std::unique_ptr<cholmod_sparse, SparseDel>;
using DensePtr = std::unique_ptr<cholmod_dense, DenseDel>;
using QrPtr = std::unique_ptr<SuiteSparseQR_factorization<double>, QrDel>;

// Aᵀ (n × m, CSC) over A's CSR arrays, no copy.
cholmod_sparse transpose_header(QrInput& in) {
  return detail::csc_header(in.n, in.m, in.x.size(), in.p.data(), in.i.data(), in.x.data(), 0);
}

cholmod_dense dense_header(double* x, std::int64_t rows, std::int64_t cols) {
  cholmod_dense d{};
  d.nrow = static_cast<std::size_t>(rows);
  d.ncol = static_cast<std::size_t>(cols);
  d.d = static_cast<std::size_t>(rows);
  d.nzmax = d.nrow * d.ncol;
  d.x = x;
  d.xtype = CHOLMOD_REAL;
  d.dtype = CHOLMOD_DOUBLE;
  return d;
}

// The matrix the first QR factors (A when m ≥ n, else Aᵀ), in CSC; A's CSC on request.
struct Operands {
  Spqr& h;
  QrInput& in;
  cholmod_sparse at;
  SparsePtr a_csc{nullptr, SparseDel{&h.c}};
  Operands(Spqr& hh, QrInput& i) : h(hh), in(i), at(transpose_header(i)) {}
  cholmod_sparse* a() {
    if (!a_csc) {
      a_csc.reset(cholmod_l_transpose(&at, 1, &h.c));
      if (!a_csc) h.fail("cholmod_l_transpose");
    }
    return a_csc.get();
  }
  bool tall() const { return in.m >= in.n; }
  cholmod_sparse* first() { return tall() ? a() : &at; }
};

// The symbolic analysis's figures (SPQR's cc statistics after SuiteSparseQR_symbolic).
QrAnalysis symbolic_figures(const Spqr& h, const SuiteSparseQR_factorization<double>& qr, const QrInput& in) {
  QrAnalysis e;
  e.factor_entries = static_cast<double>(h.c.SPQR_istat[0]);
  e.householder_entries = static_cast<double>(h.c.SPQR_istat[1]);
  e.flops = h.c.SPQR_flopcount_bound;
  const double nnz = static_cast<double>(in.x.size());
  e.bytes = 8.0 * static_cast<double>(qr.QRsym->maxstack) + 8.0 * static_cast<double>(qr.QRsym->hisize) +
            8.0 * static_cast<double>(qr.QRsym->rjsize) + 32.0 * nnz + 16.0 * static_cast<double>(in.m + in.n);
  e.of_transpose = in.m < in.n;
  return e;
}

QrPtr analyze(Operands& ops, QrAnalysis* figures) {
  QrPtr qr(SuiteSparseQR_symbolic<double>(SPQR_ORDERING_DEFAULT, /*allow_tol=*/1, ops.first(), &ops.h.c),
           QrDel{&ops.h.c});
  if (!qr || !qr->QRsym) ops.h.fail("SuiteSparseQR_symbolic");
  *figures = symbolic_figures(ops.h, *qr, ops.in);
  return qr;
}

// Owners of what SuiteSparseQR's expert calls return.
struct CodParts {
  Spqr& h;
  std::int64_t e_len;
  DensePtr c{nullptr, DenseDel{&h.c}}, tau{nullptr, DenseDel{&h.c}};
  SparsePtr r{nullptr, SparseDel{&h.c}}, hv{nullptr, SparseDel{&h.c}};
  SuiteSparse_long *e = nullptr, *hpinv = nullptr;
  std::int64_t hpinv_len;
  // e_len: columns of the factored matrix (E's size); hpinv_len: its rows (HPinv's size).
  CodParts(Spqr& hh, std::int64_t cols, std::int64_t rows) : h(hh), e_len(cols), hpinv_len(rows) {}
  ~CodParts() {
    if (e) cholmod_l_free(e_len, sizeof(SuiteSparse_long), e, &h.c);
    if (hpinv) cholmod_l_free(hpinv_len, sizeof(SuiteSparse_long), hpinv, &h.c);
  }
  CodParts(const CodParts&) = delete;
  CodParts& operator=(const CodParts&) = delete;
};

// Column side: A·E ≈ Q_r·R_r (Q-less: C_r = Q_rᵀ·B on the fly), then the minimum-norm y of
// R_r·y = C_r (QR of R_rᵀ, no rank test: R_r has full row rank by construction) and x = E·y.
void column_side(Operands& ops, cholmod_dense* b, QrSolution& out) {
  Spqr& h = ops.h;
  const std::int64_t n = ops.in.n;
  CodParts p(h, n, ops.in.m);
  cholmod_dense* c = nullptr;
  cholmod_sparse* r = nullptr;
  const SuiteSparse_long rank =
      SuiteSparseQR<double>(SPQR_ORDERING_DEFAULT, ops.in.tol, /*econ=*/0, ops.a(), b, &c, &r, &p.e, &h.c);
  p.c.reset(c);
  p.r.reset(r);
  if (rank < 0 || !p.c || !p.r) h.fail("SuiteSparseQR (the rank-revealing QR of A)");
  out.rank = rank;
  out.tol = h.c.SPQR_tol_used;
  out.norm_dropped = h.c.SPQR_norm_E_fro;
  out.flops += h.c.SPQR_flopcount;
  out.route = "complete orthogonal: QR of A, then of R^T";
  if (rank == 0) return;  // A ≈ 0: x = 0
  DensePtr y(SuiteSparseQR_min2norm<double>(SPQR_ORDERING_DEFAULT, SPQR_NO_TOL, p.r.get(), p.c.get(), &h.c),
             DenseDel{&h.c});
  if (!y) h.fail("SuiteSparseQR_min2norm (of R)");
  out.flops += h.c.SPQR_flopcount;
  const auto* yx = static_cast<const double*>(y->x);
  for (std::int64_t j = 0; j < ops.in.s; ++j)
    for (std::int64_t k = 0; k < n; ++k) out.x[(p.e ? p.e[k] : k) + j * n] = yx[k + j * y->d];
}

// Row side: Aᵀ·E ≈ Q_r·R_r (Householder vectors kept), so A ≈ E·R_rᵀ·Q_rᵀ; y = argmin
// ‖R_rᵀ·y − Eᵀ·b‖ (R_rᵀ: m × r, full column rank: QR without rank test) and x = Q_r·y, which
// lies in the retained row space of A: the minimum-norm answer. Heath's test finds dependent
// rows here (a duplicated row of A is a duplicated column of Aᵀ) that the column side can miss.
void row_side(Operands& ops, cholmod_dense* b, QrSolution& out) {
  Spqr& h = ops.h;
  const std::int64_t m = ops.in.m, n = ops.in.n, s = ops.in.s;
  CodParts p(h, m, n);
  cholmod_sparse *r = nullptr, *hv = nullptr;
  cholmod_dense* tau = nullptr;
  const SuiteSparse_long rank =
      SuiteSparseQR<double>(SPQR_ORDERING_DEFAULT, ops.in.tol, /*econ=*/0, /*getCTX=*/0, &ops.at, nullptr,
                            nullptr, nullptr, nullptr, &r, &p.e, &hv, &p.hpinv, &tau, &h.c);
  p.r.reset(r);
  p.hv.reset(hv);
  p.tau.reset(tau);
  if (rank < 0 || !p.r || !p.hv || !p.tau) h.fail("SuiteSparseQR (the rank-revealing QR of A^T)");
  out.rank = rank;
  out.tol = h.c.SPQR_tol_used;
  out.norm_dropped = h.c.SPQR_norm_E_fro;
  out.flops += h.c.SPQR_flopcount;
  out.route = "complete orthogonal: QR of A^T, then of R";
  if (rank == 0) return;
  // Eᵀ·b: row k is b's row E[k].
  std::vector<double> eb(static_cast<std::size_t>(m) * static_cast<std::size_t>(s));
  const auto* bx = static_cast<const double*>(b->x);
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t k = 0; k < m; ++k) eb[k + j * m] = bx[(p.e ? p.e[k] : k) + j * b->d];
  cholmod_dense ebh = dense_header(eb.data(), m, s);
  SparsePtr rt(cholmod_l_transpose(p.r.get(), 1, &h.c), SparseDel{&h.c});
  if (!rt) h.fail("cholmod_l_transpose (of R)");
  DensePtr y(SuiteSparseQR<double>(SPQR_ORDERING_DEFAULT, SPQR_NO_TOL, rt.get(), &ebh, &h.c), DenseDel{&h.c});
  if (!y) h.fail("SuiteSparseQR (R^T y = E^T b)");
  out.flops += h.c.SPQR_flopcount;
  // x = Q·[y; 0] (Q: n × n in Householder form).
  DensePtr ypad(cholmod_l_zeros(static_cast<std::size_t>(n), static_cast<std::size_t>(s), CHOLMOD_REAL, &h.c),
                DenseDel{&h.c});
  if (!ypad) h.fail("cholmod_l_zeros");
  const auto* yx = static_cast<const double*>(y->x);
  auto* px = static_cast<double*>(ypad->x);
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t k = 0; k < rank; ++k) px[k + j * ypad->d] = yx[k + j * y->d];
  DensePtr x(SuiteSparseQR_qmult<double>(SPQR_QX, p.hv.get(), p.tau.get(), p.hpinv, ypad.get(), &h.c),
             DenseDel{&h.c});
  if (!x) h.fail("SuiteSparseQR_qmult (Q y)");
  const auto* xx = static_cast<const double*>(x->x);
  for (std::int64_t j = 0; j < s; ++j) std::copy(xx + j * x->d, xx + j * x->d + n, out.x.begin() + j * n);
}

// Both sides' complete orthogonal decompositions; the one whose rank test dropped more (the lower
// rank) is kept: Heath's test drops only what is within tol of dependent, and misses some.
void complete_orthogonal(Operands& ops, cholmod_dense* b, QrSolution& out) {
  QrSolution row = out;
  row.flops = 0.0;
  column_side(ops, b, out);
  row_side(ops, b, row);
  const double flops = out.flops + row.flops;
  if (row.rank < out.rank) out = std::move(row);
  out.flops = flops;
}

// Full rank: one QR (m ≥ n: x = E·R⁻¹·Qᵀb; m < n: x = Q·R⁻ᵀ·Eᵀb). Returns false when SPQR's
// rank estimate is below min(m, n).
bool full_rank_solve(Operands& ops, QrPtr& qr, cholmod_dense* b, QrSolution& out) {
  Spqr& h = ops.h;
  const std::int64_t m = ops.in.m, n = ops.in.n;
  if (!SuiteSparseQR_numeric<double>(ops.in.tol, ops.first(), qr.get(), &h.c)) h.fail("SuiteSparseQR_numeric");
  out.rank = qr->rank;
  out.tol = h.c.SPQR_tol_used;
  out.flops = h.c.SPQR_flopcount;
  if (qr->rank < std::min(m, n)) return false;
  DensePtr x(nullptr, DenseDel{&h.c});
  if (ops.tall()) {
    DensePtr c(SuiteSparseQR_qmult<double>(SPQR_QTX, qr.get(), b, &h.c), DenseDel{&h.c});
    if (!c) h.fail("SuiteSparseQR_qmult (Q^T B)");
    x.reset(SuiteSparseQR_solve<double>(SPQR_RETX_EQUALS_B, qr.get(), c.get(), &h.c));
    out.route = "QR of A";
  } else {
    DensePtr y(SuiteSparseQR_solve<double>(SPQR_RTX_EQUALS_ETB, qr.get(), b, &h.c), DenseDel{&h.c});
    if (!y) h.fail("SuiteSparseQR_solve (R^T y = E^T b)");
    x.reset(SuiteSparseQR_qmult<double>(SPQR_QX, qr.get(), y.get(), &h.c));
    out.route = "QR of A^T";
  }
  if (!x) h.fail(ops.tall() ? "SuiteSparseQR_solve (R E^T x = Q^T b)" : "SuiteSparseQR_qmult (Q y)");
  const auto* xx = static_cast<const double*>(x->x);
  for (std::int64_t j = 0; j < ops.in.s; ++j)
    std::copy(xx + j * x->d, xx + j * x->d + n, out.x.begin() + j * n);
  return true;
}

QrSolution least_squares_on_worker(QrInput& in, const FactorOptions& opt) {
  const double t0 = now();
  QrSolution out;
  out.x.assign(static_cast<std::size_t>(in.n) * static_cast<std::size_t>(in.s), 0.0);
  if (in.m == 0 || in.n == 0 || in.s == 0 || in.x.empty()) {
    out.route = "none (A has no entries: x = 0)";
    return out;  // A⁺ = 0 (or nothing to solve)
  }
  Spqr h;
  Operands ops(h, in);
  QrAnalysis est;
  QrPtr qr = analyze(ops, &est);
  out.factor_entries = est.factor_entries;
  const double bytes = est.bytes + 16.0 * static_cast<double>(in.m + in.n) * static_cast<double>(in.s);
  const double limit = detail::factor_memory_limit(opt);
  if (bytes > limit) throw FactorTooLarge(bytes, limit, std::string("SuiteSparseQR of ") + (ops.tall() ? "A" : "A^T"));
  cholmod_dense b = dense_header(in.b.data(), in.m, in.s);
  if (in.known_singular || !full_rank_solve(ops, qr, &b, out)) {
    qr.reset();
    complete_orthogonal(ops, &b, out);
  }
  out.seconds = now() - t0;
  return out;
}

}  // namespace

QrAnalysis analyze_qr(const Csr<double>& a) {
  auto in = qr_input(a);
  const std::string phase = "the symbolic analysis (SuiteSparseQR) of A (" + std::to_string(a.nrows) + " x " +
                            std::to_string(a.ncols) + ")";
  detail::configure_engine_threads();
  return run_interruptible(phase, run_inline_small(std::max(a.nrows, a.ncols), a.nnz()), [in] {
    detail::configure_engine_threads();
    QrAnalysis e;
    e.of_transpose = in->m < in->n;
    if (in->m == 0 || in->n == 0 || in->x.empty()) return e;
    const double t0 = now();
    Spqr h;
    Operands ops(h, *in);
    QrPtr qr = analyze(ops, &e);
    e.seconds = now() - t0;
    return e;
  });
}

QrSolution qr_least_squares(const Csr<double>& a, const double* b, std::int64_t ldb, std::int64_t s,
                            const FactorOptions& opt, bool known_singular, double tol) {
  TCSOLVE_REQUIRE(s >= 0 && ldb >= std::max<std::int64_t>(a.nrows, 1) && (s == 0 || b),
                  "qr_least_squares: B must be A.nrows x s with ldb >= A.nrows");
  auto in = qr_input(a);
  in->s = s;
  in->known_singular = known_singular;
  in->tol = tol >= 0.0 ? tol : SPQR_DEFAULT_TOL;
  in->b.resize(static_cast<std::size_t>(a.nrows) * static_cast<std::size_t>(s));
  for (std::int64_t j = 0; j < s; ++j) std::copy(b + j * ldb, b + j * ldb + a.nrows, in->b.begin() + j * a.nrows);
  const std::string phase = "the least-squares QR (SuiteSparseQR) of A (" + std::to_string(a.nrows) + " x " +
                            std::to_string(a.ncols) + ")";
  detail::configure_engine_threads();
  return run_interruptible(phase, run_inline_small(std::max(a.nrows, a.ncols), a.nnz()), [in, opt] {
    detail::configure_engine_threads();
    return least_squares_on_worker(*in, opt);
  });
}

}  // namespace tcsolve
