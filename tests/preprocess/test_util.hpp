// Random sparse matrices for the preprocessing tests.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "core/csr.hpp"

namespace tcsolve::test {

// nrows × ncols with about `per_row` random entries per row (some rows empty), values in
// [-1, 1] \ small, never all equal.
inline Csr<double> random_csr(std::int64_t nrows, std::int64_t ncols, double per_row,
                              std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> col(0, static_cast<std::int32_t>(ncols - 1));
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::poisson_distribution<int> cnt(per_row);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < nrows; ++i) {
    int c = (i % 7 == 3) ? 0 : cnt(rng);
    for (int k = 0; k < c; ++k) t.push_back({static_cast<std::int32_t>(i), col(rng), val(rng) + 2.0});
  }
  return csr_from_triplets<double>(nrows, ncols, std::move(t));
}

// Banded n × n (|i-j| <= bw) with random values.
inline Csr<double> band_csr(std::int64_t n, int bw, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(0.5, 1.5);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = std::max<std::int64_t>(0, i - bw); j <= std::min<std::int64_t>(n - 1, i + bw); ++j)
      t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), val(rng)});
  return csr_from_triplets<double>(n, n, std::move(t));
}

// 2D 5-point Laplacian on nx × ny.
inline Csr<double> lap2d_csr(int nx, int ny) {
  std::vector<Triplet<double>> t;
  auto id = [&](int x, int y) { return static_cast<std::int32_t>(x + nx * y); };
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      t.push_back({id(x, y), id(x, y), 4.0});
      if (x > 0) t.push_back({id(x, y), id(x - 1, y), -1.0});
      if (x + 1 < nx) t.push_back({id(x, y), id(x + 1, y), -1.0});
      if (y > 0) t.push_back({id(x, y), id(x, y - 1), -1.0});
      if (y + 1 < ny) t.push_back({id(x, y), id(x, y + 1), -1.0});
    }
  return csr_from_triplets<double>(std::int64_t(nx) * ny, std::int64_t(nx) * ny, std::move(t));
}

inline std::vector<std::int32_t> random_perm(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int32_t> p(n);
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::int32_t>(i);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

}  // namespace tcsolve::test
