// The CPU's CSR kernels: Y = A·X and the fused Chebyshev step on column-major blocks, at the
// memory's speed (internal to spmm/: CpuSparseOperator and the host ChebyshevStep use them).
//
// Column-major X with k columns makes every non-zero touch k cache lines of X (one element of
// each). Here X is copied to a row-major staging block Z (Z[c·ldz + j] = X(c, j), ldz = k rounded
// up to 4, the pad zeroed): each non-zero then reads k contiguous values, and the row's k sums stay
// in vector registers (chunks of at most 32 columns a pass over a block of 64 rows). k = 1 reads X
// in place. Two ways of staging (picked per call):
//   - ring: where a part's rows reach only a window of columns that moves with the rows (meshes,
//     banded and locally ordered matrices), each part stages X's rows just before its rows need
//     them, into a ring of W rows (a few MB, its own, kept in the caches): X is read once from
//     memory and Z never goes there (the whole block cost X read + Z written and re-read). Where
//     the window of all entries is over the budget, the ring holds the band of 99 % of them and
//     the rest (a road graph's few long edges) read X's columns directly.
//   - whole: otherwise (a graph in random order), all of X is staged first, in parallel.
// Y of the product is written a block of 64 rows at a time through a small buffer, whole cache
// lines with non-temporal stores when Y is larger than the caches (no read for ownership).
//
// Rows are cut into parts of about equal work (non-zeros + rows; a ring's at multiples of 64 rows),
// handed out to the host threads one part at a time (core/parallel.hpp parallel_parts). A row's
// result depends only on the row, never on the part, thread or staging that computed it: results
// are bitwise the same for any thread count. The inner loops are compiled for the build's ISA
// and, on x86-64 with GCC or Clang, also for x86-64-v3 (AVX2 + FMA) and x86-64-v4 (AVX-512),
// picked at load time (target_clones). All round as csr_spmm_reference (fp64: a product, then a
// sum, in the row's order; no contraction into FMAs), so the CPU operator's Y is bitwise the
// reference's; the fp32 step uses FMAs as the CUDA one.
//
// Traffic of one SpMM (n rows, m columns of A, k columns): A (12·nnz + 8·(n + 1) bytes), X read
// (8·m·k; ring: plus the windows staged twice at part starts), Y written (8·n·k); whole staging
// adds Z written and re-read (16·m·k). The step adds next read (c ≠ 0) and r read (e ≠ 0).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "core/csr.hpp"
#include "core/multivector.hpp"

namespace tcsolve::detail {

// A growable 64-byte-aligned host buffer (its contents are not kept across a grow).
template <class T>
class AlignedBuffer {
 public:
  T* reserve(std::size_t count) {
    if (count > cap_) {
      // from 4 MB on, 2 MB pages where the kernel gives them (transparent huge pages on
      // madvise): the gathers of X go anywhere in the block, one TLB entry per 4 KB page missed
      // on most of them
      const bool huge = count * sizeof(T) >= (std::size_t(4) << 20);
      const std::size_t align = huge ? (std::size_t(2) << 20) : 64;
      const std::size_t bytes = (count * sizeof(T) + align - 1) / align * align;
      void* p = std::aligned_alloc(align, bytes);
      if (!p) throw std::bad_alloc();
#ifdef __linux__
      if (huge) ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
      mem_.reset(static_cast<T*>(p));
      cap_ = count;
    }
    return mem_.get();
  }
  std::size_t capacity() const { return cap_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> mem_;
  std::size_t cap_ = 0;
};

// Coefficients of the fused step on row i, column j (spmm/chebyshev_step.hpp):
//   next(i, j) = a·(d ? d[i] : 1)·(A·cur)(i, j) + b·cur(i, j) + rc_j·r(i, j) + c·next(i, j)
// with rc_j = f[j] when f is given, else e (the r term only when f or e ≠ 0, the next term only
// when c ≠ 0: next and r are not read otherwise).
struct StepCoefs {
  double a = 0, b = 0, c = 0, e = 0;
  const double* d = nullptr;
  const double* f = nullptr;
};

// The kernels on A's arrays (A is the caller's and must outlive this object). The staging blocks
// are this object's (grown at the first call of each width, then reused): calls on one object
// are serialized (a mutex); no allocation once the widest block has been seen.
class CpuCsrKernels {
 public:
  // How X is staged (automatic: ring where it fits the budget and saves traffic).
  enum class Staging { automatic, whole, ring };
  explicit CpuCsrKernels(const Csr<double>& a);
  // Y = A·X (x: A's columns × k, y: A's rows × k, host, no aliasing between X and Y needed).
  void spmm(MvView<const double> x, MvView<double> y) const;
  // The fused step on fp64 blocks (square A; next must not alias cur or r).
  void step(const StepCoefs& s, MvView<const double> cur, MvView<double> next,
            MvView<const double> r) const;
  // The same on fp32 blocks, fp32 arithmetic, A's values rounded to fp32 per use.
  void step(const StepCoefs& s, MvView<const float> cur, MvView<float> next,
            MvView<const float> r) const;
  // ---- Row-major blocks (the Chebyshev filter's iterates on the host, kept by rows across its
  // steps: each step gathers cur where it lies instead of staging it). A block by rows: row i at
  // z + i·ld, ld a multiple of 4.
  // z = X by rows (its pad columns [k, ld) zeroed); X = z's first k columns.
  void to_rows(MvView<const double> x, double* z, std::int64_t ld) const;
  void from_rows(const double* z, std::int64_t ld, MvView<double> x) const;
  // next = a·A·cur + b·cur (+ c·next) on columns [j0, j1) (e = 0, no f, no d); next's other
  // columns untouched. cur's columns [j0 rounded down to 4, j1 rounded up to 4) are read (pads
  // included: keep them finite). Bitwise the column-major step's values. No allocation.
  void step_rows(const StepCoefs& s, const double* cur, double* next, std::int64_t ld, std::int64_t j0,
                 std::int64_t j1) const;
  int parts() const { return static_cast<int>(bounds_.size()) - 1; }
  // Tests and benchmarks: force a staging (ring where the matrix has no ring parts falls back
  // to whole), and the ring's byte budget (default 8 MB: a quarter of a 32 MB last-level cache
  // a thread; TCSOLVE_CPU_RING_KB overrides it at construction).
  void force_staging(Staging s) { staging_ = s; }
  void set_ring_budget(std::size_t bytes) { ring_budget_ = bytes; }
  // Y of the product streamed past the caches (non-temporal stores) from this many bytes on
  // (default 16 MB: half the development machine's 32 MB last-level cache; a block that large is
  // not in cache for its next reader anyway).
  void set_stream_bytes(std::int64_t bytes) { stream_bytes_ = bytes; }
  // The ring's rows (0: no ring parts) and the staging the next call with k columns would use.
  std::int64_t ring_rows() const { return ring_.need; }
  Staging staging_for(std::int64_t k, std::size_t elem) const;
  // Rows of part p: [row_begin(p), row_begin(p + 1)).
  std::int64_t row_begin(int p) const { return bounds_[static_cast<std::size_t>(p)]; }

