// The CPU's CSR kernels (spmm/cpu_csr_kernels.hpp): X staged row-major, rows in parts over the
// host threads, the row sums of a chunk of W ≤ 32 columns in vector registers.
#include "spmm/cpu_csr_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/parallel.hpp"

// The part functions below are compiled twice on x86-64 (GCC, Clang): for the build's ISA and for
// x86-64-v3 (AVX2, FMA), the loader picks one for the CPU (an ifunc). TCSOLVE_NO_TARGET_CLONES
// keeps only the build's (e.g. for tools that do not follow ifuncs).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TCSOLVE_NO_TARGET_CLONES) && \
    !defined(__INTEL_COMPILER)
#define TCSOLVE_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TCSOLVE_CPU_CLONES
#endif
#if defined(__GNUC__) || defined(__clang__)
#define TCSOLVE_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TCSOLVE_ALWAYS_INLINE inline
#endif

// The 256-bit vector helpers below are always inlined: their by-value vectors never cross a call
// (GCC's note that their ABI would differ without AVX does not apply).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace tcsolve::detail {

namespace {

constexpr int kMaxWidth = 32;  // columns of one pass over a row (32 fp64 sums: 8 AVX2 registers)
constexpr int kTile = 4;       // rows of a tile (the 4×4 transposes); tiles start at multiples of 4

struct CsrPtrs {
  const std::int64_t* rp;
  const std::int32_t* ci;
  const double* av;
  std::int64_t nnz;
};
#ifndef TCSOLVE_CPU_PREFETCH
#define TCSOLVE_CPU_PREFETCH 16
#endif
constexpr int kPrefetch = TCSOLVE_CPU_PREFETCH;

// 4-wide vectors of T in the compiler's generic vector extension (fp64: 256 bits, fp32: 128):
// one AVX2 register in the x86-64-v3 clone, two SSE2 registers (fp64) in the baseline one.
template <class T>
struct Vec4;
template <>
struct Vec4<double> {
  typedef double type __attribute__((vector_size(32)));
  typedef long long mask __attribute__((vector_size(32)));
};
template <>
struct Vec4<float> {
  typedef float type __attribute__((vector_size(16)));
  typedef int mask __attribute__((vector_size(16)));
};
template <class T>
using V4 = typename Vec4<T>::type;

template <class T>
TCSOLVE_ALWAYS_INLINE V4<T> load4(const T* p) {
  V4<T> v;
  __builtin_memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}
template <class T>
TCSOLVE_ALWAYS_INLINE void store4(T* p, V4<T> v) {
  __builtin_memcpy(p, &v, sizeof v);
}

#if defined(__clang__)
#define TCSOLVE_SHUFFLE4(T, a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
#define TCSOLVE_SHUFFLE4(T, a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, typename Vec4<T>::mask{i0, i1, i2, i3})
#endif

// Rows a, b, c, d of a 4×4 block in, its columns out.
template <class T>
TCSOLVE_ALWAYS_INLINE void transpose4(V4<T>& a, V4<T>& b, V4<T>& c, V4<T>& d) {
  const V4<T> t0 = TCSOLVE_SHUFFLE4(T, a, b, 0, 4, 2, 6), t1 = TCSOLVE_SHUFFLE4(T, a, b, 1, 5, 3, 7);
  const V4<T> t2 = TCSOLVE_SHUFFLE4(T, c, d, 0, 4, 2, 6), t3 = TCSOLVE_SHUFFLE4(T, c, d, 1, 5, 3, 7);
  a = TCSOLVE_SHUFFLE4(T, t0, t2, 0, 1, 4, 5);
  b = TCSOLVE_SHUFFLE4(T, t1, t3, 0, 1, 4, 5);
  c = TCSOLVE_SHUFFLE4(T, t0, t2, 2, 3, 6, 7);
  d = TCSOLVE_SHUFFLE4(T, t1, t3, 2, 3, 6, 7);
}

// c + a·b. fp64: a product and a sum, each rounded (this file is compiled with
// -ffp-contract=off): the bits of csr_spmm_reference and of the host step before these kernels,
// on either clone. fp32 (the filter's rung): one FMA, as the CUDA fp32 step (in the baseline
// clone a call to fmaf: the rung runs on the GPU only, eigs/runs.cpp).
template <class T>
TCSOLVE_ALWAYS_INLINE T madd(T a, T b, T c) {
  if constexpr (std::is_same_v<T, float>) return std::fma(a, b, c);
  else return c + a * b;
}
template <class T>
TCSOLVE_ALWAYS_INLINE V4<T> madd4(T a, V4<T> b, V4<T> c) {
  if constexpr (std::is_same_v<T, float>) {
    V4<T> r;
    for (int l = 0; l < 4; ++l) r[l] = std::fma(a, b[l], c[l]);
    return r;
  } else {
    return c + a * b;
  }
}

// s[q] = Σ_p A(i, col_p)·Z(col_p, 4q .. 4q + 3), q < Q, over row i's entries in order (zc = Z + c0).
template <int Q, class T>
TCSOLVE_ALWAYS_INLINE void row_sums(const CsrPtrs& a, std::int64_t i, const T* zc, std::int64_t ldz, V4<T>* s) {
  V4<T> acc[Q];  // in registers (s may be memory indexed at run time: a chain through the stack)
  for (int q = 0; q < Q; ++q) acc[q] = V4<T>{};
  for (std::int64_t p = a.rp[i], e = a.rp[i + 1]; p < e; ++p) {
    const T v = static_cast<T>(a.av[p]);
    const T* zr = zc + static_cast<std::int64_t>(a.ci[p]) * ldz;
    if constexpr (kPrefetch > 0) {
      const std::int64_t pf = p + kPrefetch < a.nnz ? p + kPrefetch : p;
      const char* zf = reinterpret_cast<const char*>(zc + static_cast<std::int64_t>(a.ci[pf]) * ldz);
      for (int l = 0; l < (Q * 4 * static_cast<int>(sizeof(T)) + 63) / 64; ++l) __builtin_prefetch(zf + 64 * l);
    }
    for (int q = 0; q < Q; ++q) acc[q] = madd4(v, load4(zr + 4 * q), acc[q]);
  }
  for (int q = 0; q < Q; ++q) s[q] = acc[q];
}

// The same for W ≤ 2 columns (k = 1: Z is X itself; k = 2), scalars.
template <int W, class T>
TCSOLVE_ALWAYS_INLINE void row_sums_narrow(const CsrPtrs& a, std::int64_t i, const T* z, std::int64_t ldz, T* s) {
  T acc[W];
  for (int c = 0; c < W; ++c) acc[c] = T(0);
  for (std::int64_t p = a.rp[i], e = a.rp[i + 1]; p < e; ++p) {
    const T v = static_cast<T>(a.av[p]);
    const T* zr = z + static_cast<std::int64_t>(a.ci[p]) * ldz;
    for (int c = 0; c < W; ++c) acc[c] = madd(v, zr[c], acc[c]);
  }
  for (int c = 0; c < W; ++c) s[c] = acc[c];
}

// Rows [r0, r1) (r0 a multiple of kTile) for the chunk of columns [c0, c0 + 4Q): whole tiles of
// 4 rows get their sums transposed to 4 columns of 4 consecutive rows, out.cols4(i, q, cols)
// (contiguous loads and stores in column-major blocks); the rows after the last whole tile go
// through out.row(i, s) one by one. A row's sums are the same on either path.
template <int Q, class T, class Out>
TCSOLVE_ALWAYS_INLINE void tile_rows(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const T* z,
                                     std::int64_t ldz, int c0, Out& out) {
  const T* zc = z + c0;
  std::int64_t i = r0;
  for (; i + kTile <= r1; i += kTile) {
    V4<T> s[kTile][Q];
    for (int r = 0; r < kTile; ++r) row_sums<Q>(a, i + r, zc, ldz, s[r]);
    for (int q = 0; q < Q; ++q) {
      V4<T> cols[4] = {s[0][q], s[1][q], s[2][q], s[3][q]};
      transpose4<T>(cols[0], cols[1], cols[2], cols[3]);
      out.cols4(i, q, cols);
    }
  }
  for (; i < r1; ++i) {
    V4<T> s[Q];
    row_sums<Q>(a, i, zc, ldz, s);
    out.row(i, s);
  }
}

// Op<W>::run(args...) for the chunk width w ∈ {1, 2, 4, 8, …, 32} (a switch, no lambda: the
// row loops must be inlined into the cloned part functions to be compiled for their ISA).
template <template <int> class Op, class... Args>
TCSOLVE_ALWAYS_INLINE void with_width(int w, Args&&... args) {
  switch (w) {
    case 1: return Op<1>::run(args...);
    case 2: return Op<2>::run(args...);
    case 4: return Op<4>::run(args...);
    case 8: return Op<8>::run(args...);
    case 12: return Op<12>::run(args...);
    case 16: return Op<16>::run(args...);
    case 20: return Op<20>::run(args...);
    case 24: return Op<24>::run(args...);
    case 28: return Op<28>::run(args...);
    default: return Op<32>::run(args...);
  }
}

// Z's row width for k columns: k for k ≤ 2, else k rounded up to 4 (every chunk a whole number of
// 4-wide vectors).
std::int64_t staged_width(std::int64_t k) { return k <= 2 ? k : (k + 3) / 4 * 4; }

// Z[i·ldz + c] = X(i, c) for rows [r0, r1), c < k; Z[i·ldz + c] = 0 for k ≤ c < ldz. Blocks of
// 64 rows, 4 columns at a time: 4 contiguous runs of 512 bytes read (a few streams at once for
// the prefetchers, not k), transposed in 4×4 blocks into the block's rows of Z (≤ 64·ldz·8
// bytes, in L1/L2); scalars for the rows and columns left over.
template <class T>
TCSOLVE_ALWAYS_INLINE void stage_rows(const T* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k, T* z,
                                      std::int64_t ldz) {
  constexpr std::int64_t kBlock = 64;
  const int k4 = k / 4 * 4;
  for (std::int64_t b0 = r0; b0 < r1; b0 += kBlock) {
    const std::int64_t b1 = std::min(r1, b0 + kBlock), b4 = b0 + (b1 - b0) / 4 * 4;
    for (int c = 0; c < k4; c += 4) {
      const T *x0 = x + c * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
      for (std::int64_t i = b0; i < b4; i += 4) {
        V4<T> v0 = load4(x0 + i), v1 = load4(x1 + i), v2 = load4(x2 + i), v3 = load4(x3 + i);
        transpose4<T>(v0, v1, v2, v3);
        store4(z + i * ldz + c, v0);
        store4(z + (i + 1) * ldz + c, v1);
        store4(z + (i + 2) * ldz + c, v2);
        store4(z + (i + 3) * ldz + c, v3);
      }
      for (std::int64_t i = b4; i < b1; ++i)
        for (int l = 0; l < 4; ++l) z[i * ldz + c + l] = x[i + (c + l) * ldx];
    }
    for (std::int64_t i = b0; i < b1; ++i) {
      for (int c = k4; c < k; ++c) z[i * ldz + c] = x[i + c * ldx];
      for (std::int64_t c = k; c < ldz; ++c) z[i * ldz + c] = T(0);
    }
  }
}

TCSOLVE_CPU_CLONES void stage_part64(const double* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k,
                                     double* z, std::int64_t ldz) {
  stage_rows(x, ldx, r0, r1, k, z, ldz);
}
TCSOLVE_CPU_CLONES void stage_part32(const float* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k,
                                     float* z, std::int64_t ldz) {
  stage_rows(x, ldx, r0, r1, k, z, ldz);
}

// Y's side of a chunk [c0, c0 + kc) (kc ≤ 4Q columns actually stored): Y(i, c0 + c) = sum.
template <int Q>
struct SpmmOut {
  double* yc;  // Y's column c0
  std::int64_t ldy;
  int kc;
  TCSOLVE_ALWAYS_INLINE void cols4(std::int64_t i, int q, const V4<double>* cols) {
    if (4 * q + 4 <= kc) {
      for (int l = 0; l < 4; ++l) store4(yc + i + (4 * q + l) * ldy, cols[l]);
    } else {
      for (int l = 0; l < 4; ++l)
        if (4 * q + l < kc) store4(yc + i + (4 * q + l) * ldy, cols[l]);
    }
  }
  TCSOLVE_ALWAYS_INLINE void row(std::int64_t i, const V4<double>* s) {
    for (int q = 0; q < Q; ++q)
      for (int l = 0; l < 4; ++l)
        if (4 * q + l < kc) yc[i + (4 * q + l) * ldy] = s[q][l];
  }
};

template <int W>
struct SpmmRows {
  static TCSOLVE_ALWAYS_INLINE void run(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const double* z,
                                        std::int64_t ldz, int c0, int k, double* y, std::int64_t ldy) {
    const int kc = std::min(W, k - c0);
    double* yc = y + static_cast<std::int64_t>(c0) * ldy;
    if constexpr (W <= 2) {
      for (std::int64_t i = r0; i < r1; ++i) {
        double s[W];
        row_sums_narrow<W>(a, i, z + c0, ldz, s);
        for (int c = 0; c < kc; ++c) yc[i + c * ldy] = s[c];
      }
    } else {
      SpmmOut<W / 4> out{yc, ldy, kc};
      tile_rows<W / 4>(a, r0, r1, z, ldz, c0, out);
    }
  }
};

TCSOLVE_CPU_CLONES void spmm_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const double* z,
                                  std::int64_t ldz, int k, double* y, std::int64_t ldy) {
  for (int c0 = 0; c0 < k; c0 += kMaxWidth) {
    const int w = static_cast<int>(std::min<std::int64_t>(kMaxWidth, ldz - c0));
    with_width<SpmmRows>(w, a, r0, r1, z, ldz, c0, k, y, ldy);
  }
}

