// One step of a Chebyshev recurrence fused with the sparse product (CSR):
//   next = a·D·A·cur + b·cur + c·next + e·r        (c == 0: next is not read, e == 0: r is not
//                                                   read; D = diag(d) when d is given, the
//                                                   Jacobi-scaled polynomial's)
// on n × s blocks. Unfused this is an SpMM (reads cur, writes W), a three-term pass (reads W,
// cur, next; writes next) and an axpy (reads r, next; writes next): 7 block passes besides A.
// Fused: cur is gathered through A's pattern, next and r read once, next written once: 4 passes
// (8·n·s·4 bytes plus A's nnz·(4 + sizeof storage) + 8·(n+1)). Used by the Chebyshev polynomial
// preconditioner (solvers/chebyshev_precond.hpp) and by the Chebyshev filter of the eigensolver
// (solvers/chebyshev.cpp; e = 0 there), whose fp32 rung runs the same step on fp32 blocks with a
// per-column r coefficient (step32, and residual32 / combine32 around it).
//
// Host: chebyshev_step.cpp (the reference, rows over threads). CUDA: chebyshev_step.cu, a
// row-split kernel (fp64: two threads per row, each 4 columns per pass in registers; fp32 rung:
// one thread per row, 8 columns per pass) on its own copy of A
// with values stored in `storage` (fp64 or fp32; accumulation in fp64). The rounded copy is only
// used inside a preconditioner, where it changes M, not the answer.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/csr.hpp"
#include "core/multivector.hpp"
#include "core/operator.hpp"
#include "core/types.hpp"

namespace tcsolve {

class ChebyshevStep {
 public:
  virtual ~ChebyshevStep() = default;
  virtual Space space() const = 0;
  // next must not alias cur or r; all three n × s with their own leading dimensions, in space().
  // Asynchronous on the stream given at construction (CUDA); no allocation.
  // d (optional): n row scales in space() (nullptr: none).
  virtual void step(double a, MvView<const double> cur, double b, double c, MvView<double> next,
                    double e, MvView<const double> r, const double* d = nullptr) const = 0;
  virtual std::string describe() const = 0;
  // ---- Blocks by rows (the host step: spmm/cpu_csr_kernels.hpp step_rows). The Chebyshev filter
  // keeps its two iterates by rows across its steps (row i at p + i·ld, ld a multiple of 4), so
  // the fused step gathers cur in place instead of transposing it into a staging block and next
  // back, every step. Steps without it (CUDA) keep the default: by_rows() false, the rest throws.
  virtual bool by_rows() const { return false; }
  // z = X by rows, its pad columns [X.cols, ld) zeroed; X = z's first X.cols columns.
  virtual void to_rows(MvView<const double> x, double* z, std::int64_t ld) const;
  virtual void from_rows(const double* z, std::int64_t ld, MvView<double> x) const;
  // next = a·A·cur + b·cur + c·next on columns [j0, j1) of next (the others untouched); cur's
  // columns [j0 rounded down to 4, j1 rounded up to 4) are read and must be finite.
  virtual void step_rows(double a, const double* cur, double b, double c, double* next, std::int64_t ld,
                         std::int64_t j0, std::int64_t j1) const;
  // Device bytes the step keeps (its copy of A; 0 for a step on the caller's arrays or the host).
  virtual std::size_t device_bytes() const { return 0; }

  // ---- The fp32 rung of the eigensolver's filter (residual form, solvers/chebyshev.cpp): blocks
  // of fp32 vectors, A as stored; step32 accumulates in fp32 (in the host
  // reference as well), residual32/combine32 compute in fp64. Asynchronous on the step's stream, no
  // allocation; per-column coefficients (theta, f, q) are s values in space().
  // r = fp32(s·AX − X·diag(θ)) and z = fp32(g·(s·AX − X·diag(θ))), one pass over AX and X
  // (reads 16, writes 8 bytes per entry).
  virtual void residual32(double s, MvView<const double> ax, MvView<const double> x,
                          const double* theta, double g, MvView<float> r, MvView<float> z) const = 0;
  // next = a·A·cur + b·cur + c·next + r·diag(f)   (c == 0: next is not read; f == nullptr: no r
  // term). Bytes per entry: 4 gathered, 4 read of r, 4 (+4 with c) of next.
  virtual void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
                      MvView<const float> r, const double* f) const = 0;
  // y = x·diag(q) + z (y may be x itself).
  virtual void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                         MvView<double> y) const = 0;
};

