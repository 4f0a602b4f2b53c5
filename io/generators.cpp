// Deterministic test-matrix generators (grammar in io/generators.hpp).
//
// Randomness: every random value is a pure function of (seed, a small integer key) through the
// splitmix64 finalizer, so the output does not depend on the thread count, the standard library,
// or the order in which rows are filled. Symmetric values are keyed by the unordered pair
// (min(i,j), max(i,j)) so a_ij and a_ji are bitwise equal.
//
// The stencil generators (lap2d, lap3d, elast3d, band) fill the CSR arrays directly: row lengths
// in closed form, prefix sum, then a parallel fill of each row in increasing column order.
#include "io/generators.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"
#include "io/generator_common.hpp"

namespace tcsolve {
namespace {

using namespace gen;

Spec parse_spec(const std::string& spec) {
  if (!is_generator_spec(spec)) bad(spec, "does not start with 'gen:'");
  Spec out;
  std::string body = spec.substr(4);
  // Modifiers "+scramble" and "@SEED" may follow the parameters, in either order, once each.
  std::size_t cut = body.find_first_of("+@");
  std::string head = body.substr(0, cut);
  bool have_seed = false;
  while (cut != std::string::npos) {
    std::size_t next = body.find_first_of("+@", cut + 1);
    std::string mod = body.substr(cut + 1, next == std::string::npos ? std::string::npos : next - cut - 1);
    if (body[cut] == '+') {
      if (mod != "scramble") bad(spec, "unknown modifier '+" + mod + "' (known: +scramble)");
      if (out.scramble) bad(spec, "'+scramble' given twice");
      out.scramble = true;
    } else {
      if (have_seed) bad(spec, "seed given twice");
      out.seed = parse_u64(spec, "seed", mod);
      have_seed = true;
    }
    cut = next;
  }
  std::size_t p = head.find(':');
  out.name = head.substr(0, p);
  if (out.name.empty()) bad(spec, "missing generator name");
  while (p != std::string::npos) {
    std::size_t q = head.find(':', p + 1);
    out.params.push_back(head.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1));
    p = q;
  }
  return out;
}

// ---- grid Laplacians ----------------------------------------------------------------------

// Dirichlet Laplacian on an nx × ny × nz grid, natural ordering (x fastest): `diag` on the
// diagonal (4 for lap2d, 6 for lap3d, also when an extent is 1), -1 per existing neighbour.
// Rows [r0, r1) only (r1 < 0: all), with global column indices (distributed/: each rank
// generates its own rows).
Csr<double> grid_laplacian(i64 nx, i64 ny, i64 nz, double diag, i64 r0 = 0, i64 r1 = -1) {
  const i64 n = nx * ny * nz, sxy = nx * ny;
  if (r1 < 0) r1 = n;
  const i64 nl = r1 - r0;
  Csr<double> a;
  a.nrows = nl;
  a.ncols = n;
  a.symmetry = nl == n ? Symmetry::symmetric : Symmetry::general;
  a.row_ptr.clear();
  resize_huge(a.row_ptr, static_cast<std::size_t>(nl + 1));  // zeros
  auto coords = [&](i64 r, i64& x, i64& y, i64& z) {
    x = r % nx;
    y = (r / nx) % ny;
    z = r / sxy;
  };
  // Row lengths on every thread (three integer divisions a row: ~30 ms serial at 1M rows), then
  // their prefix sum.
  parallel_for(nl, [&](i64 l) {
    i64 x, y, z;
    coords(r0 + l, x, y, z);
    a.row_ptr[l + 1] = 1 + (x > 0) + (x < nx - 1) + (y > 0) + (y < ny - 1) + (z > 0) + (z < nz - 1);
  });
  for (i64 l = 0; l < nl; ++l) a.row_ptr[l + 1] += a.row_ptr[l];
  resize_huge(a.col_idx, static_cast<std::size_t>(a.nnz()));
  resize_huge(a.values, static_cast<std::size_t>(a.nnz()));
  parallel_for(nl, [&](i64 l) {
    const i64 r = r0 + l;
    i64 x, y, z;
    coords(r, x, y, z);
    i64 p = a.row_ptr[l];
    auto put = [&](i64 c, double v) {
      a.col_idx[p] = static_cast<std::int32_t>(c);
      a.values[p++] = v;
    };
    if (z > 0) put(r - sxy, -1.0);
    if (y > 0) put(r - nx, -1.0);
    if (x > 0) put(r - 1, -1.0);
    put(r, diag);
    if (x < nx - 1) put(r + 1, -1.0);
    if (y < ny - 1) put(r + nx, -1.0);
    if (z < nz - 1) put(r + sxy, -1.0);
  });
  return a;
}

// Grid extents of lap2d (nz = 1) and lap3d.
void lap_extents(const std::string& spec, const Spec& s, i64& nx, i64& ny, i64& nz) {
  if (s.name == "lap2d") {
    expect_params(spec, s, 1, "NX or NXxNY");
    const std::string& p = s.params[0];
    std::size_t x = p.find('x');
    nx = size_param(spec, "NX", p.substr(0, x), max_rows);
    ny = x == std::string::npos ? nx : size_param(spec, "NY", p.substr(x + 1), max_rows);
    nz = 1;
  } else {
    expect_params(spec, s, 1, "N");
    nx = ny = nz = size_param(spec, "N", s.params[0], 1290);  // 1290³ < 2^31 - 1 < 1291³
  }
  check_rows(spec, static_cast<long double>(nx) * ny * nz);
}

Csr<double> gen_lap(const std::string& spec, const Spec& s, i64 r0 = 0, i64 r1 = -1) {
  i64 nx, ny, nz;
  lap_extents(spec, s, nx, ny, nz);
  if (r1 > nx * ny * nz || r0 < 0 || (r1 >= 0 && r0 > r1))
    bad(spec, "row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside the matrix");
  return grid_laplacian(nx, ny, nz, nz == 1 ? 4.0 : 6.0, r0, r1);
}

// ---- elast3d ------------------------------------------------------------------------------

// 3×3 symmetric block of the edge between grid node p and its neighbour in direction d.
// A = Σ_edges w_e (e_p - e_q)(e_p - e_q)ᵀ ⊗ M_e, with M_e = ½·I + v vᵀ (SPD) and v = d/|d| plus a
// random perturbation, w_e ∈ [0.5, 1.5)/|d|². Boundary nodes also get the edges to their missing
// ("ghost", Dirichlet) neighbours on the diagonal only, so xᵀAx ≥ Σ_ghost w xₚᵀ M xₚ > 0: SPD
// by construction, with a Laplacian-like spectrum (condition number ~ N²) like real FEM matrices.
struct Block3 {
  double m[3][3];
};

inline Block3 edge_block(u64 seed, u64 stream, u64 key, int dx, int dy, int dz) {
  const double len2 = double(dx * dx + dy * dy + dz * dz), inv = 1.0 / std::sqrt(len2);
  const u64 h0 = hash3(seed, stream, key);
  const u64 h1 = mix64(h0), h2 = mix64(h1), h3 = mix64(h2);
  const double w = (0.5 + unit(h0)) / len2;
  const double v[3] = {dx * inv + unit(h1) - 0.5, dy * inv + unit(h2) - 0.5, dz * inv + unit(h3) - 0.5};
  Block3 b;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) b.m[i][j] = w * ((i == j ? 0.5 : 0.0) + v[i] * v[j]);
  return b;
}

