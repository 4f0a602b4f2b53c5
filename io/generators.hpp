// Deterministic test-matrix generators, addressed as "gen:NAME:PARAMS[+scramble][@SEED]".
//   gen:lap2d:NX[xNY]     5-point Dirichlet Laplacian, 4 on the diagonal, -1 per neighbour
//   gen:lap3d:N           7-point, 6 on the diagonal (N³ rows)
//   gen:elast3d:N         SPD, 3 unknowns per node of an N³ grid, 27-point node coupling
//   gen:band:N:B          random values within bandwidth B (|i-j| <= B), SMaT's band matrices
//   gen:random:N:K        about K random non-zeros per row (diagonal included)
//   gen:rmat:SCALE:EF     Laplacian of an R-MAT power-law graph (2^SCALE nodes, EF·2^SCALE edges)
//   gen:rgg:N[:C]         Laplacian of a random geometric graph with exactly C connected
//                         components (default 1): eigenvalue 0 with multiplicity C
//   gen:neumann2d:NX[xNY], gen:neumann3d:N   the grid graph's Laplacian (Neumann): singular, 0 once
//   gen:jump2d:N:CONTRAST, gen:jump3d:N:CONTRAST   −∇·(κ∇u), κ on 8^d random blocks, log-uniform
//                         over CONTRAST (e.g. 1e6): SPD, coefficient jumps
//   gen:stiff:N:M[:NORM]  elast3d:N scaled to ‖A‖ ≈ NORM (default 4e9) with M constrained degrees
//                         of freedom (unit rows): the M smallest eigenvalues are exactly 1
//   gen:convdiff2d:N[:PE], gen:convdiff3d:N[:PE]   −Δu + PE·b·∇u on the unit square/cube, |b| = 1
//                         along the diagonal, PE the global Péclet number (default 10), first-order
//                         upwind: UNSYMMETRIC (for PE > 0) nonsingular M-matrix at any PE
//   gen:helmholtz2d:N[:K], gen:helmholtz3d:N[:K]   −Δu − K²u, K the wavenumber: symmetric,
//                         INDEFINITE for K > π√d; without K the shift is
//                         helmholtz_default_shift(d, N) (below): a few dozen negative
//                         eigenvalues, none near 0
//   gen:counts:CELLS:GENES[:DENSITY]   single-cell-like counts, CELLS × GENES (RECTANGULAR,
//                         general): power-law gene means, 1 + geometric (negative binomial r = 1)
//                         counts, DENSITY (default 0.04, at most 0.5) of the entries stored
//                         (io/generators_counts.cpp); no +scramble
//   +scramble             random symmetric permutation P·A·Pᵀ (same seed -> same permutation)
//   @SEED                 seed (default 1); "+scramble" and "@SEED" may come in either order
// Every generated matrix but counts is square. All but counts are symmetric (Csr::symmetry = symmetric) but convdiff with
// PE > 0 (general: the app layer trusts the flag, apps/job/cache.cpp); positive definite but the
// graph Laplacians rmat, rgg and neumann (singular), helmholtz (indefinite for large K) and
// convdiff (positive real eigenvalues, not symmetric). Grid families other than lap/elast use h = 1/(N + 1)
// and scale by h² (io/generators_pde.cpp). Same spec -> bitwise the same matrix.
//
// Contract: generate() is a pure function of its spec string: the same spec gives bitwise the
// same canonical Csr<double> (core/csr.hpp); a malformed spec or out-of-range parameter throws
// InvalidArgument naming the spec and the bad part.
#pragma once
#include <string>

#include "core/csr.hpp"

namespace tcsolve {

bool is_generator_spec(const std::string& spec);

// Throws InvalidArgument naming the spec and the bad part.
Csr<double> generate(const std::string& spec);

// Rows [r0, r1) of generate(spec) (nrows = r1 − r0, ncols = n, global column indices), for a
// rank of a distributed run: lap2d/lap3d build only those rows; the others build the whole matrix
// and keep the range. generator_rows: n without building anything (lap2d/lap3d), else -1.
Csr<double> generate_rows(const std::string& spec, std::int64_t r0, std::int64_t r1);
std::int64_t generator_rows(const std::string& spec);

// The shift σ of gen:helmholtz{dims}d:N without K, in the generated matrix's units (its stencil
// 2·dims, −1; σ = (K·h)², h = 1/(N + 1)): the middle of the widest gap between consecutive
// eigenvalues λ_(m−1) < λ_m of the Dirichlet Laplacian (sorted, with multiplicity) over
// m = min(24, ⌊n/2⌋) .. min(40, n − 1), n = N^dims points (a single point: σ = λ_0/2, m = 0).
// The matrix then has exactly `below` = m negative eigenvalues and none closer to 0 than gap/2.
struct HelmholtzShift {
  double sigma = 0;        // (K·h)²
  double k = 0;            // the wavenumber K = √σ / h
  std::int64_t below = 0;  // eigenvalues of the Laplacian below σ (with multiplicity)
  double gap = 0;          // λ_m − λ_(m−1), the gap σ sits in the middle of
};
HelmholtzShift helmholtz_default_shift(int dims, std::int64_t n);

}  // namespace tcsolve
