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
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/multivector.hpp"
#include "core/types.hpp"

namespace tcsolve {

class DenseBlockOps {
 public:
  virtual ~DenseBlockOps() = default;
  virtual Space space() const = 0;
  virtual Backend backend() const = 0;
  // cudaStream_t of this object (nullptr on the CPU); give it to operators so they run in order.
  virtual void* stream() const = 0;

  // Workspace for multiply_inplace (rows × cols) and for small coefficient staging (coef_elems
  // doubles); call once per solve, before the iteration loop. Grows only.
  virtual void reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef_elems) = 0;
  // Block of the backend's space (allocated by the solver once per solve).
  MultiVector<double> allocate(std::int64_t rows, std::int64_t cols) const {
    return MultiVector<double>(rows, cols, space());
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
  // out[j] = X[:, j]ᵀ·Y[:, j] (host).
  virtual void column_dots(MvView<const double> x, MvView<const double> y, double* out) = 0;
  // Deferred twins of gram and column_dots: the products are queued and their host results are
  // written by the next fetch(), so that several small results cost one host round trip
  // (CUDA: one device → pinned copy and one stream sync in fetch(); CPU: computed at once).
  // g / out must stay valid until fetch(). gram() and column_dots() fetch as well.
  virtual void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                             std::int64_t ldg) = 0;
  virtual void column_dots_deferred(MvView<const double> x, MvView<const double> y,
                                    double* out) = 0;
  virtual void fetch() = 0;
  // Deterministic pseudo-random entries in [-1, 1) (same values on every backend for a seed).
  virtual void fill_random(MvView<double> x, std::uint64_t seed) = 0;
  virtual void fill_zero(MvView<double> x) = 0;
  // Host <-> backend copies (host block with leading dimension ldh).
  virtual void to_host(MvView<const double> x, double* host, std::int64_t ldh) = 0;
  virtual void from_host(const double* host, std::int64_t ldh, MvView<double> x) = 0;
  // Waits for the stream (no-op on the CPU). Called around operator applies.
  virtual void synchronize() = 0;
};

// Backend::cpu: Eigen. Backend::cuda: cuBLAS on an own stream (throws NotCompiled in a CPU-only
// build, DeviceError without a device).
std::unique_ptr<DenseBlockOps> make_dense_ops(Backend backend);
std::unique_ptr<DenseBlockOps> make_cpu_dense_ops();
std::unique_ptr<DenseBlockOps> make_cuda_dense_ops();

// Value of the deterministic generator behind fill_random: entry i of column j for a seed.
double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j);

}  // namespace tcsolve
