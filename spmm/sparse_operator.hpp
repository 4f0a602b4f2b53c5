// The sparse operator the solvers use: Y = A·X for an n×n (or m×n) sparse A and column-major
// multivectors X, Y (fp64, leading dimensions), on the CPU or on the GPU.
//
//   auto op = make_sparse_operator(a, Backend::cuda, {Precision::fp64, stream, /*N=*/16});
//   op->apply(x_dev, y_dev);          // X, Y device pointers (op->space() == Space::device)
//   std::cout << op->plan().describe();   // which kernel was chosen and why
//
// The kernel is chosen once, at construction, per (matrix, precision, expected N): CUDA-core CSR
// (row-split or segment-split) or tensor-core BCSR (fp64 DMMA m8n8k4 on 8×4 blocks; fp16/bf16
// m16n8k16 with fp32 accumulation on 16×16 blocks). On the GPU the default is a short one-time
// trial (each candidate kernel run on A at the expected N: one warm-up, then the fastest of two
// or three timed runs; the fastest kernel is kept, its times are in SpmmPlan::trials); the byte
// cost model (plan_spmm) decides instead when OperatorOptions::plan_by_trial is false or an
// apply is launch-bound (under OperatorOptions::trial_min_bytes by the model), and
// prunes candidates that cannot win (BCSR when the model puts it at > 3× the CSR bytes, > 1.25×
// from 2^25 non-zeros, where building and uploading the blocks costs seconds).
// The operator uploads A once; apply() never allocates.
//
// Contract: make_sparse_operator(a, backend, opt) copies (CPU) or uploads (CUDA) A once -- `a`
// may be destroyed afterwards -- and returns a LinearOperator<double> (core/operator.hpp) whose
// apply() computes Y = A·X exactly as csr_spmm_reference would in fp64 (up to summation order),
// or with A stored in opt.precision; it allocates nothing and, on the GPU, runs on opt.stream
// (pass the DenseBlockOps' stream). The CUDA backend in a CPU-only build throws NotCompiled, a
// GPU without room for A throws OutOfDeviceMemory (with the bytes needed). plan() says which
// kernel was chosen and why; the choice never changes the result beyond rounding.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/operator.hpp"
#include "core/types.hpp"

