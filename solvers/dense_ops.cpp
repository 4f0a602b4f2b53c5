// CPU backend of DenseBlockOps on Eigen (blocks are mapped, never copied), plus the backend
// factory. The CUDA twin is dense_ops.cu.
#include "solvers/dense_ops.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "solvers/random.hpp"

namespace tcsolve {

namespace {

using Stride = Eigen::OuterStride<>;
using MatMap = Eigen::Map<Eigen::MatrixXd, 0, Stride>;
using CMatMap = Eigen::Map<const Eigen::MatrixXd, 0, Stride>;

MatMap map(MvView<double> v) { return MatMap(v.data, v.rows, v.cols, Stride(v.ld)); }
CMatMap map(MvView<const double> v) { return CMatMap(v.data, v.rows, v.cols, Stride(v.ld)); }

void require_host(MvView<const double> v) {
  TCSOLVE_REQUIRE(v.space == Space::host, "CPU dense ops need host blocks");
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
    MatMap(g, x.cols, y.cols, Stride(ldg)).noalias() = map(x).transpose() * map(y);
  }

  void gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc, double beta,
            MvView<double> y) override {
    require_host(x);
    TCSOLVE_REQUIRE(x.rows == y.rows, "gemm: row counts differ");
    CMatMap cm(c, x.cols, y.cols, Stride(ldc));
    auto ym = map(y);
    if (beta == 0.0) ym.noalias() = alpha * (map(x) * cm);
    else {
      if (beta != 1.0) ym *= beta;
      ym.noalias() += alpha * (map(x) * cm);
    }
  }

  void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm, std::int64_t r) override {
    require_host(x);
    TCSOLVE_REQUIRE(r <= x.cols, "multiply_inplace: r > cols");
    if (static_cast<std::int64_t>(scratch_.size()) < x.rows * r) scratch_.resize(x.rows * r);
    MatMap tmp(scratch_.data(), x.rows, r, Stride(x.rows));
    tmp.noalias() = map(x) * CMatMap(m, x.cols, r, Stride(ldm));
    map(x.columns(0, r)) = tmp;
  }

  void copy(MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    map(y) = map(x);
  }

  void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                      MvView<double> y) override {
    TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
    for (std::int64_t j = 0; j < count; ++j) {
      TCSOLVE_REQUIRE(idx[j] >= 0 && idx[j] < x.cols, "gather: index out of range");
      std::copy(x.col(idx[j]), x.col(idx[j]) + x.rows, y.col(j));
    }
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

  void fill_random(MvView<double> x, std::uint64_t seed) override {
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) x.col(j)[i] = detail::random_entry(seed, i, j);
  }

  void fill_zero(MvView<double> x) override { map(x).setZero(); }

  void to_host(MvView<const double> x, double* host, std::int64_t ldh) override {
    MatMap(host, x.rows, x.cols, Stride(ldh)) = map(x);
  }
  void from_host(const double* host, std::int64_t ldh, MvView<double> x) override {
    map(x) = CMatMap(host, x.rows, x.cols, Stride(ldh));
  }
  void synchronize() override {}

 private:
  std::vector<double> scratch_;
};

}  // namespace

double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  return detail::random_entry(seed, i, j);
}

std::unique_ptr<DenseBlockOps> make_cpu_dense_ops() { return std::make_unique<CpuDenseOps>(); }

std::unique_ptr<DenseBlockOps> make_dense_ops(Backend backend) {
  return backend == Backend::cuda ? make_cuda_dense_ops() : make_cpu_dense_ops();
}

}  // namespace tcsolve
