// The CPU's CSR kernels (spmm/cpu_csr_kernels.hpp): X staged row-major (whole, or in a ring a
// part), rows in parts over the host threads, blocks of 64 rows, the row sums of a chunk of
// W ≤ 32 columns in vector registers.
#include "spmm/cpu_csr_simd.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve::detail {

namespace {

std::int64_t staged_width(std::int64_t k) { return cpu_staged_width(k); }

// Z[i·ldz + c] = X(i, c) for rows [r0, r1), c < k; Z[i·ldz + c] = 0 for k ≤ c < ldz. Blocks of
// 64 rows, 4 columns at a time: 4 contiguous runs of 512 bytes read (a few streams at once for
// the prefetchers, not k), transposed in 4×4 blocks into the block's rows of Z (≤ 64·ldz·8
// bytes, in L1/L2); scalars for the rows and columns left over.
template <class T>
TCSOLVE_ALWAYS_INLINE void stage_rows(const T* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k, T* z,
                                      std::int64_t ldz) {
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

// What a part reads: X (column-major), k, Z's row width, and either the whole staged Z (w = 0)
// or its ring: w rows (a power of two ≥ kBlock), the first column it stages (a multiple of kBlock),
// per block of rows the columns it needs staged (a multiple of kBlock; 0: none), A's columns m,
// and whether the ring holds every entry's row (no far entries).
template <class T>
struct PartSrc {
  const T* x;
  std::int64_t ldx;
  int k;
  std::int64_t ldz;
  const T* z;  // whole staging
  T* ring;
  std::int64_t w, lo, m;
  const std::int64_t* block_hi;
  bool all_near;
};

constexpr int kCarryCols = 64;  // Y's columns whose block-end rows are carried (Between)

// Y(b0 + i, c0 + c) = yb[i + c·kBlock] for c ∈ [col, stop), i < yrows (y: Y's block row b0,
// column c0), streamed with the carry where nt (Between below). Not inlined into the tiles (the
// kernels' instantiations would each carry a copy: a sanitizer build of this file went from
// minutes to over ten); cloned for the ISA as the part functions.
TCSOLVE_CPU_CLONES void flush_cols(const double* yb, std::int64_t yrows, int col, int stop, double* y,
                                   std::int64_t ldy, bool nt, int c0, bool first, bool last, double (*carry)[8]) {
  for (int c = col; c < stop; ++c) {
    const double* src_c = yb + c * kBlock;
    double* dst = y + c * ldy;
    std::int64_t i = 0;
#ifdef TCSOLVE_CPU_STREAM
    const std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(dst);
    if (nt && addr % sizeof(double) == 0) {
      const std::int64_t head = static_cast<std::int64_t>((64 - addr % 64) % 64 / 8);  // rows before a line
      const int j = c0 + c;
      const bool carried = j < kCarryCols;
      if (head > 0 && carried && !first && yrows >= head) {
        // the line before: the previous block's last 8 − head rows (carry) and this block's head
        alignas(16) double line[8];
        const std::int64_t t = 8 - head;
        for (std::int64_t l = 0; l < t; ++l) line[l] = carry[j][l];
        for (std::int64_t l = 0; l < head; ++l) line[t + l] = src_c[l];
        for (int l = 0; l < 8; l += 2) _mm_stream_pd(dst - t + l, _mm_load_pd(line + l));
        i = head;
      } else if (head > 0 && carried && !first) {  // a last block shorter than the head
        for (std::int64_t l = 0; l < 8 - head; ++l) dst[l - (8 - head)] = carry[j][l];
      }
      for (; i < std::min(head, yrows); ++i) dst[i] = src_c[i];
      for (; i + 8 <= yrows; i += 8)
        for (int l = 0; l < 8; l += 2) _mm_stream_pd(dst + i + l, _mm_loadu_pd(src_c + i + l));
      if (i < yrows && carried && !last) {  // the last rows wait for the next block's first ones
        for (std::int64_t l = 0; i + l < yrows; ++l) carry[j][l] = src_c[i + l];
        i = yrows;
      }
    }
#else
    (void)nt, (void)c0, (void)first, (void)last, (void)carry;
#endif
    for (; i < yrows; ++i) dst[i] = src_c[i];
  }
}

// A part's memory work, done a slice at a time between a chunk's tiles of 4 rows (tick()), so
// that its loads and stores overlap the chunk's arithmetic instead of running alone before and
// after it (lap3d:100, 32 columns, 2-core Xeon: the blocks' X staging ~15 ms, their arithmetic
// ~24 ms, their Y flush ~17 ms, one after the other):
//   - the ring's staging of X's rows [next, end) (the next block's), `rows` rows a tick, each run
//     inside one kBlock of slots (contiguous: w is a multiple of kBlock), a prefetch of each
//     column's line kStageAhead rows further on;
//   - the product's flush of the previous chunk's sums yb (kc columns of yrows rows, to y, Y's
//     columns from c0), `cols` columns a tick.
// stage_to() and flush_to() complete either before its rows or its buffer are needed.
//
// The flush streams whole 64-byte lines of Y with non-temporal stores (no read for ownership).
// Where a column does not start on a line (rows not a multiple of 8), each block's first and last
// rows share a line with the blocks before and after: the last ones are kept (carry, for Y's first
// kCarryCols columns) and streamed with the next block's first ones as one line; a part's first
// and last block store theirs with plain stores (the line is shared with the next part's thread).
// (lap3d:99, 32 columns, 2-core Xeon: 49 ms with plain stores there, 42 ms with the carry.)
template <class T>
struct Between {
  const PartSrc<T>* src = nullptr;
  std::int64_t mask = 0, next = 0, end = 0, rows = 0;
  const double* yb = nullptr;
  double* y = nullptr;
  std::int64_t yrows = 0, ldy = 0;
  int col = 0, kc = 0, cols = 0, c0 = 0;
  bool nt = false, first = false, last = false;
  alignas(64) double carry[kCarryCols][8];

  void stage_to(std::int64_t stop) {
    const PartSrc<T>& p = *src;
    constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
    while (next < stop) {
      if (next >= p.m) {  // rows past X's last one: never read
        next = stop;
        return;
      }
      const std::int64_t run = std::min({stop, (next / kBlock + 1) * kBlock, p.m});
      for (std::int64_t r = (next + line - 1) / line * line; r < run; r += line)
        if (r + kStageAhead < p.m)
          for (int j = 0; j < p.k; ++j) __builtin_prefetch(p.x + r + kStageAhead + j * p.ldx);
      if constexpr (std::is_same_v<T, double>)
        stage_part64(p.x + next, p.ldx, 0, run - next, p.k, p.ring + (next & mask) * p.ldz, p.ldz);
      else
        stage_part32(p.x + next, p.ldx, 0, run - next, p.k, p.ring + (next & mask) * p.ldz, p.ldz);
      next = run;
    }
  }
  void flush_to(int stop) {
    if (col >= stop) return;
    flush_cols(yb, yrows, col, stop, y, ldy, nt, c0, first, last, carry);
    col = stop;
  }
  TCSOLVE_ALWAYS_INLINE void tick() {
    if (next < end) stage_to(std::min(end, next + rows));
    if (col < kc) flush_to(std::min(kc, col + cols));
  }
};

// A part's blocks of kBlock rows: chunk(b0, b1, zr, c0, width) for each chunk of ≤ kMaxWidth
// columns. With a ring, the first block's rows of X are staged before it, and each next block's,
// [hi, ahead), between this block's tiles (bw.tick()): the ring then holds X's rows
// [ahead − w, hi) for this block (the plan's w counts the next block's columns, ring_need).
template <bool Ring, bool Far, class T, class Chunk>
TCSOLVE_ALWAYS_INLINE void part_blocks(std::int64_t r0, std::int64_t r1, const PartSrc<T>& src, Chunk& chunk,
                                       Between<T>& bw) {
  std::int64_t hi = src.lo;  // X's rows staged so far: [.., hi)
  ZRows<T, Ring, Far> zr{Ring ? src.ring : src.z, src.ldz, src.w - 1, 0, 0, src.x, src.ldx, src.k};
  const std::int64_t chunks = (src.ldz + kMaxWidth - 1) / kMaxWidth;
  if constexpr (Ring) {
    bw.src = &src;
    bw.mask = zr.mask;
    bw.next = hi;
    hi = std::max(hi, src.block_hi[r0 / kBlock]);
    bw.stage_to(hi);
  }
  for (std::int64_t b0 = r0; b0 < r1; b0 += kBlock) {
    const std::int64_t b1 = std::min(r1, b0 + kBlock);
    if constexpr (Ring) {
      const std::int64_t ahead = b1 < r1 ? std::max(hi, src.block_hi[b1 / kBlock]) : hi;
      const std::int64_t ticks = chunks * ((b1 - b0 + kTile - 1) / kTile);
      bw.end = ahead;
      bw.rows = std::max<std::int64_t>(kTile, ((ahead - hi + ticks - 1) / ticks + kTile - 1) / kTile * kTile);
      zr.vlo = std::max(src.lo, ahead - src.w);
      zr.vspan = std::max<std::int64_t>(0, hi - zr.vlo);
    }
    for (int c0 = 0; c0 < src.k; c0 += kMaxWidth)
      chunk(b0, b1, zr, c0, static_cast<int>(std::min<std::int64_t>(kMaxWidth, src.ldz - c0)));
    if constexpr (Ring) {
      bw.stage_to(bw.end);
      hi = bw.end;
    }
  }
}

// part_blocks for the part's staging: the whole Z, a ring holding every entry's row, or a ring
// with far entries.
template <class T, class Chunk>
TCSOLVE_ALWAYS_INLINE void any_part_blocks(std::int64_t r0, std::int64_t r1, const PartSrc<T>& src, Chunk& chunk,
                                           Between<T>& bw) {
  if (src.w > 0 && src.all_near) part_blocks<true, false>(r0, r1, src, chunk, bw);
  else if (src.w > 0) part_blocks<true, true>(r0, r1, src, chunk, bw);
  else part_blocks<false, false>(r0, r1, src, chunk, bw);
}

// Y's side of a chunk: the block's sums into yb (column-major, kBlock rows a column, rows from b0;
// all 4Q columns written, the caller copies the kc it stores).
template <int Q>
struct SpmmOut {
  double* yb;
  std::int64_t b0;
  Between<double>& bw;
  TCSOLVE_ALWAYS_INLINE void tick() { bw.tick(); }
  TCSOLVE_ALWAYS_INLINE void cols4(std::int64_t i, int q, const V4<double>* cols) {
    for (int l = 0; l < 4; ++l) store4(yb + (i - b0) + (4 * q + l) * kBlock, cols[l]);
  }
  TCSOLVE_ALWAYS_INLINE void row(std::int64_t i, const V4<double>* s) {
    for (int q = 0; q < Q; ++q)
      for (int l = 0; l < 4; ++l) yb[(i - b0) + (4 * q + l) * kBlock] = s[q][l];
  }
};

template <int W>
struct SpmmRows {
  template <class ZR>
  static TCSOLVE_ALWAYS_INLINE void run(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const ZR& zr, int c0,
                                        double* yb, Between<double>& bw) {
    if constexpr (W <= 2) {
      for (std::int64_t i = r0; i < r1; ++i) {
        double s[W];
        row_sums_narrow<W, double>(a, i, zr, c0, s);
        for (int c = 0; c < W; ++c) yb[(i - r0) + c * kBlock] = s[c];
        if ((i - r0) % kTile == kTile - 1) bw.tick();
      }
    } else {
      SpmmOut<W / 4> out{yb, r0, bw};
      tile_rows<W / 4, double>(a, r0, r1, zr, c0, out);
    }
  }
};

// A chunk's sums into one of two buffers while the previous chunk's buffer is flushed to Y between
// its tiles (bw); what the ticks left of that flush is done after the chunk.
struct SpmmChunk {
  const CsrPtrs& a;
  double* y;
  std::int64_t ldy, r0, r1;  // the part's rows
  int k;
  bool nt;
  double* yb[2];
  Between<double>& bw;
  int cur = 0;
  template <class ZR>
  TCSOLVE_ALWAYS_INLINE void operator()(std::int64_t b0, std::int64_t b1, const ZR& zr, int c0, int w) {
    double* sums = yb[cur];
    cur ^= 1;
    with_width<SpmmRows>(w, a, b0, b1, zr, c0, sums, bw);
    bw.flush_to(bw.kc);
    const std::int64_t ticks = (b1 - b0 + kTile - 1) / kTile;
    bw.yb = sums, bw.yrows = b1 - b0, bw.y = y + b0 + static_cast<std::int64_t>(c0) * ldy, bw.ldy = ldy, bw.nt = nt;
    bw.col = 0, bw.kc = std::min(w, k - c0), bw.c0 = c0, bw.first = b0 == r0, bw.last = b1 == r1;
    bw.cols = static_cast<int>(std::max<std::int64_t>(1, (bw.kc + ticks - 1) / ticks));
  }
};

TCSOLVE_CPU_CLONES void spmm_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const PartSrc<double>& src,
                                  double* y, std::int64_t ldy, bool nt) {
  alignas(64) double yb[2][kBlock * kMaxWidth];
  Between<double> bw;
  SpmmChunk chunk{a, y, ldy, r0, r1, src.k, nt, {yb[0], yb[1]}, bw};
  any_part_blocks(r0, r1, src, chunk, bw);
  bw.flush_to(bw.kc);
#ifdef TCSOLVE_CPU_STREAM
  if (nt) _mm_sfence();  // the streamed lines before the part is reported done
#endif
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

// The step's side of a chunk: the block's sums into sb and cur(i, c0 + c) into xb (both
// column-major, kBlock rows a column, rows from b0; cur from Z's row i, in the ring too: its window
// holds every row's own index). The epilogue then runs down each column's contiguous rows.
template <int Q, class T, class ZR>
struct StepOut {
  const ZR& zr;
  T* sb;
  T* xb;
  std::int64_t b0;
  int c0;
  Between<T>& bw;
  TCSOLVE_ALWAYS_INLINE void tick() { bw.tick(); }
  TCSOLVE_ALWAYS_INLINE void cols4(std::int64_t i, int q, const V4<T>* cols) {
    V4<T> x0 = load4(zr.row(i) + c0 + 4 * q), x1 = load4(zr.row(i + 1) + c0 + 4 * q);
    V4<T> x2 = load4(zr.row(i + 2) + c0 + 4 * q), x3 = load4(zr.row(i + 3) + c0 + 4 * q);
    transpose4<T>(x0, x1, x2, x3);
    const V4<T> xc[4] = {x0, x1, x2, x3};
    for (int l = 0; l < 4; ++l) {
      store4(sb + (i - b0) + (4 * q + l) * kBlock, cols[l]);
      store4(xb + (i - b0) + (4 * q + l) * kBlock, xc[l]);
    }
  }
  TCSOLVE_ALWAYS_INLINE void row(std::int64_t i, const V4<T>* sums) {
    const T* zi = zr.row(i) + c0;
    for (int c = 0; c < 4 * Q; ++c) {
      sb[(i - b0) + c * kBlock] = sums[c / 4][c % 4];
      xb[(i - b0) + c * kBlock] = zi[c];
    }
  }
};

// next(i, j) = a·(d[i]·)sum + b·cur(i, j) (+ rc_j·r(i, j)) (+ c·next(i, j)) for rows [b0, b1),
// j = c0 + c, c < kc, rc_j = f[j] or e; sums and cur from sb and xb. 4 rows at a time, then
// single rows: the same expression per entry either way.
template <class T>
TCSOLVE_ALWAYS_INLINE void step_epilogue(const StepBlocks<T>& s, const T* sb, const T* xb, std::int64_t b0,
                                         std::int64_t b1, int c0, int kc) {
  const bool with_r = s.f || s.e != T(0), with_next = s.c != T(0);
  const std::int64_t rows = b1 - b0, rows4 = rows / 4 * 4;
  for (int c = 0; c < kc; ++c) {
    const std::int64_t j = c0 + c;
    const T rc = s.f ? static_cast<T>(s.f[j]) : s.e;
    const T *sc = sb + c * kBlock, *xc = xb + c * kBlock, *rj = with_r ? s.r + j * s.ldr + b0 : nullptr;
    T* nj = s.next + j * s.ldn + b0;
    for (std::int64_t i = 0; i < rows4; i += 4) {
      V4<T> acc = load4(sc + i);
      if (s.d) {
        V4<T> dv;
        for (int l = 0; l < 4; ++l) dv[l] = static_cast<T>(s.d[b0 + i + l]);
        acc = dv * acc;
      }
      V4<T> o = s.a * acc + s.b * load4(xc + i);
      if (with_r) o = madd4(rc, load4(rj + i), o);
      if (with_next) o = madd4(s.c, load4(nj + i), o);
      store4(nj + i, o);
    }
    for (std::int64_t i = rows4; i < rows; ++i) {
      const T acc = s.d ? static_cast<T>(s.d[b0 + i]) * sc[i] : sc[i];
      T o = s.a * acc + s.b * xc[i];
      if (with_r) o = madd(rc, rj[i], o);
      if (with_next) o = madd(s.c, nj[i], o);
      nj[i] = o;
    }
  }
}

template <int W>
struct StepRows {
  template <class T, class ZR>
  static TCSOLVE_ALWAYS_INLINE void run(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const ZR& zr, int c0,
                                        int k, const StepBlocks<T>& s, T* sb, T* xb, Between<T>& bw) {
    const int kc = std::min(W, k - c0);
    if constexpr (W <= 2) {
      for (std::int64_t i = r0; i < r1; ++i) {
        T sums[W];
        row_sums_narrow<W, T>(a, i, zr, c0, sums);
        const T* zi = zr.row(i) + c0;
        for (int c = 0; c < W; ++c) sb[(i - r0) + c * kBlock] = sums[c], xb[(i - r0) + c * kBlock] = zi[c];
        if ((i - r0) % kTile == kTile - 1) bw.tick();
      }
    } else {
      StepOut<W / 4, T, ZR> out{zr, sb, xb, r0, c0, bw};
      tile_rows<W / 4, T>(a, r0, r1, zr, c0, out);
    }
    step_epilogue(s, sb, xb, r0, r1, c0, kc);
  }
};

template <class T>
struct StepChunk {
  const CsrPtrs& a;
  int k;
  const StepBlocks<T>& s;
  T* sb;
  T* xb;
  Between<T>& bw;
  template <class ZR>
  TCSOLVE_ALWAYS_INLINE void operator()(std::int64_t b0, std::int64_t b1, const ZR& zr, int c0, int w) {
    with_width<StepRows>(w, a, b0, b1, zr, c0, k, s, sb, xb, bw);
  }
};

template <class T>
TCSOLVE_ALWAYS_INLINE void step_blocks(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const PartSrc<T>& src,
                                       const StepBlocks<T>& s) {
  alignas(64) T sb[kBlock * kMaxWidth];
  alignas(64) T xb[kBlock * kMaxWidth];
  Between<T> bw;
  StepChunk<T> chunk{a, src.k, s, sb, xb, bw};
  any_part_blocks(r0, r1, src, chunk, bw);
}

TCSOLVE_CPU_CLONES void step_part64(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const PartSrc<double>& src,
                                    const StepBlocks<double>& s) {
  step_blocks(a, r0, r1, src, s);
}
TCSOLVE_CPU_CLONES void step_part32(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const PartSrc<float>& src,
                                    const StepBlocks<float>& s) {
  step_blocks(a, r0, r1, src, s);
}

void stage_part(const double* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k, double* z,
                std::int64_t ldz) {
  stage_part64(x, ldx, r0, r1, k, z, ldz);
}
void stage_part(const float* x, std::int64_t ldx, std::int64_t r0, std::int64_t r1, int k, float* z,
                std::int64_t ldz) {
  stage_part32(x, ldx, r0, r1, k, z, ldz);
}
void step_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const PartSrc<double>& src,
               const StepBlocks<double>& s) {
  step_part64(a, r0, r1, src, s);
}
void step_part(const CsrPtrs& a, std::int64_t r0, std::int64_t r1, const PartSrc<float>& src,
               const StepBlocks<float>& s) {
  step_part32(a, r0, r1, src, s);
}

}  // namespace