// Where the fused row-split step pays: short rows (a 7-point Laplacian), at most 16 entries a row
// on average. With long rows (3D elasticity, ~80 a row) the operator's own kernel (BCSR/DMMA) is
// faster (forcing the fused step lost 2–4× on elast3d:48, docs/performance.md).
inline bool chebyshev_step_pays(std::int64_t n, std::int64_t nnz) {
  return nnz <= 16 * (n > 1 ? n : 1);
}

// backend cpu: host reference; cuda: the device kernel (NotCompiled without CUDA). storage:
// fp64 or fp32 (InvalidArgument otherwise). stream: the CUDA stream to run on (cudaStream_t).
std::unique_ptr<ChebyshevStep> make_chebyshev_step(const Csr<double>& a, Backend backend,
                                                   Precision storage, void* stream);

// The CUDA step on a caller-owned device CSR (n rows; row_ptr int64 [n+1], col int32, values
// fp64; e.g. CuPy's arrays, spmm/device_csr_view.hpp): no copy; the arrays must outlive the step.
// NotCompiled without CUDA.
std::unique_ptr<ChebyshevStep> make_chebyshev_step_view(std::int64_t n, const std::int64_t* row_ptr,
                                                        const std::int32_t* col, const double* values,
                                                        void* stream);

// The same on A's values rounded to fp32 on the device (a copy of the nnz values only, 4·nnz
// bytes; row_ptr and col stay the caller's): the preconditioner's fp32 step without a second
// upload of A (H200, lap3d:100: 26–36 ms of host rounding and upload of 64 MB before). nnz =
// row_ptr[n]. NotCompiled without CUDA.
std::unique_ptr<ChebyshevStep> make_chebyshev_step_view32(std::int64_t n, std::int64_t nnz,
                                                          const std::int64_t* row_ptr,
                                                          const std::int32_t* col, const double* values,
                                                          void* stream);
// The step on the device CSR that the operator `a` already holds for `csr` (a CUDA CSR operator
// in fp64, unpermuted, of csr's size; SparseOperator::device_csr): in place for storage fp64,
// with the values rounded on the device for fp32. nullptr where `a` holds no such copy (then
// make_chebyshev_step uploads one).
std::unique_ptr<ChebyshevStep> make_chebyshev_step_on_operator(const LinearOperator<double>& a,
                                                               const Csr<double>& csr,
                                                               Precision storage, void* stream);
// ---- The step on A's natural b×b blocks (BSR), for long rows (3D elasticity: ~80 entries a row
// in 3×3 blocks), where the CSR row-split step gathers X once per entry and loses to the BCSR
// tensor-core operator. A thread takes one block row and KC columns: per block it gathers b
// entries of X per column (b times fewer gathers than CSR for the same b² products) and reads b²
// values and one index (CSR: b² indices). Bytes per step: A's blocks once (nb·(b²·sizeof(storage)
// + 4) + 8·(n/b + 1)) and the same 4 block passes as the CSR step.

// A vector whose resize leaves its elements uninitialized (the BSR arrays are written once, in
// parallel: a value-initializing resize zero-filled 494 MB on one thread, ~0.1 s of elast3d:64's
// 0.26 s conversion on the H200's host).
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U*) noexcept {}  // default-initialize: no zeroing
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using UninitVector = std::vector<T, UninitAllocator<T>>;