Csr<double> gen_elast3d(const std::string& spec, const Spec& s) {
  expect_params(spec, s, 1, "N");
  const i64 n = size_param(spec, "N", s.params[0], 894);  // 3·894³ < 2^31 - 1
  check_rows(spec, 3.0L * n * n * n);
  const i64 nodes = n * n * n, nn = n * n;
  Csr<double> a;
  a.nrows = a.ncols = 3 * nodes;
  a.symmetry = Symmetry::symmetric;
  a.row_ptr.assign(a.nrows + 1, 0);
  auto span = [&](i64 c) { return i64(1) + (c > 0) + (c < n - 1); };
  for (i64 p = 0; p < nodes; ++p) {
    const i64 len = 3 * span(p % n) * span((p / n) % n) * span(p / nn);
    for (int c = 0; c < 3; ++c) a.row_ptr[3 * p + c + 1] = a.row_ptr[3 * p + c] + len;
  }
  resize_huge(a.col_idx, static_cast<std::size_t>(a.nnz()));
  resize_huge(a.values, static_cast<std::size_t>(a.nnz()));
  const u64 seed = s.seed;
  parallel_for(nodes, [&](i64 p) {
    const i64 x = p % n, y = (p / n) % n, z = p / nn;
    double diag[3][3] = {};
    // Row start of each of the node's 3 rows; the rows share one column pattern.
    i64 pos[3] = {a.row_ptr[3 * p], a.row_ptr[3 * p + 1], a.row_ptr[3 * p + 2]};
    i64 diag_at = -1;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (dx == 0 && dy == 0 && dz == 0) {
            diag_at = pos[0] - a.row_ptr[3 * p];
            for (int c = 0; c < 3; ++c) {
              for (int k = 0; k < 3; ++k) a.col_idx[pos[c] + k] = static_cast<std::int32_t>(3 * p + k);
              pos[c] += 3;
            }
            continue;
          }
          const i64 qx = x + dx, qy = y + dy, qz = z + dz;
          const bool inside = qx >= 0 && qx < n && qy >= 0 && qy < n && qz >= 0 && qz < n;
          // Direction index 0..26 of d; the edge key is (lower node, direction seen from it).
          const int dir = (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1);
          Block3 b;
          if (inside) {
            const i64 q = qx + n * qy + nn * qz;
            const i64 lo = std::min(p, q);
            const int lo_dir = p < q ? dir : 26 - dir;
            b = edge_block(seed, s_elast, static_cast<u64>(lo) * 27 + lo_dir, p < q ? dx : -dx,
                           p < q ? dy : -dy, p < q ? dz : -dz);
            for (int c = 0; c < 3; ++c) {
              for (int k = 0; k < 3; ++k) {
                a.col_idx[pos[c] + k] = static_cast<std::int32_t>(3 * q + k);
                a.values[pos[c] + k] = -b.m[c][k];
              }
              pos[c] += 3;
            }
          } else {
            b = edge_block(seed, s_elast_ghost, static_cast<u64>(p) * 27 + dir, dx, dy, dz);
          }
          for (int c = 0; c < 3; ++c)
            for (int k = 0; k < 3; ++k) diag[c][k] += b.m[c][k];
        }
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 3; ++k) a.values[a.row_ptr[3 * p + c] + diag_at + k] = diag[c][k];
  }, 256);
  // diag is summed in a fixed order per node, and the block is symmetric up to rounding in the
  // order of the products v_i v_j = v_j v_i (commutative, exact): a_ij == a_ji bitwise.
  return a;
}

