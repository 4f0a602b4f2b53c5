#include "spmm/chebyshev_step.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve {

namespace {

class HostChebyshevStep final : public ChebyshevStep {
 public:
  explicit HostChebyshevStep(const Csr<double>& a) : a_(a) {}
  Space space() const override { return Space::host; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    const std::int64_t n = a_.nrows, s = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && r.rows == n && next.cols == s && r.cols == s,
                    "chebyshev step: block shapes differ");
    parallel_for(n, [&](std::int64_t i) {
      const std::int64_t p0 = a_.row_ptr[i], p1 = a_.row_ptr[i + 1];
      for (std::int64_t j = 0; j < s; ++j) {
        const double* xc = cur.col(j);
        double acc = 0.0;
        for (std::int64_t p = p0; p < p1; ++p) acc += a_.values[p] * xc[a_.col_idx[p]];
        double out = a * (d ? d[i] * acc : acc) + b * xc[i];
        if (e != 0.0) out += e * r.col(j)[i];
        if (c != 0.0) out += c * next.col(j)[i];
        next.col(j)[i] = out;
      }
    }, 1024);
  }
  std::string describe() const override { return "fused CSR step (host)"; }

  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    const std::int64_t n = a_.nrows, q = x.cols;
    TCSOLVE_REQUIRE(ax.rows == n && x.rows == n && r.rows == n && z.rows == n && ax.cols == q &&
                        r.cols == q && z.cols == q,
                    "chebyshev step: block shapes differ");
    parallel_for(n, [&](std::int64_t i) {
      for (std::int64_t j = 0; j < q; ++j) {
        const double v = s * ax.col(j)[i] - theta[j] * x.col(j)[i];
        r.col(j)[i] = static_cast<float>(v);
        z.col(j)[i] = static_cast<float>(g * v);
      }
    }, 4096);
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    const std::int64_t n = a_.nrows, q = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && next.cols == q &&
                        (!f || (r.rows == n && r.cols == q)),
                    "chebyshev step: block shapes differ");
    // fp32 arithmetic, as the CUDA kernel
    const auto fa = static_cast<float>(a), fb = static_cast<float>(b), fc = static_cast<float>(c);
    parallel_for(n, [&](std::int64_t i) {
      const std::int64_t p0 = a_.row_ptr[i], p1 = a_.row_ptr[i + 1];
      for (std::int64_t j = 0; j < q; ++j) {
        const float* xc = cur.col(j);
        float acc = 0.0f;
        for (std::int64_t p = p0; p < p1; ++p)
          acc = std::fma(static_cast<float>(a_.values[p]), xc[a_.col_idx[p]], acc);
        float out = fa * acc + fb * xc[i];
        if (f) out = std::fma(static_cast<float>(f[j]), r.col(j)[i], out);
        if (fc != 0.0f) out = std::fma(fc, next.col(j)[i], out);
        next.col(j)[i] = out;
      }
    }, 1024);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    const std::int64_t n = a_.nrows, s = x.cols;
    TCSOLVE_REQUIRE(x.rows == n && z.rows == n && y.rows == n && z.cols == s && y.cols == s,
                    "chebyshev step: block shapes differ");
    parallel_for(n, [&](std::int64_t i) {
      for (std::int64_t j = 0; j < s; ++j)
        y.col(j)[i] = q[j] * x.col(j)[i] + static_cast<double>(z.col(j)[i]);
    }, 4096);
  }

 private:
  const Csr<double>& a_;  // the caller's matrix (outlives the step)
};

}  // namespace

std::unique_ptr<ChebyshevStep> make_chebyshev_step(const Csr<double>& a, Backend backend,
                                                   Precision storage, void* stream) {
  if (storage != Precision::fp64 && storage != Precision::fp32)
    throw InvalidArgument(std::string("chebyshev step: storage ") + to_string(storage) +
                          " not supported (fp64 or fp32)");
  if (a.nrows != a.ncols) throw InvalidArgument("chebyshev step: A must be square");
  if (backend == Backend::cpu) return std::make_unique<HostChebyshevStep>(a);
  return detail::make_cuda_chebyshev_step(a, storage, stream);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step_on_operator(const LinearOperator<double>& a,
                                                               const Csr<double>& csr,
                                                               Precision storage, void* stream) {
  const auto* so = dynamic_cast<const SparseOperator*>(&a);
  if (!so || so->permutation() || so->rows() != csr.nrows) return nullptr;
  if (storage != Precision::fp64 && storage != Precision::fp32) return nullptr;
  const SparseOperator::DeviceCsr d = so->device_csr();
  if (!d.row_ptr || !d.col_idx || !d.values) return nullptr;
  return storage == Precision::fp64
             ? make_chebyshev_step_view(csr.nrows, d.row_ptr, d.col_idx, d.values, stream)
             : make_chebyshev_step_view32(csr.nrows, csr.nnz(), d.row_ptr, d.col_idx, d.values, stream);
}

}  // namespace tcsolve
