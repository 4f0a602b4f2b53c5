// PDE-like families on regular grids (grammar in io/generators.hpp), chosen for what they do to
// solvers rather than for physics:
//   jump2d/jump3d        −∇·(κ∇u) with κ piecewise constant on 8^d random blocks spanning a
//                        contrast (SPD; clustered small eigenvalues, large condition numbers);
//   stiff                a stiffness-like SPD matrix with a large norm and M constrained degrees
//                        of freedom: eigenvalue 1 with multiplicity M far below the rest;
//   convdiff2d/3d        −Δu + Pe·b·∇u, upwind (unsymmetric, nonsingular M-matrix; Pe = 10
//                        unless given);
//   helmholtz2d/3d       −Δu − K²u (symmetric indefinite once K > π√d; without K a shift in a
//                        gap of the spectrum with a few dozen eigenvalues below it).
// Grids have h = 1/(N + 1) and Dirichlet boundaries (missing neighbours dropped); the operators
// are scaled by h² so that their entries are O(1) (the Laplacian's stencil 2d, −1).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "io/generator_common.hpp"
#include "io/generators.hpp"

namespace tcsolve::gen {
namespace {

struct Grid {
  i64 nx = 1, ny = 1, nz = 1;
  int dims = 2;
  i64 rows() const { return nx * ny * nz; }
  i64 step(int axis) const { return axis == 0 ? 1 : axis == 1 ? nx : nx * ny; }
  i64 extent(int axis) const { return axis == 0 ? nx : axis == 1 ? ny : nz; }
  i64 coord(i64 r, int axis) const { return (r / step(axis)) % extent(axis); }
};

// N (2D: N × N, 3D: N³) from the first parameter; the family's dimension from its name's "2d"/"3d".
Grid grid_param(const std::string& spec, const Spec& s) {
  Grid g;
  g.dims = s.name.find("3d") != std::string::npos ? 3 : 2;
  const i64 n = size_param(spec, "N", s.params[0], g.dims == 3 ? 1290 : max_rows);
  g.nx = g.ny = n;
  g.nz = g.dims == 3 ? n : 1;
  check_rows(spec, static_cast<long double>(g.nx) * g.ny * g.nz);
  return g;
}

// A grid operator: row r holds diag(r) and, for each existing neighbour q = r ± step(axis),
// off(r, axis, ±1). Rows in increasing column order, filled in parallel.
template <class Diag, class Off>
Csr<double> grid_operator(const Grid& g, Symmetry sym, Diag diag, Off off) {
  const i64 n = g.rows();
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.symmetry = sym;
  a.row_ptr.assign(n + 1, 0);
  parallel_for(n, [&](i64 r) {
    i64 len = 1;
    for (int ax = 0; ax < g.dims; ++ax) len += (g.coord(r, ax) > 0) + (g.coord(r, ax) + 1 < g.extent(ax));
    a.row_ptr[r + 1] = len;
  }, 4096);
  for (i64 r = 0; r < n; ++r) a.row_ptr[r + 1] += a.row_ptr[r];
  a.col_idx.resize(a.nnz());
  a.values.resize(a.nnz());
  parallel_for(n, [&](i64 r) {
    i64 p = a.row_ptr[r];
    auto put = [&](i64 c, double v) {
      a.col_idx[p] = static_cast<std::int32_t>(c);
      a.values[p++] = v;
    };
    for (int ax = g.dims - 1; ax >= 0; --ax)
      if (g.coord(r, ax) > 0) put(r - g.step(ax), off(r, ax, -1));
    put(r, diag(r));
    for (int ax = 0; ax < g.dims; ++ax)
      if (g.coord(r, ax) + 1 < g.extent(ax)) put(r + g.step(ax), off(r, ax, +1));
  }, 4096);
  return a;
}

}  // namespace

// κ is constant on each of B^d blocks (B = min(8, N)), log10 κ uniform in [0, log10 CONTRAST];
// the face between nodes p, q carries the harmonic mean 2κpκq/(κp + κq); a boundary node's
// missing neighbour adds κp to its diagonal (Dirichlet). A = Σ faces: SPD.
Csr<double> gen_jump(const std::string& spec, const Spec& s) {
  expect_params(spec, s, 2, "N:CONTRAST");
  const Grid g = grid_param(spec, s);
  const double contrast = real_param(spec, "CONTRAST", s.params[1], 1e15);
  if (contrast < 1) bad(spec, "CONTRAST = " + s.params[1] + " must be at least 1");
  const i64 b = std::min<i64>(8, g.nx);
  auto kappa = [&](i64 r) {
    u64 block = 0;
    for (int ax = g.dims - 1; ax >= 0; --ax) block = block * b + g.coord(r, ax) * b / g.extent(ax);
    return std::pow(10.0, unit(hash3(s.seed, s_jump, block)) * std::log10(contrast));
  };
  std::vector<double> k(g.rows());
  parallel_for(g.rows(), [&](i64 r) { k[r] = kappa(r); }, 4096);
  auto face = [&](i64 p, i64 q) { return 2.0 * k[p] * k[q] / (k[p] + k[q]); };
  auto diag = [&](i64 r) {
    double d = 0;
    for (int ax = 0; ax < g.dims; ++ax) {
      d += g.coord(r, ax) > 0 ? face(r, r - g.step(ax)) : k[r];
      d += g.coord(r, ax) + 1 < g.extent(ax) ? face(r, r + g.step(ax)) : k[r];
    }
    return d;
  };
  auto off = [&](i64 r, int ax, int dir) { return -face(r, r + dir * g.step(ax)); };
  return grid_operator(g, Symmetry::symmetric, diag, off);
}

// gen:elast3d:N (same seed) scaled by NORM/‖K‖∞ (so ‖A‖₂ ≲ NORM, default 4e9), then M distinct
// degrees of freedom drawn at random are constrained: their rows and columns replaced by a unit
// diagonal, as a finite-element code imposes u_i = 0. Eigenvalue 1 with multiplicity exactly M;
// the rest is the scaled stiffness of the free degrees (≥ NORM·λmin(K)/‖K‖∞, far above 1 for
// the sizes the grammar allows), so the M smallest eigenvalues are all 1.
Csr<double> gen_stiff(const std::string& spec, const Spec& s) {
  expect_params_between(spec, s, 2, 3, "N:M[:NORM]");
  const i64 nodes = size_param(spec, "N", s.params[0], 894);
  const double norm = s.params.size() > 2 ? real_param(spec, "NORM", s.params[2], 1e300) : 4e9;
  Csr<double> k = generate("gen:elast3d:" + std::to_string(nodes) + "@" + std::to_string(s.seed));
  const i64 n = k.nrows;
  const i64 m = static_cast<i64>(parse_u64(spec, "M", s.params[1]));
  if (m >= n) bad(spec, "M = " + s.params[1] + " constrained rows must be fewer than the " + std::to_string(n) + " rows");
  const double scale = norm / csr_inf_norm(k);
  std::vector<std::int32_t> pick(n);
  std::iota(pick.begin(), pick.end(), 0);
  Xoshiro256 rng(hash3(s.seed, s_constrain, 0));
  for (i64 i = 0; i < m; ++i) std::swap(pick[i], pick[i + rng.below(static_cast<u64>(n - i))]);
  std::vector<char> fixed(n, 0);
  for (i64 i = 0; i < m; ++i) fixed[pick[i]] = 1;
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.symmetry = Symmetry::symmetric;
  a.row_ptr.assign(n + 1, 0);
  for (i64 i = 0; i < n; ++i) {
    i64 len = 0;
    if (fixed[i]) len = 1;
    else
      for (i64 p = k.row_ptr[i]; p < k.row_ptr[i + 1]; ++p) len += !fixed[k.col_idx[p]];
    a.row_ptr[i + 1] = a.row_ptr[i] + len;
  }
  a.col_idx.resize(a.nnz());
  a.values.resize(a.nnz());
  parallel_for(n, [&](i64 i) {
    i64 q = a.row_ptr[i];
    if (fixed[i]) {
      a.col_idx[q] = static_cast<std::int32_t>(i);
      a.values[q] = 1.0;
      return;
    }
    for (i64 p = k.row_ptr[i]; p < k.row_ptr[i + 1]; ++p)
      if (!fixed[k.col_idx[p]]) {
        a.col_idx[q] = k.col_idx[p];
        a.values[q++] = scale * k.values[p];
      }
  }, 1024);
  return a;
}

// h²·(−Δu + Pe·b·∇u) on the unit square/cube, b = (1, 1)/√2 (2D) or (1, 1, 1)/√3 (3D): |b| = 1,
// so PECLET (default 10) is the global Péclet number |w|·L/ν with L = 1 and ν = 1; per axis the
// mesh Péclet number is Pe·h·b_axis/2 = PECLET·h/(2√d). First-order upwind (b > 0: the backward
// difference), per axis with w = PECLET·h/√d: diagonal 2d + d·w, backward neighbour −1 − w,
// forward neighbour −1. Upwind rather than central differences: central ones give the forward
// neighbour −1 + w/2, positive once the mesh Péclet number exceeds 1 (PECLET > 2√d·(N + 1)),
// and the matrix stops being an M-matrix (oscillating solutions, complex eigenvalues); upwind
// keeps every off-diagonal negative and every row weakly diagonally dominant (strictly on the
// boundary), an irreducibly diagonally dominant M-matrix at ANY Péclet number: nonsingular,
// with real positive eigenvalues of a Kronecker sum of tridiag(−1 − w, 2 + w, −1). Unsymmetric
// (Symmetry::general) for PECLET > 0; PECLET = 0 is the Dirichlet Laplacian (symmetric).
Csr<double> gen_convdiff(const std::string& spec, const Spec& s) {
  expect_params_between(spec, s, 1, 2, "N[:PECLET]");
  const Grid g = grid_param(spec, s);
  const double pe = s.params.size() > 1 ? real_param(spec, "PECLET", s.params[1], 1e12, true) : 10.0;
  const double h = 1.0 / double(g.nx + 1), w = pe * h / std::sqrt(double(g.dims));
  auto diag = [&](i64) { return 2.0 * g.dims + g.dims * w; };
  auto off = [&](i64, int, int dir) { return dir < 0 ? -1.0 - w : -1.0; };
  return grid_operator(g, pe == 0 ? Symmetry::symmetric : Symmetry::general, diag, off);
}

// h²·(−Δu − K²u): the Dirichlet Laplacian's stencil with σ = (K·h)² taken off the diagonal.
// Eigenvalues Σ_axes 4·sin²(π·i_axis·h/2) − σ, i_axis = 1..N: indefinite once K > π·√d
// (about), singular when σ equals one of the Laplacian's eigenvalues. Without K, σ is
// helmholtz_default_shift(d, N): the middle of a gap of the Laplacian's spectrum with a few
// dozen eigenvalues below it, so the matrix is nonsingular.
Csr<double> gen_helmholtz(const std::string& spec, const Spec& s) {
  expect_params_between(spec, s, 1, 2, "N[:K]");
  const Grid g = grid_param(spec, s);
  const double sigma = s.params.size() > 1
                           ? std::pow(real_param(spec, "K", s.params[1], 1e12) / double(g.nx + 1), 2)
                           : helmholtz_default_shift(g.dims, g.nx).sigma;
  auto diag = [&](i64) { return 2.0 * g.dims - sigma; };
  auto off = [&](i64, int, int) { return -1.0; };
  return grid_operator(g, Symmetry::symmetric, diag, off);
}

}  // namespace tcsolve::gen

