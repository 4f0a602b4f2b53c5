// CPU backend of DenseBlockOps on Eigen (blocks are mapped, never copied; GEMM shapes on OpenBLAS
// where found, blas_gemm below), plus the backend factory. The CUDA twin is dense_ops.cu.
#include "solvers/dense_ops.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "solvers/random.hpp"
#ifdef TCSOLVE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace tcsolve {

namespace {

using Stride = Eigen::OuterStride<>;
using MatMap = Eigen::Map<Eigen::MatrixXd, 0, Stride>;
using CMatMap = Eigen::Map<const Eigen::MatrixXd, 0, Stride>;

MatMap map(MvView<double> v) { return MatMap(v.data, v.rows, v.cols, Stride(v.ld)); }
CMatMap map(MvView<const double> v) { return CMatMap(v.data, v.rows, v.cols, Stride(v.ld)); }

// Skinny products (a tall block against 2–3 columns: the re-checks' blocks of 2, their
// projections, the deflation of a block of 2 against the found vectors) as one GEMV a column:
// Eigen's GEMM packs the tall operand for each call, which cost 2.3–2.8× the GEMVs for the Gram
// matrix at 2 columns and ~2× for the update (2-core CPU, n = 1138–100,000 rows against 10 or 24
// columns; 1.5× and 1.0–1.2× at 4 columns; the same at 1, where Eigen takes the GEMV itself).
constexpr std::int64_t kSkinnyCols = 3;

// GEMM-shaped products (both operands wider than kSkinnyCols) on OpenBLAS where the build found
// it, one thread: its kernels are chosen at run time for the CPU (AVX2/AVX-512), while Eigen here
// is compiled for baseline x86-64 (SSE2). 2-core CPU (bench/dense/eigen_vs_openblas.cpp): the
// restart's n × 23 · 23 × 17 rewrite 2.0–2.1× faster at n = 1,138–200,000, the update against 23
// columns 1.9–2.0×, the Gram 1.4–1.5×. TCSOLVE_DENSE_BLAS=0 keeps Eigen (A/B).
// C (m × n, ldc) = alpha·op(A)·B + beta·C with op(A) = Aᵀ (A k × m) or A (m × k); false where
// OpenBLAS is not used (the caller then runs Eigen): skinny products (the block op(A)'s columns
// or C's at most kSkinnyCols: the GEMV paths), no OpenBLAS, or arguments BLAS would refuse.
bool blas_gemm(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
               const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
               double* c, std::int64_t ldc) {
#ifdef TCSOLVE_HAVE_OPENBLAS
  static const bool on = [] {
    const char* e = std::getenv("TCSOLVE_DENSE_BLAS");
    return !(e && std::string(e) == "0");
  }();
  // BLAS's own argument rules (leading dimensions at least max(1, rows)) and 32-bit sizes;
  // anything else, empty products included, stays on Eigen.
  constexpr std::int64_t kMax = std::numeric_limits<blasint>::max();
  const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  if (!on || a_cols <= kSkinnyCols || n <= kSkinnyCols || m <= 0 || k <= 0 || m > kMax || n > kMax || k > kMax ||
      lda < std::max<std::int64_t>(1, a_rows) || ldb < std::max<std::int64_t>(1, k) ||
      ldc < std::max<std::int64_t>(1, m) || lda > kMax || ldb > kMax || ldc > kMax)
    return false;
  // On the calling thread only, as Eigen ran: OpenBLAS's pool is the engines' (CHOLMOD, MUMPS:
  // capped at 4). Its threads wait spinning after a call; woken by these products they took CPUs
  // from the host pool and the engines (H200 host, bcsstk21: every phase ~30 % slower). The count
  // is the process's (NO_AFFINITY builds: an assignment); another thread's BLAS call meanwhile
  // may run on one thread too.
  const int threads = openblas_get_num_threads();
  if (threads > 1) openblas_set_num_threads(1);
  cblas_dgemm(CblasColMajor, trans_a ? CblasTrans : CblasNoTrans, CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
  if (threads > 1) openblas_set_num_threads(threads);
  return true;
#else
  (void)trans_a, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
  (void)beta, (void)c, (void)ldc;
  return false;
#endif
}

void require_host(MvView<const double> v) {
  TCSOLVE_REQUIRE(v.space == Space::host, "CPU dense ops need host blocks");
}

// Y[:, j] = X[:, idx[j]], j < count (fp64 and fp32 blocks).
template <class T>
void gather_host(MvView<const T> x, const std::int64_t* idx, std::int64_t count, MvView<T> y) {
  TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
  for (std::int64_t j = 0; j < count; ++j) {
    TCSOLVE_REQUIRE(idx[j] >= 0 && idx[j] < x.cols, "gather: index out of range");
    std::copy(x.col(idx[j]), x.col(idx[j]) + x.rows, y.col(j));
  }
}

class CpuDenseOps final : public DenseBlockOps {
 public:
  Space space() const override { return Space::host; }
  Backend backend() const override { return Backend::cpu; }
  void* stream() const override { return nullptr; }

  void reserve(std::int64_t rows, std::int64_t cols, std::int64_t) override {
    if (static_cast<std::int64_t>(scratch_.size()) < rows * cols) scratch_.resize(rows * cols);
  }

  void gram(MvView<const double> x, MvView<const double> y, double* g, std::int64_t ldg) override {
    require_host(x);
    require_host(y);
    TCSOLVE_REQUIRE(x.rows == y.rows, "gram: row counts differ");
    MatMap gm(g, x.cols, y.cols, Stride(ldg));
    if (y.cols <= kSkinnyCols) {  // a GEMV a column (skinny_products below)
      for (std::int64_t j = 0; j < y.cols; ++j) gm.col(j).noalias() = map(x).transpose() * map(y).col(j);
    } else if (x.cols <= kSkinnyCols) {
      for (std::int64_t i = 0; i < x.cols; ++i)
        gm.row(i).noalias() = (map(y).transpose() * map(x).col(i)).transpose();
    } else if (!blas_gemm(true, x.cols, y.cols, x.rows, 1.0, x.data, x.ld, y.data, y.ld, 0.0, g, ldg)) {
      gm.noalias() = map(x).transpose() * map(y);
    }
  }

  void gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc, double beta,
            MvView<double> y) override {
    require_host(x);
    TCSOLVE_REQUIRE(x.rows == y.rows, "gemm: row counts differ");
    CMatMap cm(c, x.cols, y.cols, Stride(ldc));
    auto ym = map(y);
    if (blas_gemm(false, y.rows, y.cols, x.cols, alpha, x.data, x.ld, c, ldc, beta, y.data, y.ld)) return;
    if (beta != 0.0 && beta != 1.0) ym *= beta;
    if (y.cols <= kSkinnyCols) {  // a GEMV a column (skinny_products below)
      for (std::int64_t j = 0; j < y.cols; ++j) {
        if (beta == 0.0) ym.col(j).noalias() = alpha * (map(x) * cm.col(j));
        else ym.col(j).noalias() += alpha * (map(x) * cm.col(j));
      }
    } else if (beta == 0.0) {
      ym.noalias() = alpha * (map(x) * cm);
    } else {
      ym.noalias() += alpha * (map(x) * cm);
    }
  }

  void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm, std::int64_t r) override {
    require_host(x);
    TCSOLVE_REQUIRE(r <= x.cols, "multiply_inplace: r > cols");
    if (static_cast<std::int64_t>(scratch_.size()) < x.rows * r) scratch_.resize(x.rows * r);
    MatMap tmp(scratch_.data(), x.rows, r, Stride(x.rows));
    const CMatMap mm(m, x.cols, r, Stride(ldm));
    if (r <= kSkinnyCols) {
      for (std::int64_t j = 0; j < r; ++j) tmp.col(j).noalias() = map(x) * mm.col(j);
    } else if (!blas_gemm(false, x.rows, r, x.cols, 1.0, x.data, x.ld, m, ldm, 0.0, scratch_.data(), x.rows)) {
      tmp.noalias() = map(x) * mm;
    }
    map(x.columns(0, r)) = tmp;
  }

