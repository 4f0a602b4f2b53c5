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

// csr_checksum (core/csr.hpp): the same content gives the same value; a change of one byte, of
// the sign of two values (a pair of top-bit flips, which cancel in a word-wise FNV-1a without
// the xorshift) or of the pattern gives another; the value is pinned, so that results written
// earlier stay comparable (a change of the definition must change the "csrhash1:" prefix).
TEST(Csr, ChecksumSeesEveryChangeAndIsPinned) {
  const std::int64_t n = 300000;  // 0.9M entries: many chunks of 2^20 bytes, a partial last one
  std::vector<Triplet<double>> t;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    t.push_back({i, i, 4.0 + u(rng)});
    if (i > 0) t.push_back({i, i - 1, u(rng)});
    if (i + 7 < n) t.push_back({i, i + 7, u(rng)});
  }
  const Csr<double> a = csr_from_triplets<double>(n, n, t);
  const std::string h = csr_checksum(a);
  EXPECT_EQ(h.rfind("csrhash1:", 0), 0u) << h;
  EXPECT_EQ(h.size(), 9u + 16u);
  EXPECT_EQ(csr_checksum(a), h);
  Csr<double> b = a;
  b.values[12345] = std::nextafter(b.values[12345], 10.0);
  EXPECT_NE(csr_checksum(b), h);
  b = a;
  b.values[100] = -b.values[100];
  b.values[200000] = -b.values[200000];
  EXPECT_NE(csr_checksum(b), h);
  b = a;
  b.values[0] = -b.values[0];
  b.values[1] = -b.values[1];  // (adjacent words)
  EXPECT_NE(csr_checksum(b), h);
  b = a;
  std::swap(b.col_idx[5], b.col_idx[6]);
  EXPECT_NE(csr_checksum(b), h);
  // Pinned: values computed from the definition in core/csr.hpp by an independent Python script
  // (struct.pack of the arrays, the chunk and word loop written out), on a 3 × 3 matrix (one
  // partial chunk per array, with the legacy byte-wise FNV-1a) and on a tridiagonal matrix of
  // 150,001 rows (2 + 2 + 4 chunks, the last of each partial).
  const Csr<double> s = csr_from_triplets<double>(3, 3, std::vector<Triplet<double>>{
      {0, 0, 2.0}, {1, 1, 3.0}, {2, 2, 5.0}, {0, 2, -1.0}, {2, 0, -1.0}});
  EXPECT_EQ(csr_checksum(s), "csrhash1:d1f960d64963af4f");
  EXPECT_EQ(csr_checksum_fnv1a64(s), "fnv1a64:85d8d14985495e2c");
  Csr<double> tri;
  tri.nrows = tri.ncols = 150001;
  tri.row_ptr.assign(1, 0);
  for (std::int64_t i = 0; i < tri.nrows; ++i) {
    if (i > 0) tri.col_idx.push_back(static_cast<std::int32_t>(i - 1)), tri.values.push_back(-1.0 - (i % 5) * 0.25);
    tri.col_idx.push_back(static_cast<std::int32_t>(i)), tri.values.push_back(4.0 + (i % 7) * 0.125);
    if (i + 1 < tri.nrows)
      tri.col_idx.push_back(static_cast<std::int32_t>(i + 1)), tri.values.push_back(-1.0 - ((i + 1) % 5) * 0.25);
    tri.row_ptr.push_back(static_cast<std::int64_t>(tri.col_idx.size()));
  }
  ASSERT_EQ(tri.nnz(), 450001);
  EXPECT_EQ(csr_checksum(tri), "csrhash1:0f168367e2a3003a");
}