// ---- band and random ----------------------------------------------------------------------

// Off-diagonal value of the unordered pair {i, j} in (-1, 1), and a diagonal that dominates:
// a_ii = Σ_j |a_ij| + r_i with r_i in [1, 2): strictly diagonally dominant, hence SPD.
inline double pair_value(u64 seed, u64 stream, i64 i, i64 j) {
  const u64 lo = static_cast<u64>(std::min(i, j)), hi = static_cast<u64>(std::max(i, j));
  return 2.0 * unit(hash3(seed, stream, (lo << 32) | hi)) - 1.0;
}

void set_dominant_diagonal(Csr<double>& a, u64 seed, u64 val_stream, u64 diag_stream) {
  parallel_for(a.nrows, [&](i64 i) {
    double sum = 0;
    i64 d = -1;
    for (i64 p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      if (a.col_idx[p] == i) {
        d = p;
        continue;
      }
      a.values[p] = pair_value(seed, val_stream, i, a.col_idx[p]);
      sum += std::abs(a.values[p]);
    }
    a.values[d] = sum + 1.0 + unit(hash3(seed, diag_stream, static_cast<u64>(i)));
  }, 1024);
}

Csr<double> gen_band(const std::string& spec, const Spec& s) {
  expect_params(spec, s, 2, "N:B");
  const i64 n = size_param(spec, "N", s.params[0], max_rows);
  const u64 b64 = parse_u64(spec, "bandwidth B", s.params[1]);
  if (b64 >= static_cast<u64>(n))
    bad(spec, "bandwidth B = " + s.params[1] + " must be smaller than N = " + s.params[0]);
  const i64 b = static_cast<i64>(b64);
  check_entries(spec, static_cast<long double>(n) * (2.0L * b + 1));
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.symmetry = Symmetry::symmetric;
  a.row_ptr.assign(n + 1, 0);
  for (i64 i = 0; i < n; ++i)
    a.row_ptr[i + 1] = a.row_ptr[i] + (std::min(n - 1, i + b) - std::max<i64>(0, i - b) + 1);
  a.col_idx.resize(a.nnz());
  a.values.resize(a.nnz());
  parallel_for(n, [&](i64 i) {
    i64 p = a.row_ptr[i];
    for (i64 j = std::max<i64>(0, i - b); j <= std::min(n - 1, i + b); ++j)
      a.col_idx[p++] = static_cast<std::int32_t>(j);
  }, 1024);
  set_dominant_diagonal(a, s.seed, s_band, s_band_diag);
  return a;
}

