// Sparse operator factory, the plan (kernel choice by a byte cost model) and the CPU operator.
#include "spmm/sparse_operator.hpp"

#include "core/trace.hpp"

#include "spmm/chebyshev_step.hpp"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "preprocess/bcsr_build.hpp"
#include "preprocess/bcsr_stats.hpp"
#include "preprocess/jaccard_reorder.hpp"
#include "spmm/cpu_operator.hpp"
#include "spmm/cpu_transposed.hpp"
#include "spmm/cuda_operator.hpp"
#include "spmm/permuted_operator.hpp"

namespace tcsolve {

const char* to_string(SpmmKernel k) {
  switch (k) {
    case SpmmKernel::automatic: return "automatic";
    case SpmmKernel::cpu_csr: return "cpu_csr";
    case SpmmKernel::csr_row: return "csr_row";
    case SpmmKernel::csr_segment: return "csr_segment";
    case SpmmKernel::bcsr_dmma: return "bcsr_dmma";
    case SpmmKernel::bcsr_mma_f16: return "bcsr_mma_f16";
    case SpmmKernel::bcsr_mma_bf16: return "bcsr_mma_bf16";
    case SpmmKernel::bsr_block: return "bsr_block";
  }
  return "?";
}

const char* to_string(Reorder r) {
  switch (r) {
    case Reorder::none: return "none";
    case Reorder::jaccard: return "jaccard";
    case Reorder::symmetric: return "symmetric";
  }
  return "?";
}

namespace {

// Cost-model constants (bytes of DRAM traffic equivalent per apply).
// X gathers are served mostly by L1/L2; one gathered byte is counted as kGather DRAM bytes.
constexpr double kGather = 0.25;
// Row-split CSR while rows are short and not too skewed; else segment-split.
constexpr double kRowSplitMeanMax = 10.0;
constexpr std::int64_t kRowSplitMaxRow = 256;
// Row-major staging of X (16·n·N extra bytes) for the DMMA kernel from this N on, and for the
// segment-split CSR kernel (random long rows) from this N on. Kept in sync with the kernels'
// own thresholds (bcsr_spmm.cu, csr_spmm.cu).
constexpr int kStageDmmaMinCols = 16;
constexpr int kStageSegmentMinCols = 4;

std::size_t value_bytes(Precision p) {
  switch (p) {
    case Precision::fp64: return 8;
    case Precision::fp32:
    case Precision::tf32: return 4;
    default: return 2;
  }
}

bool is_bcsr(SpmmKernel k) {
  return k == SpmmKernel::bcsr_dmma || k == SpmmKernel::bcsr_mma_f16 ||
         k == SpmmKernel::bcsr_mma_bf16;
}

SpmmKernel tensor_kernel_for(Precision p) {
  switch (p) {
    case Precision::fp64: return SpmmKernel::bcsr_dmma;
    case Precision::fp16: return SpmmKernel::bcsr_mma_f16;
    case Precision::bf16: return SpmmKernel::bcsr_mma_bf16;
    default: return SpmmKernel::automatic;  // none
  }
}

// Lanes per segment of the segment-split CSR kernel, by mean row length.
int segment_group(double mean_row_nnz) {
  return mean_row_nnz < 24 ? 4 : mean_row_nnz < 96 ? 8 : 32;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string SpmmPlan::describe() const {
  std::ostringstream o;
  o << "spmm plan: backend " << to_string(backend) << ", precision " << to_string(precision)
    << ", N " << expected_cols << ", kernel " << to_string(kernel);
  if (kernel == SpmmKernel::csr_segment) o << " (group " << csr_group << ")";
  if (kernel == SpmmKernel::csr_row && csr_tiled) o << " (A tiled in shared memory)";
  if (stage_x) o << ", X staged";
  if (dmma_tile_cols > 0) o << ", " << dmma_tile_cols << "-column tiles";
  if (bcsr_run_blocks > 0) o << ", runs of <= " << bcsr_run_blocks << " blocks";
  o << "\n  rows: mean " << fmt("%.2f", mean_row_nnz) << " nnz, max " << max_row_nnz;
  if (block_h > 0)
    o << "; " << block_h << "x" << block_w << " blocks " << nblocks << ", fill "
      << fmt("%.3f", fill) << (blocks_sampled ? " (sampled)" : "")
      << (symmetric ? " (after symmetric reordering)" : reordered ? " (after row reordering)" : "");
  if (est_bytes_csr > 0)
    o << "\n  model bytes/apply: CSR " << fmt("%.3g", est_bytes_csr) << ", BCSR "
      << (est_bytes_bcsr > 0 ? fmt("%.3g", est_bytes_bcsr) : std::string("n/a"));
  if (by_trial) {
    o << "\n  trial (ms per apply at N " << expected_cols << "):";
    for (const SpmmTrial& t : trials) o << " " << t.name << " " << fmt("%.4g", t.ms) << ";";
  }
  o << "\n  why: " << reason << "\n";
  return o.str();
}

// The plan's fields for the bsr_block kernel on A's natural b×b blocks.
static void set_bsr(SpmmPlan& p, const Csr<double>& a, int b, const std::string& reason) {
  auto rp = std::make_shared<const std::vector<std::int64_t>>(bsr_block_row_ptr(a, b));
  trace_mark("plan: natural blocks counted");
  const BsrShape sh{rp->back(), bsr_slice_offsets(*rp).back()};
  p.bsr_row_ptr = std::move(rp);
  p.kernel = SpmmKernel::bsr_block;
  p.block_h = p.block_w = b;
  p.nblocks = sh.blocks;
  p.bsr_slots = sh.slots;
  p.fill = sh.blocks > 0 ? static_cast<double>(a.nnz()) / (static_cast<double>(sh.blocks) * b * b) : 0.0;
  p.reordered = p.symmetric = false;
  p.stage_x = false;
  p.reason = reason;
}

// The h×w block fill of A (nnz / (blocks·h·w)) on a sample of 1024 block rows:
// O(1024·h·(row length)·log), against the O(nnz) exact count (count_blocks: 17–35 ms on
// elast3d:64's 64M entries on the H200's host). The block rows are spread by the golden-ratio
// sequence, not at a fixed stride: on a grid a stride can alias with the rows of one face
// (elast3d:64 at stride 96 sampled only boundary nodes, whose blocks are fuller).
static double sampled_block_fill(const Csr<double>& a, int h, int w) {
  const std::int64_t mb = (a.nrows + h - 1) / h;
  const std::int64_t samples = std::min<std::int64_t>(mb, 1024);
  // per sample: its distinct blocks (the samples in parallel: 0.38 s alone on the 1.2G-entry
  // count matrix, whose block rows hold ~10k entries each)
  std::vector<std::int64_t> blocks(static_cast<std::size_t>(samples), 0), entries(blocks.size(), 0);
  parallel_for(samples, [&](std::int64_t t) {
    const double u = std::fmod(0.5 + 0.6180339887498949 * static_cast<double>(t), 1.0);
    const std::int64_t I = samples == mb ? t : std::min<std::int64_t>(mb - 1, static_cast<std::int64_t>(u * static_cast<double>(mb)));
    const std::int64_t r0 = I * h, r1 = std::min<std::int64_t>(a.nrows, r0 + h);
    std::vector<std::int32_t> cols;
    cols.reserve(static_cast<std::size_t>(a.row_ptr[r1] - a.row_ptr[r0]));
    for (std::int64_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) cols.push_back(a.col_idx[p] / w);
    std::sort(cols.begin(), cols.end());
    blocks[t] = std::unique(cols.begin(), cols.end()) - cols.begin();
    entries[t] = a.row_ptr[r1] - a.row_ptr[r0];
  }, 16);
  const double nb = static_cast<double>(std::accumulate(blocks.begin(), blocks.end(), std::int64_t(0)));
  const double ne = static_cast<double>(std::accumulate(entries.begin(), entries.end(), std::int64_t(0)));
  return nb > 0 ? ne / (nb * h * w) : 0.0;
}

// The CSR kernels' side of the plan: bytes an apply moves (values, column indices, row offsets,
// X and Y, and the gathers of X), and one thread per row (short rows) or segments shared by lane
// groups (long or skewed rows), with the reason.
namespace {
struct CsrChoice {
  bool row_split = false;
  int group = 1;  // csr_segment's lane group
  SpmmKernel kernel = SpmmKernel::csr_row;
  const char* why = "";
};
}  // namespace

static CsrChoice plan_csr(SpmmPlan& p, std::int64_t m, std::int64_t nnz, const OperatorOptions& opt, double xy) {
  const double N = p.expected_cols;
  const double vs = static_cast<double>(value_bytes(opt.precision));
  p.est_bytes_csr = static_cast<double>(nnz) * (vs + 4.0) + 8.0 * (m + 1) + xy +
                    kGather * static_cast<double>(nnz) * N * 8.0;
  CsrChoice c;
  c.row_split = p.mean_row_nnz < kRowSplitMeanMax && p.max_row_nnz <= kRowSplitMaxRow;
  c.group = segment_group(p.mean_row_nnz);
  c.kernel = c.row_split ? SpmmKernel::csr_row : SpmmKernel::csr_segment;
  c.why = c.row_split ? "rows are short (mean < 10, max <= 256): one thread per row"
                      : "rows are long or skewed: segments of <= 16·group non-zeros "
                        "shared by lane groups";
  return c;
}

// Long rows in A's natural 3×3 blocks whose 8×4 tensor-core blocks are mostly padding (3D
// elasticity: 81 entries a row, 8×4 fill 0.49), fp64, A in its given order: the block-row
// kernel of the Chebyshev step (spmm/chebyshev_step.hpp), which is also the eigensolver's fused
// filter step on the same copy of A. H200, elast3d:64, µs for its A·X / the DMMA kernel's:
// 16 columns 380 / 589, 24 columns 678 / 835, 32 columns 735 / 880; its set-up (blocks made and
// uploaded a piece at a time: 0.08–0.095 s) against the DMMA operator's 0.35–0.45 s
// (docs/performance.md). Above 32 columns it re-reads the blocks once per pass; dense 8×4
// blocks (a band) keep the tensor cores; other b are not measured (forced only). The 8×4 fill
// decides against 0.75: a sample decides where it is clearly below (< 0.6), the exact count
// otherwise (plan_kernel). TCSOLVE_BSR_OPERATOR=0: not chosen (A/B).
static bool bsr3_shape_fits(const Csr<double>& a, const OperatorOptions& opt, SpmmKernel tc, const SpmmPlan& p) {
  const char* bsr_env = std::getenv("TCSOLVE_BSR_OPERATOR");
  return opt.kernel == SpmmKernel::automatic && tc == SpmmKernel::bcsr_dmma &&
         opt.reorder == Reorder::none && p.expected_cols <= 32 &&
         !(bsr_env && std::string(bsr_env) == "0") && a.square() &&
         chebyshev_bsr_step_block(a) == 3;
}

// Takes the 3×3 block-row kernel (bsr3_shape_fits), with the 8×4 fill that decided (`how`: how
// it was found) in the reason.
static void take_bsr3(SpmmPlan& p, const Csr<double>& a, double fill84, const char* how) {
  set_bsr(p, a, 3, "");
  p.reason = "rows of " + fmt("%.0f", p.mean_row_nnz) + " entries in natural 3x3 blocks (fill " +
             fmt("%.2f", p.fill) + "; 8x4 tensor-core blocks " + fmt("%.2f", fill84) + how +
             "): the block-row kernel gathers X once per block and is the Chebyshev filter's "
             "fused step on the same copy of A";
}

// Where counting A's blocks cannot change the kernel: fp64, the automatic choice, no reordering,
// at least kSampleNnz entries, and the 8×4 fill of 1024 sampled block rows below 0.15 (half the
// 0.3 under which CSR is taken whatever the byte model says). Returns that sampled fill, else −1.
constexpr std::int64_t kSampleNnz = 100'000'000;
static double sampled_fill_if_large(const Csr<double>& a, const OperatorOptions& opt) {
  if (opt.precision != Precision::fp64 || opt.kernel != SpmmKernel::automatic ||
      opt.reorder != Reorder::none || a.nnz() < kSampleNnz)
    return -1;
  const double f = sampled_block_fill(a, 8, 4);
  trace_mark("plan: 8x4 fill sampled");
  return f > 0 && f < 0.15 ? f : -1;
}

// The tensor-core side: A's h×w blocks (8×4 fp64, 16×16 16-bit) counted, after a Jaccard
// reordering where asked and where it reduces the count (its permutation to perm_out), their
// fill, and the bytes an apply moves (blocks, block-row offsets, X and Y, 16-bit X conversion,
// the gathers of X).
static void plan_tensor_blocks(SpmmPlan& p, const Csr<double>& a, const OperatorOptions& opt, double xy,
                               std::vector<std::int32_t>* perm_out) {
  const std::int64_t m = a.nrows, nnz = a.nnz();
  const double N = p.expected_cols;
  const double vs = static_cast<double>(value_bytes(opt.precision));
  p.block_h = opt.precision == Precision::fp64 ? 8 : 16;
  p.block_w = opt.precision == Precision::fp64 ? 4 : 16;
  const double sampled = sampled_fill_if_large(a, opt);
  if (sampled >= 0) {
    // clearly sparse blocks on a large A: the count (0.9 s for 1.2G entries on the H200's host)
    // would only confirm CSR (make_operator_in_order takes CSR below fill 0.3)
    p.fill = sampled;
    p.nblocks = static_cast<std::int64_t>(std::ceil(static_cast<double>(nnz) / (sampled * 32.0)));
    p.blocks_sampled = true;
  } else {
    p.nblocks = count_blocks(a, p.block_h, p.block_w);  // multithreaded, O(nnz)
    trace_mark("plan: tensor-core blocks counted");
  }
  if (opt.reorder != Reorder::none) {
    // Row-only Jaccard (A' = P·A) or symmetric (A' = P·A·Pᵀ) reordering; kept only when it
    // reduces the block count.
    ReorderOptions ro;
    if (opt.reorder == Reorder::symmetric) {
      TCSOLVE_REQUIRE(a.nrows == a.ncols, "symmetric reordering needs a square matrix");
      ro.mode = ReorderMode::symmetric;
    }
    ReorderResult rr = jaccard_reorder(a, p.block_h, p.block_w, ro);
    if (rr.applied && rr.blocks_after < p.nblocks) {
      p.nblocks = rr.blocks_after;
      p.reordered = true;
      p.symmetric = opt.reorder == Reorder::symmetric;
      if (perm_out) *perm_out = std::move(rr.perm);
    }
  }
  const double hw = static_cast<double>(p.block_h) * p.block_w;
  if (!p.blocks_sampled)
    p.fill = p.nblocks > 0 ? static_cast<double>(nnz) / (static_cast<double>(p.nblocks) * hw) : 0;
  const double nbr = static_cast<double>((m + p.block_h - 1) / p.block_h);
  // 16-bit kernels read X in 16 bits, after a conversion pass from the double interface.
  const double xconv = opt.precision == Precision::fp64 ? 0.0 : N * a.ncols * (8.0 + 2.0);
  const double xs = opt.precision == Precision::fp64 ? 8.0 : 2.0;
  p.est_bytes_bcsr = static_cast<double>(p.nblocks) * (hw * vs + 4.0) + 8.0 * (nbr + 1) + xy +
                     xconv + kGather * static_cast<double>(p.nblocks) * p.block_w * N * xs;
}

// The kernel: the caller's where forced, CSR where the precision has no tensor-core kernel, else
// whichever of the tensor-core and CSR kernels moves fewer model bytes.
static void choose_kernel(SpmmPlan& p, const OperatorOptions& opt, SpmmKernel tc, const CsrChoice& csr) {
  p.csr_group = csr.row_split ? 1 : csr.group;
  if (opt.kernel != SpmmKernel::automatic) {
    p.kernel = opt.kernel;
    if (p.kernel == SpmmKernel::csr_row) p.csr_group = 1;
    if (p.kernel == SpmmKernel::csr_segment) p.csr_group = csr.group;
    if (is_bcsr(p.kernel))
      TCSOLVE_REQUIRE(p.kernel == tc, "forced BCSR kernel does not match the precision");
    TCSOLVE_REQUIRE(p.kernel != SpmmKernel::cpu_csr, "cpu_csr is the CPU backend's kernel");
    p.reason = std::string("forced by OperatorOptions::kernel");
    return;
  }
  if (tc == SpmmKernel::automatic) {
    p.kernel = csr.kernel;
    p.reason = std::string("no tensor-core kernel for ") + to_string(opt.precision) + "; " +
               csr.why;
    return;
  }
  if (p.est_bytes_bcsr < p.est_bytes_csr) {
    p.kernel = tc;
    p.reason = "block fill " + fmt("%.2f", p.fill) + " makes the " +
               std::to_string(p.block_h) + "x" + std::to_string(p.block_w) +
               " tensor-core kernel move fewer bytes (" + fmt("%.3g", p.est_bytes_bcsr) +
               " vs " + fmt("%.3g", p.est_bytes_csr) + " for CSR)";
  } else {
    p.kernel = csr.kernel;
    p.reason = "block fill " + fmt("%.2f", p.fill) + " too low for tensor cores (" +
               fmt("%.3g", p.est_bytes_bcsr) + " model bytes vs " +
               fmt("%.3g", p.est_bytes_csr) + " for CSR); " + csr.why;
  }
}

// The kernel for A on `backend`: the CPU's CSR product; on the GPU a forced bsr_block, the 3×3
// block-row kernel where A's shape fits it and its 8×4 blocks are mostly padding, else the byte
// cost model's choice between the tensor-core (BCSR) and CSR kernels (choose_kernel).
static SpmmPlan plan_kernel(const Csr<double>& a, Backend backend, const OperatorOptions& opt,
                            std::vector<std::int32_t>* perm_out) {
  trace_mark("plan: kernel");
  SpmmPlan p;
  p.backend = backend;
  p.precision = opt.precision;
  p.expected_cols = std::max(1, opt.expected_cols);
  const std::int64_t m = a.nrows, nnz = a.nnz();
  p.mean_row_nnz = m > 0 ? static_cast<double>(nnz) / static_cast<double>(m) : 0.0;
  for (std::int64_t i = 0; i < m; ++i)
    p.max_row_nnz = std::max(p.max_row_nnz, a.row_ptr[i + 1] - a.row_ptr[i]);

  if (backend == Backend::cpu) {
    TCSOLVE_REQUIRE(opt.precision == Precision::fp64 || opt.precision == Precision::fp32,
                    "the CPU sparse operator supports fp64 and fp32 storage only");
    TCSOLVE_REQUIRE(opt.kernel == SpmmKernel::automatic || opt.kernel == SpmmKernel::cpu_csr,
                    "the CPU backend runs only the cpu_csr kernel");
    p.kernel = SpmmKernel::cpu_csr;
    p.reason = "CPU backend: multithreaded CSR product (rows split over threads)";
    return p;
  }
  if (opt.precision == Precision::tf32)
    throw InvalidArgument("tf32 SpMM is not implemented (use fp32, fp16, bf16 or fp64)");

  // A forced bsr_block (tests, benchmarks; any natural b). The automatic choice (b = 3 only) is
  // made below, once the tensor-core blocks' fill is known.
  if (opt.kernel == SpmmKernel::bsr_block) {
    const int b = a.square() && opt.precision == Precision::fp64 ? natural_block_size(a) : 0;
    if (b == 0)
      throw InvalidArgument("bsr_block needs fp64 and a square A made of natural 2x2, 3x3, 4x4 or 6x6 "
                            "blocks (at most 1.2 stored entries per entry); A has " +
                            std::to_string(a.nrows) + " rows and " + std::to_string(nnz) + " entries");
    set_bsr(p, a, b, "forced by OperatorOptions::kernel");
    return p;
  }

  const double xy = 8.0 * p.expected_cols * static_cast<double>(a.nrows + a.ncols);
  const CsrChoice csr = plan_csr(p, a.nrows, a.nnz(), opt, xy);
  const SpmmKernel tc = tensor_kernel_for(opt.precision);
  const bool bsr3 = bsr3_shape_fits(a, opt, tc, p);
  if (bsr3) {
    const double sampled = sampled_block_fill(a, 8, 4);
    trace_mark("plan: 8x4 fill sampled");
    if (sampled < 0.6) {
      take_bsr3(p, a, sampled, ", sampled");
      return p;
    }
  }
  if (tc != SpmmKernel::automatic) plan_tensor_blocks(p, a, opt, xy, perm_out);
  if (bsr3 && p.nblocks > 0 && p.fill < 0.75) {
    take_bsr3(p, a, p.fill, "");
    return p;
  }
  choose_kernel(p, opt, tc, csr);
  return p;
}

static SpmmPlan plan_with_perm(const Csr<double>& a, Backend backend, const OperatorOptions& opt,
                               std::vector<std::int32_t>* perm_out) {
  SpmmPlan p = plan_kernel(a, backend, opt, perm_out);
  if (p.kernel == SpmmKernel::bcsr_dmma && p.expected_cols >= kStageDmmaMinCols) {
    p.stage_x = true;
    p.reason += "; X staged row-major (16-byte B-fragment loads) since N >= 16";
  } else if (p.kernel == SpmmKernel::csr_segment && p.expected_cols >= kStageSegmentMinCols) {
    p.stage_x = true;
    p.reason += "; X staged row-major (lanes over columns read whole X-row pieces)";
  }
  return p;
}

SpmmPlan plan_spmm(const Csr<double>& a, Backend backend, const OperatorOptions& opt) {
  return plan_with_perm(a, backend, opt, nullptr);
}

namespace {
// Staging capacity the device operators allocate for `cols` expected columns (kept in sync with
// CsrSpmmDevice / BcsrSpmmDevice): a power of two up to 64, then multiples of 64 up to 256.
std::int64_t stage_capacity(int cols) {
  std::int64_t c = 8;
  while (c < std::min(cols, 64)) c *= 2;
  if (cols > 64) c = std::min<std::int64_t>(256, (cols + 63) / 64 * 64);
  return c;
}
}  // namespace

std::size_t predict_device_bytes(const Csr<double>& a, const SpmmPlan& p) {
  if (p.backend == Backend::cpu) return 0;
  const std::int64_t m = a.nrows, n = a.ncols, nnz = a.nnz();
  const double vs = static_cast<double>(value_bytes(p.precision));
  double bytes = 0;
  switch (p.kernel) {
    case SpmmKernel::csr_row:
    case SpmmKernel::csr_segment: {
      // row_ptr, col_idx, values (CsrSpmmDevice)
      bytes = 8.0 * (m + 1) + 4.0 * nnz + vs * nnz;
      if (p.kernel == SpmmKernel::csr_segment) {
        // segments of <= 16·group non-zeros: row (4), begin and end (8 + 8); rows cut: 4 each
        const std::int64_t S = 16 * static_cast<std::int64_t>(std::max(1, p.csr_group));
        std::int64_t nseg = 0, split = 0;
        for (std::int64_t i = 0; i < m; ++i) {
          const std::int64_t len = a.row_ptr[i + 1] - a.row_ptr[i];
          nseg += std::max<std::int64_t>(1, (len + S - 1) / S);
          split += len > S;
        }
        bytes += 20.0 * nseg + 4.0 * split;
        if (p.stage_x) bytes += 8.0 * n * stage_capacity(p.expected_cols);
      }
      break;
    }
    case SpmmKernel::bcsr_dmma:
    case SpmmKernel::bcsr_mma_f16:
    case SpmmKernel::bcsr_mma_bf16: {
      const std::int64_t h = p.block_h, w = p.block_w, nb = p.nblocks;
      const std::int64_t nbr = (m + h - 1) / h;
      bytes = 8.0 * (nbr + 1) + 4.0 * nb + vs * static_cast<double>(nb) * h * w;
      // Per-warp runs (BcsrSpmmDevice::prepare_split): >= 8 blocks each, about 128 per SM; we
      // bound the SM count by kMaxSms. Rows zeroed before the kernel: those of block rows cut by
      // a run boundary (at most one per run) and of empty block rows (exact in the given order;
      // after a reordering at most the empty rows / h).
      constexpr std::int64_t kMaxSms = 192;
      const std::int64_t runs = p.bcsr_run_blocks > 0
                                    ? nb / std::max<std::int64_t>(8, p.bcsr_run_blocks) + 1
                                    : std::min<std::int64_t>(nb / 8 + 1, kMaxSms * 128 + 1);
      std::int64_t empty_brows = 0;
      if (!p.reordered) {
        for (std::int64_t r = 0; r < nbr; ++r)
          empty_brows += a.row_ptr[std::min(m, (r + 1) * h)] == a.row_ptr[r * h];
      } else {
        for (std::int64_t i = 0; i < m; ++i) empty_brows += a.row_ptr[i + 1] == a.row_ptr[i];
        empty_brows /= h;
      }
      bytes += 4.0 * runs + 4.0 * std::min<double>(static_cast<double>(m), static_cast<double>(h * (runs + empty_brows)));
      if (p.reordered) bytes += 4.0 * m;          // perm (Y rows)
      if (p.symmetric) bytes += 4.0 * n;          // gather (X rows)
      if (p.precision == Precision::fp64 && (p.stage_x || p.symmetric)) {
        // staging workspace (fragment order), ncols rounded up to 32 rows; a gathering operator
        // stages at least 8 columns even when the plan does not
        const int cols_staged = p.stage_x ? std::max(p.expected_cols, p.symmetric ? 8 : 1) : 8;
        bytes += 8.0 * ((n + 31) / 32 * 32) * stage_capacity(cols_staged);
      } else if (p.precision != Precision::fp64) {
        // X rounded to 16 bits, chunk of columns (CudaSparseOperator)
        const std::int64_t chunk = std::clamp<std::int64_t>((std::max(1, p.expected_cols) + 7) / 8 * 8, 8, 256);
        bytes += 2.0 * (n + (n & 1)) * chunk;
      }
      break;
    }
    case SpmmKernel::bsr_block:
      bytes = static_cast<double>(bsr_step_device_bytes({p.nblocks, p.bsr_slots}, m / std::max(1, p.block_h),
                                                        p.block_h, Precision::fp64));
      break;
    default:
      break;
  }
  return static_cast<std::size_t>(bytes);
}

// ---- the permuted basis: identity conversions of the base class and the CPU operator ----

namespace {
void copy_block(MvView<const double> x, MvView<double> y) {
  TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "permuted basis: shapes of the blocks differ");
  for (std::int64_t j = 0; j < x.cols; ++j)
    copy_bytes(y.col(j), y.space, x.col(j), x.space, static_cast<std::size_t>(x.rows) * sizeof(double));
}
}  // namespace

void SparseOperator::to_permuted(MvView<const double> x, MvView<double> xt) const { copy_block(x, xt); }
void SparseOperator::from_permuted(MvView<const double> xt, MvView<double> x) const { copy_block(xt, x); }

namespace {

// B = P·A·Pᵀ on the host, for OperatorBasis::permuted: the inner operator applies B, the
// conversions are row gathers/scatters through p.
class PermutedCpuOperator final : public detail::PermutedOperator {
 public:
  PermutedCpuOperator(std::unique_ptr<SparseOperator> inner, std::vector<std::int32_t> perm,
                      const SpmmPlan& plan)
      : PermutedOperator(std::move(inner), std::move(perm), plan, Space::host) {}

