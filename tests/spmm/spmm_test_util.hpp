// Test matrices and norms for the SpMM tests: random sparse matrices with odd sizes, skewed and
// empty rows, and random dense bands. Values uniform in [-1, 1] (never all-ones).
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/csr.hpp"

namespace tcsolve::test {

// m×n, about `mean` random non-zeros per row; rows i % empty_every == 5 are empty (when
// empty_every > 0); the first `nlong` rows (spread over the matrix) get `long_len` non-zeros.
inline Csr<double> random_skewed(std::int64_t m, std::int64_t n, int mean, int nlong, int long_len,
                                 int empty_every, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::uniform_int_distribution<std::int64_t> col(0, n - 1);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < m; ++i) {
    if (empty_every > 0 && i % empty_every == 5) continue;
    int k = 1 + static_cast<int>(rng() % (2 * mean));
    if (nlong > 0 && i % (m / nlong + 1) == 3) k = long_len;
    for (int q = 0; q < k; ++q)
      t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(col(rng)), val(rng)});
    // a near-diagonal entry so that the blocks have some structure
    if (i < n) t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), val(rng)});
  }
  return csr_from_triplets(m, n, std::move(t));
}

// n×n band |i - j| <= bw with random values.
inline Csr<double> random_band(std::int64_t n, int bw, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = std::max<std::int64_t>(0, i - bw); j <= std::min<std::int64_t>(n - 1, i + bw); ++j)
      t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), val(rng)});
  return csr_from_triplets(n, n, std::move(t));
}

inline std::vector<double> random_vector(std::size_t len, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::vector<double> v(len);
  for (auto& e : v) e = val(rng);
  return v;
}

inline double frobenius(const Csr<double>& a) {
  double s = 0;
  for (double v : a.values) s += v * v;
  return std::sqrt(s);
}

// ‖(column-major m×k, ld) block‖_F
inline double frobenius(const double* x, std::int64_t m, int k, std::int64_t ld) {
  double s = 0;
  for (int c = 0; c < k; ++c)
    for (std::int64_t i = 0; i < m; ++i) s += x[i + c * ld] * x[i + c * ld];
  return std::sqrt(s);
}

}  // namespace tcsolve::test
