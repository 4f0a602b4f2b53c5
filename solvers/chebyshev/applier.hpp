// Operator applies of the Chebyshev solver (internal): ordered against the dense ops' stream as
// ChebyshevOptions::apply_order says, counted (applies and columns), and, when timing, bracketed
// by stream marks so that apply time is known without synchronizing.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/solver_common.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::chebyshev {

class Applier {
 public:
  Applier(const LinearOperator<double>& a, DenseBlockOps& ops, ApplyOrder order, bool timing)
      : a_(a), ops_(ops), order_(order), timing_(timing) {}
  // Y = A·X (n × p blocks in ops.space()).
  void apply(MvView<const double> x, MvView<double> y) {
    if (x.cols == 0) return;
    int m0 = timing_ ? ops_.queue().mark() : -1;
    detail::apply_ordered(order_, ops_, a_, x, y);
    count(m0, x.cols);
  }
  // Y' = α·A·Y + β·Y + γ·Y' as one fused kernel (counted and timed as an apply).
  void fused(const ChebyshevStep& f, double alpha, MvView<const double> y, double beta,
             double gamma, MvView<double> out) {
    if (y.cols == 0) return;
    int m0 = timing_ ? ops_.queue().mark() : -1;
    f.step(alpha, y, beta, gamma, out, 0.0, y);
    count(m0, y.cols);
  }
  // The same on blocks by rows (ld a multiple of 4): out's columns [j0, j1) (spmm/chebyshev_step.hpp
  // step_rows), counted as `cols` columns.
  void fused_rows(const ChebyshevStep& f, double alpha, const double* y, double beta, double gamma, double* out,
                  std::int64_t ld, std::int64_t j0, std::int64_t j1, std::int64_t cols) {
    if (j1 <= j0) return;
    int m0 = timing_ ? ops_.queue().mark() : -1;
    f.step_rows(alpha, y, beta, gamma, out, ld, j0, j1);
    count(m0, cols);
  }
  // One step of the fp32 rung (spmm/chebyshev_step.hpp step32), counted and timed as an apply.
  void fused32(const ChebyshevStep& f, double alpha, MvView<const float> y, double beta,
               double gamma, MvView<float> out, MvView<const float> r, const double* coef) {
    if (y.cols == 0) return;
    int m0 = timing_ ? ops_.queue().mark() : -1;
    f.step32(alpha, y, beta, gamma, out, r, coef);
    count(m0, y.cols);
  }
  // Seconds spent in the applies marked since the last call (all marks must have completed).
  double take_seconds() {
    double s = 0.0;
    for (auto& p : marks_) s += ops_.queue().elapsed_seconds(p.first, p.second);
    marks_.clear();
    return s;
  }
  std::int64_t columns() const { return columns_; }
  std::int64_t applies() const { return applies_; }
  bool timing() const { return timing_; }

 private:
  void count(int m0, std::int64_t cols) {
    if (timing_) marks_.push_back({m0, ops_.queue().mark()});
    columns_ += cols;
    ++applies_;
  }
  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  ApplyOrder order_;
  bool timing_;
  std::vector<std::pair<int, int>> marks_;
  std::int64_t columns_ = 0, applies_ = 0;
};

}  // namespace tcsolve::chebyshev