  void copy(MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    map(y) = map(x);
  }

  void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                      MvView<double> y) override {
    gather_host(x, idx, count, y);
  }

  void axpby_columns(const double* a, MvView<const double> x, const double* b,
                     MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "axpby: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const double* xs = x.col(j);
      double* ys = y.col(j);
      const double aj = a[j], bj = b[j];
      if (bj == 0.0)
        for (std::int64_t i = 0; i < x.rows; ++i) ys[i] = aj * xs[i];
      else
        for (std::int64_t i = 0; i < x.rows; ++i) ys[i] = aj * xs[i] + bj * ys[i];
    }
  }

  void scale_rows(const double* d, MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "scale_rows: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const double* xs = x.col(j);
      double* ys = y.col(j);
      for (std::int64_t i = 0; i < x.rows; ++i) ys[i] = d[i] * xs[i];
    }
  }

  void column_norms(MvView<const double> x, double* out) override {
    for (std::int64_t j = 0; j < x.cols; ++j)
      out[j] = Eigen::Map<const Eigen::VectorXd>(x.col(j), x.rows).norm();
  }

  void column_dots(MvView<const double> x, MvView<const double> y, double* out) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "column_dots: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j)
      out[j] = Eigen::Map<const Eigen::VectorXd>(x.col(j), x.rows)
                   .dot(Eigen::Map<const Eigen::VectorXd>(y.col(j), y.rows));
  }

  void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                     std::int64_t ldg) override {
    gram(x, y, g, ldg);
  }
  void column_dots_deferred(MvView<const double> x, MvView<const double> y,
                            double* out) override {
    column_dots(x, y, out);
  }
  void fetch() override {}

  void fill_random_rows(MvView<double> x, std::uint64_t seed, std::int64_t row0) override {
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i)
        x.col(j)[i] = detail::random_entry(seed, row0 + i, j);
  }

  void fill_zero(MvView<double> x) override { map(x).setZero(); }

  void to_host(MvView<const double> x, double* host, std::int64_t ldh) override {
    MatMap(host, x.rows, x.cols, Stride(ldh)) = map(x);
  }
  void from_host(const double* host, std::int64_t ldh, MvView<double> x) override {
    map(x) = CMatMap(host, x.rows, x.cols, Stride(ldh));
  }
  void synchronize() override {}

  // ---- backend-resident small matrices (host memory here)
  void reserve_small(std::int64_t) override {}

  void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                 MvView<double> g) override {
    require_host(x);
    require_host(y);
    TCSOLVE_REQUIRE(x.rows == y.rows && g.rows == x.cols && g.cols == y.cols, "gram_into: shapes");
    auto gm = map(g);
    if (blas_gemm(true, x.cols, y.cols, x.rows, alpha, x.data, x.ld, y.data, y.ld, beta, g.data, g.ld)) return;
    if (beta != 0.0 && beta != 1.0) gm *= beta;
    if (y.cols <= kSkinnyCols) {  // a GEMV a column (skinny_products below)
      for (std::int64_t j = 0; j < y.cols; ++j) {
        if (beta == 0.0) gm.col(j).noalias() = alpha * (map(x).transpose() * map(y).col(j));
        else gm.col(j).noalias() += alpha * (map(x).transpose() * map(y).col(j));
      }
    } else if (beta == 0.0) {
      gm.noalias() = alpha * (map(x).transpose() * map(y));
    } else {
      gm.noalias() += alpha * (map(x).transpose() * map(y));
    }
  }

  void gemm_into(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                 MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && c.rows == x.cols && c.cols == y.cols, "gemm_into: shapes");
    gemm(alpha, x, c.data, c.ld, beta, y);
  }

  void axpbypcz(double a, MvView<const double> x, double b, MvView<const double> y, double c,
                MvView<double> z) override {
    TCSOLVE_REQUIRE(x.rows == z.rows && y.rows == z.rows && x.cols == z.cols && y.cols == z.cols,
                    "axpbypcz: shapes differ");
    for (std::int64_t j = 0; j < z.cols; ++j) {
      const double* xs = x.col(j);
      const double* ys = y.col(j);
      double* zs = z.col(j);
      if (c == 0.0)
        for (std::int64_t i = 0; i < z.rows; ++i) zs[i] = a * xs[i] + b * ys[i];
      else
        for (std::int64_t i = 0; i < z.rows; ++i) zs[i] = a * xs[i] + b * ys[i] + c * zs[i];
    }
  }

  void residual_norms_into(MvView<const double> ax, MvView<const double> x,
                           MvView<const double> theta, double s, MvView<double> out) override {
    residual_sq_norms_into(ax, x, theta, s, out);
    sqrt_elements({out.data, x.cols, 1, x.cols, Space::host});
  }
  void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                              MvView<const double> theta, double s, MvView<double> out) override {
    TCSOLVE_REQUIRE(ax.rows == x.rows && ax.cols == x.cols && theta.rows >= x.cols &&
                        out.rows >= x.cols,
                    "residual_norms_into: shapes");
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const double t = s * theta.data[j];
      double acc = 0.0;
      const double* a = ax.col(j);
      const double* xs = x.col(j);
      for (std::int64_t i = 0; i < x.rows; ++i) {
        double d = a[i] - t * xs[i];
        acc += d * d;
      }
      out.data[j] = acc;
    }
  }
  void sqrt_elements(MvView<double> v) override {
    for (std::int64_t i = 0; i < v.rows; ++i) v.data[i] = std::sqrt(std::max(v.data[i], 0.0));
  }
  void scale_columns_inverse(MvView<const double> d, MvView<double> x) override {
    TCSOLVE_REQUIRE(d.rows >= x.cols, "scale_columns_inverse: d too short");
    for (std::int64_t j = 0; j < x.cols; ++j)
      if (d.data[j] > 0.0) Eigen::Map<Eigen::VectorXd>(x.col(j), x.rows) /= d.data[j];
  }

  void column_dots_into(MvView<const double> x, MvView<const double> y,
                        MvView<double> out) override {
    TCSOLVE_REQUIRE(out.rows >= x.cols, "column_dots_into: out too short");
    column_dots(x, y, out.data);
  }

  void normalize_columns(MvView<double> x, MvView<double> norms) override {
    TCSOLVE_REQUIRE(norms.rows >= x.cols, "normalize_columns: norms too short");
    column_norms(x, norms.data);
    for (std::int64_t j = 0; j < x.cols; ++j)
      if (norms.data[j] > 0.0) Eigen::Map<Eigen::VectorXd>(x.col(j), x.rows) /= norms.data[j];
  }

  void eigh_small(MvView<double> a, MvView<double> w) override {
    TCSOLVE_REQUIRE(a.rows == a.cols && w.rows >= a.rows, "eigh_small: shapes");
    if (a.rows == 0) return;
    Eigen::MatrixXd h = map(a);
    es_.compute(h);  // lower triangle
    if (es_.info() != Eigen::Success) throw Error("eigh_small: eigensolver did not converge");
    map(a) = es_.eigenvectors();
    Eigen::Map<Eigen::VectorXd>(w.data, a.rows) = es_.eigenvalues();
  }

  void pip_factor(MvView<const double> g, std::int64_t l, MvView<double> m,
                  MvView<double> status) override {
    const std::int64_t w = g.cols;
    TCSOLVE_REQUIRE(g.rows == l + w && m.rows == l + w && m.cols == w && status.rows >= 2,
                    "pip_factor: shapes");
    auto gm = map(g);
    Eigen::MatrixXd gyy = gm.bottomRows(w);
    Eigen::MatrixXd sm = gyy;
    if (l > 0) sm.noalias() -= gm.topRows(l).transpose() * gm.topRows(l);
    sm = 0.5 * (sm + sm.transpose()).eval();
    bool ok = true;
    Eigen::VectorXd d(w);
    for (std::int64_t i = 0; i < w; ++i) {
      const double di = sm(i, i);
      if (!(di > 1e-8 * gyy(i, i)) || !(di > 1e-300) || !std::isfinite(di)) ok = false;
      d(i) = ok ? 1.0 / std::sqrt(di) : 1.0;
    }
    double piv = 0.0;
    Eigen::MatrixXd t;
    if (ok) {
      Eigen::LLT<Eigen::MatrixXd> llt(d.asDiagonal() * sm * d.asDiagonal());
      ok = llt.info() == Eigen::Success;
      if (ok) {
        piv = llt.matrixLLT().diagonal().minCoeff();
        piv *= piv;
        ok = piv >= 1e-12 && std::isfinite(piv);
      }
      if (ok) {
        // T = D·Lc⁻ᵀ.
        t = llt.matrixU().solve(Eigen::MatrixXd::Identity(w, w));
        t = d.asDiagonal() * t;
      }
    }
    auto mm = map(m);
    if (ok) {
      if (l > 0) mm.topRows(l).noalias() = -(gm.topRows(l) * t);
      mm.bottomRows(w) = t;
    } else {
      if (l > 0) mm.topRows(l) = -gm.topRows(l);
      mm.bottomRows(w).setIdentity();
    }
    status.data[0] = ok ? 0.0 : 1.0;
    status.data[1] = ok ? piv : 0.0;
  }

  void spd_factor(MvView<const double> g, MvView<double> f, MvView<double> status,
                  double piv_tol) override {
    const std::int64_t r = g.rows;
    TCSOLVE_REQUIRE(g.cols == r && f.rows == r && f.cols == r + 1 && status.rows >= 1,
                    "spd_factor: shapes");
    auto gm = map(g);
    Eigen::MatrixXd p = 0.5 * (gm + gm.transpose());
    int st = 0;
    Eigen::VectorXd d(r);
    for (std::int64_t i = 0; i < r; ++i) {
      if (!(p(i, i) > 0.0) || !std::isfinite(p(i, i))) st = 2;
      d(i) = st == 0 ? 1.0 / std::sqrt(p(i, i)) : 1.0;
    }
    auto fm = map(f);
    fm.setZero();
    if (st == 0) {
      Eigen::LLT<Eigen::MatrixXd> llt(d.asDiagonal() * p * d.asDiagonal());
      if (llt.info() != Eigen::Success) st = 2;
      else {
        double piv = llt.matrixLLT().diagonal().minCoeff();
        if (!(piv > 0.0) || !std::isfinite(piv)) st = 2;
        else if (piv * piv < piv_tol) st = 1;
        fm.leftCols(r).triangularView<Eigen::Lower>() = llt.matrixL();
      }
    }
    fm.col(r) = d;
    status.data[0] = st;
  }

  void spd_solve(MvView<const double> f, MvView<const double> b, double sign,
                 MvView<const double> status, MvView<double> out) override {
    const std::int64_t r = f.rows;
    TCSOLVE_REQUIRE(f.cols == r + 1 && b.rows == r && out.rows == r && out.cols == b.cols,
                    "spd_solve: shapes");
    auto om = map(out);
    if (status.data[0] == 2.0) {
      om.setZero();
      return;
    }
    auto fm = map(f);
    Eigen::VectorXd d = fm.col(r);
    Eigen::MatrixXd lc = fm.leftCols(r);
    Eigen::MatrixXd v = sign * (d.asDiagonal() * map(b));
    lc.triangularView<Eigen::Lower>().solveInPlace(v);
    lc.triangularView<Eigen::Lower>().transpose().solveInPlace(v);
    om = d.asDiagonal() * v;
  }

  void cg_residual_update(MvView<const double> q, MvView<const double> alpha, MvView<double> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    auto rm = map(r);
    if (q.cols > 0) rm.noalias() -= map(q) * map(alpha);
    auto gm = map(g);
    if (q.cols > 0) gm.topRows(q.cols).noalias() = map(q).transpose() * rm;
    gm.bottomRows(r.cols).noalias() = rm.transpose() * rm;
  }

  void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                 const double* d, MvView<double> r, MvView<double> z,
                                 MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    auto rm = map(r);
    if (q.cols > 0) rm.noalias() -= map(q) * map(alpha);
    auto zm = map(z);
    zm = Eigen::Map<const Eigen::VectorXd>(d, r.rows).asDiagonal() * rm;
    auto gm = map(g);
    if (q.cols > 0) gm.topRows(q.cols).noalias() = map(q).transpose() * zm;
    gm.middleRows(q.cols, r.cols).noalias() = rm.transpose() * zm;
    gm.row(q.cols + r.cols) = rm.colwise().squaredNorm();
  }

  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const double> z, MvView<double> p, MvView<double> x) override {
    const std::int64_t qn = alpha.rows, rn = z.cols;
    detail::check_cg_direction(alpha, beta, z, p, x);
    if (static_cast<std::int64_t>(scratch_.size()) < p.rows * rn) scratch_.resize(p.rows * rn);
    MatMap tmp(scratch_.data(), p.rows, rn, Stride(p.rows));
    MvView<const double> pq = p.columns(0, qn);
    tmp.noalias() = map(pq) * map(beta);
    map(x).noalias() += map(pq) * map(alpha);
    map(p.columns(0, rn)) = map(z) + tmp;
  }

  void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) override {
    to_host(src, host, ldh);
  }
  std::uint64_t fetch_async() override { return ++ticket_; }
  void fetch_wait(std::uint64_t) override {}
  bool pin_host(void*, std::size_t) override { return false; }
  void unpin_host(void*) override {}
  void external_begin() override {}
  void external_end() override {}
  int mark() override {
    const int id = next_mark_;
    marks_[id] = std::chrono::duration<double>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count();
    next_mark_ = (next_mark_ + 1) % static_cast<int>(marks_.size());
    return id;
  }
  double elapsed_seconds(int from, int to) override { return marks_[to] - marks_[from]; }

  // ---- fp32 blocks: each pass on fp64 copies of its fp32 blocks (exact), through the fp64 pass
  // above, the written blocks rounded back once. The reference for the CUDA kernels (which keep
  // the copies in registers); its workspace (up to three n × s fp64 blocks) grows once.
  bool fp32_blocks() const override { return true; }
  void gram_into(double alpha, MvView<const float> x, MvView<const float> y, double beta,
                 MvView<double> g) override {
    auto xd = widen(0, x), yd = widen(1, y);
    gram_into(alpha, xd, yd, beta, g);
  }
  // R −= Q·α is rounded to fp32 once; Z, G and the norms are those of R as stored (as in the
  // CUDA kernel).
  void cg_residual_update(MvView<const float> q, MvView<const double> alpha, MvView<float> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    auto qd = widen(0, q), rd = widen(1, r);
    if (q.cols > 0) map(rd).noalias() -= map(qd) * map(alpha);
    narrow(rd, r);
    rd = widen(1, r);
    auto gm = map(g);
    if (q.cols > 0) gm.topRows(q.cols).noalias() = map(qd).transpose() * map(rd);
    gm.bottomRows(r.cols).noalias() = map(rd).transpose() * map(rd);
  }
  void cg_residual_update_jacobi(MvView<const float> q, MvView<const double> alpha, const double* d,
                                 MvView<float> r, MvView<float> z, MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    auto qd = widen(0, q), rd = widen(1, r);
    if (q.cols > 0) map(rd).noalias() -= map(qd) * map(alpha);
    narrow(rd, r);
    rd = widen(1, r);
    auto zd = widen(2, z);
    map(zd) = Eigen::Map<const Eigen::VectorXd>(d, r.rows).asDiagonal() * map(rd);
    auto gm = map(g);
    if (q.cols > 0) gm.topRows(q.cols).noalias() = map(qd).transpose() * map(zd);
    gm.middleRows(q.cols, r.cols).noalias() = map(rd).transpose() * map(zd);
    gm.row(q.cols + r.cols) = map(rd).colwise().squaredNorm();
    narrow(zd, z);
  }
  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const float> z, MvView<float> p, MvView<float> x) override {
    auto zd = widen(0, z), pd = widen(1, p), xd = widen(2, x);
    cg_direction_update(alpha, beta, zd, pd, xd);
    narrow(pd, p);
    narrow(xd, x);
  }
  void copy(MvView<const float> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j) std::copy(x.col(j), x.col(j) + x.rows, y.col(j));
  }
  void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                      MvView<float> y) override {
    gather_host(x, idx, count, y);
  }
  void fill_zero(MvView<float> x) override {
    for (std::int64_t j = 0; j < x.cols; ++j) std::fill(x.col(j), x.col(j) + x.rows, 0.0f);
  }
  void convert(MvView<const double> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "convert: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) y.col(j)[i] = static_cast<float>(x.col(j)[i]);
  }
  void add_converted(MvView<const float> x, MvView<double> y, double alpha) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "add_converted: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) y.col(j)[i] += alpha * static_cast<double>(x.col(j)[i]);
  }

 private:
  // fp64 copy k (0..2) of an fp32 block (ld = rows), and the rounding back.
  MvView<double> widen(int k, MvView<const float> v) {
    auto& w = wide_[k];
    const std::size_t need = static_cast<std::size_t>(v.rows) * static_cast<std::size_t>(v.cols);
    if (w.size() < need) w.resize(need);
    MvView<double> out{w.data(), v.rows, v.cols, v.rows, Space::host};
    for (std::int64_t j = 0; j < v.cols; ++j)
      for (std::int64_t i = 0; i < v.rows; ++i) out.col(j)[i] = v.col(j)[i];
    return out;
  }
  static void narrow(MvView<const double> x, MvView<float> y) {
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) y.col(j)[i] = static_cast<float>(x.col(j)[i]);
  }
  std::vector<double> wide_[3];
  std::vector<double> scratch_;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es_;
  std::uint64_t ticket_ = 0;
  std::vector<double> marks_ = std::vector<double>(1024, 0.0);
  int next_mark_ = 0;
};

}  // namespace

