// Test matrices and norms for the SpMM tests: random sparse matrices with odd sizes, skewed and
// empty rows, and random dense bands; unsymmetric patterns (half the off-diagonal entries
// dropped) and rectangular bands. Values uniform in [-1, 1] (never all-ones).
#pragma once
#include <algorithm>
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

// Scrambled stencil: an nx×ny×nz grid with `dof` unknowns per node, every (node, neighbour)
// pair of the 27-point (box = true) or 7-point neighbourhood coupled by a random dof×dof block
// (values in [-1, 1], symmetric pattern), then a random symmetric permutation P·A·Pᵀ: the
// structure of gen:lap3d/elast3d +scramble at odd test sizes.
inline Csr<double> scrambled_stencil(int nx, int ny, int nz, int dof, bool box, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  const std::int64_t nodes = static_cast<std::int64_t>(nx) * ny * nz, n = nodes * dof;
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::int32_t>(i);
  std::shuffle(p.begin(), p.end(), rng);  // new index of unknown i is p[i]
  std::vector<Triplet<double>> t;
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x)
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              if (!box && std::abs(dx) + std::abs(dy) + std::abs(dz) > 1) continue;
              const int X = x + dx, Y = y + dy, Z = z + dz;
              if (X < 0 || Y < 0 || Z < 0 || X >= nx || Y >= ny || Z >= nz) continue;
              const std::int64_t u = (static_cast<std::int64_t>(z) * ny + y) * nx + x;
              const std::int64_t v = (static_cast<std::int64_t>(Z) * ny + Y) * nx + X;
              for (int a = 0; a < dof; ++a)
                for (int b = 0; b < dof; ++b)
                  t.push_back({p[u * dof + a], p[v * dof + b], val(rng)});
            }
  return csr_from_triplets(n, n, std::move(t));
}

// mb·b × mb·b in b×b blocks: about `mean` random blocks per block row (and the diagonal block),
// block rows I % long_every == 7 get `long_len` blocks, I % empty_every == 5 none (0: never);
// each entry of a block is dropped with probability `drop` (partial blocks: the BSR copy stores
// zeros there). Values in [-1, 1].
inline Csr<double> random_blocked(std::int64_t mb, int b, int mean, int long_every, int long_len,
                                  int empty_every, double drop, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0), u01(0.0, 1.0);
  std::uniform_int_distribution<std::int64_t> bcol(0, mb - 1);
  std::vector<Triplet<double>> t;
  std::vector<std::int64_t> cols;
  for (std::int64_t I = 0; I < mb; ++I) {
    if (empty_every > 0 && I % empty_every == 5) continue;
    int k = 1 + static_cast<int>(rng() % (2 * mean));
    if (long_every > 0 && I % long_every == 7) k = long_len;
    cols.assign(1, I);
    for (int q = 0; q < k; ++q) cols.push_back(bcol(rng));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (std::int64_t J : cols)
      for (int r = 0; r < b; ++r)
        for (int c = 0; c < b; ++c)
          if (!(drop > 0 && u01(rng) < drop))
            t.push_back({static_cast<std::int32_t>(I * b + r), static_cast<std::int32_t>(J * b + c), val(rng)});
  }
  return csr_from_triplets(mb * b, mb * b, std::move(t));
}

// A with each off-diagonal entry kept with probability 1/2, independently of its mirror (the
// diagonal always kept): an unsymmetric pattern from a symmetric one, the same size.
inline Csr<double> drop_half_off_diagonal(const Csr<double>& a, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i || rng() % 2)
        t.push_back({static_cast<std::int32_t>(i), a.col_idx[p], a.values[p]});
  return csr_from_triplets(a.nrows, a.ncols, std::move(t));
}

// m×n band stretched along the diagonal: row i holds columns |j − i·n/m| <= bw (random values),
// whole 8×4 / 16×16 blocks where m ≈ n, rows that share their columns where m > n.
inline Csr<double> stretched_band(std::int64_t m, std::int64_t n, int bw, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < m; ++i) {
    const std::int64_t c = i * n / m;
    for (std::int64_t j = std::max<std::int64_t>(0, c - bw); j <= std::min<std::int64_t>(n - 1, c + bw); ++j)
      t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), val(rng)});
  }
  return csr_from_triplets(m, n, std::move(t));
}

// The rows of A in a random order (P·A): what the rows-mode (Jaccard) reordering can undo.
inline Csr<double> shuffle_rows(const Csr<double>& a, unsigned seed) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(a.nrows));
  for (std::int64_t i = 0; i < a.nrows; ++i) p[i] = static_cast<std::int32_t>(i);
  std::shuffle(p.begin(), p.end(), std::mt19937_64(seed));
  return permute_rows(a, p);
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
