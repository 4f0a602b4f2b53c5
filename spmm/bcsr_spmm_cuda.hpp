// Tensor-core BCSR × multivector (spmm/bcsr_spmm.cu). Host-compilable interface on device
// pointers.
//
// A is given as a Bcsr of P·A (preprocess/bcsr.hpp); row i of P·A is written to Y[perm[i]], so Y
// comes out in A's row order with no extra pass.
//   fp64:      8×4 blocks, mma.sync m8n8k4 f64 (DMMA), fp64 accumulation. X, Y double.
//   fp16/bf16: 16×16 blocks, mma.sync m16n8k16 with fp32 accumulation. X in the same 16-bit type
//              (column-major, any ld), Y float or double.
// Work split: every warp owns a fixed run of K consecutive blocks (not block-rows), so one long
// block-row is shared by several warps; block-rows cut by a run boundary (and empty block-rows)
// are zeroed by a pre-pass and receive their partial sums with atomicAdd, all others get plain
// stores. A warp keeps each A fragment in registers for the whole N tile (up to 64 columns), and
// issues U blocks' X-fragment loads together with the next U blocks' A fragments and block
// columns before their mma instructions (software pipeline: one L2 latency per U blocks).
// Bytes per apply (minimum for this format): nblocks·(h·w·sizeof(value)+4) + 8·(nblock_rows+1)
// + X once + Y once.
#pragma once
#include <cstdint>

#include "core/device_buffer.hpp"
#include "core/types.hpp"
#include "preprocess/bcsr.hpp"

namespace tcsolve {

class BcsrSpmmDevice {
 public:
  // precision fp64 needs b.h == 8, b.w == 4; fp16/bf16 need 16×16. Values are rounded to the
  // precision on upload (16-bit blocks are stored in mma fragment order).
  //
  // stage_cols > 0 (fp64 only): X is first copied into a workspace of up to that many columns
  // (rounded up; allocated here, 8·ncols·stage_cols bytes) in the DMMA fragment order, so that a
  // warp reads a block's B fragments for 16 columns as one contiguous 512-byte piece (16-byte
  // loads). Costs 16·n·N extra bytes per apply; used from N = stage_min_cols() on.
  //
  // b.col_perm non-empty (symmetric reordering, stored matrix P·A·Pᵀ): fp64 apply() reads X
  // row col_perm[j] for stored column j — the gather is done by the staging copy, so staging is
  // then always on (a workspace of at least 8 columns is allocated even for stage_cols == 0).
  // apply_lowp() does NOT gather: its X must already be in the stored column order (the
  // operator gathers while converting to 16 bits; gather() is the device permutation).
  BcsrSpmmDevice(const Bcsr<double>& b, Precision precision, int stage_cols = 0);

  // fp64 only: Y = A·X.
  void apply(const double* x, std::int64_t ldx, double* y, std::int64_t ldy, int ncols_x,
             void* stream) const;
  // fp16/bf16 only: X holds 2-byte elements of the storage type.
  void apply_lowp(const void* x, std::int64_t ldx, float* y, std::int64_t ldy, int ncols_x,
                  void* stream) const;
  void apply_lowp(const void* x, std::int64_t ldx, double* y, std::int64_t ldy, int ncols_x,
                  void* stream) const;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t nblocks() const { return nblocks_; }
  std::int64_t blocks_per_warp() const { return per_warp_; }
  std::size_t device_bytes() const;
  Precision precision() const { return precision_; }
  int stage_cols() const { return stage_cols_; }
  // Staging is used for N >= stage_min_cols (default 16); the plan's trial tries both settings.
  int stage_min_cols() const { return stage_min_cols_; }
  void set_stage_min_cols(int n);
  void drop_stage();  // frees the workspace: X is then always read column-major (not gathers())
  bool gathers() const { return gather_.size() > 0; }
  const std::int32_t* gather() const { return gather_.get(); }  // nullptr when identity
  // Widest column tile of one warp (16, 32 or 64; default 64). Narrower tiles: more warps per
  // A block (A re-read from L2 per tile) but a narrower band of block-rows in flight at once,
  // so the X rows they share stay in L2. The plan's trial picks it.
  void set_max_tile_cols(int cols);
  int max_tile_cols() const { return 8 * max_nt_; }
  // Caps the blocks of one warp run (0: the default split, about 128 runs per SM, which gives
  // runs of thousands of blocks on billion-entry matrices). The block rows in flight at once
  // span (resident warps × run length) blocks; on a 3D stencil the X rows they share (the
  // neighbouring grid planes) stay in L2 only when that span is narrow, so shorter runs trade
  // more block rows cut between runs (zeroed, then atomics) for X reuse. Rebuilds the split
  // from the host blocks `b` (the same Bcsr as at construction). The plan's trial picks it.
  void set_max_run_blocks(const Bcsr<double>& b, std::int64_t cap);
  std::int64_t max_run_blocks() const { return run_cap_; }

 private:
  void prepare_split(const Bcsr<double>& b);  // per-warp runs, zero list
  static int staged_width(int kc);             // staged row length for kc columns
  std::int64_t rows_ = 0, cols_ = 0, nblocks_ = 0, nbrows_ = 0;
  int h_ = 8, w_ = 4;
  Precision precision_ = Precision::fp64;
  DeviceArray<std::int64_t> block_row_ptr_;
  DeviceArray<std::int32_t> block_col_;
  DeviceArray<unsigned char> values_;
  DeviceArray<std::int32_t> perm_;       // empty when identity
  std::int64_t per_warp_ = 8;            // K: blocks per warp run
  std::int64_t run_cap_ = 0;             // cap on K (0 = none)
  std::int64_t nwarps_ = 0;
  DeviceArray<std::int32_t> warp_row_;   // block-row holding the first block of each run
  DeviceArray<std::int32_t> zero_rows_;  // Y rows (after perm) zeroed before the kernel
  int stage_cols_ = 0;                   // 0: read X column-major directly
  int stage_min_cols_ = 16;
  int max_nt_ = 8;                       // widest tile: 8·max_nt_ columns
  std::int64_t stage_rows_ = 0;          // ncols rounded up to 32
  DeviceArray<double> stage_;            // fragment-order X staging [stage_rows_ × width]
  DeviceArray<std::int32_t> gather_;     // Bcsr::col_perm on the device; empty when identity
};

}  // namespace tcsolve
