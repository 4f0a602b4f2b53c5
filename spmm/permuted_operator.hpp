// Internal: the common part of the OperatorBasis::permuted operators (B = P·A·Pᵀ): the CPU one
// (sparse_operator.cpp) and the CUDA one (cuda_operator.cu). `inner` applies B (built on the
// permuted copy of A); the result forwards apply() and converts blocks between the bases by
// permuting their rows in the backend's memory. `plan` is reported as its plan().
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::detail {

class PermutedOperator : public SparseOperator {
 public:
  PermutedOperator(std::unique_ptr<SparseOperator> inner, std::vector<std::int32_t> perm,
                   const SpmmPlan& plan, Space space)
      : inner_(std::move(inner)), perm_(std::move(perm)), plan_(plan), space_(space) {}
  std::int64_t rows() const override { return inner_->rows(); }
  std::int64_t cols() const override { return inner_->cols(); }
  Space space() const override { return space_; }
  const SpmmPlan& plan() const override { return plan_; }
  const std::vector<std::int32_t>* permutation() const override { return &perm_; }
  void apply(MvView<const double> x, MvView<double> y) const override { inner_->apply(x, y); }
  void to_permuted(MvView<const double> x, MvView<double> xt) const override { move(x, xt, false); }
  void from_permuted(MvView<const double> xt, MvView<double> x) const override { move(xt, x, true); }

 protected:
  SpmmPlan& mutable_plan() override { return plan_; }
  // out[i] = in[p[i]] (scatter false) or out[p[i]] = in[i] (true); the blocks are checked.
  virtual void permute_rows(MvView<const double> in, MvView<double> out, bool scatter) const = 0;

  std::unique_ptr<SparseOperator> inner_;
  std::vector<std::int32_t> perm_;

 private:
  void move(MvView<const double> in, MvView<double> out, bool scatter) const {
    TCSOLVE_REQUIRE(in.space == space_ && out.space == space_,
                    std::string("permuted basis: ") + (space_ == Space::host ? "host" : "device") +
                        " blocks expected");
    TCSOLVE_REQUIRE(in.rows == rows() && out.rows == rows() && in.cols == out.cols,
                    "permuted basis: blocks must have rows() rows and equal column counts");
    permute_rows(in, out, scatter);
  }
  SpmmPlan plan_;
  Space space_;
};

}  // namespace tcsolve::detail