// The step's blocks (column-major, their own leading dimensions) and coefficients in T.
template <class T>
struct StepBlocks {
  T* next;
  std::int64_t ldn;
  const T* r;
  std::int64_t ldr;
  T a, b, c, e;
  const double* d;
  const double* f;
};

// The step's side of a chunk [c0, c0 + kc): next(i, j) = a·(d[i]·)sum + b·cur(i, j)
// (+ rc_j·r(i, j)) (+ c·next(i, j)), j = c0 + c, rc_j = f[j] or e; cur(i, j) from Z (the same
// value, in cache after the row's own diagonal gather where A has one). The tile path and the
// row path evaluate the same expression per entry.
template <int Q, class T>
struct StepOut {
  const StepBlocks<T>& s;
  const T* z;  // Z's column c0
  std::int64_t ldz;
  int c0, kc;
  bool with_r, with_next;
  TCSOLVE_ALWAYS_INLINE T coef_r(int c) const { return s.f ? static_cast<T>(s.f[c0 + c]) : s.e; }
  TCSOLVE_ALWAYS_INLINE void cols4(std::int64_t i, int q, const V4<T>* cols) {
    V4<T> x0 = load4(z + i * ldz + 4 * q), x1 = load4(z + (i + 1) * ldz + 4 * q);
    V4<T> x2 = load4(z + (i + 2) * ldz + 4 * q), x3 = load4(z + (i + 3) * ldz + 4 * q);
    transpose4<T>(x0, x1, x2, x3);
    const V4<T> xc[4] = {x0, x1, x2, x3};
    V4<T> dv = V4<T>{} + T(1);
    if (s.d)
      for (int l = 0; l < 4; ++l) dv[l] = static_cast<T>(s.d[i + l]);
    for (int l = 0; l < 4; ++l) {
      const int c = 4 * q + l;
      if (c >= kc) break;
      const std::int64_t j = c0 + c;
      V4<T> o = s.a * (s.d ? dv * cols[l] : cols[l]) + s.b * xc[l];
      if (with_r) o = madd4(coef_r(c), load4(s.r + i + j * s.ldr), o);
      if (with_next) o = madd4(s.c, load4(s.next + i + j * s.ldn), o);
      store4(s.next + i + j * s.ldn, o);
    }
  }
  TCSOLVE_ALWAYS_INLINE void row(std::int64_t i, const V4<T>* sums) {
    const T di = s.d ? static_cast<T>(s.d[i]) : T(1);
    for (int c = 0; c < kc; ++c) {
      const std::int64_t j = c0 + c;
      const T acc = sums[c / 4][c % 4];
      T o = s.a * (s.d ? di * acc : acc) + s.b * z[i * ldz + c];
      if (with_r) o = madd(coef_r(c), s.r[i + j * s.ldr], o);
      if (with_next) o = madd(s.c, s.next[i + j * s.ldn], o);
      s.next[i + j * s.ldn] = o;
    }
  }
};

