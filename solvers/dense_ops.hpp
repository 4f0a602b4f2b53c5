// Dense block operations the solvers are written against (after Anasazi's MultiVecTraits):
// tall-skinny blocks X (n × p, column-major, leading dimension) live in the backend's space
// (host for Backend::cpu, device for Backend::cuda); small coefficient matrices (p × q, p, q of
// order k or 3k) always live on the host, column-major.
//
// Why small matrices stay on the host: the solvers' small dense problems (a 3m × 3m
// Rayleigh-Ritz eigenproblem in LOBPCG with m ≤ ~100, a b × b Cholesky, the m × m projected
// Lanczos matrix) take a few microseconds to tens of microseconds in Eigen, while one cuSOLVER
// syevd call costs ~100 µs of launches and synchronization at these sizes. Only a p × q Gram
// matrix (8·p·q bytes) crosses PCIe per product, in pinned memory.
//
// The CUDA backend runs every operation on one stream owned by the object (one object per
// solve), with all workspace allocated by reserve(); gram(), column_norms(), column_dots() and
// fetch() synchronize that stream because their results are read on the host (the deferred
// products let a solver batch several of them into one synchronization per step).
//
// The second half of the interface (after synchronize()) keeps small matrices in the backend's
// space instead: Gram products into device matrices, column norms and dots into device vectors.
// The rest is reached through four parts, each an interface of its own, set once by the backend
// (CPU and CUDA implementations side by side under the same names, as Ginkgo does):
//   queue()     solvers/dense/queue.hpp: deferred host results, fetch / fetch_async, ordering
//               against other streams, pinned memory, timing marks;
//   small()     solvers/dense/small_dense.hpp: the projected eigenproblem (cuSOLVER syevd),
//               block Gram-Schmidt factors, scaled Cholesky factors and solves;
//   cg()        solvers/cg/cg_kernels.hpp: block CG's fused passes, fp64 and on fp32 blocks;
//   chebyshev() solvers/chebyshev/chebyshev_kernels.hpp: the Chebyshev recurrence, Ritz
//               residual norms.
// A solver written on them queues a whole iteration without waiting and reads back only a few
// scalars through queue().fetch_async(). The host-side calls are still used by LOBPCG/Lanczos.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/multivector.hpp"
#include "core/types.hpp"
#include "solvers/cg/cg_kernels.hpp"
#include "solvers/chebyshev/chebyshev_kernels.hpp"
#include "solvers/dense/queue.hpp"
#include "solvers/dense/small_dense.hpp"

namespace tcsolve {

class DenseBlockOps {
 public:
  virtual ~DenseBlockOps() = default;
  DenseBlockOps(const DenseBlockOps&) = delete;
  DenseBlockOps& operator=(const DenseBlockOps&) = delete;
  Space space() const { return space_; }
  Backend backend() const { return backend_; }
  // cudaStream_t of this object (nullptr on the CPU); give it to operators so they run in order.
  void* stream() const { return stream_; }

  // The parts (see the top of this file).
  DenseQueue& queue() const { return *queue_; }
  SmallDense& small() const { return *small_; }
  CgKernels& cg() const { return *cg_; }
  ChebyshevKernels& chebyshev() const { return *chebyshev_; }

  // Workspace for multiply_inplace (rows × cols) and for small coefficient staging (coef_elems
  // doubles); call once per solve, before the iteration loop. Grows only.
  virtual void reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef_elems) = 0;
  // Block of the backend's space (allocated by the solver once per solve).
  MultiVector<double> allocate(std::int64_t rows, std::int64_t cols) const {
    return MultiVector<double>(rows, cols, space());
  }
  // fp32 block of the backend's space (cg()'s fp32 passes).
  MultiVector<float> allocate32(std::int64_t rows, std::int64_t cols) const {
    return MultiVector<float>(rows, cols, space());
  }