template <class T>
T* CpuCsrKernels::claim_ring(Rings<T>& r, std::size_t count, int& slot) const {
  for (std::size_t s = 0; s < r.buf.size(); ++s)
    if (!r.busy[s].exchange(true, std::memory_order_acquire)) {
      slot = static_cast<int>(s);
      try {
        return r.buf[s].reserve(count);
      } catch (...) {
        r.busy[s].store(false, std::memory_order_release);
        throw;
      }
    }
  throw Error("CPU CSR kernel: more parts at once than host threads (" + std::to_string(r.buf.size()) + " rings)");
}

template <class T>
const T* CpuCsrKernels::stage(MvView<const T> x, AlignedBuffer<T>& buf, std::int64_t& ldz) const {
  const int k = static_cast<int>(x.cols);
  if (k == 1) {  // one column: X itself is row-major
    ldz = 1;
    return x.data;
  }
  ldz = staged_width(k);
  T* z = buf.reserve(static_cast<std::size_t>(x.rows * ldz));
  stage_all(x, z, ldz);
  return z;
}

template <class T>
void CpuCsrKernels::stage_all(MvView<const T> x, T* z, std::int64_t ldz) const {
  const int np = parts();
  const std::int64_t m = x.rows;
  const int k = static_cast<int>(x.cols);
  parallel_parts(np, [&](int p) { stage_part(x.data, x.ld, m * p / np, m * (p + 1) / np, k, z, ldz); });
}