 private:
  template <class T>
  const T* stage(MvView<const T> x, AlignedBuffer<T>& buf, std::int64_t& ldz) const;
  // Z = X by rows (row width ldz, pads zeroed), the host threads over A's parts' row counts.
  template <class T>
  void stage_all(MvView<const T> x, T* z, std::int64_t ldz) const;
  template <class T>
  struct Rings;
  template <class T>
  void step_any(const StepCoefs& s, MvView<const T> cur, MvView<T> next, MvView<const T> r,
                AlignedBuffer<T>& buf, Rings<T>& rings) const;
  template <class T, class Part>
  void run_parts(MvView<const T> x, AlignedBuffer<T>& whole, Rings<T>& rings, Part&& part) const;

  // Ring staging's parts: bounds, the first column each stages (a multiple of 64), the columns
  // each 64-row block needs staged (max column + 1 rounded up to 64; 0: no entries), the rows the
  // ring needs (a multiple of 64; 0: no ring), its rows w (need rounded up to a power of two: a
  // row's slot is c & (w − 1)), the rows staged over all parts, and whether the ring holds every
  // entry's row (else the band of 99 % of them: the rest are far).
  struct RingPlan {
    std::vector<std::int64_t> bounds, lo, block_hi;
    std::int64_t need = 0, w = 0, staged = 0;
    bool all_near = true;
  };
  template <class T>
  struct Rings {  // one ring per running part (at most one part per host thread at a time)
    std::vector<AlignedBuffer<T>> buf;
    std::unique_ptr<std::atomic<bool>[]> busy;
  };
  template <class T>
  T* claim_ring(Rings<T>& r, std::size_t count, int& slot) const;

  const Csr<double>& a_;
  std::vector<std::int64_t> bounds_;  // part p: rows [bounds_[p], bounds_[p + 1])
  RingPlan ring_;
  Staging staging_ = Staging::automatic;
  std::size_t ring_budget_;
  std::int64_t stream_bytes_ = std::int64_t(16) << 20;
  mutable std::mutex busy_;
  mutable AlignedBuffer<double> z64_;
  mutable AlignedBuffer<float> z32_;
  mutable Rings<double> r64_;
  mutable Rings<float> r32_;
};

// Rows of a block of the kernels (a ring's parts start at multiples of it).
constexpr std::int64_t kCpuRowBlock = 64;
// Z's row width for k columns: k for k ≤ 2, else k rounded up to 4 (every chunk a whole number of
// 4-wide vectors).
inline std::int64_t cpu_staged_width(std::int64_t k) { return k <= 2 ? k : (k + 3) / 4 * 4; }

// Row bounds of `parts` parts of about equal work (row_ptr[i] + i: non-zeros plus a row's fixed
// cost), bounds[0] = 0, bounds[parts] = n, inner bounds multiples of `align`; parts ≥ 1.
std::vector<std::int64_t> balanced_row_parts(const std::vector<std::int64_t>& row_ptr, int parts,
                                             std::int64_t align = 4);

// The number of parts the kernels use for A: about 8 a thread, each at least ~16k of work.
int cpu_kernel_parts(std::int64_t rows, std::int64_t nnz);

}  // namespace tcsolve::detail
