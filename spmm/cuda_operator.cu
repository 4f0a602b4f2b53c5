// CUDA SparseOperator: A uploaded once in the planned format; apply() launches on the plan's
// stream with no allocation and no synchronisation.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_check.cuh"

#include "core/error.hpp"
#include "core/trace.hpp"
#include "spmm/bcsr_spmm_cuda.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/csr_spmm_cuda.hpp"
#include "spmm/cuda_operator.hpp"
#include "spmm/permuted_operator.hpp"

namespace tcsolve::detail {

namespace {

// Said in the plan's reason where the CSR segments run interleaved (csr_spmm_cuda.hpp).
void note_interleaved(const CsrSpmmDevice& csr, SpmmPlan& p) {
  static const char* note = "; segments run in the order of their place in their rows (staged X beyond L2)";
  if (csr.interleaved() && p.reason.find(note) == std::string::npos) p.reason += note;
}

class CudaSparseOperator final : public SparseOperator {
 public:
  CudaSparseOperator(const Csr<double>& a, const Bcsr<double>* blocks, const SpmmPlan& plan,
                     const OperatorOptions& opt)
      : plan_(plan), rows_(a.nrows), cols_(a.ncols), stream_(opt.stream) {
    switch (plan.kernel) {
      case SpmmKernel::csr_row:
      case SpmmKernel::csr_segment:
        csr_ = std::make_unique<CsrSpmmDevice>(a, plan.precision, plan.csr_group,
                                               plan.stage_x ? plan.expected_cols : 0,
                                               plan.csr_tiled);
        note_interleaved(*csr_, plan_);
        trace_mark("spmm: CSR uploaded");
        break;
      case SpmmKernel::bcsr_dmma:
      case SpmmKernel::bcsr_mma_f16:
      case SpmmKernel::bcsr_mma_bf16: {
        TCSOLVE_REQUIRE(blocks != nullptr, "BCSR kernel planned without blocks");
        bcsr_ = std::make_unique<BcsrSpmmDevice>(
            *blocks, plan.precision,
            plan.stage_x && plan.precision == Precision::fp64 ? plan.expected_cols : 0);
        // staged from the planned N on (the model plans staging only for N >= 16)
        if (bcsr_->stage_cols() > 0) bcsr_->set_stage_min_cols(std::min(plan.expected_cols, 16));
        if (bcsr_->gathers() && plan.precision == Precision::fp64) plan_.stage_x = true;
        if (plan.precision == Precision::fp64 && plan.dmma_tile_cols > 0)
          bcsr_->set_max_tile_cols(plan.dmma_tile_cols);
        if (plan.bcsr_run_blocks > 0) bcsr_->set_max_run_blocks(*blocks, plan.bcsr_run_blocks);
        if (plan.precision != Precision::fp64) {
          // X is rounded to 16 bits into this workspace, `chunk_` columns at a time.
          chunk_ = std::clamp(((std::max(1, opt.expected_cols) + 7) / 8) * 8, 8, 256);
          ldl_ = cols_ + (cols_ & 1);  // even: lets the kernel read pairs of rows as 32 bits
          xlow_ = DeviceArray<std::uint16_t>(static_cast<std::size_t>(ldl_) * chunk_);
        }
        break;
      }
      case SpmmKernel::bsr_block:
        // A's natural blocks, also the eigensolver's fused filter step (block_step()).
        TCSOLVE_REQUIRE(plan.precision == Precision::fp64 && plan.block_h > 0,
                        "bsr_block planned without a block size or in another precision than fp64");
        bsr_ = make_chebyshev_step_bsr(a, plan.block_h, Precision::fp64, opt.stream, plan.bsr_row_ptr.get());
        break;
      default:
        throw InvalidArgument(std::string("CUDA operator cannot run kernel ") +
                              to_string(plan.kernel));
    }
  }

