#include "spmm/chebyshev_step.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "spmm/cpu_csr_kernels.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve {

void ChebyshevStep::to_rows(MvView<const double>, double*, std::int64_t) const {
  throw Error("chebyshev step: " + describe() + " keeps no blocks by rows");
}
void ChebyshevStep::from_rows(const double*, std::int64_t, MvView<double>) const {
  throw Error("chebyshev step: " + describe() + " keeps no blocks by rows");
}
void ChebyshevStep::step_rows(double, const double*, double, double, double*, std::int64_t, std::int64_t,
                              std::int64_t) const {
  throw Error("chebyshev step: " + describe() + " keeps no blocks by rows");
}

namespace {

// The host step: the CPU CSR kernels' fused step (spmm/cpu_csr_kernels.hpp: cur staged
// row-major, rows in parts over the host threads) on the caller's A.
class HostChebyshevStep final : public ChebyshevStep {
 public:
  explicit HostChebyshevStep(const Csr<double>& a) : a_(a), kern_(a) {}
  Space space() const override { return Space::host; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    const std::int64_t n = a_.nrows, s = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && r.rows == n && next.cols == s && r.cols == s,
                    "chebyshev step: block shapes differ");
    detail::StepCoefs co;
    co.a = a, co.b = b, co.c = c, co.e = e, co.d = d;
    kern_.step(co, cur, next, r);
  }
  std::string describe() const override { return "fused CSR step (host)"; }
  bool by_rows() const override { return true; }
  void to_rows(MvView<const double> x, double* z, std::int64_t ld) const override { kern_.to_rows(x, z, ld); }
  void from_rows(const double* z, std::int64_t ld, MvView<double> x) const override { kern_.from_rows(z, ld, x); }
  void step_rows(double a, const double* cur, double b, double c, double* next, std::int64_t ld, std::int64_t j0,
                 std::int64_t j1) const override {
    detail::StepCoefs co;
    co.a = a, co.b = b, co.c = c;
    kern_.step_rows(co, cur, next, ld, j0, j1);
  }

  // Per part of rows, column by column (contiguous runs of each column).
  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    const std::int64_t n = a_.nrows, q = x.cols;
    TCSOLVE_REQUIRE(ax.rows == n && x.rows == n && r.rows == n && z.rows == n && ax.cols == q &&
                        r.cols == q && z.cols == q,
                    "chebyshev step: block shapes differ");
    by_rows([&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t j = 0; j < q; ++j) {
        const double *axj = ax.col(j), *xj = x.col(j);
        float *rj = r.col(j), *zj = z.col(j);
        for (std::int64_t i = i0; i < i1; ++i) {
          const double v = s * axj[i] - theta[j] * xj[i];
          rj[i] = static_cast<float>(v);
          zj[i] = static_cast<float>(g * v);
        }
      }
    });
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    const std::int64_t n = a_.nrows, q = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && next.cols == q &&
                        (!f || (r.rows == n && r.cols == q)),
                    "chebyshev step: block shapes differ");
    // fp32 arithmetic, as the CUDA kernel
    detail::StepCoefs co;
    co.a = a, co.b = b, co.c = c, co.f = f;
    kern_.step(co, cur, next, r);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    const std::int64_t n = a_.nrows, s = x.cols;
    TCSOLVE_REQUIRE(x.rows == n && z.rows == n && y.rows == n && z.cols == s && y.cols == s,
                    "chebyshev step: block shapes differ");
    by_rows([&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t j = 0; j < s; ++j) {
        const double* xj = x.col(j);
        const float* zj = z.col(j);
        double* yj = y.col(j);
        for (std::int64_t i = i0; i < i1; ++i) yj[i] = q[j] * xj[i] + static_cast<double>(zj[i]);
      }
    });
  }

 private:
  const Csr<double>& a_;  // the caller's matrix (outlives the step)
  detail::CpuCsrKernels kern_;

  // f(i0, i1) on row ranges of the kernels' parts (in parallel).
  template <class F>
  void by_rows(F&& f) const {
    parallel_parts(kern_.parts(), [&](int p) { f(kern_.row_begin(p), kern_.row_begin(p + 1)); });
  }
};