// Rows given as buckets cols[cnt[i], cnt[i+1]) (unsorted, with duplicates): sorts and
// deduplicates each bucket in place and fills a.row_ptr and a.col_idx (a.values sized, unset).
void compact_pattern(std::vector<std::int32_t>& cols, const std::vector<i64>& cnt, Csr<double>& a) {
  const i64 n = a.nrows;
  std::vector<i64> len(n);
  parallel_for(n, [&](i64 i) {
    auto b = cols.begin() + cnt[i], e = cols.begin() + cnt[i + 1];
    std::sort(b, e);
    len[i] = std::unique(b, e) - b;
  }, 1024);
  a.row_ptr.assign(n + 1, 0);
  for (i64 i = 0; i < n; ++i) a.row_ptr[i + 1] = a.row_ptr[i] + len[i];
  a.col_idx.resize(a.nnz());
  a.values.resize(a.nnz());
  parallel_for(n, [&](i64 i) {
    std::copy(cols.begin() + cnt[i], cols.begin() + cnt[i] + len[i], a.col_idx.begin() + a.row_ptr[i]);
  }, 1024);
}

// Each row i draws about (K-1)/2 partners j uniformly; the pattern is symmetrised and the
// diagonal added, so a row holds about K entries (fewer where draws collide).
Csr<double> gen_random(const std::string& spec, const Spec& s) {
  expect_params(spec, s, 2, "N:K");
  const i64 n = size_param(spec, "N", s.params[0], max_rows);
  const i64 k = size_param(spec, "K", s.params[1], max_rows);
  if (k > n) bad(spec, "K = " + s.params[1] + " non-zeros per row exceeds N = " + s.params[0]);
  check_entries(spec, static_cast<long double>(n) * k);
  const i64 half = (k - 1) / 2;
  const bool odd = (k - 1) % 2 != 0;
  // Draw counts per row (deterministic), then the drawn partners.
  std::vector<i64> start(n + 1, 0);
  for (i64 i = 0; i < n; ++i)
    start[i + 1] = start[i] + half + (odd && (hash3(s.seed, s_random_pick, u64(i)) >> 63));
  std::vector<std::int32_t> partner(start[n]);
  parallel_for(n, [&](i64 i) {
    Xoshiro256 rng(hash3(s.seed, s_random_pick, u64(i) + (u64(1) << 40)));
    for (i64 p = start[i]; p < start[i + 1]; ++p) {
      i64 j = static_cast<i64>(rng.below(static_cast<u64>(n - 1)));
      partner[p] = static_cast<std::int32_t>(j >= i ? j + 1 : j);  // never i
    }
  }, 1024);
  // Row lengths of the symmetrised pattern with the diagonal, before deduplication.
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.symmetry = Symmetry::symmetric;
  std::vector<i64> cnt(n + 1, 0);
  for (i64 i = 0; i < n; ++i) {
    cnt[i + 1] += 1 + (start[i + 1] - start[i]);
    for (i64 p = start[i]; p < start[i + 1]; ++p) cnt[partner[p] + 1] += 1;
  }
  for (i64 i = 0; i < n; ++i) cnt[i + 1] += cnt[i];
  std::vector<std::int32_t> cols(cnt[n]);
  {
    std::vector<i64> fill(cnt.begin(), cnt.end() - 1);
    for (i64 i = 0; i < n; ++i) {
      cols[fill[i]++] = static_cast<std::int32_t>(i);
      for (i64 p = start[i]; p < start[i + 1]; ++p) {
        cols[fill[i]++] = partner[p];
        cols[fill[partner[p]]++] = static_cast<std::int32_t>(i);
      }
    }
  }
  partner.clear();
  partner.shrink_to_fit();
  compact_pattern(cols, cnt, a);
  set_dominant_diagonal(a, s.seed, s_random_val, s_random_diag);
  return a;
}