  // A CSR operator on arrays already in device memory (e.g. Aᵀ made there), laid out for `plan`.
  CudaSparseOperator(std::unique_ptr<CsrSpmmDevice> csr, const SpmmPlan& plan, const OperatorOptions& opt)
      : plan_(plan), rows_(csr->rows()), cols_(csr->cols()), stream_(opt.stream), csr_(std::move(csr)) {
    note_interleaved(*csr_, plan_);
  }

  std::int64_t rows() const override { return rows_; }
  std::int64_t cols() const override { return cols_; }
  Space space() const override { return Space::device; }
  // The CSR kernels' candidates share one upload: the next one's layout (segments, staging).
  bool holds_csr() const { return csr_ != nullptr; }
  void relayout_csr(const std::vector<std::int64_t>& row_ptr, const SpmmPlan& c) {
    csr_->relayout(row_ptr, c.csr_group, c.stage_x ? c.expected_cols : 0, c.csr_tiled);
    plan_ = c;
    note_interleaved(*csr_, plan_);
  }
  const SpmmPlan& plan() const override { return plan_; }
  SpmmPlan& mutable_plan() override { return plan_; }
  SpmmPlan& plan_for_trial() { return plan_; }
  std::size_t device_bytes() const override {
    return (csr_ ? csr_->device_bytes() : 0) + (bcsr_ ? bcsr_->device_bytes() : 0) + xlow_.bytes() +
           (bsr_ ? bsr_->device_bytes() : 0);
  }
  const ChebyshevStep* block_step() const override { return bsr_.get(); }
  DeviceCsr device_csr() const override {
    if (!csr_ || csr_->precision() != Precision::fp64) return {};
    return {csr_->row_ptr(), csr_->col_idx(), static_cast<const double*>(csr_->values())};
  }
  // fp64 BCSR with a staging workspace: read X staged (true) or column-major (false).
  bool can_toggle_staging() const {
    return bcsr_ && plan_.precision == Precision::fp64 && bcsr_->stage_cols() > 0;
  }
  // Symmetric reordering: X is gathered by the staging copy, which is then never turned off.
  bool gathers() const { return bcsr_ && bcsr_->gathers(); }
  void use_staging(bool on) {
    bcsr_->set_stage_min_cols(on ? std::min(plan_.expected_cols, 16) : INT_MAX);
    plan_.stage_x = on || bcsr_->gathers();
  }
  void drop_staging() { bcsr_->drop_stage(); plan_.stage_x = false; }
  void set_tile(int cols) {  // 0 = default (64)
    bcsr_->set_max_tile_cols(cols > 0 ? cols : 64);
    plan_.dmma_tile_cols = cols;
  }
  std::int64_t run_blocks() const { return bcsr_->blocks_per_warp(); }
  void set_run_cap(const Bcsr<double>& b, std::int64_t cap) {  // 0 = default split
    bcsr_->set_max_run_blocks(b, cap);
    plan_.bcsr_run_blocks = cap;
  }

  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.space == Space::device && y.space == Space::device,
                    "CUDA sparse operator needs device X and Y");
    TCSOLVE_REQUIRE(x.rows == cols_ && y.rows == rows_ && x.cols == y.cols,
                    "sparse operator: shapes of X and Y do not match A");
    TCSOLVE_REQUIRE(x.cols >= 1, "sparse operator: k >= 1 columns");
    TCSOLVE_REQUIRE(x.cols < (std::int64_t(1) << 31), "sparse operator: too many columns");
    const int k = static_cast<int>(x.cols);
    if (bsr_) {
      bsr_->step(1.0, x, 0.0, 0.0, y, 0.0, MvView<const double>{}, nullptr);  // Y = A·X
    } else if (csr_) {
      csr_->apply(x.data, x.ld, y.data, y.ld, k, stream_);
    } else if (plan_.precision == Precision::fp64) {
      bcsr_->apply(x.data, x.ld, y.data, y.ld, k, stream_);
    } else {
      for (int c0 = 0; c0 < k; c0 += chunk_) {
        const int kc = std::min(chunk_, k - c0);
        // symmetric reordering: the gather X[perm] rides on the conversion
        convert_multivector_device(x.data + c0 * x.ld, x.ld, xlow_.get(), ldl_, cols_, kc,
                                   plan_.precision, stream_, bcsr_->gather());
        bcsr_->apply_lowp(xlow_.get(), ldl_, y.data + c0 * y.ld, y.ld, kc, stream_);
      }
    }
  }

