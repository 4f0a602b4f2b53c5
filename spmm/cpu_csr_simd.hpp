// Internal to spmm/: the CPU CSR kernels' shared pieces (cpu_csr_kernels.cpp: the column-major
// SpMM and step; cpu_csr_rows.cpp: the row-major step and transposes): the ISA clones, the 4-wide
// vectors, the row sums of a chunk of columns and the 4-row tiles. Compile the including file with
// -ffp-contract=off (spmm/CMakeLists.txt): fp64 rounds as csr_spmm_reference.
#pragma once
#include "spmm/cpu_csr_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/parallel.hpp"
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>  // SSE2 non-temporal stores (baseline on x86-64: both clones)
#define TCSOLVE_CPU_STREAM 1
#endif

// The part functions below are compiled three times on x86-64 (GCC, Clang): for the build's ISA,
// for x86-64-v3 (AVX2, FMA) and for x86-64-v4 (AVX-512: the row sums in 8-wide registers, 2-core
// Xeon, rgg 55k × 24, one thread: 3.5 → 3.0 ms); the loader picks one for the CPU (an ifunc).
// TCSOLVE_NO_TARGET_CLONES keeps only the build's (e.g. for tools that do not follow ifuncs).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TCSOLVE_NO_TARGET_CLONES) && \
    !defined(__INTEL_COMPILER)
#define TCSOLVE_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
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
constexpr std::int64_t kBlock = kCpuRowBlock;  // rows of a block (a ring's parts start at multiples of it)
// Rows of X prefetched ahead of the ring's staging (2-core EPYC, lap2d:1000 and lap3d:60, 24 and
// 32 columns, at load 5: 37 % of copy against 35 % without, within the noise; staging 256 rows a
// refill instead of 64, with or without, the same).
// (2-core Xeon, 2026-12-01, rgg 55k: 512 rows ahead into L2 instead, 31–44 % of copy against 37–49 %.)
constexpr std::int64_t kStageAhead = 128;

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


// Z's rows as a part sees them: row c at z + slot(c)·ldz, slot(c) = c (whole staging) or
// c mod w = c & (w − 1) (a ring of w rows, w a power of two, holding X's rows [vlo, vlo + vspan)).
// A ring's entries outside that window (far(c): the few long edges of a graph that is mostly
// local) read X's columns directly (x, ldx, k); Far = false where the ring holds every entry's
// row (no test per entry).
template <class T, bool Ring, bool Far = Ring>
struct ZRows {
  static constexpr bool ring = Ring;
  const T* z;
  std::int64_t ldz, mask, vlo, vspan;
  const T* x;
  std::int64_t ldx;
  int k;
  TCSOLVE_ALWAYS_INLINE std::int64_t slot(std::int64_t c) const {
    if constexpr (Ring) return c & mask;
    else return c;
  }
  TCSOLVE_ALWAYS_INLINE const T* row(std::int64_t c) const { return z + slot(c) * ldz; }
  TCSOLVE_ALWAYS_INLINE bool far(std::int64_t c) const {
    if constexpr (Ring && Far) return static_cast<std::uint64_t>(c - vlo) >= static_cast<std::uint64_t>(vspan);
    else return false;
  }
  // X(c, j) for j < k, 0 in Z's padding columns
  TCSOLVE_ALWAYS_INLINE T at(std::int64_t c, int j) const { return j < k ? x[c + j * ldx] : T(0); }
};