// ---- fp32 blocks: not supported unless a backend says so.
namespace {
[[noreturn]] void no_fp32_blocks(const char* what) {
  throw InvalidArgument(std::string("dense ops: ") + what + " on fp32 blocks is not supported by this backend");
}
}  // namespace
void DenseBlockOps::gram_into(double, MvView<const float>, MvView<const float>, double, MvView<double>) {
  no_fp32_blocks("gram_into");
}
void DenseBlockOps::cg_residual_update(MvView<const float>, MvView<const double>, MvView<float>,
                                       MvView<double>) {
  no_fp32_blocks("cg_residual_update");
}
void DenseBlockOps::cg_residual_update_jacobi(MvView<const float>, MvView<const double>, const double*,
                                              MvView<float>, MvView<float>, MvView<double>) {
  no_fp32_blocks("cg_residual_update_jacobi");
}
void DenseBlockOps::cg_direction_update(MvView<const double>, MvView<const double>, MvView<const float>,
                                        MvView<float>, MvView<float>) {
  no_fp32_blocks("cg_direction_update");
}
void DenseBlockOps::copy(MvView<const float>, MvView<float>) { no_fp32_blocks("copy"); }
void DenseBlockOps::gather_columns(MvView<const float>, const std::int64_t*, std::int64_t, MvView<float>) {
  no_fp32_blocks("gather_columns");
}
void DenseBlockOps::fill_zero(MvView<float>) { no_fp32_blocks("fill_zero"); }
void DenseBlockOps::convert(MvView<const double>, MvView<float>) { no_fp32_blocks("convert"); }
void DenseBlockOps::add_converted(MvView<const float>, MvView<double>, double) {
  no_fp32_blocks("add_converted");
}