namespace tcsolve {

// The eigenvalues of the Dirichlet Laplacian's h²-scaled stencil are sums over the axes of
// μ_i = 4·sin²(π·i·h/2), increasing in i; the 41 smallest have every index ≤ 48 (the 49 tuples
// with indices ≤ 7 all lie below any sum holding μ_49), so the L = min(N, 48) first μ hold them:
// at most 48³ sums, about 1 ms.
// Among m = 24..40 eigenvalues below σ (on small grids from half of them to all but one), the
// widest gap λ_m − λ_(m−1) is taken and σ put at its middle: it is then at least half that
// gap, of the order of π²h², from every eigenvalue.
HelmholtzShift helmholtz_default_shift(int dims, std::int64_t n) {
  TCSOLVE_REQUIRE((dims == 2 || dims == 3) && n >= 1, "helmholtz_default_shift: dims 2 or 3, n >= 1");
  const std::int64_t L = std::min<std::int64_t>(n, 48);
  const double h = 1.0 / double(n + 1);
  std::vector<double> mu(static_cast<std::size_t>(L));
  for (std::int64_t i = 0; i < L; ++i) mu[i] = 4.0 * std::pow(std::sin(M_PI * double(i + 1) * h / 2), 2);
  std::vector<double> ev;
  for (std::int64_t i = 0; i < L; ++i)
    for (std::int64_t j = 0; j < L; ++j) {
      if (dims == 2) ev.push_back(mu[i] + mu[j]);
      else
        for (std::int64_t k = 0; k < L; ++k) ev.push_back(mu[i] + mu[j] + mu[k]);
    }
  const std::int64_t total = dims == 2 ? n * n : n * n * n;  // ≤ 2^31 (the generator's check)
  const std::size_t keep = std::min<std::size_t>(ev.size(), 41);
  std::partial_sort(ev.begin(), ev.begin() + keep, ev.end());
  HelmholtzShift out;
  if (total == 1) {
    out.sigma = ev[0] / 2;
    out.gap = ev[0];
  } else {
    const std::int64_t hi = std::min<std::int64_t>(40, total - 1);
    const std::int64_t lo = std::max<std::int64_t>(1, std::min<std::int64_t>(24, total / 2));
    std::int64_t m = lo;
    for (std::int64_t q = lo + 1; q <= hi; ++q)
      if (ev[q] - ev[q - 1] > ev[m] - ev[m - 1]) m = q;
    out.below = m;
    out.gap = ev[m] - ev[m - 1];
    out.sigma = 0.5 * (ev[m - 1] + ev[m]);
  }
  TCSOLVE_REQUIRE(out.gap > 0, "helmholtz_default_shift: no gap in the window");
  out.k = std::sqrt(out.sigma) * double(n + 1);
  return out;
}

}  // namespace tcsolve