// part(p, r0, r1, src) over the parts of the call's staging (ring: each part on a ring of its own).
template <class T, class Part>
void CpuCsrKernels::run_parts(MvView<const T> x, AlignedBuffer<T>& whole, Rings<T>& rings, Part&& part) const {
  const std::int64_t k = x.cols;
  PartSrc<T> src{x.data, x.ld, static_cast<int>(k), 0,         nullptr,
                 nullptr, 0,    0,                   a_.ncols, ring_.block_hi.data(), ring_.all_near};
  if (staging_for(k, sizeof(T)) == Staging::whole) {
    src.z = stage(x, whole, src.ldz);
    parallel_parts(parts(), [&](int p) { part(row_begin(p), row_begin(p + 1), src); });
    return;
  }
  src.ldz = staged_width(k);
  src.w = ring_.w;
  const std::size_t count = static_cast<std::size_t>(ring_.w * src.ldz);
  parallel_parts(static_cast<int>(ring_.bounds.size()) - 1, [&](int p) {
    int slot = 0;
    PartSrc<T> ps = src;
    ps.ring = claim_ring(rings, count, slot);
    ps.lo = ring_.lo[static_cast<std::size_t>(p)];
    struct Release {
      std::atomic<bool>& b;
      ~Release() { b.store(false, std::memory_order_release); }
    } release{rings.busy[static_cast<std::size_t>(slot)]};
    part(ring_.bounds[static_cast<std::size_t>(p)], ring_.bounds[static_cast<std::size_t>(p) + 1], ps);
  });
}