namespace tcsolve {

// Reordering applied before blocking (BCSR kernels only; the CSR kernels use A as given).
//   jaccard:   rows only, A' = P·A; row i of A' is written to Y[perm[i]].
//   symmetric: A' = P·A·Pᵀ (square A; Jaccard with kw = 1 or reverse Cuthill–McKee, whichever
//              gives fewer blocks, preprocess/jaccard_reorder.hpp). Y = A·X is computed as
//              Y[perm] = A'·X[perm]: the gather X[perm] is folded into the copy of X the BCSR
//              kernels already make (fp64: fragment-order staging, always on then; fp16/bf16:
//              the 16-bit conversion), the output goes through perm as for `jaccard`. No
//              extra pass, extra workspace only for fp64 at N < 16 (the staging buffer).
// Either reordering is kept only when it reduces the block count (else A is blocked as given).
// Neither assumes A = Aᵀ: `jaccard` takes any m×n A; `symmetric` any square A, its pattern
// symmetric or not (RCM orders the graph of A ∪ Aᵀ, the block counts are those of P·A·Pᵀ itself).
// The CPU backend ignores the option (its CSR product has no blocks to save), except with
// OperatorBasis::permuted below.
enum class Reorder { none, jaccard, symmetric };

// Which basis apply() works in, with Reorder::symmetric.
//   original: Y = A·X (the default). With an applied symmetric reordering every apply gathers
//             X[perm] and writes Y through perm (2.2–4× the cost of a plain apply on scrambled
//             elast3d:64, docs/performance.md).
//   permuted: when the symmetric reordering is applied, the operator IS B = P·A·Pᵀ,
//             B(i, j) = A(p[i], p[j]) with p = *permutation(): apply() computes Y = B·X on
//             vectors already in the permuted basis, with no gather and no scatter (B is stored
//             reordered, for the CSR and the BCSR kernels alike). A solver then
//               - permutes its inputs once at entry: x̃ = P·x, x̃[i] = x[p[i]]
//                 (start block, right-hand sides; to_permuted() does it on the operator's side),
//               - permutes a mass matrix the same way: M̃ = P·M·Pᵀ (permute_symmetric(m, p)),
//               - iterates on B (same eigenvalues; B·x̃ = P·(A·x); a solve of A·x = b is
//                 B·x̃ = b̃ with b̃ = P·b, for unsymmetric A as well: B is not symmetrized),
//               - un-permutes its results once at exit: x[p[i]] = x̃[i] (from_permuted()).
//             When the reordering is not applied (it would not reduce the blocks) permutation()
//             is nullptr and the operator is A itself: solvers must check permutation() rather
//             than assume. A rectangular A is refused (InvalidArgument).
//             Also honoured by the CPU backend (the ordering's locality helps its CSR product).
enum class OperatorBasis { original, permuted };

// Kernel families. `automatic` lets the plan choose.
enum class SpmmKernel {
  automatic,
  cpu_csr,         // host, multithreaded CSR
  csr_row,         // CUDA cores, one thread per row (short rows)
  csr_segment,     // CUDA cores, a group of lanes per segment of ≤ S non-zeros (long/skewed rows)
  bcsr_dmma,       // tensor cores, fp64 DMMA m8n8k4, 8×4 blocks
  bcsr_mma_f16,    // tensor cores, m16n8k16 fp16×fp16 → fp32, 16×16 blocks
  bcsr_mma_bf16,   // tensor cores, m16n8k16 bf16×bf16 → fp32, 16×16 blocks
  bsr_block,       // CUDA cores, A's natural b×b blocks (b = 2, 3, 4, 6) in slices of 32 block
                   // rows: the Chebyshev step's kernel (spmm/chebyshev_step.hpp), fp64
};
const char* to_string(SpmmKernel k);
const char* to_string(Reorder r);

struct OperatorOptions {
  // Storage precision of A. fp64: exact double arithmetic. fp32: A rounded to float, double
  // accumulation (CSR). fp16/bf16: A and X rounded to 16 bits on the GPU, fp32 (BCSR) or fp64
  // (CSR) accumulation; X and Y stay double at the interface. tf32 is not implemented.
  Precision precision = Precision::fp64;
  // cudaStream_t to launch on (nullptr = default stream). Ignored by the CPU backend.
  void* stream = nullptr;
  // Expected number of columns N of X and Y (the plan is made for it; other N still work).
  int expected_cols = 8;
  Reorder reorder = Reorder::none;
  // OperatorBasis::permuted: iterate on B = P·A·Pᵀ (needs reorder == Reorder::symmetric).
  OperatorBasis basis = OperatorBasis::original;
  // Force a kernel (tests, benchmarks). automatic = trial or cost model (below).
  SpmmKernel kernel = SpmmKernel::automatic;
  // CUDA backend with kernel == automatic: time the candidate kernels once at construction and
  // keep the fastest (costs about 3 applies per candidate plus their uploads). false: byte cost
  // model only, no GPU work at construction beyond the upload.
  bool plan_by_trial = true;
  // ... and only where one apply moves at least this many bytes by the model (est_bytes_csr at
  // expected_cols). Below it an apply is launch-bound (32 MB: ~10 µs on the H200) and the trial's
  // uploads, warm-ups and timed runs of 2–4 candidates cost more than the kernels' difference can
  // save in a solve of that size (docs/decisions.md). 0: time the candidates at any size.
  double trial_min_bytes = 32e6;
};

// One candidate of the construction-time trial and its time for one apply at expected_cols.
struct SpmmTrial {
  std::string name;  // e.g. "csr_row", "bcsr_dmma staged"
  double ms = 0.0;   // fastest timed run (a warm-up run first); only one run if far behind
};

// Wall-clock seconds of the operator's construction, by step (filled by make_sparse_operator;
// all zero for plan_spmm). Setup = read/generate (outside) + these.
struct SpmmSetupTimes {
  double plan_s = 0;     // statistics and block count of the cost model (O(nnz))
  double reorder_s = 0;  // Jaccard / RCM reordering (and the permuted copy B for a permuted basis)
  double bcsr_s = 0;     // building the host BCSR of the blocked kernel
  double upload_s = 0;   // uploads and, with plan_by_trial, the timed trial of the candidates
  double total_s = 0;    // the whole make_sparse_operator call
};

// What the plan chose and why (printed by `tcsolve info` and the benchmark).
struct SpmmPlan {
  Backend backend = Backend::cpu;
  Precision precision = Precision::fp64;
  SpmmKernel kernel = SpmmKernel::cpu_csr;
  int expected_cols = 8;
  int block_h = 0, block_w = 0;     // BCSR block shape considered (0 when none)
  std::int64_t nblocks = 0;         // blocks of that shape
  double fill = 0.0;                // nnz / (nblocks·h·w)
  bool blocks_sampled = false;      // fill from 1024 sampled block rows, nblocks = nnz/(fill·h·w)
                                    // (a large A whose blocks are clearly too sparse to count)
  int csr_group = 1;                // lanes per row segment of the CSR kernel (1 = row-split)
  bool csr_tiled = false;           // row-split with the CTA's A slice in shared memory
  double mean_row_nnz = 0.0;
  std::int64_t max_row_nnz = 0;
  double est_bytes_csr = 0.0;       // cost-model bytes for one apply (CSR kernel)
  double est_bytes_bcsr = 0.0;      // cost-model bytes for one apply (BCSR kernel)
  bool reordered = false;           // a row permutation was applied to build the blocks
  bool symmetric = false;           // ... and the same permutation on the columns (P·A·Pᵀ)
  bool permuted_basis = false;      // ... and the operator works in the permuted basis (B·X̃)
  bool stage_x = false;             // X copied into a workspace (BCSR: fragment order; CSR:
                                    // row-major) before the kernel
  int dmma_tile_cols = 0;           // fp64 BCSR: widest column tile per warp (0 = 64)
  std::int64_t bcsr_run_blocks = 0; // BCSR: cap on the blocks of one warp run (0 = default)
  std::int64_t bsr_slots = 0;       // bsr_block: slots per lane over all slices (block_h = b)
  // bsr_block: A's block-row offsets ([n/b + 1]), counted once here and reused by the build.
  std::shared_ptr<const std::vector<std::int64_t>> bsr_row_ptr;
  std::string reason;               // one sentence: why this kernel
  bool by_trial = false;            // chosen by timing the candidates (else by the cost model)
  std::vector<SpmmTrial> trials;    // the candidates' times when by_trial
  SpmmSetupTimes setup;             // construction time by step (make_sparse_operator)