template <int W>
struct StepRows {
  template <class T>
  static TCSOLVE_ALWAYS_INLINE void run(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const T* z,
                                        std::int64_t ldz, int c0, int k, const StepBlocks<T>& s) {
    const int kc = std::min(W, k - c0);
    const bool with_r = s.f || s.e != T(0), with_next = s.c != T(0);
    if constexpr (W <= 2) {
      for (std::int64_t i = r0; i < r1; ++i) {
        T sums[W];
        row_sums_narrow<W>(a, i, z + c0, ldz, sums);
        const T di = s.d ? static_cast<T>(s.d[i]) : T(1);
        for (int c = 0; c < kc; ++c) {
          const std::int64_t j = c0 + c;
          T o = s.a * (s.d ? di * sums[c] : sums[c]) + s.b * z[i * ldz + c0 + c];
          if (with_r) o = madd(s.f ? static_cast<T>(s.f[j]) : s.e, s.r[i + j * s.ldr], o);
          if (with_next) o = madd(s.c, s.next[i + j * s.ldn], o);
          s.next[i + j * s.ldn] = o;
        }
      }
    } else {
      StepOut<W / 4, T> out{s, z + c0, ldz, c0, kc, with_r, with_next};
      tile_rows<W / 4>(a, r0, r1, z, ldz, c0, out);
    }
  }
};