// ---- R-MAT graph Laplacian ----------------------------------------------------------------

// 2^scale nodes, ef·2^scale directed edges drawn by recursive quadrant choice with probabilities
// (a, b, c, d) = (0.57, 0.19, 0.19, 0.05). Self-loops are dropped, the graph is made undirected
// and duplicate edges merged; the result is L = D - W with unit weights (every row keeps its
// diagonal, 0 for isolated nodes). Row lengths follow a power law (max ≫ mean).
Csr<double> gen_rmat(const std::string& spec, const Spec& s) {
  expect_params(spec, s, 2, "SCALE:EDGE_FACTOR");
  const i64 scale = size_param(spec, "SCALE", s.params[0], 30);  // 2^30 nodes at most
  const i64 ef = size_param(spec, "EDGE_FACTOR", s.params[1], 1 << 16);
  const i64 n = i64(1) << scale;
  const i64 m = ef * n;
  if (m > (i64(1) << 34)) bad(spec, "EDGE_FACTOR·2^SCALE = " + std::to_string(m) + " edges is too many (at most 2^34)");
  // Edges are drawn in fixed-size chunks, each with its own generator: same output for any
  // thread count. 16-bit uniforms per level (probabilities resolved to 2^-16).
  const i64 chunk = 1 << 16, nchunks = (m + chunk - 1) / chunk;
  std::vector<std::int32_t> src(m), dst(m);
  const u64 ta = static_cast<u64>(0.57 * 65536), tb = static_cast<u64>(0.76 * 65536),
            tc = static_cast<u64>(0.95 * 65536);
  parallel_for(nchunks, [&](i64 c) {
    Xoshiro256 rng(hash3(s.seed, s_rmat, static_cast<u64>(c)));
    const i64 e1 = std::min(m, (c + 1) * chunk);
    u64 bits = 0;
    int left = 0;
    for (i64 e = c * chunk; e < e1; ++e) {
      u64 u = 0, v = 0;
      for (i64 l = 0; l < scale; ++l) {
        if (left == 0) {
          bits = rng.next();
          left = 4;
        }
        const u64 r = bits & 0xffff;
        bits >>= 16;
        --left;
        const u64 ub = r >= tb, vb = (r >= ta && r < tb) || r >= tc;
        u = (u << 1) | ub;
        v = (v << 1) | vb;
      }
      src[e] = static_cast<std::int32_t>(u);
      dst[e] = static_cast<std::int32_t>(v);
    }
  }, 1);
  // Undirected adjacency lists (both directions), self-loops dropped, plus a slot for the diagonal.
  std::vector<i64> cnt(n + 1, 0);
  for (i64 e = 0; e < m; ++e)
    if (src[e] != dst[e]) {
      ++cnt[src[e] + 1];
      ++cnt[dst[e] + 1];
    }
  // Row i gets deg(i) + 1 slots (the +1 for the diagonal), starting at cnt[i].
  for (i64 i = 0; i < n; ++i) cnt[i + 1] += cnt[i] + 1;
  std::vector<std::int32_t> cols(cnt[n]);
  {
    std::vector<i64> fill(n);
    for (i64 i = 0; i < n; ++i) {
      fill[i] = cnt[i] + 1;
      cols[cnt[i]] = static_cast<std::int32_t>(i);
    }
    for (i64 e = 0; e < m; ++e)
      if (src[e] != dst[e]) {
        cols[fill[src[e]]++] = dst[e];
        cols[fill[dst[e]]++] = src[e];
      }
  }
  src.clear();
  src.shrink_to_fit();
  dst.clear();
  dst.shrink_to_fit();
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.symmetry = Symmetry::symmetric;
  compact_pattern(cols, cnt, a);
  parallel_for(n, [&](i64 i) {
    const i64 deg = a.row_ptr[i + 1] - a.row_ptr[i] - 1;  // every row holds its diagonal
    for (i64 p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      a.values[p] = a.col_idx[p] == i ? static_cast<double>(deg) : -1.0;  // L = D - W
  }, 1024);
  return a;
}

std::vector<std::int32_t> random_permutation(i64 n, u64 seed) {
  std::vector<std::int32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  Xoshiro256 rng(hash3(seed, s_scramble, 0));
  for (i64 i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(static_cast<u64>(i) + 1)]);
  return perm;
}

}  // namespace

