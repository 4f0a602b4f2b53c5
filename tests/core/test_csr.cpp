#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

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

// transpose (core/csr.hpp): Aᵀ(j, i) == A(i, j) entry by entry, canonical (sorted rows, explicit
// zeros kept), transpose twice gives A back bit for bit, and Aᵀ·x == xᵀ·A through the reference
// product; rectangular both ways, empty rows and columns, a 0-row matrix, and a size that splits
// the rows over several threads.
TEST(Csr, TransposeIsCanonicalAndExact) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  struct Shape {
    std::int64_t m, n;
    int per_row;
  };
  for (const Shape s : {Shape{37, 53, 5}, Shape{53, 37, 9}, Shape{1, 40, 7}, Shape{40, 1, 1},
                        Shape{20011, 19997, 8}}) {
    std::vector<Triplet<double>> t;
    for (std::int64_t i = 0; i < s.m; ++i) {
      if (i % 7 == 3) continue;  // empty rows
      for (int k = 0; k < s.per_row; ++k) {
        const std::int64_t j = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(s.n));
        if (s.n > 2 && j % 5 == 2) continue;  // empty columns
        t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), k == 0 ? 0.0 : u(rng)});
      }
    }
    const Csr<double> a = csr_from_triplets<double>(s.m, s.n, t, Symmetry::general);
    const Csr<double> at = transpose(a);
    const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n);
    validate(at);
    ASSERT_EQ(at.nrows, s.n) << what;
    ASSERT_EQ(at.ncols, s.m) << what;
    ASSERT_EQ(at.nnz(), a.nnz()) << what;
    EXPECT_EQ(at.symmetry, Symmetry::general);
    // entry by entry, against a transpose built from triplets (a different algorithm)
    std::vector<Triplet<double>> tt;
    for (std::int64_t i = 0; i < a.nrows; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        tt.push_back({a.col_idx[p], static_cast<std::int32_t>(i), a.values[p]});
    const Csr<double> ref = csr_from_triplets<double>(s.n, s.m, tt);
    EXPECT_EQ(at.row_ptr, ref.row_ptr) << what;
    EXPECT_EQ(at.col_idx, ref.col_idx) << what;
    EXPECT_EQ(at.values, ref.values) << what;
    const Csr<double> back = transpose(at);
    EXPECT_EQ(back.row_ptr, a.row_ptr) << what;
    EXPECT_EQ(back.col_idx, a.col_idx) << what;
    EXPECT_EQ(back.values, a.values) << what;
    // (Aᵀ·x)_j = Σ_i a_ij x_i, accumulated here column-wise from A's rows
    std::vector<double> x(static_cast<std::size_t>(s.m)), y(static_cast<std::size_t>(s.n)), want(y.size(), 0.0);
    for (auto& v : x) v = u(rng);
    csr_spmm_reference(at, x.data(), s.m, y.data(), s.n, 1);
    for (std::int64_t i = 0; i < a.nrows; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) want[a.col_idx[p]] += a.values[p] * x[i];
    for (std::int64_t j = 0; j < s.n; ++j) ASSERT_NEAR(y[j], want[j], 1e-13) << what << " row " << j;
  }
  // Symmetric A: Aᵀ == A, the declaration kept; a 0 × 5 matrix gives 5 empty rows.
  std::vector<Triplet<float>> st{{0, 0, 2.0f}, {0, 2, -1.0f}, {2, 0, -1.0f}, {1, 1, 3.0f}};
  const Csr<float> sym = csr_from_triplets<float>(3, 3, st, Symmetry::symmetric);
  const Csr<float> symt = transpose(sym);
  EXPECT_EQ(symt.symmetry, Symmetry::symmetric);
  EXPECT_EQ(symt.col_idx, sym.col_idx);
  EXPECT_EQ(symt.values, sym.values);
  Csr<double> empty;
  empty.nrows = 0;
  empty.ncols = 5;
  const Csr<double> et = transpose(empty);
  validate(et);
  EXPECT_EQ(et.nrows, 5);
  EXPECT_EQ(et.ncols, 0);
  EXPECT_EQ(et.row_ptr, std::vector<std::int64_t>(6, 0));
}

// csr_symmetry_defect: the relative defect of a square matrix, NaN for a rectangular one (whose
// a_ji may lie outside it).
TEST(Csr, SymmetryDefectOfSquareAndRectangular) {
  const Csr<double> sq = csr_from_triplets<double>(2, 2, std::vector<Triplet<double>>{{0, 0, 4.0}, {0, 1, -1.0}, {1, 0, -2.0}});
  EXPECT_DOUBLE_EQ(csr_symmetry_defect(sq), 1.0 / 4.0);
  const Csr<double> wide = csr_from_triplets<double>(2, 9, std::vector<Triplet<double>>{{0, 8, 1.0}, {1, 5, 2.0}});
  EXPECT_TRUE(std::isnan(csr_symmetry_defect(wide)));
  EXPECT_TRUE(std::isnan(csr_symmetry_defect(transpose(wide))));
}

// csr_one_norm: the largest column sum of |a_ij|, ‖Aᵀ‖∞, against a dense loop; it differs from
// ‖A‖∞ for an unsymmetric A (a dense column), and √(‖A‖₁‖A‖∞) bounds ‖A‖₂ there where ‖A‖∞
// alone does not: A = ones in column 0 (n × n) has ‖A‖₂ = √n, ‖A‖∞ = 1, ‖A‖₁ = n.
TEST(Csr, OneNormIsTheLargestColumnSum) {
  const std::int64_t n = 9001;
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i) t.push_back({static_cast<std::int32_t>(i), 0, i % 2 ? 1.0 : -1.0});
  const Csr<double> col = csr_from_triplets<double>(n, n, t);
  EXPECT_EQ(csr_inf_norm(col), 1.0);
  EXPECT_EQ(csr_one_norm(col), double(n));
  EXPECT_EQ(csr_one_norm(transpose(col)), 1.0);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const auto& [m, k] : {std::pair<std::int64_t, std::int64_t>{20011, 397}, {57, 3001}}) {
    std::vector<Triplet<double>> r;
    for (std::int64_t i = 0; i < m; ++i)
      for (int q = 0; q < 6; ++q)
        r.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(k)), u(rng)});
    const Csr<double> a = csr_from_triplets<double>(m, k, r);
    std::vector<double> colsum(static_cast<std::size_t>(k), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) colsum[a.col_idx[p]] += std::abs(a.values[p]);
    const double want = *std::max_element(colsum.begin(), colsum.end());
    EXPECT_NEAR(csr_one_norm(a), want, 1e-12 * want) << m << "x" << k;
    EXPECT_NEAR(csr_one_norm(a), csr_inf_norm(transpose(a)), 1e-12 * want) << m << "x" << k;
  }
  Csr<double> empty;
  empty.nrows = 3;
  empty.ncols = 4;
  empty.row_ptr.assign(4, 0);
  EXPECT_EQ(csr_one_norm(empty), 0.0);
}
