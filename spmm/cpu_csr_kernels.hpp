// The CPU's CSR kernels: Y = A·X and the fused Chebyshev step on column-major blocks, at the
// memory's speed (internal to spmm/: CpuSparseOperator and the host ChebyshevStep use them).
//
// Column-major X with k columns makes every non-zero touch k cache lines of X (one element of
// each): on a graph in random order (gen:rgg:55000, 24 columns) the old row loop ran at 0.6 GB/s.
// Here X is first copied to a row-major staging block Z (Z[i·ldz + c] = X(i, c), ldz = k rounded
// up to 4, the pad zeroed, 64-byte aligned): one pass that reads and writes the block once; each
// non-zero then reads k contiguous values (k/8 cache lines), and the row's k sums stay in vector
// registers (chunks of at most 32 columns a pass over the row). k = 1 reads X in place.
//
// Rows are cut into parts of about equal work (non-zeros + rows), handed out to the host threads
// one part at a time (core/parallel.hpp parallel_parts). A row's result depends only on the row,
// never on the part or thread that computed it: results are bitwise the same for any thread count.
// The inner loops are compiled for the build's ISA and, on x86-64 with GCC or Clang, also for
// x86-64-v3 (AVX2 + FMA), picked at load time (target_clones). Both round as csr_spmm_reference
// (fp64: a product, then a sum, in the row's order; no contraction into FMAs), so the CPU
// operator's Y is bitwise the reference's; the fp32 step uses FMAs as the CUDA one.
//
// Traffic of one SpMM (n rows, m columns of A, k columns): A (12·nnz + 8·(n + 1) bytes), X read
// and Z written (8·m·k each: Z mostly stays in the last-level cache for the gathers), Z gathered,
// Y written (8·n·k). The step adds next read (c ≠ 0) and r read (e ≠ 0).
#pragma once
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
  explicit CpuCsrKernels(const Csr<double>& a);
  // Y = A·X (x: A's columns × k, y: A's rows × k, host, no aliasing between X and Y needed).
  void spmm(MvView<const double> x, MvView<double> y) const;
  // The fused step on fp64 blocks (square A; next must not alias cur or r).
  void step(const StepCoefs& s, MvView<const double> cur, MvView<double> next,
            MvView<const double> r) const;
  // The same on fp32 blocks, fp32 arithmetic, A's values rounded to fp32 per use.
  void step(const StepCoefs& s, MvView<const float> cur, MvView<float> next,
            MvView<const float> r) const;
  int parts() const { return static_cast<int>(bounds_.size()) - 1; }
  // Rows of part p: [row_begin(p), row_begin(p + 1)).
  std::int64_t row_begin(int p) const { return bounds_[static_cast<std::size_t>(p)]; }

 private:
  template <class T>
  const T* stage(MvView<const T> x, AlignedBuffer<T>& buf, std::int64_t& ldz) const;
  template <class T>
  void step_any(const StepCoefs& s, MvView<const T> cur, MvView<T> next, MvView<const T> r,
                AlignedBuffer<T>& buf) const;

  const Csr<double>& a_;
  std::vector<std::int64_t> bounds_;  // part p: rows [bounds_[p], bounds_[p + 1])
  mutable std::mutex busy_;
  mutable AlignedBuffer<double> z64_;
  mutable AlignedBuffer<float> z32_;
};

// Row bounds of `parts` parts of about equal work (row_ptr[i] + i: non-zeros plus a row's fixed
// cost), bounds[0] = 0, bounds[parts] = n; parts ≥ 1.
std::vector<std::int64_t> balanced_row_parts(const std::vector<std::int64_t>& row_ptr, int parts);

// The number of parts the kernels use for A: about 8 a thread, each at least ~16k of work.
int cpu_kernel_parts(std::int64_t rows, std::int64_t nnz);

}  // namespace tcsolve::detail