  // G = Xᵀ·Y, G host p × q with leading dimension ldg. X n × p, Y n × q. 2npq flops.
  virtual void gram(MvView<const double> x, MvView<const double> y, double* g, std::int64_t ldg) = 0;
  // Y = α·X·C + β·Y, C host p × q (ldc). X n × p, Y n × q; Y must not alias X.
  virtual void gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc,
                    double beta, MvView<double> y) = 0;
  // X[:, 0:r] = X·M, M host q × r (ldm), r ≤ q = X.cols; uses the reserved workspace.
  virtual void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm,
                                std::int64_t r) = 0;
  // Y = X (same shape).
  virtual void copy(MvView<const double> x, MvView<double> y) = 0;
  // Y[:, j] = X[:, idx[j]], j < count (idx host). Y must not alias X.
  virtual void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                              MvView<double> y) = 0;
  // Y[:, j] = a[j]·X[:, j] + b[j]·Y[:, j] (a, b host, one per column).
  virtual void axpby_columns(const double* a, MvView<const double> x, const double* b,
                             MvView<double> y) = 0;
  // Y = diag(d)·X, d an n-vector in this backend's space (Jacobi preconditioner).
  virtual void scale_rows(const double* d, MvView<const double> x, MvView<double> y) = 0;
  // out[j] = ‖X[:, j]‖₂ (host).
  virtual void column_norms(MvView<const double> x, double* out) = 0;
  // out[j] = X[:, j]ᵀ·Y[:, j] (host). (Deferred twins of gram and column_dots: queue().)
  virtual void column_dots(MvView<const double> x, MvView<const double> y, double* out) = 0;
  // Deterministic pseudo-random entries in [-1, 1) (same values on every backend for a seed):
  // X(i, j) = random_entry(seed, i, j). fill_random_rows numbers the rows from row0 (a rank's
  // share of a distributed block gets the rows the whole block would have).
  void fill_random(MvView<double> x, std::uint64_t seed) { fill_random_rows(x, seed, 0); }
  virtual void fill_random_rows(MvView<double> x, std::uint64_t seed, std::int64_t row0) = 0;
  virtual void fill_zero(MvView<double> x) = 0;
  // Host <-> backend copies (host block with leading dimension ldh).
  virtual void to_host(MvView<const double> x, double* host, std::int64_t ldh) = 0;
  virtual void from_host(const double* host, std::int64_t ldh, MvView<double> x) = 0;
  // Waits for the stream (no-op on the CPU). Called around operator applies.
  virtual void synchronize() = 0;

  // ==== Backend-resident small matrices (device-resident iterations) ===========================
  // The calls below keep a whole iteration's coefficient work in the backend's space, so that an
  // iteration needs no host round trip but at most one asynchronous fetch of a few scalars.
  // Small matrices (p × q, p, q ≤ a few hundred) are ordinary blocks from allocate(p, q) (ld = p)
  // and are read and written in stream order like the tall blocks; nothing crosses PCIe until
  // queue().download_deferred() + fetch() / fetch_async(). Backend vectors are p × 1 blocks. On
  // the CPU every call runs at once on host memory (Eigen), with the same results up to rounding.
  // "Pass" below = one read or one write of an n × (its columns) block.

  // G = α·Xᵀ·Y + β·G, G (p × q) in backend space. X n × p, Y n × q: reads X and Y once.
  virtual void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                         MvView<double> g) = 0;
  // Y = α·X·C + β·Y with C (p × q) in backend space (β = 0: Y is not read). Y must not alias X.
  virtual void gemm_into(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                         MvView<double> y) = 0;
  // v ← √max(v, 0) elementwise (backend q × 1), and X_j ← X_j / d_j for d_j > 0 (d backend q × 1;
  // a column with d_j = 0 stays as it is). The pieces of normalize_columns, for a distributed
  // block whose squared norms are summed over the ranks in between (distributed/).
  virtual void sqrt_elements(MvView<double> v) = 0;
  virtual void scale_columns_inverse(MvView<const double> d, MvView<double> x) = 0;
  // out[j] = X_jᵀ·Y_j into a backend q × 1 block. Reads X and Y once.
  virtual void column_dots_into(MvView<const double> x, MvView<const double> y,
                                MvView<double> out) = 0;
  // X_j ← X_j/‖X_j‖₂ (a zero column stays zero), norms[j] = ‖X_j‖₂ (backend q × 1). 3 passes.
  virtual void normalize_columns(MvView<double> x, MvView<double> norms) = 0;

  // The fp32 twins of four calls above, for code written for both block types (block CG's
  // solver): cg()'s fp32 passes (which throw InvalidArgument where cg().fp32_blocks() is false).
  void gram_into(double alpha, MvView<const float> x, MvView<const float> y, double beta,
                 MvView<double> g) {
    cg().gram_into(alpha, x, y, beta, g);
  }
  void copy(MvView<const float> x, MvView<float> y) { cg().copy(x, y); }
  void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                      MvView<float> y) {
    cg().gather_columns(x, idx, count, y);
  }
  void fill_zero(MvView<float> x) { cg().fill_zero(x); }

  // Rows of the whole block of which a block of local_rows rows is this process's share: the
  // same on one process; the sum over the ranks for distributed ops (distributed/). Solvers size
  // their choices (block width, n/2 limits) by it, so that every rank chooses alike.
  virtual std::int64_t global_rows(std::int64_t local_rows) const { return local_rows; }
  // The least of v over the processes sharing the block (v on one process): a choice made from
  // one process's own numbers (its free memory, its rows) made alike on every rank. Collective.
  virtual double global_min(double v) { return v; }

 protected:
  // Space, backend and stream are fixed at construction; the implementation sets its parts
  // (objects it owns) in its constructor with set_parts before the object is used.
  DenseBlockOps(Backend backend, void* stream)
      : space_(backend == Backend::cuda ? Space::device : Space::host),
        backend_(backend),
        stream_(stream) {}
  void set_parts(DenseQueue& queue, SmallDense& small, CgKernels& cg,
                 ChebyshevKernels& chebyshev) {
    queue_ = &queue, small_ = &small, cg_ = &cg, chebyshev_ = &chebyshev;
  }

 private:
  Space space_;
  Backend backend_;
  void* stream_;
  DenseQueue* queue_ = nullptr;
  SmallDense* small_ = nullptr;
  CgKernels* cg_ = nullptr;
  ChebyshevKernels* chebyshev_ = nullptr;
};

