// Graph Laplacians with a known null space (grammar in io/generators.hpp):
//   rgg       random geometric graphs made of C connected components: eigenvalue 0 exactly C times
//             (spectral clustering's question);
//   neumann2d/neumann3d  the grid graph's Laplacian (a Neumann problem): eigenvalue 0 once.
// Both are L = D − W with unit weights: row sums are 0 exactly, so L·1_c = 0 for the indicator
// 1_c of each component, and L is positive semidefinite.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "io/generator_common.hpp"

namespace tcsolve::gen {
namespace {

// L = D − W of an undirected edge list (pairs i < j, no duplicates): −1 per edge, the degree on
// the diagonal (every row holds its diagonal, also an isolated vertex's 0).
Csr<double> laplacian_of_edges(i64 n, const std::vector<std::pair<std::int32_t, std::int32_t>>& e) {
  std::vector<i64> deg(n, 0);
  for (const auto& [i, j] : e) ++deg[i], ++deg[j];
  std::vector<Triplet<double>> t;
  t.reserve(static_cast<std::size_t>(n) + 2 * e.size());
  for (i64 i = 0; i < n; ++i)
    t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), double(deg[i])});
  for (const auto& [i, j] : e) {
    t.push_back({i, j, -1.0});
    t.push_back({j, i, -1.0});
  }
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

}  // namespace

// N points, C components. Component c holds a contiguous range of about N/C vertices, uniform in
// the unit square shifted to x ∈ [c·(1 + 2r), c·(1 + 2r) + 1): strips 2r apart, so no edge joins
// two components. Edges join points closer than r = √(10 / (π·N/C)) (about 10 neighbours), found
// through cells of side ≥ r; a path through each component in x order (consecutive points joined)
// makes it connected whatever the draw, so the multiplicity of eigenvalue 0 is exactly C.
Csr<double> gen_rgg(const std::string& spec, const Spec& s) {
  expect_params_between(spec, s, 1, 2, "N[:C]");
  const i64 n = size_param(spec, "N", s.params[0], max_rows / 16);
  const i64 c = s.params.size() > 1 ? size_param(spec, "C", s.params[1], max_rows) : 1;
  if (c > n) bad(spec, "C = " + s.params[1] + " components need at least C vertices (N = " + s.params[0] + ")");
  const double r = std::sqrt(10.0 / (M_PI * double(n) / double(c)));
  const i64 cells = std::max<i64>(1, static_cast<i64>(std::floor(1.0 / r)));  // per side; side ≥ r
  std::vector<double> x(n), y(n);
  for (i64 i = 0; i < n; ++i) {
    x[i] = unit(hash3(s.seed, s_rgg, 2 * u64(i)));
    y[i] = unit(hash3(s.seed, s_rgg, 2 * u64(i) + 1));
  }
  std::vector<std::pair<std::int32_t, std::int32_t>> edges;
  for (i64 comp = 0, first = 0; comp < c; ++comp) {
    const i64 size = n / c + (comp < n % c), last = first + size;
    // Bucket the component's points by cell (counting sort), then scan the 3×3 neighbourhoods.
    auto cell_of = [&](i64 i) {
      const i64 cx = std::min(cells - 1, static_cast<i64>(x[i] * cells));
      const i64 cy = std::min(cells - 1, static_cast<i64>(y[i] * cells));
      return cy * cells + cx;
    };
    std::vector<i64> start(cells * cells + 1, 0), order(size);
    for (i64 i = first; i < last; ++i) ++start[cell_of(i) + 1];
    for (i64 k = 0; k < cells * cells; ++k) start[k + 1] += start[k];
    std::vector<i64> fill(start.begin(), start.end() - 1);
    for (i64 i = first; i < last; ++i) order[fill[cell_of(i)]++] = i;
    for (i64 i = first; i < last; ++i) {
      const i64 ci = cell_of(i), cx = ci % cells, cy = ci / cells;
      for (i64 dy = -1; dy <= 1; ++dy)
        for (i64 dx = -1; dx <= 1; ++dx) {
          const i64 qx = cx + dx, qy = cy + dy;
          if (qx < 0 || qy < 0 || qx >= cells || qy >= cells) continue;
          for (i64 p = start[qy * cells + qx]; p < start[qy * cells + qx + 1]; ++p) {
            const i64 j = order[p];
            const double ddx = x[i] - x[j], ddy = y[i] - y[j];
            if (j > i && ddx * ddx + ddy * ddy < r * r)
              edges.emplace_back(static_cast<std::int32_t>(i), static_cast<std::int32_t>(j));
          }
        }
    }
    std::vector<i64> by_x(size);
    for (i64 k = 0; k < size; ++k) by_x[k] = first + k;
    std::sort(by_x.begin(), by_x.end(), [&](i64 a, i64 b) { return x[a] < x[b] || (x[a] == x[b] && a < b); });
    for (i64 k = 0; k + 1 < size; ++k)
      edges.emplace_back(static_cast<std::int32_t>(std::min(by_x[k], by_x[k + 1])),
                         static_cast<std::int32_t>(std::max(by_x[k], by_x[k + 1])));
    first = last;
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  check_entries(spec, static_cast<long double>(n) + 2.0L * edges.size());
  return laplacian_of_edges(n, edges);
}

// The Laplacian of the nx × ny (× nz) grid graph: −1 per grid neighbour, the neighbour count on
// the diagonal (the 5/7-point Laplacian with Neumann boundaries, unscaled). Singular: L·1 = 0,
// and 0 is simple (the grid is connected). Eigenvalues 4 sin²(πi/2nx) + 4 sin²(πj/2ny) (+ z).
Csr<double> gen_neumann(const std::string& spec, const Spec& s) {
  expect_params(spec, s, 1, s.name == "neumann2d" ? "NX or NXxNY" : "N");
  i64 nx, ny, nz = 1;
  if (s.name == "neumann2d") {
    const std::string& p = s.params[0];
    const std::size_t cut = p.find('x');
    nx = size_param(spec, "NX", p.substr(0, cut), max_rows);
    ny = cut == std::string::npos ? nx : size_param(spec, "NY", p.substr(cut + 1), max_rows);
  } else {
    nx = ny = nz = size_param(spec, "N", s.params[0], 1290);
  }
  check_rows(spec, static_cast<long double>(nx) * ny * nz);
  const i64 n = nx * ny * nz;
  std::vector<std::pair<std::int32_t, std::int32_t>> edges;
  edges.reserve(static_cast<std::size_t>(3 * n));
  for (i64 r = 0; r < n; ++r) {
    const i64 xi = r % nx, yi = (r / nx) % ny, zi = r / (nx * ny);
    const auto i = static_cast<std::int32_t>(r);
    if (xi + 1 < nx) edges.emplace_back(i, static_cast<std::int32_t>(r + 1));
    if (yi + 1 < ny) edges.emplace_back(i, static_cast<std::int32_t>(r + nx));
    if (zi + 1 < nz) edges.emplace_back(i, static_cast<std::int32_t>(r + nx * ny));
  }
  return laplacian_of_edges(n, edges);
}

}  // namespace tcsolve::gen
