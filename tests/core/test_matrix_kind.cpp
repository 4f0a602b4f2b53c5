#include <gtest/gtest.h>

#include "core/matrix_kind.hpp"

namespace tcsolve {
namespace {

Csr<double> from(std::int64_t m, std::int64_t n, std::vector<Triplet<double>> t) {
  return csr_from_triplets<double>(m, n, std::move(t), Symmetry::general);
}

TEST(MatrixKind, SymmetricPositiveDiagonal) {
  const auto f = classify_matrix(from(2, 2, {{0, 0, 2.0}, {0, 1, -1.0}, {1, 0, -1.0}, {1, 1, 2.0}}));
  EXPECT_EQ(f.kind, MatrixKind::symmetric_positive);
  EXPECT_EQ(f.nonpositive_diagonal, 0);
  EXPECT_EQ(f.asymmetry, 0.0);
}

TEST(MatrixKind, ANonPositiveDiagonalEntryProvesIndefinite) {
  // e_1ᵀ A e_1 = 0: not positive definite whatever the rest.
  const auto f = classify_matrix(from(3, 3, {{0, 0, 4.0}, {1, 1, 0.0}, {1, 2, 1.0}, {2, 1, 1.0}, {2, 2, 4.0}}));
  EXPECT_EQ(f.kind, MatrixKind::symmetric_indefinite);
  EXPECT_EQ(f.nonpositive_diagonal, 1);
  EXPECT_EQ(f.empty_rows, 0);  // row 1 holds a_12 = 1
}

TEST(MatrixKind, UnsymmetricBeyondTheTolerance) {
  auto a = from(2, 2, {{0, 0, 1.0}, {0, 1, 1.0}, {1, 0, 1.0 + 1e-6}, {1, 1, 1.0}});
  auto f = classify_matrix(a);
  EXPECT_EQ(f.kind, MatrixKind::unsymmetric);
  EXPECT_NEAR(f.asymmetry, 1e-6 / (1.0 + 1e-6), 1e-15);
  EXPECT_EQ(classify_matrix(a, 1e-5).kind, MatrixKind::symmetric_positive);
  // A generator's word is taken: no symmetry test.
  EXPECT_EQ(classify_matrix(a, 1e-12, true).kind, MatrixKind::symmetric_positive);
  // A structurally unsymmetric pattern.
  EXPECT_EQ(classify_matrix(from(2, 2, {{0, 0, 1.0}, {0, 1, 2.0}, {1, 1, 1.0}})).kind, MatrixKind::unsymmetric);
}

TEST(MatrixKind, RectangularAndEmptyRowsAndColumns) {
  // 3 × 2 with an empty row 1 (an explicit zero does not count) and nothing in column 1.
  auto f = classify_matrix(from(3, 2, {{0, 0, 1.0}, {1, 1, 0.0}, {2, 0, 3.0}}));
  EXPECT_EQ(f.kind, MatrixKind::rectangular);
  EXPECT_EQ(f.empty_rows, 1);
  EXPECT_EQ(f.empty_cols, 1);
  EXPECT_STREQ(to_string(MatrixKind::rectangular), "rectangular");
}

}  // namespace
}  // namespace tcsolve