 private:
  SpmmPlan plan_;
  std::int64_t rows_, cols_;
  void* stream_;
  std::unique_ptr<CsrSpmmDevice> csr_;
  std::unique_ptr<BcsrSpmmDevice> bcsr_;
  std::unique_ptr<ChebyshevStep> bsr_;  // bsr_block: the step on A's natural blocks
  int chunk_ = 0;
  std::int64_t ldl_ = 0;
  DeviceArray<std::uint16_t> xlow_;
};

// Caps on the blocks of a warp run tried by the trial (fp64 BCSR) when the default split makes
// longer runs: with ~8k resident warps, runs of 256 / 64 blocks keep ~2M / ~0.5M blocks in
// flight (for elast3d:210, 1.4 / 0.35 grid planes of block rows instead of half the matrix).
constexpr std::int64_t kRunCaps[2] = {256, 64};

// Time of one apply (ms): a warm-up run, one timed run, and — unless that is already more than
// 3× `best` — two more timed runs; the fastest timed run counts.
double trial_ms(const CudaSparseOperator& op, MvView<const double> x, MvView<double> y,
                cudaStream_t st, double best) {
  cudaEvent_t e0, e1;
  TCSOLVE_CUDA_CHECK(cudaEventCreate(&e0));
  TCSOLVE_CUDA_CHECK(cudaEventCreate(&e1));
  double t = INFINITY;
  try {
    op.apply(x, y);  // warm-up (module load, caches)
    for (int rep = 0; rep < 3; ++rep) {
      TCSOLVE_CUDA_CHECK(cudaEventRecord(e0, st));
      op.apply(x, y);
      TCSOLVE_CUDA_CHECK(cudaEventRecord(e1, st));
      TCSOLVE_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      TCSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      t = std::min(t, static_cast<double>(ms));
      if (rep == 0 && t > 3.0 * best) break;
    }
  } catch (...) {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    throw;
  }
  TCSOLVE_CUDA_CHECK(cudaEventDestroy(e0));
  TCSOLVE_CUDA_CHECK(cudaEventDestroy(e1));
  return t;
}

std::string trial_name(const SpmmPlan& p) {
  std::string n = to_string(p.kernel);
  if (p.symmetric) n += " sym";
  if (p.kernel == SpmmKernel::csr_segment) n += " g" + std::to_string(p.csr_group);
  if (p.kernel == SpmmKernel::csr_row && p.csr_tiled) n += " tiled";
  if (p.stage_x) n += " staged";
  if (p.dmma_tile_cols > 0) n += " t" + std::to_string(p.dmma_tile_cols);
  if (p.bcsr_run_blocks > 0) n += " r" + std::to_string(p.bcsr_run_blocks);
  return n;
}

// The fp64 BCSR candidate's modes on one upload: X read directly or staged, narrower column
// tiles for wide N, and shorter warp runs (a narrower band of block rows in flight, for X reuse
// in L2) when the default runs are long (billion-entry matrices). Leaves `op` in its fastest
// mode and returns that mode's time; every mode's time goes to `trials`.
double time_bcsr_modes(CudaSparseOperator& op, const Bcsr<double>* blocks, int k, MvView<const double> xv,
                       MvView<double> yv, cudaStream_t st, double best_ms, std::vector<SpmmTrial>& trials) {
  bool best_staged = false;
  int best_tile = 0;
  std::int64_t best_cap = 0;
  double t_mode = INFINITY;
  auto run_mode = [&](bool staged, int tile, std::int64_t cap) {
    op.use_staging(staged);
    op.set_tile(tile);
    const double t = trial_ms(op, xv, yv, st, std::min(best_ms, t_mode));
    trials.push_back({trial_name(op.plan()), t});
    if (t < t_mode) {
      t_mode = t;
      best_staged = staged;
      best_tile = tile;
      best_cap = cap;
    }
  };
  const std::int64_t default_run = op.run_blocks();
  for (std::int64_t cap : {std::int64_t(0), kRunCaps[0], kRunCaps[1]}) {
    if (cap > 0 && (cap >= default_run || blocks == nullptr)) continue;
    if (blocks) op.set_run_cap(*blocks, cap);
    if (!op.gathers()) run_mode(false, 0, cap);
    run_mode(true, 0, cap);
    for (int tile : {32, 16})
      if (k > tile) run_mode(true, tile, cap);
  }
  if (blocks) op.set_run_cap(*blocks, best_cap);
  op.use_staging(best_staged);
  op.set_tile(best_tile);
  if (!best_staged) op.drop_staging();
  return t_mode;
}

}  // namespace

