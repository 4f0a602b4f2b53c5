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
// space instead: Gram products into device matrices, the projected eigenproblem (cuSOLVER syevd),
// scaled Cholesky factors and solves (one-block kernels up to 64 × 64, cuSOLVER potrf/potrs
// above: the libraries' kernels load on first use, bench/first_use), block Gram-Schmidt factors, and
// fused multi-vector passes (the Chebyshev recurrence, the two block CG passes). A solver written
// on them queues a whole iteration without waiting and reads back only a few scalars through
// fetch_async(). The host-side calls above are unchanged and still used by LOBPCG/Lanczos.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "core/error.hpp"
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
  // download_deferred() + fetch() / fetch_async(). Backend vectors are p × 1 blocks. On the CPU
  // every call runs at once on host memory (Eigen), with the same results up to rounding.
  // "Pass" below = one read or one write of an n × (its columns) block.

  // Sizes the workspaces of the small dense solvers (eigh_small, pip_factor, spd_factor) for
  // matrices up to max_dim × max_dim; call once per solve before the loop (they grow otherwise,
  // with a stream synchronization).
  virtual void reserve_small(std::int64_t max_dim) = 0;
  // G = α·Xᵀ·Y + β·G, G (p × q) in backend space. X n × p, Y n × q: reads X and Y once.
  virtual void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                         MvView<double> g) = 0;
  // Y = α·X·C + β·Y with C (p × q) in backend space (β = 0: Y is not read). Y must not alias X.
  virtual void gemm_into(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                         MvView<double> y) = 0;
  // Z = a·X + b·Y + c·Z, one fused pass (3 reads, 1 write; c == 0: Z is not read, 2 + 1).
  // Z must not alias X or Y. (The Chebyshev three-term recurrence.)
  virtual void axpbypcz(double a, MvView<const double> x, double b, MvView<const double> y,
                        double c, MvView<double> z) = 0;
  // out[j] = ‖AX_j − s·θ_j·X_j‖₂ for the q columns (θ, out: backend q × 1). Reads AX and X once.
  virtual void residual_norms_into(MvView<const double> ax, MvView<const double> x,
                                   MvView<const double> theta, double s, MvView<double> out) = 0;
  // The same without the square root: out[j] = ‖AX_j − s·θ_j·X_j‖₂².
  virtual void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                                      MvView<const double> theta, double s,
                                      MvView<double> out) = 0;
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
  // Symmetric eigendecomposition of the small backend matrix A (m × m; its lower triangle is
  // used): A ← orthonormal eigenvectors, w (backend m × 1) ← eigenvalues ascending.
  // CUDA: cuSOLVER syevd on the device. CPU: Eigen::SelfAdjointEigenSolver.
  virtual void eigh_small(MvView<double> a, MvView<double> w) = 0;
  // One step of block classical Gram-Schmidt with Pythagorean Cholesky-QR (BCGS-PIP; Carson,
  // Lund & Rozložník 2021) against an orthonormal block L (n × l), all in backend space. Input
  // G = [L Y]ᵀ·Y ((l + w) × w, from gram_into) with C = G(0:l, :), Gyy = G(l:, :). Output M
  // ((l + w) × w) such that Y' = [L Y]·M:
  //   normal:   S = Gyy − CᵀC (= ‖(I − LLᵀ)Y‖ Gram, by Pythagoras), D = diag(S)^(-1/2),
  //             D·S·D = LcLcᵀ (Cholesky), T = D·Lc⁻ᵀ (so Y'ᵀY' = I), M = [−C·T; T];
  //   fallback: M = [−C; I] (projection only) when S lost more than 8 digits of a diagonal entry
  //             to cancellation, is not positive definite, or has a scaled pivot² < 1e-12.
  // status (backend 2 × 1): [0] = 0 normal / 1 fallback, [1] = min scaled pivot² (0 on failure).
  virtual void pip_factor(MvView<const double> g, std::int64_t l, MvView<double> m,
                          MvView<double> status) = 0;
  // Diagonally scaled Cholesky of a small symmetric G (r × r, backend): F (r × (r + 1), any ld)
  // gets the lower factor Lc of D·sym(G)·D = Lc·Lcᵀ in columns 0:r and D = diag(G)^(-1/2) in
  // column r.
  // status (backend 1 × 1): 0 fine, 1 positive definite but min pivot² < piv_tol (close to
  // rank deficient), 2 not positive definite (or a diagonal entry ≤ 0 / not finite).
  virtual void spd_factor(MvView<const double> g, MvView<double> f, MvView<double> status,
                          double piv_tol) = 0;
  // out (r × c) = sign·G⁻¹·B with F from spd_factor (G⁻¹ = D·(Lc·Lcᵀ)⁻¹·D); out = 0 when
  // status == 2 (no factor: the caller's updates become no-ops until it reacts; status 1 still
  // solves with the valid, ill-conditioned factor). out may alias B.
  virtual void spd_solve(MvView<const double> f, MvView<const double> b, double sign,
                         MvView<const double> status, MvView<double> out) = 0;
  // Block CG residual pass: R ← R − Q·α and G = [Q R]ᵀ·R with the updated R, in one pass over
  // Q and R (reads Q, R; writes R). Q n × q, α (q × r) and G ((q + r) × r) backend, R n × r.
  virtual void cg_residual_update(MvView<const double> q, MvView<const double> alpha,
                                  MvView<double> r, MvView<double> g) = 0;
  // Its Jacobi-preconditioned twin: R ← R − Q·α, Z ← diag(d)·R (d: n doubles, backend), and
  // G ((q + r + 1) × r) = [Q R]ᵀ·Z in rows 0:q+r with ‖R_j‖² in row q + r, all with the updated
  // R, in one pass (reads Q, R, d; writes R, Z). Z must not alias Q or R.
  virtual void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                         const double* d, MvView<double> r, MvView<double> z,
                                         MvView<double> g) = 0;
  // Block CG direction pass, in place: X ← X + P(:, 0:q)·α and P(:, 0:r) ← Z + P(:, 0:q)·β
  // (α, β q × r backend; X, Z n × r; the view P has max(q, r) columns: q before, r after).
  // Reads P, Z, X; writes P, X. Z must not alias P.
  virtual void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                                   MvView<const double> z, MvView<double> p, MvView<double> x) = 0;
  // Deferred copy of a backend block (small) to host memory with leading dimension ldh: written
  // by the next fetch() or by the fetch_async() ticket that follows it.
  virtual void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) = 0;
  // Non-blocking fetch: queues the copy of everything deferred so far (gram_deferred,
  // column_dots_deferred, download_deferred) and returns a ticket at once; fetch_wait(ticket)
  // blocks until the stream has reached that copy and then writes the host destinations (which
  // must stay valid until then). Tickets are waited in order; at most 4 outstanding (a fifth
  // fetch_async waits for the oldest). CPU: the results are written at once.
  virtual std::uint64_t fetch_async() = 0;
  virtual void fetch_wait(std::uint64_t ticket) = 0;
  // Ordering of an operator apply that runs on the legacy default stream (or on stream()) without
  // a host synchronization: external_begin() makes the default stream wait for this stream's work
  // so far, external_end() makes this stream wait for the default stream's (CUDA events both ways;
  // no-ops on the CPU). See ApplyOrder.
  virtual void external_begin() = 0;
  virtual void external_end() = 0;
  // Page-locks host memory for fast copies (CUDA: cudaHostRegister; false when the driver
  // refuses, then copies are merely slower; CPU: no-op, false). Safe from another thread.
  virtual bool pin_host(void* p, std::size_t bytes) = 0;
  virtual void unpin_host(void* p) = 0;
  // Timing marks in stream order (CUDA events from a pool of 1024; CPU: the host clock): mark()
  // returns an id; elapsed_seconds(a, b) once b has completed (after a fetch or synchronize).
  virtual int mark() = 0;
  virtual double elapsed_seconds(int from, int to) = 0;
  // ==== fp32 blocks (block CG's fp32 inner iteration, solvers/block_cg.hpp) ====================
  // The same passes with the tall blocks stored in fp32 and everything else in fp64: the small
  // matrices (α, β, G), the Jacobi scales d, and every sum (an fp32 entry converts to fp64
  // exactly; the products and sums are those of the fp64 passes on the converted entries). A
  // result written to an fp32 block is rounded once, at the store. Half the bytes of each pass.
  // Default: not supported (fp32_blocks() false; the calls throw InvalidArgument). CPU (Eigen, on
  // fp64 copies of the blocks: a reference, not fast) and CUDA (the fused kernels, ≤ 32 columns
  // of P and R, any rows) implement them.
  virtual bool fp32_blocks() const { return false; }
  MultiVector<float> allocate32(std::int64_t rows, std::int64_t cols) const {
    return MultiVector<float>(rows, cols, space());
  }
  virtual void gram_into(double alpha, MvView<const float> x, MvView<const float> y, double beta,
                         MvView<double> g);
  virtual void cg_residual_update(MvView<const float> q, MvView<const double> alpha,
                                  MvView<float> r, MvView<double> g);
  virtual void cg_residual_update_jacobi(MvView<const float> q, MvView<const double> alpha,
                                         const double* d, MvView<float> r, MvView<float> z,
                                         MvView<double> g);
  virtual void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                                   MvView<const float> z, MvView<float> p, MvView<float> x);
  virtual void copy(MvView<const float> x, MvView<float> y);
  virtual void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                              MvView<float> y);
  virtual void fill_zero(MvView<float> x);
  // Y = fp32(X) (rounded to nearest), and Y += α·X (Y fp64): one pass each.
  virtual void convert(MvView<const double> x, MvView<float> y);
  virtual void add_converted(MvView<const float> x, MvView<double> y, double alpha);

  // Rows of the whole block of which a block of local_rows rows is this process's share: the
  // same on one process; the sum over the ranks for distributed ops (distributed/). Solvers size
  // their choices (block width, n/2 limits) by it, so that every rank chooses alike.
  virtual std::int64_t global_rows(std::int64_t local_rows) const { return local_rows; }
  // The least of v over the processes sharing the block (v on one process): a choice made from
  // one process's own numbers (its free memory, its rows) made alike on every rank. Collective.
  virtual double global_min(double v) { return v; }
};