template <class T>
TCSOLVE_ALWAYS_INLINE void step_chunks(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const T* z,
                                       std::int64_t ldz, int k, const StepBlocks<T>& s) {
  for (int c0 = 0; c0 < k; c0 += kMaxWidth) {
    const int w = static_cast<int>(std::min<std::int64_t>(kMaxWidth, ldz - c0));
    with_width<StepRows>(w, a, r0, r1, z, ldz, c0, k, s);
  }
}

TCSOLVE_CPU_CLONES void step_part64(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const double* z,
                                    std::int64_t ldz, int k, const StepBlocks<double>& s) {
  step_chunks(a, r0, r1, z, ldz, k, s);
}
TCSOLVE_CPU_CLONES void step_part32(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const float* z,
                                    std::int64_t ldz, int k, const StepBlocks<float>& s) {
  step_chunks(a, r0, r1, z, ldz, k, s);
}

void stage_part(const double* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k, double* z,
                std::int64_t ldz) {
  stage_part64(x, ldx, r0, r1, k, z, ldz);
}
void stage_part(const float* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k, float* z,
                std::int64_t ldz) {
  stage_part32(x, ldx, r0, r1, k, z, ldz);
}
void step_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const double* z, std::int64_t ldz, int k,
               const StepBlocks<double>& s) {
  step_part64(a, r0, r1, z, ldz, k, s);
}
void step_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const float* z, std::int64_t ldz, int k,
               const StepBlocks<float>& s) {
  step_part32(a, r0, r1, z, ldz, k, s);
}

