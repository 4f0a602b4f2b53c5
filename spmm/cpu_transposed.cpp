// Aᵀ·X on the host from A's rows, by parts into per-part sums (spmm/cpu_transposed.hpp).
#include "spmm/cpu_transposed.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "spmm/cpu_csr_kernels.hpp"

namespace tcsolve::detail {

namespace {

constexpr double kMaxBlockBytes = 64.0 * 1024 * 1024;  // all P blocks at the expected width

class CpuTransposedOperator final : public SparseOperator {
 public:
  CpuTransposedOperator(const Csr<double>& a, int parts, const SpmmPlan& plan)
      : a_(a), plan_(plan), bounds_(balanced_row_parts(a.row_ptr, parts)) {}
  std::int64_t rows() const override { return a_.ncols; }
  std::int64_t cols() const override { return a_.nrows; }
  Space space() const override { return Space::host; }
  const SpmmPlan& plan() const override { return plan_; }
  SpmmPlan& mutable_plan() override { return plan_; }

  // Y (n × k) = Aᵀ·X (X: m × k), n, m A's columns and rows.
  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.space == Space::host && y.space == Space::host,
                    "CPU transposed operator needs host X and Y");
    TCSOLVE_REQUIRE(x.rows == a_.nrows && y.rows == a_.ncols && x.cols == y.cols,
                    "transposed operator: shapes of X and Y do not match A^T");
    const std::int64_t k = x.cols, n = a_.ncols;
    if (k == 0 || n == 0) return;
    const std::int64_t ldk = cpu_staged_width(k);
    const int parts = static_cast<int>(bounds_.size()) - 1;
    std::lock_guard<std::mutex> lock(busy_);
    double* s = sums_.reserve(static_cast<std::size_t>(parts) * static_cast<std::size_t>(n * ldk));
    const std::int64_t* rp = a_.row_ptr.data();
    const std::int32_t* ci = a_.col_idx.data();
    const double* av = a_.values.data();
    parallel_parts(parts, [&](int p) {
      double* sp = s + static_cast<std::size_t>(p) * static_cast<std::size_t>(n * ldk);
      std::memset(sp, 0, sizeof(double) * static_cast<std::size_t>(n * ldk));
      double xr[64];
      for (std::int64_t c0 = 0; c0 < k; c0 += 64) {
        const std::int64_t w = std::min<std::int64_t>(64, k - c0);
        for (std::int64_t i = bounds_[p]; i < bounds_[p + 1]; ++i) {
          for (std::int64_t c = 0; c < w; ++c) xr[c] = x.data[i + (c0 + c) * x.ld];
          for (std::int64_t q = rp[i]; q < rp[i + 1]; ++q) {
            const double v = av[q];
            double* row = sp + static_cast<std::int64_t>(ci[q]) * ldk + c0;
            for (std::int64_t c = 0; c < w; ++c) row[c] += v * xr[c];  // a product, then a sum
          }
        }
      }
    });
    // Y(j, c) = Σ_p S_p(j, c), parts in order; rows of Y in chunks over the threads.
    parallel_for(n, [&](std::int64_t j) {
      for (std::int64_t c = 0; c < k; ++c) {
        double t = 0.0;
        for (int p = 0; p < parts; ++p) t += s[static_cast<std::size_t>(p) * static_cast<std::size_t>(n * ldk) + j * ldk + c];
        y.data[j + c * y.ld] = t;
      }
    }, 2048);
  }

 private:
  const Csr<double>& a_;
  SpmmPlan plan_;
  std::vector<std::int64_t> bounds_;
  mutable std::mutex busy_;
  mutable AlignedBuffer<double> sums_;  // P blocks n × ldk, grown at the first call of a width
};

}  // namespace

int cpu_transposed_parts(std::int64_t nnz) {
  return static_cast<int>(std::clamp<std::int64_t>((nnz + (std::int64_t(1) << 18) - 1) >> 18, 1, 16));
}

std::unique_ptr<SparseOperator> make_cpu_transposed_operator(const Csr<double>& a, const OperatorOptions& opt) {
  if (a.nnz() == 0 || a.nrows == 0 || a.ncols == 0) return nullptr;
  const int parts = cpu_transposed_parts(a.nnz());
  const double k = static_cast<double>(cpu_staged_width(std::max(1, opt.expected_cols)));
  const double bytes = 8.0 * parts * static_cast<double>(a.ncols) * k;
  if (bytes > kMaxBlockBytes) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  SpmmPlan p;
  p.backend = Backend::cpu;
  p.precision = Precision::fp64;
  p.kernel = SpmmKernel::cpu_csr;
  p.expected_cols = std::max(1, opt.expected_cols);
  p.mean_row_nnz = static_cast<double>(a.nnz()) / static_cast<double>(a.ncols);
  p.reason = "A^T applied from A's rows (no transpose formed): " + std::to_string(parts) +
             " parts of A's rows each sum into their own " + std::to_string(a.ncols) + "-row block, " +
             "added in part order";
  auto op = std::make_unique<CpuTransposedOperator>(a, parts, p);
  SpmmPlan& q = PlanAccess::of(*op);
  q.setup.plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return op;
}

}  // namespace tcsolve::detail