std::unique_ptr<SparseOperator> make_cuda_operator_by_trial(
    const Csr<double>& a, const Bcsr<double>* blocks, const std::vector<SpmmPlan>& candidates,
    const OperatorOptions& opt) {
  TCSOLVE_REQUIRE(!candidates.empty(), "SpMM trial needs at least one candidate");
  const int k = std::max(1, candidates.front().expected_cols);
  cudaStream_t st = static_cast<cudaStream_t>(opt.stream);
  // Scratch X (finite, non-zero: bytes 0x3f) and Y for the timed runs; freed on return.
  DeviceArray<double> xs(static_cast<std::size_t>(a.ncols) * k);
  DeviceArray<double> ys(static_cast<std::size_t>(a.nrows) * k);
  if (xs.bytes()) TCSOLVE_CUDA_CHECK(cudaMemsetAsync(xs.get(), 0x3f, xs.bytes(), st));
  const MvView<const double> xv{xs.get(), a.ncols, k, a.ncols, Space::device};
  const MvView<double> yv{ys.get(), a.nrows, k, a.nrows, Space::device};

  std::vector<SpmmTrial> trials;
  std::unique_ptr<CudaSparseOperator> best;
  double best_ms = INFINITY;
  auto keep_if_best = [&](std::unique_ptr<CudaSparseOperator>& op, double t) {
    if (t < best_ms) {
      best_ms = t;
      best = std::move(op);  // the previous best is freed here
    }
  };
  // The CSR candidates run on one upload of A (relayout between them); the fastest layout is
  // compared with the other candidates at the end.
  std::unique_ptr<CudaSparseOperator> csr_op;
  const SpmmPlan *best_csr = nullptr, *last_csr = nullptr;  // the fastest layout, the one held
  double best_csr_ms = INFINITY;
  for (const SpmmPlan& c : candidates) {
    if (c.kernel == SpmmKernel::csr_row || c.kernel == SpmmKernel::csr_segment) {
      if (csr_op) {
        csr_op->relayout_csr(a.row_ptr, c);
      } else {
        try {
          csr_op = std::make_unique<CudaSparseOperator>(a, nullptr, c, opt);
        } catch (const OutOfDeviceMemory&) {
          trials.push_back({trial_name(c) + " (no device memory)", INFINITY});
          continue;
        }
      }
      last_csr = &c;
      const double t = trial_ms(*csr_op, xv, yv, st, std::min(best_ms, best_csr_ms));
      trials.push_back({trial_name(csr_op->plan()), t});
      if (t < best_csr_ms) best_csr_ms = t, best_csr = &c;
      continue;
    }
    std::unique_ptr<CudaSparseOperator> op;
    try {
      op = std::make_unique<CudaSparseOperator>(a, blocks, c, opt);
    } catch (const OutOfDeviceMemory&) {
      trials.push_back({trial_name(c) + " (no device memory)", INFINITY});
      continue;
    }
    if (op->can_toggle_staging()) {
      const double t = time_bcsr_modes(*op, blocks, k, xv, yv, st, best_ms, trials);
      keep_if_best(op, t);
      continue;
    }
    const double t = trial_ms(*op, xv, yv, st, best_ms);
    trials.push_back({trial_name(op->plan()), t});
    keep_if_best(op, t);
  }
  if (csr_op && best_csr) {
    if (last_csr != best_csr) csr_op->relayout_csr(a.row_ptr, *best_csr);
    keep_if_best(csr_op, best_csr_ms);
  }
  TCSOLVE_REQUIRE(best != nullptr, "SpMM trial: no candidate could be built");
  trace_mark("spmm: trial done");
  SpmmPlan& p = best->plan_for_trial();
  p.by_trial = true;
  p.trials = trials;
  double second = INFINITY;
  for (const SpmmTrial& t : trials)
    if (t.ms > best_ms) second = std::min(second, t.ms);
  char buf[160];
  if (std::isfinite(second))
    std::snprintf(buf, sizeof buf, "fastest in a one-time trial at N = %d: %.4g ms vs %.4g ms next",
                  k, best_ms, second);
  else
    std::snprintf(buf, sizeof buf, "fastest in a one-time trial at N = %d: %.4g ms", k, best_ms);
  p.reason = std::string(buf) + " (model: " + p.reason + ")";
  return best;
}