// A in b×b blocks, row-major within a block, block rows of b consecutive rows (n = b·mb).
struct BsrBlocks {
  int b = 0;
  std::int64_t mb = 0;                  // block rows (= block columns)
  std::vector<std::int64_t> row_ptr;    // [mb + 1]
  UninitVector<std::int32_t> col;       // [nb] block columns, ascending within a block row
  UninitVector<double> values;          // [nb · b²], explicit zeros where a block is not full
  std::int64_t blocks() const { return row_ptr.empty() ? 0 : row_ptr.back(); }
};
// The block size b ∈ {6, 4, 3, 2} (the largest that fits) whose b×b blocks hold A with at most
// 1.2 stored entries per entry, judged on a sample of about 1024 block rows (O(nnz/mb·1024·b)); 0
// where none does (b must divide n; A square).
int natural_block_size(const Csr<double>& a);
// Blocks and slots of A's b×b blocks as make_chebyshev_step_bsr stores them (slices of 32 block
// rows, each as wide as its widest block row; slots per lane summed over the slices): from
// bsr_block_row_ptr (below) and bsr_slice_offsets, without building the blocks.
struct BsrShape {
  std::int64_t blocks = 0, slots = 0;
};
// Block rows per slice of that layout.
constexpr std::int64_t kBsrSlice = 32;
// The slices' offsets in slots ([slices + 1]; the last is the slot count) for block-row offsets
// row_ptr ([mb + 1]): each slice as wide as its widest block row.
std::vector<std::int64_t> bsr_slice_offsets(const std::vector<std::int64_t>& row_ptr);
// Device bytes of make_chebyshev_step_bsr for that shape (mb block rows): indices 4·32·slots, the
// values 32·slots·b² in fp64 and fp32 (storage fp64) or fp32 alone, the slice offsets.
std::size_t bsr_step_device_bytes(const BsrShape& shape, std::int64_t mb, int b, Precision storage);
// A's b×b blocks (rows of blocks in parallel over the host's threads, O(nnz·b)). InvalidArgument
// for b < 1, b ∤ n or a non-square A.
BsrBlocks to_bsr_blocks(const Csr<double>& a, int b);
// The pieces of that build, for a consumer that takes A's blocks in slices (the CUDA step uploads
// them through small pinned buffers as they are made, without a host copy of all of A's blocks):
// the block rows' offsets ([mb + 1], prefix sums), and the blocks of block rows [I0, I1) written to
// col[0 .. row_ptr[I1] − row_ptr[I0]) and values (b² each, row-major, zeros where a block is not
// full), in parallel over the host's threads.
std::vector<std::int64_t> bsr_block_row_ptr(const Csr<double>& a, int b);
void fill_bsr_blocks(const Csr<double>& a, int b, const std::vector<std::int64_t>& row_ptr,
                     std::int64_t I0, std::int64_t I1, std::int32_t* col, double* values);
// Where the BSR step pays: rows too long for the CSR step (!chebyshev_step_pays) and natural
// blocks (natural_block_size > 0): returns that b, else 0.
int chebyshev_bsr_step_block(const Csr<double>& a);
// The CUDA step on A's blocks: storage fp64 keeps the values in fp64 for step() and an fp32 copy
// (rounded on the device) for the fp32 rung's step32; fp32 keeps the fp32 values alone (step()
// then reads A rounded: the preconditioner's case). NotCompiled without CUDA.
std::unique_ptr<ChebyshevStep> make_chebyshev_step_bsr(const BsrBlocks& a, Precision storage,
                                                       void* stream);
// The same, straight from A (b its natural block size): the blocks are made a piece at a time on
// the host while the previous piece goes up (the operator's build: no 8·b²·blocks-byte host array,
// whose page faults alone took ~0.1 s of elast3d:64's build on the H200's host).
// row_ptr: bsr_block_row_ptr(a, b) when the caller has it (the operator's plan counted it).
std::unique_ptr<ChebyshevStep> make_chebyshev_step_bsr(const Csr<double>& a, int b, Precision storage,
                                                       void* stream,
                                                       const std::vector<std::int64_t>* row_ptr = nullptr);

namespace detail {
// For bench/step_bench.cu: the BSR step at b = 3 with kc columns per pass and g threads per block
// row ({8,1}, {4,1}, {4,2}, {8,2}, {2,2}, {12,2}, {16,2}); bits 64: step() (e = 0, no d), 32: step32 (no r).
void launch_bsr_step_shape(const ChebyshevStep& step, int bits, int kc, int g, double a,
                           const void* cur, std::int64_t ldc, double b, double c, void* next,
                           std::int64_t ldn, std::int64_t cols);
std::unique_ptr<ChebyshevStep> make_cuda_chebyshev_step(const Csr<double>& a, Precision storage,
                                                        void* stream);
// For bench/step_bench.cu: the fp64 step (e = 0, no d) and the fp32 rung's step (no r) on device
// CSR arrays with kc columns per pass and g threads per row (kc, g in {8,1}, {4,1},
// {2,1}, {4,2}, {8,2}, {4,4}, {2,2}, {16,1}, {16,2}; InvalidArgument otherwise). CUDA builds only.
void launch_step_shape(int kc, int g, std::int64_t n, const std::int64_t* row_ptr,
                       const std::int32_t* col, const double* values, double a,
                       MvView<const double> cur, double b, double c, MvView<double> next,
                       void* stream);
void launch_step32_shape(int kc, int g, std::int64_t n, const std::int64_t* row_ptr,
                         const std::int32_t* col, const double* values, double a,
                         MvView<const float> cur, double b, double c, MvView<float> next,
                         void* stream);
}

}  // namespace tcsolve