namespace detail {
// The shapes the block CG passes above require (one check for every backend and block type T).
// z (Jacobi) is given for cg_residual_update_jacobi, whose G has one row more.
template <class V>
struct NoDeduce {  // (T is deduced from the first block; the others convert)
  using type = V;
};
template <class T>
void check_cg_residual(MvView<const T> q, MvView<const double> alpha,
                       typename NoDeduce<MvView<const T>>::type r, MvView<const double> g,
                       const MvView<T>* z = nullptr) {
  TCSOLVE_REQUIRE(q.rows == r.rows && alpha.rows == q.cols && alpha.cols == r.cols &&
                      (!z || (z->rows == r.rows && z->cols == r.cols)) &&
                      g.rows == q.cols + r.cols + (z ? 1 : 0) && g.cols == r.cols,
                  z ? "cg_residual_update_jacobi: shapes" : "cg_residual_update: shapes");
}
template <class T>
void check_cg_direction(MvView<const double> alpha, MvView<const double> beta, MvView<const T> z,
                        typename NoDeduce<MvView<const T>>::type p,
                        typename NoDeduce<MvView<const T>>::type x) {
  const std::int64_t q = alpha.rows, r = z.cols;
  TCSOLVE_REQUIRE(beta.rows == q && alpha.cols == r && beta.cols == r && x.cols == r &&
                      p.cols >= std::max(q, r) && z.rows == p.rows && x.rows == p.rows,
                  "cg_direction_update: shapes");
}
}  // namespace detail

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
// GPU ops only, once per process (later calls, and CPU ops, return at once). (It warmed ops of
// its own before: a second set of library handles and 1024 events, made and destroyed.)
void warm_up(DenseBlockOps& ops);

// Value of the deterministic generator behind fill_random: entry i of column j for a seed.
double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j);

}  // namespace tcsolve