namespace {
// B = P·A·Pᵀ on the GPU (OperatorBasis::permuted): `inner` holds B; conversions between the
// bases are one row-permuting pass over the block (16 bytes per element moved).
class PermutedCudaOperator final : public PermutedOperator {
 public:
  PermutedCudaOperator(std::unique_ptr<SparseOperator> inner, std::vector<std::int32_t> perm,
                       const SpmmPlan& plan, void* stream)
      : PermutedOperator(std::move(inner), std::move(perm), plan, Space::device),
        perm_dev_(perm_), stream_(stream) {}
  std::size_t device_bytes() const override { return inner_->device_bytes() + perm_dev_.bytes(); }

 private:
  void permute_rows(MvView<const double> in, MvView<double> out, bool scatter) const override {
    permute_rows_device(in.data, in.ld, out.data, out.ld, in.rows, in.cols, perm_dev_.get(), scatter,
                        stream_);
  }
  DeviceArray<std::int32_t> perm_dev_;
  void* stream_;
};
}  // namespace

std::unique_ptr<SparseOperator> make_permuted_cuda_operator(std::unique_ptr<SparseOperator> inner,
                                                            std::vector<std::int32_t> perm,
                                                            const SpmmPlan& plan,
                                                            const OperatorOptions& opt) {
  return std::make_unique<PermutedCudaOperator>(std::move(inner), std::move(perm), plan, opt.stream);
}

std::unique_ptr<SparseOperator> make_cuda_transposed_operator(
    const SparseOperator::DeviceCsr& a, std::int64_t m, std::int64_t n, std::int64_t nnz,
    const std::function<SpmmPlan(const std::vector<std::int64_t>&)>& plan_of, const OperatorOptions& opt) {
  std::vector<std::int64_t> rp;
  auto csr = CsrSpmmDevice::transposed(a.row_ptr, a.col_idx, a.values, m, n, nnz, opt.stream, rp);
  trace_mark("spmm: transposed on the device");
  const SpmmPlan p = plan_of(rp);
  TCSOLVE_REQUIRE(p.kernel == SpmmKernel::csr_row || p.kernel == SpmmKernel::csr_segment,
                  "a device-transposed operator runs a CSR kernel");
  csr->relayout(rp, p.csr_group, p.stage_x ? p.expected_cols : 0, p.csr_tiled);
  return std::make_unique<CudaSparseOperator>(std::move(csr), p, opt);
}

std::unique_ptr<SparseOperator> make_cuda_operator(const Csr<double>& a, const Bcsr<double>* blocks,
                                                   const SpmmPlan& plan,
                                                   const OperatorOptions& opt) {
  return std::make_unique<CudaSparseOperator>(a, blocks, plan, opt);
}

}  // namespace tcsolve::detail