template <class T>
void check_block(MvView<const T> v, std::int64_t rows, std::int64_t cols, const char* what) {
  TCSOLVE_REQUIRE(v.space == Space::host, std::string("CPU CSR kernel: ") + what + " must be a host block");
  TCSOLVE_REQUIRE(v.rows == rows && v.cols == cols && v.ld >= std::max<std::int64_t>(1, rows),
                  std::string("CPU CSR kernel: ") + what + " is " + std::to_string(v.rows) + "x" +
                      std::to_string(v.cols) + " (ld " + std::to_string(v.ld) + "), expected " +
                      std::to_string(rows) + "x" + std::to_string(cols));
}

}  // namespace

std::vector<std::int64_t> balanced_row_parts(const std::vector<std::int64_t>& row_ptr, int parts) {
  TCSOLVE_REQUIRE(parts >= 1 && !row_ptr.empty(), "balanced_row_parts: no parts or no row offsets");
  const std::int64_t n = static_cast<std::int64_t>(row_ptr.size()) - 1, total = row_ptr[n] + n;
  std::vector<std::int64_t> b(static_cast<std::size_t>(parts) + 1, n);
  b[0] = 0;
  for (int p = 1; p < parts; ++p) {
    // the first row i ≥ b[p − 1] with row_ptr[i] + i ≥ total·p/parts (work up to row i)
    const std::int64_t target = static_cast<std::int64_t>(static_cast<long double>(total) * p / parts);
    std::int64_t lo = b[p - 1], hi = n;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (row_ptr[mid] + mid >= target) hi = mid;
      else lo = mid + 1;
    }
    b[p] = std::max(b[p - 1], lo / kTile * kTile);  // tiles never straddle two parts
  }
  return b;
}

