// Pseudo-block GMRES(m)'s kernels (solvers/krylov/gmres.cpp says where each runs): the fused
// Gram-Schmidt passes over the basis, the per-column Arnoldi/Givens step, the normalization (with
// the Jacobi scaling of the next iteration's input), the cycle's triangular solve and update.
// The CPU reference (gmres_kernels.cpp, namespace krylov::gmres::cpu) and the CUDA version
// (gmres_kernels.cu, namespace krylov::gmres::cuda, on ctx.stream) have the same names and arguments
// (the entries of Kernels below); a CPU-only build links gmres_kernels_stub.cpp instead of the CUDA
// file. kernels_for(space) picks the table. The per-column arithmetic (column_*) is written once, below,
// for the host and the device alike.
//
// Shapes: n rows; a basis of blocks V_0, V_1, ... each n × cols (column c of block i at
// v.data + i·v.stride + c·v.ld; the solver's blocks are n × s, of which the first `cols` are
// active); small matrices (coefficients, the per-column state) are ordinary column-major blocks
// in the same space, column c belonging to basis column c.
#pragma once
#include <math.h>

#include <cstdint>

#include "core/multivector.hpp"
#include "core/types.hpp"

#ifndef TCSOLVE_HOST_DEVICE
#ifdef __CUDACC__
#define TCSOLVE_HOST_DEVICE __host__ __device__
#else
#define TCSOLVE_HOST_DEVICE
#endif
#endif

