// The CPU SparseOperator (spmm/cpu_operator.hpp).
#include "spmm/cpu_operator.hpp"

#include <chrono>

#include "core/error.hpp"
#include "spmm/cpu_csr_kernels.hpp"

namespace tcsolve::detail {

namespace {

// CPU operator: Y = A·X by the CPU CSR kernels (spmm/cpu_csr_kernels.hpp: X staged row-major,
// rows in parts over the host threads). fp32 storage keeps A's values rounded to float
// (arithmetic stays double).
class CpuSparseOperator final : public SparseOperator {
 public:
  CpuSparseOperator(Csr<double>&& a, const SpmmPlan& plan)
      : a_(round_values(std::move(a), plan.precision)), plan_(plan), kern_(a_) {}
  std::int64_t rows() const override { return a_.nrows; }
  std::int64_t cols() const override { return a_.ncols; }
  Space space() const override { return Space::host; }
  const SpmmPlan& plan() const override { return plan_; }
  SpmmPlan& mutable_plan() override { return plan_; }
  const Csr<double>* host_csr() const override { return plan_.precision == Precision::fp64 ? &a_ : nullptr; }
  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.space == Space::host && y.space == Space::host,
                    "CPU sparse operator needs host X and Y");
    TCSOLVE_REQUIRE(x.rows == a_.ncols && y.rows == a_.nrows && x.cols == y.cols,
                    "sparse operator: shapes of X and Y do not match A");
    kern_.spmm(x, y);
  }

 private:
  static Csr<double> round_values(Csr<double>&& a, Precision p) {
    if (p == Precision::fp32)
      for (double& v : a.values) v = static_cast<double>(static_cast<float>(v));
    return std::move(a);
  }
  Csr<double> a_;
  SpmmPlan plan_;
  CpuCsrKernels kern_;  // on a_ (declared after it)
};

}  // namespace

std::unique_ptr<SparseOperator> make_cpu_operator(Csr<double>&& a, const OperatorOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  SpmmPlan p = plan_spmm(a, Backend::cpu, opt);
  p.setup.plan_s = p.setup.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::make_unique<CpuSparseOperator>(std::move(a), p);
}

}  // namespace tcsolve::detail
