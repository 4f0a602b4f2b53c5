#include <gtest/gtest.h>

#include <random>

#include "core/csr.hpp"
#include "core/error.hpp"

using namespace tcsolve;

TEST(Csr, FromTripletsSortsSumsDuplicatesKeepsZeros) {
  std::vector<Triplet<double>> t{{1, 2, 1.0}, {0, 1, 2.0}, {1, 0, 3.0}, {1, 2, 4.0}, {0, 0, 0.0}};
  Csr<double> a = csr_from_triplets<double>(2, 3, t);
  validate(a);
  EXPECT_EQ(a.nnz(), 4);
  EXPECT_EQ(a.row_ptr, (std::vector<std::int64_t>{0, 2, 4}));
  EXPECT_EQ(a.col_idx, (std::vector<std::int32_t>{0, 1, 0, 2}));
  EXPECT_EQ(a.values, (std::vector<double>{0.0, 2.0, 3.0, 5.0}));
}

TEST(Csr, ValidateRejectsUnsortedColumns) {
  Csr<double> a;
  a.nrows = 1;
  a.ncols = 3;
  a.row_ptr = {0, 2};
  a.col_idx = {2, 1};
  a.values = {1, 1};
  EXPECT_THROW(validate(a), InvalidArgument);
}

TEST(Csr, SymmetricPermutationPreservesSymmetryAndSpmm) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Triplet<double>> t;
  const int n = 37;
  for (int k = 0; k < 150; ++k) {
    int i = rng() % n, j = rng() % n;
    double v = u(rng);
    t.push_back({i, j, v});
    t.push_back({j, i, v});
  }
  Csr<double> a = csr_from_triplets<double>(n, n, t);
  EXPECT_TRUE(is_symmetric(a));
  std::vector<std::int32_t> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = (i * 7 + 3) % n;
  Csr<double> b = permute_symmetric(a, perm);
  validate(b);
  EXPECT_TRUE(is_symmetric(b));
  // y = A x ; (P A Pᵀ)(P x) = P y
  std::vector<double> x(n), px(n), y(n), py(n);
  for (auto& v : x) v = u(rng);
  for (int i = 0; i < n; ++i) px[i] = x[perm[i]];
  csr_spmm_reference(a, x.data(), n, y.data(), n, 1);
  csr_spmm_reference(b, px.data(), n, py.data(), n, 1);
  for (int i = 0; i < n; ++i) EXPECT_NEAR(py[i], y[perm[i]], 1e-14);
}