namespace tcsolve::krylov::gmres {

// Basis blocks: V_i(:, c) at data + i·stride + c·ld (i < the blocks a call names).
struct Basis {
  double* data = nullptr;
  std::int64_t rows = 0, ld = 0, stride = 0, cols = 0;
  double* block(std::int64_t i) const { return data + i * stride; }
};

// Per-column state of one cycle, column c of a small block of rows(m) rows:
//   [kEst] |g_{k}|, the residual estimate (scaled units)   [kFrozen] 1: the column stopped
//   [kLen] k_c, the Arnoldi steps it took                  [kInvNorm] 1/h_{k,k−1} (0 once frozen)
//   [kTarget] the estimate it must reach                   [kBeta] ‖r_0‖ of the cycle
//   R (m × m, upper triangular, column-major: R = Qᵀ·H after the Givens rotations), the rotations'
//   cosines and sines (m each), g = Qᵀ·β·e_1 (m + 1), y = R⁻¹·g (m; 0 beyond k_c).
// The first three rows are what the host fetches each iteration.
struct StateLayout {
  static constexpr int kEst = 0, kFrozen = 1, kLen = 2, kInvNorm = 3, kTarget = 4, kBeta = 5;
  static constexpr int kFetched = 3;  // rows 0..2
  int m = 0;
  TCSOLVE_HOST_DEVICE std::int64_t r() const { return 8; }
  TCSOLVE_HOST_DEVICE std::int64_t cs() const { return r() + std::int64_t(m) * m; }
  TCSOLVE_HOST_DEVICE std::int64_t sn() const { return cs() + m; }
  TCSOLVE_HOST_DEVICE std::int64_t g() const { return sn() + m; }
  TCSOLVE_HOST_DEVICE std::int64_t y() const { return g() + m + 1; }
  TCSOLVE_HOST_DEVICE std::int64_t rows() const { return y() + m; }
};

// h_{j+1,j} at or below kBreakdown·‖(h_{0..j,j}, h_{j+1,j})‖: w lies in span(V_0..V_j) to working
// precision (a happy breakdown; the Krylov space is invariant); the column's cycle ends there.
constexpr double kBreakdown = 1e-12;

// ---- the per-column arithmetic (host and device) ------------------------------------------
// (::sqrt, ::hypot, ::fabs: declared for host and device alike; x − x == 0 only for finite x.)

TCSOLVE_HOST_DEVICE inline bool is_finite(double x) { return x - x == 0.0; }

// Cycle start: g = β·e_1 (g_0 is all of g, R, the rotations and y that a step reads before it
// writes them), the column frozen when β is 0 or already at its target (the target row is set by
// the caller beforehand).
TCSOLVE_HOST_DEVICE inline void column_start(const StateLayout& L, double beta, double* st) {
  st[L.g()] = beta;
  st[StateLayout::kBeta] = beta;
  st[StateLayout::kEst] = beta;
  st[StateLayout::kLen] = 0.0;
  const bool done = !(beta > st[StateLayout::kTarget]);
  st[StateLayout::kFrozen] = done ? 1.0 : 0.0;
  st[StateLayout::kInvNorm] = 0.0;
}

// Arnoldi step j of one column: h_{0..j,j} = h1 + h2 (the two Gram-Schmidt passes' coefficients),
// h_{j+1,j} = √nrm2; the earlier rotations applied to the new column of H, a new rotation that
// zeroes h_{j+1,j}, g updated, |g_{j+1}| the residual estimate of x_0 + M⁻¹·V·y. The column stops
// (frozen, 1/h_{j+1,j} = 0 so that its next basis vector is 0) when the estimate reaches the
// target, on a happy breakdown, or when something is not finite. A step whose rotated diagonal is
// at rounding size (≤ kBreakdown·‖H(:, j)‖: A singular on the Krylov space) is not kept: k_c stays j.
TCSOLVE_HOST_DEVICE inline void column_arnoldi(const StateLayout& L, int j, const double* h1,
                                               const double* h2, double nrm2, double* st) {
  if (st[StateLayout::kFrozen] != 0.0) return;
  double* hc = st + L.r() + std::int64_t(j) * L.m;  // column j of R
  double scale = 0.0;
  for (int i = 0; i <= j; ++i) {
    hc[i] = h1[i] + h2[i];
    scale += hc[i] * hc[i];
  }
  const double hn = ::sqrt(nrm2 > 0.0 ? nrm2 : 0.0);
  scale = ::sqrt(scale + hn * hn);
  const double* cs = st + L.cs();
  const double* sn = st + L.sn();
  for (int i = 0; i < j; ++i) {
    const double t = cs[i] * hc[i] + sn[i] * hc[i + 1];
    hc[i + 1] = -sn[i] * hc[i] + cs[i] * hc[i + 1];
    hc[i] = t;
  }
  const double a = hc[j], rho = ::hypot(a, hn);
  double* g = st + L.g();
  const bool finite = is_finite(rho) && is_finite(scale);
  // rho ≤ kBreakdown·‖H(:, j)‖: both the rotated diagonal and h_{j+1,j} are rounding, i.e. A is
  // singular on the Krylov space; kept, 1/rho would blow y up (a nilpotent 3 × 3 A: residual 3.27
  // against x = 0's 1). Not kept: y solves the least-squares problem of the steps before.
  if (!(rho > kBreakdown * scale) || !finite) {  // nothing new (or garbage): the column's cycle ends
    st[StateLayout::kFrozen] = 1.0;
    st[StateLayout::kInvNorm] = 0.0;
    if (!finite) st[StateLayout::kEst] = rho;  // (NaN/inf: the host sees it)
    return;
  }
  const double c = a / rho, s = hn / rho;
  st[L.cs() + j] = c;
  st[L.sn() + j] = s;
  hc[j] = rho;
  g[j + 1] = -s * g[j];
  g[j] = c * g[j];
  const double est = ::fabs(g[j + 1]);
  st[StateLayout::kEst] = est;
  st[StateLayout::kLen] = j + 1;
  const bool stop = est <= st[StateLayout::kTarget] || hn <= kBreakdown * scale;
  st[StateLayout::kFrozen] = stop ? 1.0 : 0.0;
  st[StateLayout::kInvNorm] = stop ? 0.0 : 1.0 / hn;
}

// y = R⁻¹·g over the column's k_c steps (back substitution), 0 beyond.
TCSOLVE_HOST_DEVICE inline void column_solve(const StateLayout& L, double* st) {
  const int k = static_cast<int>(st[StateLayout::kLen]);
  const double* R = st + L.r();
  const double* g = st + L.g();
  double* y = st + L.y();
  for (int i = L.m - 1; i >= k; --i) y[i] = 0.0;
  for (int i = k - 1; i >= 0; --i) {
    double t = g[i];
    for (int l = i + 1; l < k; ++l) t -= R[i + std::int64_t(l) * L.m] * y[l];
    y[i] = t / R[i + std::int64_t(i) * L.m];
  }
}

// ---- the kernels ---------------------------------------------------------------------------

// What a call needs besides its operands: the stream (CUDA; nullptr on the CPU) and the
// reduction workspace (partial sums: `partial_size` doubles in the kernels' space, sized by
// partial_doubles below), `workers` host threads (CPU).
struct Context {
  void* stream = nullptr;
  double* partial = nullptr;
  std::int64_t partial_size = 0;
  int workers = 1;
};

// The table of one backend (kernels_for). In every entry `cols` columns are active.
struct Kernels {
  // Doubles of reduction workspace for n rows, up to kmax coefficients a column, s columns.
  std::int64_t (*partial_doubles)(std::int64_t n, std::int64_t kmax, std::int64_t s, int workers);
  // One fused Gram-Schmidt pass over w (n × cols) and the blocks V_0..V_{k−1}:
  //   w_c ← w_c − Σ_i V_i(:,c)·coef(i,c)      (coef: k × cols, nullptr: no update)
  //   out(i, c) = V_i(:,c)ᵀ·w_c, i < k         (the updated w_c; when dots)
  //   out(norm_row, c) = ‖w_c‖²                (when norm_row ≥ 0)
  // Reads w and the k blocks once, writes w once when it updates (the dots re-read the blocks of
  // the row tile just updated, from cache). out may be the coef matrix (other rows).
  void (*ortho_pass)(const Context& ctx, const Basis& v, int k, MvView<double> w, MvView<const double> coef,
                     MvView<double> out, bool dots, int norm_row);
  // column_arnoldi for every column: h1, h2 ((j+1) × cols used), nrm2 = h2(norm_row, c).
  void (*arnoldi_step)(const Context& ctx, const StateLayout& L, int j, MvView<const double> h1,
                       MvView<const double> h2, int norm_row, MvView<double> state);
  // column_start for every column: β_c = beta(c, 0).
  void (*start_cycle)(const Context& ctx, const StateLayout& L, MvView<const double> beta,
                      MvView<double> state);
  // w_c ← w_c·state(kInvNorm, c) in place; when d (n doubles): z = diag(d)·w as well
  // (the next iteration's M⁻¹·v). One pass (reads w, d; writes w, z).
  void (*normalize)(const Context& ctx, MvView<double> w, MvView<const double> state, const double* d,
                    MvView<double> z);
  // column_solve for every column.
  void (*solve_triangular)(const Context& ctx, const StateLayout& L, MvView<double> state);
  // u_c = diag(d)·Σ_{i<k} V_i(:,c)·y(i, c) (d nullptr: no scaling); y = the state's y rows.
  // Reads the k blocks, writes u.
  void (*combine)(const Context& ctx, const StateLayout& L, const Basis& v, int k, MvView<const double> state,
                  const double* d, MvView<double> u);
};

// Each backend's table: the functions of the same names in gmres_kernels.cpp (cpu) and
// gmres_kernels.cu (cuda; gmres_kernels_stub.cpp in a CPU-only build, where it throws NotCompiled).
namespace cpu {
Kernels kernels();
}  // namespace cpu
namespace cuda {
Kernels kernels();
}  // namespace cuda

// The CPU table for Space::host, the CUDA one for Space::device.
Kernels kernels_for(Space space);

}  // namespace tcsolve::krylov::gmres