// 8-wide fp64 vectors (one AVX-512 register in the x86-64-v4 clone, two AVX2 ones in the v3
// clone): a row's sums two V4s at a time, half the instructions per entry where the ISA has them.
typedef double V8d __attribute__((vector_size(64)));
TCSOLVE_ALWAYS_INLINE V8d load8(const double* p) {
  V8d v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
TCSOLVE_ALWAYS_INLINE void split8(const V8d& v, V4<double>& lo, V4<double>& hi) {
  __builtin_memcpy(&lo, &v, sizeof lo);
  __builtin_memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
}

// s[q] = Σ_p A(i, col_p)·Z(col_p, c0 + 4q .. c0 + 4q + 3), q < Q, over row i's entries in order
// (each lane a product, then a sum: the same bits in 4- or 8-wide vectors). fp64 runs the chunk in
// 8-wide pairs (and one 4-wide vector where Q is odd). A ring's rows were staged a block ago (in
// L1/L2): no prefetch; Z whole is prefetched kPrefetch entries ahead.
template <int Q, class T, class ZR>
TCSOLVE_ALWAYS_INLINE void row_sums(const CsrPtrs& a, std::int64_t i, const ZR& zr, int c0, V4<T>* s) {
  constexpr bool wide = std::is_same_v<T, double>;
  constexpr int P = wide ? Q / 2 : 0;  // 8-wide pairs
  V8d acc8[P > 0 ? P : 1];  // in registers (s may be memory indexed at run time: a chain through the stack)
  V4<T> acc[Q];
  for (int q = 0; q < P; ++q) acc8[q] = V8d{};
  for (int q = 2 * P; q < Q; ++q) acc[q] = V4<T>{};
  for (std::int64_t p = a.rp[i], e = a.rp[i + 1]; p < e; ++p) {
    const T v = static_cast<T>(a.av[p]);
    const std::int64_t c = a.ci[p];
    if (zr.far(c)) {  // rare: the values of Z's row c gathered from X's columns
      for (int q = 0; q < P; ++q) {
        V8d t;
        for (int l = 0; l < 8; ++l) t[l] = zr.at(c, c0 + 8 * q + l);
        acc8[q] = acc8[q] + static_cast<double>(v) * t;
      }
      for (int q = 2 * P; q < Q; ++q) {
        V4<T> t;
        for (int l = 0; l < 4; ++l) t[l] = zr.at(c, c0 + 4 * q + l);
        acc[q] = madd4(v, t, acc[q]);
      }
      continue;
    }
    const T* zr_p = zr.row(c) + c0;
    if constexpr (kPrefetch > 0 && !ZR::ring) {
      const std::int64_t pf = p + kPrefetch < a.nnz ? p + kPrefetch : p;
      const std::uintptr_t zf = reinterpret_cast<std::uintptr_t>(zr.z) +
                                static_cast<std::uintptr_t>((zr.slot(a.ci[pf]) * zr.ldz + c0) * static_cast<std::int64_t>(sizeof(T)));
      for (int l = 0; l < (Q * 4 * static_cast<int>(sizeof(T)) + 63) / 64; ++l)
        __builtin_prefetch(reinterpret_cast<const char*>(zf + 64 * static_cast<std::uintptr_t>(l)));
    }
    if constexpr (P > 0)
      for (int q = 0; q < P; ++q) acc8[q] = acc8[q] + static_cast<double>(v) * load8(reinterpret_cast<const double*>(zr_p) + 8 * q);
    for (int q = 2 * P; q < Q; ++q) acc[q] = madd4(v, load4(zr_p + 4 * q), acc[q]);
  }
  if constexpr (P > 0)
    for (int q = 0; q < P; ++q) {
      V4<double> lo, hi;
      split8(acc8[q], lo, hi);
      s[2 * q] = lo, s[2 * q + 1] = hi;
    }
  for (int q = 2 * P; q < Q; ++q) s[q] = acc[q];
}

// The same for W ≤ 2 columns (k = 1: Z is X itself; k = 2), scalars.
template <int W, class T, class ZR>
TCSOLVE_ALWAYS_INLINE void row_sums_narrow(const CsrPtrs& a, std::int64_t i, const ZR& zr, int c0, T* s) {
  T acc[W];
  for (int c = 0; c < W; ++c) acc[c] = T(0);
  for (std::int64_t p = a.rp[i], e = a.rp[i + 1]; p < e; ++p) {
    const T v = static_cast<T>(a.av[p]);
    const std::int64_t col = a.ci[p];
    if (zr.far(col)) {
      for (int c = 0; c < W; ++c) acc[c] = madd(v, zr.at(col, c0 + c), acc[c]);
      continue;
    }
    const T* zr_p = zr.row(col) + c0;
    for (int c = 0; c < W; ++c) acc[c] = madd(v, zr_p[c], acc[c]);
  }
  for (int c = 0; c < W; ++c) s[c] = acc[c];
}

// Rows [r0, r1) (r0 a multiple of kTile) for the chunk of columns [c0, c0 + 4Q): whole tiles of
// 4 rows get their sums transposed to 4 columns of 4 consecutive rows, out.cols4(i, q, cols)
// (contiguous loads and stores in column-major blocks); the rows after the last whole tile go
// through out.row(i, s) one by one. A row's sums are the same on either path. out.tick() after
// each tile and after the rows left over: the part's memory work slipped in between (Between).
template <int Q, class T, class ZR, class Out>
TCSOLVE_ALWAYS_INLINE void tile_rows(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const ZR& zr, int c0,
                                     Out& out) {
  std::int64_t i = r0;
  for (; i + kTile <= r1; i += kTile) {
    V4<T> s[kTile][Q];
    for (int r = 0; r < kTile; ++r) row_sums<Q, T>(a, i + r, zr, c0, s[r]);
    for (int q = 0; q < Q; ++q) {
      V4<T> cols[4] = {s[0][q], s[1][q], s[2][q], s[3][q]};
      transpose4<T>(cols[0], cols[1], cols[2], cols[3]);
      out.cols4(i, q, cols);
    }
    out.tick();
  }
  if (i == r1) return;
  for (; i < r1; ++i) {
    V4<T> s[Q];
    row_sums<Q, T>(a, i, zr, c0, s);
    out.row(i, s);
  }
  out.tick();
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

template <class T>
void check_block(MvView<const T> v, std::int64_t rows, std::int64_t cols, const char* what) {
  TCSOLVE_REQUIRE(v.space == Space::host, std::string("CPU CSR kernel: ") + what + " must be a host block");
  TCSOLVE_REQUIRE(v.rows == rows && v.cols == cols && v.ld >= std::max<std::int64_t>(1, rows),
                  std::string("CPU CSR kernel: ") + what + " is " + std::to_string(v.rows) + "x" +
                      std::to_string(v.cols) + " (ld " + std::to_string(v.ld) + "), expected " +
                      std::to_string(rows) + "x" + std::to_string(cols));
}

}  // namespace

}  // namespace tcsolve::detail