bool is_generator_spec(const std::string& spec) { return spec.rfind("gen:", 0) == 0; }

Csr<double> generate(const std::string& spec) {
  const Spec s = parse_spec(spec);
  Csr<double> a;
  if (s.name == "lap2d" || s.name == "lap3d") a = gen_lap(spec, s);
  else if (s.name == "elast3d") a = gen_elast3d(spec, s);
  else if (s.name == "band") a = gen_band(spec, s);
  else if (s.name == "random") a = gen_random(spec, s);
  else if (s.name == "rmat") a = gen_rmat(spec, s);
  else if (s.name == "rgg") a = gen_rgg(spec, s);
  else if (s.name == "neumann2d" || s.name == "neumann3d") a = gen_neumann(spec, s);
  else if (s.name == "jump2d" || s.name == "jump3d") a = gen_jump(spec, s);
  else if (s.name == "stiff") a = gen_stiff(spec, s);
  else if (s.name == "convdiff2d" || s.name == "convdiff3d") a = gen_convdiff(spec, s);
  else if (s.name == "helmholtz2d" || s.name == "helmholtz3d") a = gen_helmholtz(spec, s);
  else if (s.name == "counts") a = gen_counts(spec, s);
  else bad(spec, "unknown generator '" + s.name + "' (known: lap2d, lap3d, elast3d, band, random, rmat, rgg, "
                 "neumann2d, neumann3d, jump2d, jump3d, stiff, convdiff2d, convdiff3d, helmholtz2d, helmholtz3d, counts)");
  if (s.scramble) a = permute_symmetric(a, random_permutation(a.nrows, s.seed));
  return a;
}

std::int64_t generator_rows(const std::string& spec) {
  const Spec s = parse_spec(spec);
  if (s.name != "lap2d" && s.name != "lap3d") return -1;
  i64 nx, ny, nz;
  lap_extents(spec, s, nx, ny, nz);
  return nx * ny * nz;
}

Csr<double> generate_rows(const std::string& spec, std::int64_t r0, std::int64_t r1) {
  const Spec s = parse_spec(spec);
  if ((s.name == "lap2d" || s.name == "lap3d") && !s.scramble) return gen_lap(spec, s, r0, r1);
  const Csr<double> a = generate(spec);
  if (r0 < 0 || r1 > a.nrows || r0 > r1)
    bad(spec, "row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside the matrix");
  Csr<double> out;
  out.nrows = r1 - r0;
  out.ncols = a.ncols;
  out.symmetry = out.nrows == a.nrows ? a.symmetry : Symmetry::general;
  out.row_ptr.assign(a.row_ptr.begin() + r0, a.row_ptr.begin() + r1 + 1);
  const i64 base = out.row_ptr[0];
  for (auto& p : out.row_ptr) p -= base;
  out.col_idx.assign(a.col_idx.begin() + base, a.col_idx.begin() + base + out.row_ptr.back());
  out.values.assign(a.values.begin() + base, a.values.begin() + base + out.row_ptr.back());
  return out;
}

}  // namespace tcsolve