// How a solver orders operator applies against the dense ops' stream.
enum class ApplyOrder {
  synchronize,  // host synchronization before and after each apply (any operator, any stream)
  events,       // the operator launches on the legacy default stream or on ops.stream():
                // ordered by events both ways, the host never waits
  same_stream,  // the operator launches on ops.stream() (make_sparse_operator with
                // OperatorOptions::stream = ops.stream()): nothing to do
};

// Backend::cpu: Eigen. Backend::cuda: tcsolve's kernels for the tall-skinny and small products
// where they apply, cuBLAS/cuSOLVER otherwise, on an own stream (throws NotCompiled in a
// CPU-only build, DeviceError without a device).
std::unique_ptr<DenseBlockOps> make_dense_ops(Backend backend);
std::unique_ptr<DenseBlockOps> make_cpu_dense_ops();
std::unique_ptr<DenseBlockOps> make_cuda_dense_ops();
// One small pass of the operations every solve makes (random fill, Gram, GEMM, normalization,
// the small symmetric eigensolver) on `ops`, then a synchronization: on the GPU the libraries'
// one-time set-up (cuBLAS's first GEMM took ~40 ms on an H200) and the dense kernels' lazy
// loading happen here, on the apps' start-up thread while the matrix is read, instead of in the
// first solve. Its blocks are freed before it returns (device-memory fitting is unchanged).
// GPU ops only, once per process and width (later calls, and CPU ops, return at once). (It warmed
// ops of its own before: a second set of library handles and 1024 events, made and destroyed.)
// The pass runs on 8 columns and on `width` where it exceeds 24 (clamped to 64: the block the job
// will use, where the caller knows it): cuBLAS picks its GEMM kernel by shape, and the product
// N × 48 by 48 × 48 loaded another one on its first call, 15–20 ms on the H200 after the 8-column
// pass; at 24 columns the 8-column pass's kernel served (bench/first_use, 2026-11-30).
void warm_up(DenseBlockOps& ops, std::int64_t width = 8);

// Value of the deterministic generator behind fill_random: entry i of column j for a seed.
double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j);

}  // namespace tcsolve
