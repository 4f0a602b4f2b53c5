// Pseudo-block GMRES(m)'s kernels on the CPU (gmres_kernels.hpp; the CUDA twin is
// gmres_kernels.cu). The tall passes split the rows into ctx.workers contiguous ranges (one per
// thread, core/parallel.hpp), each range walked in tiles of kTile rows so that a tile of w and of
// the k basis blocks stays in the core's cache between the update and the dot products; each
// range writes its partial sums to its own slice of ctx.partial, added in range order afterwards
// (the same sums for the same thread count).
#include "solvers/krylov/gmres_kernels.hpp"

#include <Eigen/Dense>
#include <algorithm>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve::krylov::gmres {

namespace cpu {

namespace {

constexpr std::int64_t kTile = 512;           // rows: 4 KB of each block, 4·(k + 1) KB a tile
constexpr std::int64_t kRowsPerRange = 4096;  // below this many rows a range is not worth a thread

// body(t, r0, r1) for the row ranges [r0, r1) of n rows, one a thread (t < ranges(n, workers)).
int ranges(std::int64_t n, int workers) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(workers, n / kRowsPerRange)));
}
template <class Body>
void for_row_ranges(std::int64_t n, int workers, Body body) {
  const int nr = ranges(n, workers);
  parallel_for(nr, [&](std::int64_t t) { body(t, n * t / nr, n * (t + 1) / nr); }, 1);
}

// The tile [b, e) of column c: the update, then the dot products and the norm (acc: k dots, then
// the norm). V(:, c) over the blocks is a column-major (e − b) × k matrix with leading dimension
// v.stride, so both are GEMVs (Eigen's vectorized kernels; a scalar dot loop is one FMA latency
// an element: 6× slower at 10,000 × 32).
void pass_tile(const Basis& v, int k, double* w, const double* coef, bool dots, bool norm, std::int64_t c,
               std::int64_t b, std::int64_t e, double* acc) {
  using Stride = Eigen::OuterStride<>;
  const Eigen::Map<const Eigen::MatrixXd, 0, Stride> vt(v.data + c * v.ld + b, e - b, k, Stride(v.stride));
  Eigen::Map<Eigen::VectorXd> wt(w + b, e - b);
  if (coef) {  // (axpys: Eigen's column-major GEMV here took twice the time of the dots)
    double* __restrict wr = w;
    for (int i = 0; i < k; ++i) {
      const double* __restrict vi = v.data + i * v.stride + c * v.ld;
      const double a = coef[i];
      for (std::int64_t r = b; r < e; ++r) wr[r] -= vi[r] * a;
    }
  }
  if (dots) Eigen::Map<Eigen::VectorXd>(acc, k).noalias() += vt.transpose() * wt;
  if (norm) acc[dots ? k : 0] += wt.squaredNorm();
}

std::int64_t partial_doubles(std::int64_t /*n*/, std::int64_t kmax, std::int64_t s, int workers) {
  return std::max(1, workers) * s * (kmax + 1);
}

void ortho_pass(const Context& ctx, const Basis& v, int k, MvView<double> w, MvView<const double> coef,
                MvView<double> out, bool dots, int norm_row) {
  const std::int64_t n = w.rows, cols = w.cols;
  const bool norm = norm_row >= 0;
  const int K = (dots ? k : 0) + (norm ? 1 : 0);
  const int nr = ranges(n, ctx.workers);
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(nr) * cols * K <= ctx.partial_size,
                  "gmres ortho_pass: workspace");
  for_row_ranges(n, ctx.workers, [&](std::int64_t t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t c = 0; c < cols; ++c) {
      double* acc = ctx.partial + (t * cols + c) * K;
      std::fill(acc, acc + K, 0.0);
      const double* cf = coef.data ? coef.data + c * coef.ld : nullptr;
      for (std::int64_t b = r0; b < r1; b += kTile)
        pass_tile(v, k, w.col(c), cf, dots, norm, c, b, std::min(b + kTile, r1), acc);
    }
  });
  if (K == 0) return;
  for (std::int64_t c = 0; c < cols; ++c) {
    double* o = out.col(c);
    for (int i = 0; i < K; ++i) {
      double s = 0.0;
      for (int t = 0; t < nr; ++t) s += ctx.partial[(t * cols + c) * K + i];
      o[dots && i < k ? i : norm_row] = s;
    }
  }
}

void arnoldi_step(const Context&, const StateLayout& L, int j, MvView<const double> h1,
                  MvView<const double> h2, int norm_row, MvView<double> state) {
  for (std::int64_t c = 0; c < state.cols; ++c)
    column_arnoldi(L, j, h1.col(c), h2.col(c), h2.col(c)[norm_row], state.col(c));
}

void start_cycle(const Context&, const StateLayout& L, MvView<const double> beta, MvView<double> state) {
  for (std::int64_t c = 0; c < state.cols; ++c) column_start(L, beta.data[c], state.col(c));
}

void normalize(const Context& ctx, MvView<double> w, MvView<const double> state, const double* d,
               MvView<double> z) {
  for_row_ranges(w.rows, ctx.workers, [&](std::int64_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const double a = state.col(c)[StateLayout::kInvNorm];
      double* wc = w.col(c);
      for (std::int64_t r = r0; r < r1; ++r) wc[r] *= a;
      if (!d) continue;
      double* zc = z.col(c);
      for (std::int64_t r = r0; r < r1; ++r) zc[r] = d[r] * wc[r];
    }
  });
}

void solve_triangular(const Context&, const StateLayout& L, MvView<double> state) {
  for (std::int64_t c = 0; c < state.cols; ++c) column_solve(L, state.col(c));
}

void combine(const Context& ctx, const StateLayout& L, const Basis& v, int k, MvView<const double> state,
             const double* d, MvView<double> u) {
  for_row_ranges(u.rows, ctx.workers, [&](std::int64_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t c = 0; c < u.cols; ++c) {
      const double* y = state.col(c) + L.y();
      double* uc = u.col(c);
      std::fill(uc + r0, uc + r1, 0.0);
      for (int i = 0; i < k; ++i) {
        const double* vi = v.block(i) + c * v.ld;
        for (std::int64_t r = r0; r < r1; ++r) uc[r] += vi[r] * y[i];
      }
      if (!d) continue;
      for (std::int64_t r = r0; r < r1; ++r) uc[r] *= d[r];
    }
  });
}

}  // namespace

Kernels kernels() {
  return {partial_doubles, ortho_pass, arnoldi_step, start_cycle, normalize, solve_triangular, combine};
}

}  // namespace cpu

Kernels kernels_for(Space space) { return space == Space::device ? cuda::kernels() : cpu::kernels(); }

}  // namespace tcsolve::krylov::gmres
