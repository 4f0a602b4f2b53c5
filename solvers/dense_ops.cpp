// CPU backend of DenseBlockOps on Eigen (blocks are mapped, never copied; GEMM shapes on OpenBLAS
// where found, blas_gemm below), plus the backend factory. The CUDA twin is dense_ops.cu. The
// parts (queue(), small(), cg(), chebyshev()) are dense/queue.cpp, dense/small_dense.cpp,
// cg/cg_kernels.cpp and chebyshev/chebyshev_kernels.cpp.
#include "solvers/dense_ops.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "solvers/dense/cpu_dense.hpp"
#include "solvers/random.hpp"
#ifdef TCSOLVE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace tcsolve {

namespace {

using cpu_dense::CMatMap;
using cpu_dense::map;
using cpu_dense::MatMap;
using cpu_dense::Stride;

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
bool blas_gemm_here(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
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
  cblas_dgemm(CblasColMajor, trans_a ? CblasTrans : CblasNoTrans, CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
  return true;
#else
  (void)trans_a, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
  (void)beta, (void)c, (void)ldc;
  return false;
#endif
}

// On the calling thread only, as Eigen ran: OpenBLAS's pool is the engines' (CHOLMOD, MUMPS:
// capped at 4). Its threads wait spinning after a call; woken by these products they took CPUs
// from the host pool and the engines (H200 host, bcsstk21: every phase ~30 % slower). The count
// is the process's (NO_AFFINITY builds: an assignment); another thread's BLAS call meanwhile
// may run on one thread too.
bool blas_gemm(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
               const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
               double* c, std::int64_t ldc) {
  cpu_dense::OneBlasThread one;
  return blas_gemm_here(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void require_host(MvView<const double> v) {
  TCSOLVE_REQUIRE(v.space == Space::host, "CPU dense ops need host blocks");
}

class CpuDenseOps final : public DenseBlockOps {
 public:
  CpuDenseOps()
      : DenseBlockOps(Backend::cpu, nullptr),
        queue_impl_(cpu_dense::make_queue(*this)),
        small_impl_(cpu_dense::make_small_dense()),
        cg_impl_(cpu_dense::make_cg_kernels(*this, scratch_)),
        chebyshev_impl_(cpu_dense::make_chebyshev_kernels(*this)) {
    set_parts(*queue_impl_, *small_impl_, *cg_impl_, *chebyshev_impl_);
  }

  void reserve(std::int64_t rows, std::int64_t cols, std::int64_t) override {
    if (static_cast<std::int64_t>(scratch_.size()) < rows * cols) scratch_.resize(rows * cols);
  }

  void gram(MvView<const double> x, MvView<const double> y, double* g, std::int64_t ldg) override {
    require_host(x);
    require_host(y);
    TCSOLVE_REQUIRE(x.rows == y.rows, "gram: row counts differ");
    MatMap gm(g, x.cols, y.cols, Stride(ldg));
    if (cpu_dense::parted_gram(1.0, x, y, 0.0, g, ldg, partial_)) return;
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
    if (cpu_dense::parted_gemm(alpha, x, c, ldc, beta, y)) return;
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
    if (cpu_dense::row_part_count(x.rows) >= 2) {
      // Each part's rows of X·M into the scratch, then back into X (rows of other parts untouched).
      double* t = scratch_.data();
      cpu_dense::for_row_parts(x.rows, [&](std::int64_t, std::int64_t b, std::int64_t e) {
        cpu_dense::gemm_here(false, e - b, r, x.cols, 1.0, x.data + b, x.ld, m, ldm, 0.0, t + b, x.rows);
        for (std::int64_t j = 0; j < r; ++j) std::copy(t + b + j * x.rows, t + e + j * x.rows, x.col(j) + b);
      });
      return;
    }
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
    cpu_dense::gather_host(x, idx, count, y);
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
  void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                 MvView<double> g) override {
    require_host(x);
    require_host(y);
    TCSOLVE_REQUIRE(x.rows == y.rows && g.rows == x.cols && g.cols == y.cols, "gram_into: shapes");
    auto gm = map(g);
    if (cpu_dense::parted_gram(alpha, x, y, beta, g.data, g.ld, partial_)) return;
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

 private:
  std::vector<double> scratch_;
  std::vector<double> partial_;  // the parted Grams' partial sums (cpu_dense::parted_gram)
  std::unique_ptr<DenseQueue> queue_impl_;
  std::unique_ptr<SmallDense> small_impl_;
  std::unique_ptr<CgKernels> cg_impl_;
  std::unique_ptr<ChebyshevKernels> chebyshev_impl_;
};

}  // namespace

namespace cpu_dense {

OneBlasThread::OneBlasThread(bool active) {
#ifdef TCSOLVE_HAVE_OPENBLAS
  if (!active) return;  // saved_ = 1: nothing to restore
  saved_ = openblas_get_num_threads();
  if (saved_ > 1) openblas_set_num_threads(1);
#else
  (void)active;
#endif
}
OneBlasThread::~OneBlasThread() {
#ifdef TCSOLVE_HAVE_OPENBLAS
  if (saved_ > 1) openblas_set_num_threads(saved_);
#endif
}

void gemm_here(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
               std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (blas_gemm_here(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  MatMap cm(c, m, n, Stride(ldc));
  if (beta == 0.0) cm.setZero();
  else if (beta != 1.0) cm *= beta;
  if (k <= 0) return;
  const CMatMap bm(b, k, n, Stride(ldb));
  if (trans_a) cm.noalias() += alpha * (CMatMap(a, k, m, Stride(lda)).transpose() * bm);
  else cm.noalias() += alpha * (CMatMap(a, m, k, Stride(lda)) * bm);
}

}  // namespace cpu_dense

double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  return detail::random_entry(seed, i, j);
}

std::unique_ptr<DenseBlockOps> make_cpu_dense_ops() { return std::make_unique<CpuDenseOps>(); }

void warm_up(DenseBlockOps& ops, std::int64_t width) {
  // GPU only, once per device and width: the set-up it triggers is the device context's (a batch's
  // later jobs paid ~2.5 ms each for the handles of another pass; a batch's worker per GPU warms
  // its own: the kernels load per context).
  if (ops.backend() != Backend::cuda) return;
  static std::mutex mu;
  static std::vector<std::pair<int, std::int64_t>> done;  // (device, width)
  const int dev = current_device();
  std::lock_guard<std::mutex> lock(mu);
  // (At 24 columns the 8-column pass's GEMM kernel served: a wider pass only above that, whose
  // workspace would otherwise count against a tight memory cap for nothing.)
  for (std::int64_t c : {std::int64_t(8), std::clamp<std::int64_t>(width, 1, 64)}) {
    if ((c != 8 && c <= 24) || std::find(done.begin(), done.end(), std::make_pair(dev, c)) != done.end()) continue;
    done.emplace_back(dev, c);
    constexpr std::int64_t n = 256;
    MultiVector<double> x = ops.allocate(n, c), y = ops.allocate(n, c), g = ops.allocate(c, c),
                        w = ops.allocate(c, 1), nrm = ops.allocate(c, 1);
    ops.fill_random(x.view(), 1);
    ops.normalize_columns(x.view(), nrm.view());
    ops.copy(x.view(), y.view());
    ops.gram_into(1.0, x.view(), y.view(), 0.0, g.view());
    ops.gemm_into(-1.0, x.view(), g.view(), 1.0, y.view());
    ops.gram_into(1.0, y.view(), y.view(), 0.0, g.view());
    ops.small().eigh_small(g.view(), w.view());
    ops.synchronize();
  }
}

std::unique_ptr<DenseBlockOps> make_dense_ops(Backend backend) {
  return backend == Backend::cuda ? make_cuda_dense_ops() : make_cpu_dense_ops();
}

}  // namespace tcsolve