double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  return detail::random_entry(seed, i, j);
}

std::unique_ptr<DenseBlockOps> make_cpu_dense_ops() { return std::make_unique<CpuDenseOps>(); }

void warm_up(DenseBlockOps& ops) {
  // GPU only, once per process: the set-up it triggers is the process's (a batch's later jobs
  // paid ~2.5 ms each for the handles of another pass).
  static std::atomic<bool> done{false};
  if (ops.backend() != Backend::cuda || done.exchange(true)) return;
  constexpr std::int64_t n = 256, c = 8;
  MultiVector<double> x = ops.allocate(n, c), y = ops.allocate(n, c), g = ops.allocate(c, c),
                      w = ops.allocate(c, 1), nrm = ops.allocate(c, 1);
  ops.fill_random(x.view(), 1);
  ops.normalize_columns(x.view(), nrm.view());
  ops.copy(x.view(), y.view());
  ops.gram_into(1.0, x.view(), y.view(), 0.0, g.view());
  ops.gemm_into(-1.0, x.view(), g.view(), 1.0, y.view());
  ops.gram_into(1.0, y.view(), y.view(), 0.0, g.view());
  ops.eigh_small(g.view(), w.view());
  ops.synchronize();
}

std::unique_ptr<DenseBlockOps> make_dense_ops(Backend backend) {
  return backend == Backend::cuda ? make_cuda_dense_ops() : make_cpu_dense_ops();
}

}  // namespace tcsolve
