// Implicit centering for PCA: the operator A − 1·μᵀ (μ the column means of A, 1 the m-vector of
// ones) and its transpose Aᵀ − μ·1ᵀ, applied without forming the dense centered matrix.
//
//   Y = (A − 1·μᵀ)·X  = A·X − 1·(μᵀ·X)       X n × q, Y m × q
//   Y = (Aᵀ − μ·1ᵀ)·X = Aᵀ·X − μ·(1ᵀ·X)      X m × q, Y n × q
// One apply of the wrapped sparse operator plus a 1 × q Gram and a rank-one update (one more
// read of X and a read-write of Y), in chunks of at most max_cols columns (the 1 × max_cols
// backend workspace is allocated at construction; apply() allocates nothing).
// Rounding: the subtraction loses u·√m·‖μ‖·‖X‖ to cancellation; residuals of the centered
// problem are measured with these same operators, so a mean far larger than the centered
// spread (√m·‖μ‖ ≫ σ₁) shows as a residual floor.
#pragma once
#include <cstdint>
#include <vector>

#include "core/csr.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve {

class CenteredOperator : public LinearOperator<double> {
 public:
  // a: A (m × n) when !transposed, Aᵀ (n × m) when transposed; mu: the n column means of A.
  // The wrapped operator and ops must outlive this one; a's space must be ops.space().
  CenteredOperator(const LinearOperator<double>& a, bool transposed, const std::vector<double>& mu,
                   DenseBlockOps& ops, std::int64_t max_cols);
  std::int64_t rows() const override { return a_.rows(); }
  std::int64_t cols() const override { return a_.cols(); }
  Space space() const override { return a_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override;

 private:
  const LinearOperator<double>& a_;
  const bool transposed_;
  DenseBlockOps& ops_;
  std::int64_t max_cols_;
  MultiVector<double> mu_, ones_;  // n × 1 and m × 1 in the backend's space
  mutable MultiVector<double> g_;  // 1 × max_cols
};

// μ_j = (1/m)·Σ_i a_ij (host; rows summed in chunks fixed by A's shape, in parallel: the same
// sums whatever the thread count).
std::vector<double> column_means(const Csr<double>& a);
// ‖A − 1·μᵀ‖_F² = Σ_j [Σ_{i: a_ij stored} (a_ij − μ_j)² + (m − nnz_j)·μ_j²] from A's rows (per
// column sums, as column_means), without the cancellation of ‖A‖_F² − m·‖μ‖².
double centered_frobenius_sq(const Csr<double>& a, const std::vector<double>& mu);
// Its per-column terms Σ_i (a_ij − μ_j)² (n), summed in the same fixed order.
std::vector<double> centered_column_sq(const Csr<double>& a, const std::vector<double>& mu);
// Unit-variance scaling (SvdOptions::scale): s_j = √(column_sq_j/(m − 1)), the column's standard
// deviation (ddof 1), and 1 for a constant column (as sklearn's StandardScaler). A·diag(1/s) as a
// copy of A with each stored a_ij divided by s_j (its pattern unchanged; the means become μ_j/s_j).
std::vector<double> column_scales(const std::vector<double>& column_sq, std::int64_t m);
Csr<double> scale_columns(const Csr<double>& a, const std::vector<double>& s);

}  // namespace tcsolve
