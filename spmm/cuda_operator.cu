// CUDA SparseOperator: A uploaded once in the planned format; apply() launches on the plan's
// stream with no allocation and no synchronisation.
#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "spmm/bcsr_spmm_cuda.hpp"
#include "spmm/csr_spmm_cuda.hpp"
#include "spmm/cuda_operator.hpp"

namespace tcsolve::detail {

namespace {

class CudaSparseOperator final : public SparseOperator {
 public:
  CudaSparseOperator(const Csr<double>& a, const Bcsr<double>* blocks, const SpmmPlan& plan,
                     const OperatorOptions& opt)
      : plan_(plan), rows_(a.nrows), cols_(a.ncols), stream_(opt.stream) {
    switch (plan.kernel) {
      case SpmmKernel::csr_row:
      case SpmmKernel::csr_segment:
        csr_ = std::make_unique<CsrSpmmDevice>(a, plan.precision, plan.csr_group,
                                               plan.stage_x ? plan.expected_cols : 0);
        break;
      case SpmmKernel::bcsr_dmma:
      case SpmmKernel::bcsr_mma_f16:
      case SpmmKernel::bcsr_mma_bf16: {
        TCSOLVE_REQUIRE(blocks != nullptr, "BCSR kernel planned without blocks");
        bcsr_ = std::make_unique<BcsrSpmmDevice>(
            *blocks, plan.precision,
            plan.stage_x && plan.precision == Precision::fp64 ? plan.expected_cols : 0);
        if (plan.precision != Precision::fp64) {
          // X is rounded to 16 bits into this workspace, `chunk_` columns at a time.
          chunk_ = std::clamp(((std::max(1, opt.expected_cols) + 7) / 8) * 8, 8, 256);
          ldl_ = cols_ + (cols_ & 1);  // even: lets the kernel read pairs of rows as 32 bits
          xlow_ = DeviceArray<std::uint16_t>(static_cast<std::size_t>(ldl_) * chunk_);
        }
        break;
      }
      default:
        throw InvalidArgument(std::string("CUDA operator cannot run kernel ") +
                              to_string(plan.kernel));
    }
  }

  std::int64_t rows() const override { return rows_; }
  std::int64_t cols() const override { return cols_; }
  Space space() const override { return Space::device; }
  const SpmmPlan& plan() const override { return plan_; }

  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.space == Space::device && y.space == Space::device,
                    "CUDA sparse operator needs device X and Y");
    TCSOLVE_REQUIRE(x.rows == cols_ && y.rows == rows_ && x.cols == y.cols,
                    "sparse operator: shapes of X and Y do not match A");
    TCSOLVE_REQUIRE(x.cols >= 1, "sparse operator: k >= 1 columns");
    TCSOLVE_REQUIRE(x.cols < (std::int64_t(1) << 31), "sparse operator: too many columns");
    const int k = static_cast<int>(x.cols);
    if (csr_) {
      csr_->apply(x.data, x.ld, y.data, y.ld, k, stream_);
    } else if (plan_.precision == Precision::fp64) {
      bcsr_->apply(x.data, x.ld, y.data, y.ld, k, stream_);
    } else {
      for (int c0 = 0; c0 < k; c0 += chunk_) {
        const int kc = std::min(chunk_, k - c0);
        convert_multivector_device(x.data + c0 * x.ld, x.ld, xlow_.get(), ldl_, cols_, kc,
                                   plan_.precision, stream_);
        bcsr_->apply_lowp(xlow_.get(), ldl_, y.data + c0 * y.ld, y.ld, kc, stream_);
      }
    }
  }

 private:
  SpmmPlan plan_;
  std::int64_t rows_, cols_;
  void* stream_;
  std::unique_ptr<CsrSpmmDevice> csr_;
  std::unique_ptr<BcsrSpmmDevice> bcsr_;
  int chunk_ = 0;
  std::int64_t ldl_ = 0;
  DeviceArray<std::uint16_t> xlow_;
};

}  // namespace

std::unique_ptr<SparseOperator> make_cuda_operator(const Csr<double>& a, const Bcsr<double>* blocks,
                                                   const SpmmPlan& plan,
                                                   const OperatorOptions& opt) {
  return std::make_unique<CudaSparseOperator>(a, blocks, plan, opt);
}

}  // namespace tcsolve::detail