 private:
  void permute_rows(MvView<const double> in, MvView<double> out, bool scatter) const override {
    permute_block_rows(in.data, in.ld, out.data, out.ld, in.rows, in.cols, perm_.data(), scatter);
  }
};

}  // namespace

namespace {
// The planned blocks: P·A (row reordering), P·A·Pᵀ (symmetric: Bcsr::col_perm = perm) or A.
Bcsr<double> blocks_for(const Csr<double>& a, const SpmmPlan& plan,
                        const std::vector<std::int32_t>& perm) {
  if (!plan.reordered) return build_bcsr(a, plan.block_h, plan.block_w);
  return build_bcsr(a, plan.block_h, plan.block_w, perm,
                    plan.symmetric ? perm : std::vector<std::int32_t>{});
}
}  // namespace

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<SparseOperator> make_operator_in_order(const Csr<double>& a, Backend backend,
                                                       const OperatorOptions& opt);

void require_csr_shape(const Csr<double>& a) {
  TCSOLVE_REQUIRE(a.nrows >= 0 && a.ncols >= 0 && static_cast<std::int64_t>(a.row_ptr.size()) == a.nrows + 1,
                  "sparse operator: malformed CSR");
}

// OperatorBasis::permuted: the symmetric reordering for the precision's block shape (8×4 for
// fp64, fp32 and the CPU; 16×16 for fp16/bf16); when applied, B = P·A·Pᵀ is formed once (one
// host copy of A) and the operator is built on B in its natural order, so neither the CSR nor
// the BCSR kernels gather or scatter.
std::unique_ptr<SparseOperator> make_permuted_operator(const Csr<double>& a, Backend backend,
                                                       const OperatorOptions& opt) {
  TCSOLVE_REQUIRE(a.nrows == a.ncols, "a permuted-basis operator needs a square matrix");
  const auto t0 = std::chrono::steady_clock::now();
  const bool sixteen = opt.precision == Precision::fp16 || opt.precision == Precision::bf16;
  ReorderOptions ro;
  ro.mode = ReorderMode::symmetric;
  ReorderResult rr = jaccard_reorder(a, sixteen ? 16 : 8, sixteen ? 16 : 4, ro);
  OperatorOptions inner_opt = opt;
  inner_opt.reorder = Reorder::none;
  inner_opt.basis = OperatorBasis::original;
  if (!rr.applied) {
    const double reorder_s = seconds_since(t0);
    std::unique_ptr<SparseOperator> op = make_operator_in_order(a, backend, inner_opt);
    // the plan records the attempt; permutation() stays nullptr (the operator is A)
    SpmmPlan& p = detail::PlanAccess::of(*op);
    p.reason += "; permuted basis not used: " + rr.reason;
    p.setup.reorder_s = reorder_s;
    p.setup.total_s = seconds_since(t0);
    return op;
  }
  Csr<double> b = permute_symmetric(a, rr.perm);
  const double reorder_s = seconds_since(t0);
  std::unique_ptr<SparseOperator> inner;
  if (backend == Backend::cpu) {
    inner = detail::make_cpu_operator(std::move(b), inner_opt);
  } else {
    inner = make_operator_in_order(b, backend, inner_opt);
    Csr<double>().row_ptr.swap(b.row_ptr);  // B's host copy is no longer needed
  }
  SpmmPlan plan = inner->plan();
  plan.reordered = plan.symmetric = plan.permuted_basis = true;
  plan.reason = "permuted basis B = P·A·Pᵀ (" + rr.reason + "); " + plan.reason;
  plan.setup.reorder_s = reorder_s;
  plan.setup.total_s = seconds_since(t0);
  if (backend == Backend::cpu)
    return std::make_unique<PermutedCpuOperator>(std::move(inner), std::move(rr.perm), plan);
  return detail::make_permuted_cuda_operator(std::move(inner), std::move(rr.perm), plan, opt);
}
}  // namespace

std::unique_ptr<SparseOperator> make_transposed_operator(const Csr<double>& a, const SparseOperator& op,
                                                         const OperatorOptions& opt) {
  constexpr std::int64_t kMax = 2147483647;
  if (op.space() == Space::host) {
    const Csr<double>* h = op.host_csr();
    if (!h || opt.precision != Precision::fp64 || opt.kernel != SpmmKernel::automatic) return nullptr;
    if (h->nrows != a.nrows || h->ncols != a.ncols || h->nnz() != a.nnz())
      throw InvalidArgument("make_transposed_operator: the operator holds a " + std::to_string(h->nrows) + " x " +
                            std::to_string(h->ncols) + " matrix with " + std::to_string(h->nnz()) +
                            " entries, A is " + std::to_string(a.nrows) + " x " + std::to_string(a.ncols) +
                            " with " + std::to_string(a.nnz()) + " (not this matrix's operator)");
    return detail::make_cpu_transposed_operator(*h, opt);
  }
  const SparseOperator::DeviceCsr d = op.device_csr();
  if (op.space() != Space::device || !d.row_ptr || op.rows() != a.nrows || op.cols() != a.ncols ||
      opt.precision != Precision::fp64 || opt.kernel != SpmmKernel::automatic || a.nnz() == 0 ||
      a.nnz() >= kMax || a.nrows >= kMax || a.ncols >= kMax)
    return nullptr;
  std::int64_t held = 0;  // the operator's entry count: it must be A's
  copy_bytes(&held, Space::host, d.row_ptr + a.nrows, Space::device, sizeof held);
  if (held != a.nnz())
    throw InvalidArgument("make_transposed_operator: the operator holds " + std::to_string(held) +
                          " entries, A has " + std::to_string(a.nnz()) + " (not this matrix's operator)");
  // Aᵀ's 8×4 blocks are A's 4×8 ones: clearly sparse (sampled fill < 0.15), CSR whatever the count
  const double fill = sampled_block_fill(a, 4, 8);
  if (!(fill < 0.15)) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const auto plan_of = [&](const std::vector<std::int64_t>& rp) {
    SpmmPlan p;
    p.backend = Backend::cuda;
    p.precision = Precision::fp64;
    p.expected_cols = std::max(1, opt.expected_cols);
    const std::int64_t m = a.ncols, nnz = a.nnz();
    p.mean_row_nnz = m > 0 ? static_cast<double>(nnz) / static_cast<double>(m) : 0.0;
    for (std::int64_t i = 0; i < m; ++i) p.max_row_nnz = std::max(p.max_row_nnz, rp[i + 1] - rp[i]);
    const CsrChoice c = plan_csr(p, m, nnz, opt, 8.0 * p.expected_cols * static_cast<double>(a.nrows + a.ncols));
    p.kernel = c.kernel;
    p.csr_group = c.row_split ? 1 : c.group;
    p.block_h = 8;
    p.block_w = 4;
    p.fill = fill;
    p.blocks_sampled = true;
    p.stage_x = p.kernel == SpmmKernel::csr_segment && p.expected_cols >= kStageSegmentMinCols;
    p.reason = "A^T made on the device from A's copy (cuSPARSE CSR to CSC, no host transpose); 8x4 "
               "block fill " + fmt("%.3f", fill) + " (A's 4x8, sampled) too low for tensor cores; " + c.why +
               (p.stage_x ? "; X staged row-major (lanes over columns read whole X-row pieces)" : "");
    p.setup.plan_s = seconds_since(t0);
    return p;
  };
  auto t = detail::make_cuda_transposed_operator(d, a.nrows, a.ncols, a.nnz(), plan_of, opt);
  SpmmPlan& p = detail::PlanAccess::of(*t);
  p.setup.upload_s = seconds_since(t0) - p.setup.plan_s;
  p.setup.total_s = seconds_since(t0);
  return t;
}

std::unique_ptr<SparseOperator> make_sparse_operator(const Csr<double>& a, Backend backend,
                                                     const OperatorOptions& opt) {
  require_csr_shape(a);
  if (opt.basis == OperatorBasis::permuted) {
    TCSOLVE_REQUIRE(opt.reorder == Reorder::symmetric,
                    "OperatorBasis::permuted needs reorder == Reorder::symmetric");
    return make_permuted_operator(a, backend, opt);
  }
  return make_operator_in_order(a, backend, opt);
}

std::unique_ptr<SparseOperator> make_sparse_operator(Csr<double>&& a, Backend backend,
                                                     const OperatorOptions& opt) {
  if (backend != Backend::cpu || opt.basis == OperatorBasis::permuted) return make_sparse_operator(a, backend, opt);
  require_csr_shape(a);
  return detail::make_cpu_operator(std::move(a), opt);
}

namespace {
std::unique_ptr<SparseOperator> make_operator_in_order(const Csr<double>& a, Backend backend,
                                                       const OperatorOptions& opt) {
  if (backend == Backend::cpu) return detail::make_cpu_operator(Csr<double>(a), opt);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::int32_t> perm;
  SpmmPlan plan = plan_with_perm(a, backend, opt, &perm);
  // plan_with_perm ran the reordering (if asked) inside; it reports its own time in the reason
  plan.setup.plan_s = seconds_since(t0);
  const auto finish = [&](std::unique_ptr<SparseOperator> op, double bcsr_s, std::chrono::steady_clock::time_point t_up) {
    SpmmPlan& p = detail::PlanAccess::of(*op);
    p.setup.plan_s = plan.setup.plan_s;
    p.setup.bcsr_s = bcsr_s;
    p.setup.upload_s = seconds_since(t_up);
    p.setup.total_s = seconds_since(t0);
    return op;
  };
  // The plan's kernel, no trial (a BCSR kernel's blocks built first, their time reported). A CSR
  // kernel uses A as given: the plan says so whatever reordering the blocks' count found.
  const auto build_planned = [&]() {
    if (is_bcsr(plan.kernel)) {
      const auto tb = std::chrono::steady_clock::now();
      Bcsr<double> b = blocks_for(a, plan, perm);
      const double bcsr_s = seconds_since(tb);
      const auto tu = std::chrono::steady_clock::now();
      return finish(detail::make_cuda_operator(a, &b, plan, opt), bcsr_s, tu);
    }
    plan.reordered = plan.symmetric = false;
    const auto tu = std::chrono::steady_clock::now();
    return finish(detail::make_cuda_operator(a, nullptr, plan, opt), 0.0, tu);
  };
  // The trial pays only where the model cannot tell the kernels apart (it builds and uploads
  // every candidate: 0.4 s for lap3d:100, 1.5 s for elast3d:64 on the H200, more than a solve of
  // lap3d:100). Clear cases take the model's kernel without a trial:
  //   - the tensor-core blocks cost > 1.25× the CSR bytes (at the model's ratio 1.46 on lap3d
  //     the DMMA kernel ran 2.0–2.7× slower than csr_row) and the rows are short and regular
  //     (row-split: mean < 10, max ≤ 256; the tiled variant won by ≤ 5 % where it won): csr_row;
  //   - the blocks cost < 0.75× the CSR bytes: the tensor-core kernel.
  //   - fp64 blocks of fill < 0.3 (8×4 blocks mostly padding): CSR whatever the byte ratio says
  //     (lap3d, fill 0.15, at N = 32: the model's ratio drops near 1.1, the DMMA kernel still
  //     loses 2–2.7×, and the trial cost 0.39 s against a 0.44 s solve).
  //   - an apply under OperatorOptions::trial_min_bytes by the model: launch-bound, whichever
  //     kernel runs (the model's kernel, with the fill rule above).
  // bsr_block: the model's clear case (no trial, no BCSR)
  if (plan.kernel == SpmmKernel::bsr_block) return build_planned();
  const double model_ratio = plan.est_bytes_csr > 0 && plan.nblocks > 0
                                 ? plan.est_bytes_bcsr / plan.est_bytes_csr : INFINITY;
  const bool rows_regular = plan.mean_row_nnz < kRowSplitMeanMax && plan.max_row_nnz <= kRowSplitMaxRow;
  const bool sparse_blocks = plan.precision == Precision::fp64 && plan.nblocks > 0 && plan.fill < 0.3;
  // The fill rule below keeps the reordering that reduced the blocks (plan_with_perm) in the plan
  // for the trial's tensor-core candidate: cleared, that candidate had been timed on A's own
  // blocks, more of them, and could still win (H200, a scrambled 945-row stencil at N = 33:
  // bcsr_dmma on A as given, 4016 blocks). The CSR kernels drop it (build_planned, the trial's
  // CSR candidates).
  // (only the automatic choice: a forced kernel is the caller's, tests and benchmarks included)
  if (opt.kernel == SpmmKernel::automatic && sparse_blocks && is_bcsr(plan.kernel)) {
    plan.kernel = rows_regular ? SpmmKernel::csr_row : SpmmKernel::csr_segment;
    plan.csr_group = rows_regular ? 1 : segment_group(plan.mean_row_nnz);
    plan.stage_x = !rows_regular && plan.expected_cols >= kStageSegmentMinCols;
  }
  if (opt.kernel == SpmmKernel::automatic && opt.plan_by_trial && plan.est_bytes_csr < opt.trial_min_bytes) {
    char why[160];
    std::snprintf(why, sizeof why, "; trial skipped: an apply is launch-bound (%.3g MB by the model, "
                  "under %.3g MB)", plan.est_bytes_csr / 1e6, opt.trial_min_bytes / 1e6);
    plan.reason += why;
    return build_planned();
  }
  if (opt.kernel == SpmmKernel::automatic && opt.plan_by_trial &&
      ((model_ratio > 1.25 && rows_regular) || model_ratio < 0.75 || (sparse_blocks && rows_regular))) {
    char why[200];
    std::snprintf(why, sizeof why, "; trial skipped: the model is clear (tensor-core blocks %.2fx "
                  "the CSR bytes, fill %.2f%s)", model_ratio, plan.fill,
                  model_ratio > 1.25 || sparse_blocks ? ", rows short and regular" : "");
    plan.reason += why;
    return build_planned();
  }
  if (opt.kernel == SpmmKernel::automatic && opt.plan_by_trial) {
    // Candidates: CSR row-split (unless rows are very long), CSR segment-split, and the
    // tensor-core kernel unless the model puts it at more than 3× the CSR bytes (1.25× for large A, below).
    std::vector<SpmmPlan> cand;
    const std::string model = std::string(to_string(plan.kernel)) + ", " + plan.reason;
    SpmmPlan c = plan;
    c.reason = model;
    c.reordered = false;  // the CSR kernels use A as given
    c.symmetric = false;
    if (plan.max_row_nnz <= 4096) {
      c.kernel = SpmmKernel::csr_row;
      c.csr_group = 1;
      c.stage_x = false;
      cand.push_back(c);
      if (plan.mean_row_nnz <= 7.5) {  // 128 rows' non-zeros mostly fit the 1024-entry tile
        c.csr_tiled = true;
        cand.push_back(c);
        c.csr_tiled = false;
      }
    }
    c.kernel = SpmmKernel::csr_segment;
    c.csr_group = segment_group(plan.mean_row_nnz);
    c.stage_x = plan.expected_cols >= kStageSegmentMinCols;
    cand.push_back(c);
    const SpmmKernel tc = tensor_kernel_for(plan.precision);
    Bcsr<double> b;
    double bcsr_s = 0;
    // The tensor-core candidate costs a host BCSR build and an upload (lap3d:400, 447M
    // non-zeros, fill 0.15: 18 s and 25 GB, trial peak 52 GiB on the device) and at the model's
    // ratio 1.46 it ran 2.0–2.7× slower than csr_row (H200, 2026-11-22, lap3d:200 and :400): it
    // is timed only when the model puts it within 1.25× of CSR.
    const double bcsr_limit = 1.25;
    if (tc != SpmmKernel::automatic && plan.nblocks > 0 &&
        plan.est_bytes_bcsr <= bcsr_limit * plan.est_bytes_csr) {
      const auto tb = std::chrono::steady_clock::now();
      b = blocks_for(a, plan, perm);
      bcsr_s = seconds_since(tb);
      c.reordered = plan.reordered;  // the blocks' reordering (the CSR candidates dropped it)
      c.symmetric = plan.symmetric;
      c.kernel = tc;
      c.csr_group = 1;
      c.stage_x = plan.precision == Precision::fp64;  // the trial times X staged and direct
      cand.push_back(c);
    }
    const auto tu = std::chrono::steady_clock::now();
    return finish(detail::make_cuda_operator_by_trial(a, b.nblocks() > 0 ? &b : nullptr, cand, opt), bcsr_s, tu);
  }
  return build_planned();
}
}  // namespace

}  // namespace tcsolve