  std::string describe() const;     // multi-line human-readable summary
};

// The planned kernel for a (matrix, backend, options) without uploading anything.
SpmmPlan plan_spmm(const Csr<double>& a, Backend backend, const OperatorOptions& opt = {});

// Device bytes an operator built for `plan` on A keeps (matrix upload, index arrays, staging and
// conversion workspaces), without building it: exact for the CSR kernels; for the BCSR kernels
// exact in the block arrays and an upper bound for the small per-warp/zeroed-row lists (within
// 1 % on matrices of a million rows and more). A symmetric reordering adds 4 bytes per row and
// column (perm, gather). 0 for the CPU backend. Building by trial (plan_by_trial) peaks higher
// during construction: scratch X and Y (8·N·(rows + cols) bytes) plus at most two candidates at
// once (the best so far and the one being timed); the counters of core/device.hpp measure it.
// The bsr_block kernel: exact (its sliced blocks, their fp32 copy, indices and offsets); its build
// adds one upload piece of at most ~2^20 blocks (76 MB for 3×3 in fp64) and A's block-row offsets.
std::size_t predict_device_bytes(const Csr<double>& a, const SpmmPlan& plan);

namespace detail {
struct PlanAccess;
}
class ChebyshevStep;

class SparseOperator : public LinearOperator<double> {
 public:
  virtual const SpmmPlan& plan() const = 0;
  // Device bytes this operator holds (0 on the CPU). See predict_device_bytes.
  virtual std::size_t device_bytes() const { return 0; }
  // OperatorBasis::permuted with an applied symmetric reordering: p (rows() entries), the
  // operator being B = P·A·Pᵀ, B(i, j) = A(p[i], p[j]). nullptr otherwise (the operator is A).
  virtual const std::vector<std::int32_t>* permutation() const { return nullptr; }
  // x̃ = P·x (x̃[i] = x[p[i]]) and x = Pᵀ·x̃ (x[p[i]] = x̃[i]) for blocks in the operator's space
  // (same shapes, no aliasing); plain copies when permutation() is nullptr. On the GPU they are
  // asynchronous on the operator's stream, like apply().
  virtual void to_permuted(MvView<const double> x, MvView<double> xt) const;
  virtual void from_permuted(MvView<const double> xt, MvView<double> x) const;
  // A's CSR arrays in device memory as this operator holds them (CUDA, a CSR kernel, fp64
  // values, A itself: rows in their given order), for kernels that read A on their own (the
  // eigensolver's fused Chebyshev step, without a second upload); all nullptr otherwise. Valid
  // for the operator's lifetime.
  struct DeviceCsr {
    const std::int64_t* row_ptr = nullptr;
    const std::int32_t* col_idx = nullptr;
    const double* values = nullptr;
  };
  virtual DeviceCsr device_csr() const { return {}; }
  // The host operator's own fp64 copy of A (rows in their given order, values as given); nullptr
  // otherwise. Valid for the operator's lifetime.
  virtual const Csr<double>* host_csr() const { return nullptr; }
  // The fused Chebyshev step on the operator's own copy of A (the bsr_block kernel: A's natural
  // blocks, fp64 with an fp32 copy for the ladder's rung), for the eigensolver's filter without a
  // second copy of A; nullptr otherwise. Valid for the operator's lifetime, on its stream.
  virtual const ChebyshevStep* block_step() const { return nullptr; }