int cpu_kernel_parts(std::int64_t rows, std::int64_t nnz) {
  const int threads = host_threads();
  if (threads <= 1) return 1;
  const std::int64_t by_work = (rows + nnz) / 16384;
  return static_cast<int>(std::clamp<std::int64_t>(by_work, 1, 8 * static_cast<std::int64_t>(threads)));
}

CpuCsrKernels::CpuCsrKernels(const Csr<double>& a)
    : a_(a), bounds_(balanced_row_parts(a.row_ptr, cpu_kernel_parts(a.nrows, a.nnz()))) {}

template <class T>
const T* CpuCsrKernels::stage(MvView<const T> x, AlignedBuffer<T>& buf, std::int64_t& ldz) const {
  const int k = static_cast<int>(x.cols);
  if (k == 1) {  // one column: X itself is row-major
    ldz = 1;
    return x.data;
  }
  ldz = staged_width(k);
  T* z = buf.reserve(static_cast<std::size_t>(x.rows * ldz));
  const int np = parts();
  const std::int64_t m = x.rows;
  parallel_parts(np, [&](int p) { stage_part(x.data, x.ld, m * p / np, m * (p + 1) / np, k, z, ldz); });
  return z;
}

void CpuCsrKernels::spmm(MvView<const double> x, MvView<double> y) const {
  const std::int64_t k = x.cols;
  check_block(x, a_.ncols, k, "X");
  check_block(MvView<const double>(y), a_.nrows, k, "Y");
  TCSOLVE_REQUIRE(k < (std::int64_t(1) << 30), "CPU CSR kernel: too many columns");
  if (k == 0 || a_.nrows == 0) return;
  std::lock_guard<std::mutex> lk(busy_);
  std::int64_t ldz = 0;
  const double* z = stage(x, z64_, ldz);
  const CsrPtrs ap{a_.row_ptr.data(), a_.col_idx.data(), a_.values.data(), a_.nnz()};
  parallel_parts(parts(), [&](int p) {
    spmm_part(ap, row_begin(p), row_begin(p + 1), z, ldz, static_cast<int>(k), y.data, y.ld);
  });
}

template <class T>
void CpuCsrKernels::step_any(const StepCoefs& s, MvView<const T> cur, MvView<T> next, MvView<const T> r,
                             AlignedBuffer<T>& buf) const {
  const std::int64_t n = a_.nrows, k = cur.cols;
  TCSOLVE_REQUIRE(a_.square(), "chebyshev step: A must be square");
  check_block(cur, n, k, "cur");
  check_block(MvView<const T>(next), n, k, "next");
  if (s.f || s.e != 0.0) check_block(r, n, k, "r");
  if (k == 0 || n == 0) return;
  std::lock_guard<std::mutex> lk(busy_);
  std::int64_t ldz = 0;
  const T* z = stage(cur, buf, ldz);
  const CsrPtrs ap{a_.row_ptr.data(), a_.col_idx.data(), a_.values.data(), a_.nnz()};
  const StepBlocks<T> sb{next.data,           next.ld,             r.data,              r.ld, static_cast<T>(s.a),
                         static_cast<T>(s.b), static_cast<T>(s.c), static_cast<T>(s.e), s.d,  s.f};
  parallel_parts(parts(), [&](int p) {
    step_part(ap, row_begin(p), row_begin(p + 1), z, ldz, static_cast<int>(k), sb);
  });
}

void CpuCsrKernels::step(const StepCoefs& s, MvView<const double> cur, MvView<double> next,
                         MvView<const double> r) const {
  step_any(s, cur, next, r, z64_);
}

void CpuCsrKernels::step(const StepCoefs& s, MvView<const float> cur, MvView<float> next,
                         MvView<const float> r) const {
  step_any(s, cur, next, r, z32_);
}

}  // namespace tcsolve::detail