// Block row I's b×b blocks, in ascending block column: a merge of its b rows (each sorted), J =
// col/b. visit(J, q, p) for every entry p of row I·b + q in block column J, then done(J) once
// per block. O(entries · b).
// B is a template parameter: col / B compiles to a multiply and shift (a run-time divisor cost
// about a quarter of elast3d:64's conversion).
template <int B, class Visit, class Done>
void merge_block_row(const Csr<double>& a, std::int64_t I, Visit&& visit, Done&& done) {
  constexpr int b = B;
  std::int64_t h[6], e[6];
  for (int q = 0; q < b; ++q) {
    h[q] = a.row_ptr[I * b + q];
    e[q] = a.row_ptr[I * b + q + 1];
  }
  for (;;) {
    std::int64_t j = -1;
    for (int q = 0; q < b; ++q)
      if (h[q] < e[q]) {
        const std::int64_t jq = static_cast<std::uint32_t>(a.col_idx[h[q]]) / static_cast<std::uint32_t>(b);
        if (j < 0 || jq < j) j = jq;
      }
    if (j < 0) return;
    for (int q = 0; q < b; ++q)
      for (; h[q] < e[q] && static_cast<std::uint32_t>(a.col_idx[h[q]]) / static_cast<std::uint32_t>(b) == j; ++h[q])
        visit(j, q, h[q]);
    done(j);
  }
}

// f(std::integral_constant<int, b>{}) for the run-time block size b ∈ {1, …, 6}.
template <class F>
void with_block(int b, F&& f) {
  switch (b) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    default: return f(std::integral_constant<int, 6>{});
  }
}

}  // namespace

int natural_block_size(const Csr<double>& a) {
  const std::int64_t n = a.nrows, nnz = a.nnz();
  if (!a.square() || n < 2 || nnz == 0) return 0;
  for (int b : {6, 4, 3, 2}) {
    if (n % b != 0) continue;
    const std::int64_t mb = n / b, stride = std::max<std::int64_t>(1, mb / 1024);
    std::int64_t blocks = 0, entries = 0;
    with_block(b, [&](auto bc) {
      for (std::int64_t I = 0; I < mb; I += stride) {
        entries += a.row_ptr[(I + 1) * b] - a.row_ptr[I * b];
        merge_block_row<decltype(bc)::value>(a, I, [](std::int64_t, int, std::int64_t) {},
                                             [&](std::int64_t) { ++blocks; });
      }
    });
    if (entries > 0 && static_cast<double>(blocks) * b * b <= 1.2 * static_cast<double>(entries)) return b;
  }
  return 0;
}

namespace {
// Blocks in each block row (counts[I + 1], counts[0] = 0).
std::vector<std::int64_t> block_row_counts(const Csr<double>& a, int b) {
  if (!a.square()) throw InvalidArgument("BSR blocks: A must be square");
  if (b < 1 || b > 6 || a.nrows % b != 0)
    throw InvalidArgument("BSR blocks: block size " + std::to_string(b) + " must be 1–6 and divide " +
                          std::to_string(a.nrows) + " rows");
  const std::int64_t mb = a.nrows / b;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(mb) + 1, 0);
  with_block(b, [&](auto bc) {
    parallel_for(mb, [&](std::int64_t I) {
      std::int64_t c = 0;
      merge_block_row<decltype(bc)::value>(a, I, [](std::int64_t, int, std::int64_t) {},
                                           [&](std::int64_t) { ++c; });
      counts[static_cast<std::size_t>(I) + 1] = c;
    }, 256);
  });
  return counts;
}
}  // namespace

std::vector<std::int64_t> bsr_slice_offsets(const std::vector<std::int64_t>& row_ptr) {
  const std::int64_t mb = static_cast<std::int64_t>(row_ptr.size()) - 1;
  const std::int64_t ns = (std::max<std::int64_t>(mb, 0) + kBsrSlice - 1) / kBsrSlice;
  std::vector<std::int64_t> sp(static_cast<std::size_t>(ns) + 1, 0);
  for (std::int64_t S = 0; S < ns; ++S) {
    std::int64_t w = 0;
    for (std::int64_t I = S * kBsrSlice; I < std::min(mb, (S + 1) * kBsrSlice); ++I)
      w = std::max(w, row_ptr[I + 1] - row_ptr[I]);
    sp[S + 1] = sp[S] + w;
  }
  return sp;
}