 protected:
  // The factory records setup times and notes in the plan after construction.
  virtual SpmmPlan& mutable_plan() = 0;
  friend struct detail::PlanAccess;
};

namespace detail {
struct PlanAccess {
  static SpmmPlan& of(SparseOperator& op) { return op.mutable_plan(); }
};
}  // namespace detail

// Aᵀ's operator made from `op`, the operator of A, without a host transpose:
//   - on the GPU from the CUDA operator's fp64 CSR copy (device_csr()): the CSR→CSC on the device,
//     then the CSR kernel the byte model picks from Aᵀ's row lengths (no trial; no tensor-core
//     candidate);
//   - on the host from the CPU operator's copy (host_csr()), not formed at all: Aᵀ·X by A's rows
//     into per-part sums (spmm/cpu_transposed.hpp), where those sums stay small (tall A). It
//     reads op's copy of A: op must outlive it.
// nullptr where this does not apply, and the caller transposes on the host: another precision, a
// forced kernel, A not held as CSR, on the GPU sizes or entries from 2^31 or A's sampled 4×8 block
// fill (Aᵀ's 8×4) not clearly low (< 0.15), on the host a wide A.
std::unique_ptr<SparseOperator> make_transposed_operator(const Csr<double>& a, const SparseOperator& op,
                                                         const OperatorOptions& opt = {});

// Builds the operator for A (copied/uploaded once). Converts implicitly to
// std::unique_ptr<LinearOperator<double>>. CUDA backend in a CPU-only build throws NotCompiled.
std::unique_ptr<SparseOperator> make_sparse_operator(const Csr<double>& a, Backend backend,
                                                     const OperatorOptions& opt = {});
// The same, taking A's arrays: the CPU operator in A's order keeps them (no copy of A); other
// backends and bases copy or upload as above.
std::unique_ptr<SparseOperator> make_sparse_operator(Csr<double>&& a, Backend backend,
                                                     const OperatorOptions& opt = {});

}  // namespace tcsolve
