// CPU backend of ChebyshevKernels (solvers/chebyshev/chebyshev_kernels.hpp): loops on host memory.
// The CUDA twin is chebyshev_kernels.cu.
#include "solvers/dense/cpu_dense.hpp"

namespace tcsolve::cpu_dense {

namespace {

class CpuChebyshevKernels final : public ChebyshevKernels {
 public:
  explicit CpuChebyshevKernels(DenseBlockOps& ops) : ops_(ops) {}

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

  void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                              MvView<const double> theta, double s, MvView<double> out) override {
    check_residual_norms(ax, x, theta, out);
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

 private:
  void sqrt_elements(MvView<double> v) override { ops_.sqrt_elements(v); }
  DenseBlockOps& ops_;
};

}  // namespace

std::unique_ptr<ChebyshevKernels> make_chebyshev_kernels(DenseBlockOps& ops) {
  return std::make_unique<CpuChebyshevKernels>(ops);
}

}  // namespace tcsolve::cpu_dense