std::size_t bsr_step_device_bytes(const BsrShape& shape, std::int64_t mb, int b, Precision storage) {
  const double entries = 32.0 * static_cast<double>(shape.slots) * b * b;
  const double values = (storage == Precision::fp64 ? 12.0 : 4.0) * entries;
  return static_cast<std::size_t>(values + 4.0 * 32.0 * static_cast<double>(shape.slots) +
                                  8.0 * static_cast<double>((mb + kBsrSlice - 1) / kBsrSlice + 1));
}

std::vector<std::int64_t> bsr_block_row_ptr(const Csr<double>& a, int b) {
  std::vector<std::int64_t> rp = block_row_counts(a, b);
  for (std::size_t I = 1; I < rp.size(); ++I) rp[I] += rp[I - 1];
  return rp;
}

void fill_bsr_blocks(const Csr<double>& a, int b, const std::vector<std::int64_t>& row_ptr,
                     std::int64_t I0, std::int64_t I1, std::int32_t* col, double* values) {
  const std::int64_t bb = static_cast<std::int64_t>(b) * b, base = row_ptr[static_cast<std::size_t>(I0)];
  with_block(b, [&](auto bc) {
    constexpr int B = decltype(bc)::value;
    parallel_for(I1 - I0, [&](std::int64_t i) {
      const std::int64_t I = I0 + i;
      std::int64_t k = row_ptr[static_cast<std::size_t>(I)] - base;
      std::fill(values + k * bb, values + (row_ptr[static_cast<std::size_t>(I) + 1] - base) * bb, 0.0);
      merge_block_row<B>(
          a, I,
          [&](std::int64_t j, int q, std::int64_t p) { values[k * bb + q * B + (a.col_idx[p] - j * B)] = a.values[p]; },
          [&](std::int64_t j) { col[k++] = static_cast<std::int32_t>(j); });
    }, 256);
  });
}

BsrBlocks to_bsr_blocks(const Csr<double>& a, int b) {
  BsrBlocks out;
  out.row_ptr = bsr_block_row_ptr(a, b);
  out.b = b;
  out.mb = a.nrows / b;
  const std::int64_t nb = out.row_ptr.back(), bb = static_cast<std::int64_t>(b) * b;
  out.col.resize(static_cast<std::size_t>(nb));
  out.values.resize(static_cast<std::size_t>(nb * bb));  // uninitialized: each block zeroed in the fill
  fill_bsr_blocks(a, b, out.row_ptr, 0, out.mb, out.col.data(), out.values.data());
  return out;
}

int chebyshev_bsr_step_block(const Csr<double>& a) {
  if (chebyshev_step_pays(a.nrows, a.nnz())) return 0;
  return natural_block_size(a);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step(const Csr<double>& a, Backend backend,
                                                   Precision storage, void* stream) {
  if (storage != Precision::fp64 && storage != Precision::fp32)
    throw InvalidArgument(std::string("chebyshev step: storage ") + to_string(storage) +
                          " not supported (fp64 or fp32)");
  if (a.nrows != a.ncols) throw InvalidArgument("chebyshev step: A must be square");
  if (backend == Backend::cpu) return std::make_unique<HostChebyshevStep>(a);
  return detail::make_cuda_chebyshev_step(a, storage, stream);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step_on_operator(const LinearOperator<double>& a,
                                                               const Csr<double>& csr,
                                                               Precision storage, void* stream) {
  const auto* so = dynamic_cast<const SparseOperator*>(&a);
  if (!so || so->permutation() || so->rows() != csr.nrows) return nullptr;
  if (storage != Precision::fp64 && storage != Precision::fp32) return nullptr;
  const SparseOperator::DeviceCsr d = so->device_csr();
  if (!d.row_ptr || !d.col_idx || !d.values) return nullptr;
  return storage == Precision::fp64
             ? make_chebyshev_step_view(csr.nrows, d.row_ptr, d.col_idx, d.values, stream)
             : make_chebyshev_step_view32(csr.nrows, csr.nnz(), d.row_ptr, d.col_idx, d.values, stream);
}

}  // namespace tcsolve