void CpuCsrKernels::spmm(MvView<const double> x, MvView<double> y) const {
  const std::int64_t k = x.cols;
  check_block(x, a_.ncols, k, "X");
  check_block(MvView<const double>(y), a_.nrows, k, "Y");
  TCSOLVE_REQUIRE(k < (std::int64_t(1) << 30), "CPU CSR kernel: too many columns");
  if (k == 0 || a_.nrows == 0) return;
  std::lock_guard<std::mutex> lk(busy_);
  const CsrPtrs ap{a_.row_ptr.data(), a_.col_idx.data(), a_.values.data(), a_.nnz()};
  const bool nt = a_.nrows * k * static_cast<std::int64_t>(sizeof(double)) >= stream_bytes_;
  run_parts(x, z64_, r64_, [&](std::int64_t r0, std::int64_t r1, const PartSrc<double>& src) {
    spmm_part(ap, r0, r1, src, y.data, y.ld, nt);
  });
}

template <class T>
void CpuCsrKernels::step_any(const StepCoefs& s, MvView<const T> cur, MvView<T> next, MvView<const T> r,
                             AlignedBuffer<T>& buf, Rings<T>& rings) const {
  const std::int64_t n = a_.nrows, k = cur.cols;
  TCSOLVE_REQUIRE(a_.square(), "chebyshev step: A must be square");
  check_block(cur, n, k, "cur");
  check_block(MvView<const T>(next), n, k, "next");
  if (s.f || s.e != 0.0) check_block(r, n, k, "r");
  if (k == 0 || n == 0) return;
  std::lock_guard<std::mutex> lk(busy_);
  const CsrPtrs ap{a_.row_ptr.data(), a_.col_idx.data(), a_.values.data(), a_.nnz()};
  const StepBlocks<T> sb{next.data,           next.ld,             r.data,              r.ld, static_cast<T>(s.a),
                         static_cast<T>(s.b), static_cast<T>(s.c), static_cast<T>(s.e), s.d,  s.f};
  run_parts(cur, buf, rings, [&](std::int64_t r0, std::int64_t r1, const PartSrc<T>& src) {
    step_part(ap, r0, r1, src, sb);
  });
}

void CpuCsrKernels::step(const StepCoefs& s, MvView<const double> cur, MvView<double> next,
                         MvView<const double> r) const {
  step_any(s, cur, next, r, z64_, r64_);
}

void CpuCsrKernels::step(const StepCoefs& s, MvView<const float> cur, MvView<float> next,
                         MvView<const float> r) const {
  step_any(s, cur, next, r, z32_, r32_);
}

void CpuCsrKernels::to_rows(MvView<const double> x, double* z, std::int64_t ld) const {
  check_block(x, a_.ncols, x.cols, "X");
  TCSOLVE_REQUIRE(ld % 4 == 0 && ld >= x.cols, "CPU CSR kernel: rows of " + std::to_string(ld) +
                                                   " doubles for " + std::to_string(x.cols) + " columns");
  stage_all(x, z, ld);
}

}  // namespace tcsolve::detail
