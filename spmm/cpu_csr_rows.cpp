// The CPU's CSR kernels on row-major blocks (spmm/cpu_csr_kernels.hpp: step_rows, from_rows): the
// Chebyshev filter's iterates kept by rows across its steps, each step gathering cur where it lies
// and writing next in place; X back to column-major at the filter's end.
#include "spmm/cpu_csr_simd.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve::detail {

namespace {

// X(i, c) = Z[i·ldz + c] for rows [r0, r1), c < k (stage_rows inverted): 4×4 transposes, scalars
// for the rows and columns left over.
TCSOLVE_CPU_CLONES void unstage_part64(const double* z, std::int64_t ldz, std::int64_t r0, std::int64_t r1, int k,
                                       double* x, std::int64_t ldx) {
  const int k4 = k / 4 * 4;
  const std::int64_t r4 = r0 + (r1 - r0) / 4 * 4;
  for (int c = 0; c < k4; c += 4) {
    double *x0 = x + c * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
    for (std::int64_t i = r0; i < r4; i += 4) {
      V4<double> v0 = load4(z + i * ldz + c), v1 = load4(z + (i + 1) * ldz + c);
      V4<double> v2 = load4(z + (i + 2) * ldz + c), v3 = load4(z + (i + 3) * ldz + c);
      transpose4<double>(v0, v1, v2, v3);
      store4(x0 + i, v0), store4(x1 + i, v1), store4(x2 + i, v2), store4(x3 + i, v3);
    }
    for (std::int64_t i = r4; i < r1; ++i)
      for (int l = 0; l < 4; ++l) x[i + (c + l) * ldx] = z[i * ldz + c + l];
  }
  for (int c = k4; c < k; ++c)
    for (std::int64_t i = r0; i < r1; ++i) x[i + c * ldx] = z[i * ldz + c];
}

// next(i, j) = a·(A·cur)(i, j) + b·cur(i, j) (+ c·next(i, j)) for j ∈ [j0, j1), rows [r0, r1):
// the sums of the columns [c0, c0 + 4Q) (whole vectors, c0 a multiple of 4), stored only inside
// [j0, j1). The same expression, in the same order, as step_epilogue: bitwise the column step.
template <int W>
struct RowsStep {
  static TCSOLVE_ALWAYS_INLINE void run(const CsrPtrs& a, std::int64_t r0, std::int64_t r1,
                                        const ZRows<double, false>& zr, int c0, std::int64_t j0, std::int64_t j1,
                                        const StepCoefs& co, double* next) {
    if constexpr (W % 4 == 0) {
      constexpr int Q = W / 4;
      const bool with_next = co.c != 0.0;
      for (std::int64_t i = r0; i < r1; ++i) {
        V4<double> s[Q];
        row_sums<Q, double>(a, i, zr, c0, s);
        const double* xi = zr.row(i) + c0;
        double* ni = next + i * zr.ldz + c0;
        for (int q = 0; q < Q; ++q) {
          V4<double> o = co.a * s[q] + co.b * load4(xi + 4 * q);
          if (with_next) o = madd4(co.c, load4(ni + 4 * q), o);
          const std::int64_t col = c0 + 4 * q;
          if (col >= j0 && col + 4 <= j1) {
            store4(ni + 4 * q, o);
          } else {
            for (int l = 0; l < 4; ++l)
              if (col + l >= j0 && col + l < j1) ni[4 * q + l] = o[l];
          }
        }
      }
    }
  }
};

TCSOLVE_CPU_CLONES void step_rows_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const double* cur,
                                       double* next, std::int64_t ld, std::int64_t j0, std::int64_t j1,
                                       const StepCoefs& co) {
  const ZRows<double, false> zr{cur, ld, 0, 0, 0, nullptr, 0, 0};
  const std::int64_t c1 = (j1 + 3) / 4 * 4;
  for (std::int64_t c0 = j0 / 4 * 4; c0 < c1; c0 += kMaxWidth) {
    const int w = static_cast<int>(std::min<std::int64_t>(kMaxWidth, c1 - c0));
    with_width<RowsStep>(w, a, r0, r1, zr, static_cast<int>(c0), j0, j1, co, next);
  }
}

}  // namespace

void CpuCsrKernels::from_rows(const double* z, std::int64_t ld, MvView<double> x) const {
  check_block(MvView<const double>(x), a_.ncols, x.cols, "X");
  TCSOLVE_REQUIRE(ld >= x.cols, "CPU CSR kernel: rows of " + std::to_string(ld) + " doubles for " +
                                    std::to_string(x.cols) + " columns");
  const int np = parts();
  const std::int64_t m = x.rows;
  const int k = static_cast<int>(x.cols);
  parallel_parts(np, [&](int p) { unstage_part64(z, ld, m * p / np, m * (p + 1) / np, k, x.data, x.ld); });
}

void CpuCsrKernels::step_rows(const StepCoefs& s, const double* cur, double* next, std::int64_t ld, std::int64_t j0,
                              std::int64_t j1) const {
  TCSOLVE_REQUIRE(a_.square(), "chebyshev step: A must be square");
  TCSOLVE_REQUIRE(s.e == 0.0 && !s.f && !s.d, "CPU CSR kernel: the step by rows has no r term and no row scales");
  TCSOLVE_REQUIRE(ld % 4 == 0 && 0 <= j0 && j0 <= j1 && j1 <= ld,
                  "CPU CSR kernel: columns [" + std::to_string(j0) + ", " + std::to_string(j1) + ") of rows of " +
                      std::to_string(ld) + " doubles");
  if (j0 == j1 || a_.nrows == 0) return;
  const CsrPtrs ap{a_.row_ptr.data(), a_.col_idx.data(), a_.values.data(), a_.nnz()};
  parallel_parts(parts(), [&](int p) { step_rows_part(ap, row_begin(p), row_begin(p + 1), cur, next, ld, j0, j1, s); });
}

}  // namespace tcsolve::detail
