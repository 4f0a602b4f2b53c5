// run_distributed_job: the job pipeline (apps/job/pipeline.hpp) on distributed/'s backend, run by
// every rank of an MPI launch, or by every rank thread of `--gpus N` (run_distributed_job_on_threads:
// one process, one GPU per thread; the GPUs' start overlaps the rows). What differs from one process:
//   rows      generators build the rank's rows directly (lap2d/lap3d; the others build the whole
//             matrix and keep the range), HDF5 files are read by hyperslab; other files are read
//             and checked by rank 0, which chooses the partition (METIS when it cuts fewer edges)
//             and sends each rank its rows
//   operator  distributed/: interior SpMM + halo exchange (NCCL between GPUs, MPI on the CPU)
//   solve     eigs: the eigs driver's operator form with Chebyshev (its true-residual check and
//             re-check run distributed too); solve: block CG with random right-hand sides made
//             where they are used (the values of the one-process run, row for row)
//   result    gathered to rank 0 (in the input's row order), which writes --out; every rank
//             returns the outcome
// Decisions inside the solvers come from reduced values, identical on every rank; nothing here
// may branch on a rank's own clock or memory (the workspace limit is the smallest rank's).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <future>

#include "apps/job/cache.hpp"
#include "apps/job/pipeline.hpp"
#include "core/device.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "distributed/affinity.hpp"
#include "distributed/distributed_operator.hpp"
#include "distributed/distributed_ops.hpp"
#include "distributed/partition.hpp"
#include "distributed/thread_ranks.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "solvers/random.hpp"

namespace tcsolve::app {
namespace {

// (`threads`: the ranks are threads of this process, --gpus N)
void refuse(bool bad, const std::string& option, int ranks, bool threads) {
  if (bad)
    throw UsageError(option + ": not available " +
                     (threads ? "with --gpus " + std::to_string(ranks) + " (the distributed path)"
                              : "under mpirun (" + std::to_string(ranks) + " ranks)") +
                     "; run it as one process");
}

// Rows [r0, r1) of a (global column indices).
Csr<double> row_range(const Csr<double>& a, std::int64_t r0, std::int64_t r1) {
  Csr<double> s;
  s.nrows = r1 - r0;
  s.ncols = a.ncols;
  s.row_ptr.assign(a.row_ptr.begin() + r0, a.row_ptr.begin() + r1 + 1);
  const std::int64_t base = s.row_ptr[0];
  for (auto& p : s.row_ptr) p -= base;
  s.col_idx.assign(a.col_idx.begin() + base, a.col_idx.begin() + base + s.row_ptr.back());
  s.values.assign(a.values.begin() + base, a.values.begin() + base + s.row_ptr.back());
  return s;
}

// Gathers a distributed n × c block (local rows nl, column-major) into the global one on rank 0.
std::vector<double> gather_block(Communicator& comm, const std::vector<double>& local, std::int64_t c,
                                 const RowPartition& part) {
  std::vector<double> all = comm.gather_to_root(local);  // rank-major: [rank][col][row]
  if (comm.rank() != 0) return {};
  const std::int64_t n = part.starts.back();
  std::vector<double> out(static_cast<std::size_t>(n * c));
  std::int64_t at = 0;
  for (int r = 0; r < part.parts(); ++r) {
    const std::int64_t rn = part.rows(r), r0 = part.starts[r];
    for (std::int64_t j = 0; j < c; ++j)
      std::copy(all.begin() + at + j * rn, all.begin() + at + (j + 1) * rn, out.begin() + r0 + j * n);
    at += rn * c;
  }
  return out;
}

class DistributedJob {
 public:
  DistributedJob(const JobSpec& s, Communicator& comm, const ProgressFn& progress, const std::string& command)
      : s_(s), comm_(comm), progress_(progress), np_(comm.size()), me_(comm.rank()) {
    o_.record = start_record(s, command);
  }
  JobOutcome run();
  // The operator and dense ops (device memory, streams, handles) left for the process's exit.
  void leave_to_exit() {
    static_cast<void>(cheb_.release()), static_cast<void>(fused_.release());
    static_cast<void>(op_.release()), static_cast<void>(ops_.release());
  }

 private:
  void select_device();
  void start_and_read();
  void read_and_split();
  void read_rows();
  void split_rows();
  void read_row_ranges();
  void receive_rows();
  void send_rows(const Csr<double>& src, const std::vector<std::int32_t>& perm);
  void build_operator();
  void check_symmetry(double a_inf);
  void solve_eigs();
  void solve_cg();
  bool diagonal_constant();
  std::string auto_facts(bool jacobi, SolvePlanFacts& f);
  void describe();
  void write();

  const JobSpec& s_;
  Communicator& comm_;
  const ProgressFn& progress_;
  const int np_, me_;
  Timer total_;
  JobOutcome o_;
  ResultRecord& r_ = o_.record;
  Backend backend_ = Backend::cpu;
  // this rank's rows
  Csr<double> mine_;
  LocalParts parts_;  // mine_ split (interior, halo blocks) until the operator takes it
  RowPartition part_;
  std::vector<std::int32_t> perm_local_;  // METIS: the original row of each local row (else empty)
  std::vector<std::int32_t> perm_;        // rank 0 with METIS: the whole renumbering
  bool probe_symmetry_ = false;
  std::string partition_;  // how the rows were split
  double start_seconds_ = -1;  // ranks that are threads: the GPU context's start beside the read
  double nccl_wait_ = 0;       // ranks that are threads: the wait for NCCL after the operator's upload
  double split_seconds_ = 0;   // the rows' host split (split_rows)
  std::unique_ptr<DenseBlockOps> local_ops_;  // made beside the rows (rank threads), else in build_operator
  std::int64_t n_ = 0, nl_ = 0, nnz_local_ = 0, rhs_cols_ = 0;
  double a_inf_ = 0;          // ‖A‖∞ ≥ ‖A‖₂ (symmetric A): the filter's bound, no power iteration
  std::vector<double> diag_;  // this rank's share of A's diagonal (solve with a preconditioner)
  std::unique_ptr<DistributedOperator> op_;
  std::unique_ptr<DistributedDenseOps> ops_;
  std::unique_ptr<ChebyshevStep> fused_;            // eigs: the filter's fused step
  std::unique_ptr<ChebyshevPreconditioner> cheb_;   // solve: the polynomial preconditioner
};

JobOutcome DistributedJob::run() {
  check_distributed_job(s_, np_, comm_.ranks_are_threads());
  if (!s_.out.empty()) check_job_outputs(s_);
  start_and_read();
  trace_mark("distributed: rows split, GPU ready");
  Timer tr;
  build_operator();
  r_.time_setup += tr.seconds();
  trace_mark("distributed: operator built");
  nccl_wait_ = comm_.finish_device_start();  // (start-up: outside total, as the context's wait)
  r_.time_init += nccl_wait_;
  if (backend_ == Backend::cuda) reset_device_peak();
  if (s_.eigs()) solve_eigs();
  else solve_cg();
  trace_mark("distributed: solved");
  for (double v : r_.residual_norms) o_.max_residual = std::max(o_.max_residual, v);
  if (backend_ == Backend::cuda)
    r_.peak_device_bytes = comm_.allreduce_max(static_cast<double>(device_peak_bytes()));
  describe();
  trace_mark("distributed: described");
  Timer tw;
  write();
  r_.time_write = tw.seconds();
  trace_mark("distributed: written");
  r_.time_total = total_.seconds() - r_.time_init;
  return std::move(o_);
}

// One GPU per rank, NCCL between them.
void DistributedJob::select_device() {
  if (s_.device == DeviceChoice::cuda || (s_.device == DeviceChoice::automatic && device_count() > 0))
    backend_ = Backend::cuda;
  Timer tr;
  if (backend_ == Backend::cuda) comm_.enable_device(select_local_gpu(comm_));
  r_.time_init = tr.seconds();
}

// Ranks that are threads of this process reading their rows in ranges (no collective): the rank's
// GPU context and the NCCL communicators (ncclCommInitRank, the warm-up) come up on a helper
// thread while this one generates or reads the rows; time_init is then what is left of the start
// after the read (as one process counts it), start_seconds_ the whole start. Otherwise the device
// first, then the rows.
//   The helper also makes the dense ops' library handles (cuBLAS, cuSOLVER), as the rank thread
//   did beside NCCL's start before; not their warm-up, whose cudaFree waits for the whole device
//   while NCCL's warm-up collective may be waiting for a peer (thread_ranks.cpp, fenced()).
void DistributedJob::start_and_read() {
  const bool cuda = s_.device == DeviceChoice::cuda || (s_.device == DeviceChoice::automatic && device_count() > 0);
  if (!(comm_.ranks_are_threads() && cuda && gpus_start_beside_rows(s_))) {
    select_device();
    read_and_split();
    return;
  }
  backend_ = Backend::cuda;
  std::future<double> start = std::async(std::launch::async, [this] {
    Timer t;
    const int gpu = select_local_gpu(comm_);  // (the helper's GPU: select_local_gpu sets it)
    trace_mark("distributed: GPU selected, its context");
    comm_.start_device(gpu);  // (NCCL comes up beside the operator's upload: build_operator)
    local_ops_ = make_dense_ops(Backend::cuda);
    trace_mark("distributed: dense ops' handles");
    return t.seconds();
  });
  try {
    read_and_split();
  } catch (...) {
    start.wait();  // (the other ranks' helpers meet this one's; then this rank's error ends the job)
    if (local_ops_) try {
        select_local_gpu(comm_);  // (the handles are freed with their GPU current)
      } catch (...) {
      }
    throw;
  }
  Timer tw;
  start_seconds_ = start.get();
  select_local_gpu(comm_);  // this thread's GPU too (its context is up: no wait)
  r_.time_init = tw.seconds();
}

// The rows (time_read), then their host-side split into the interior and the halo blocks with the
// ranks' lists exchanged (time_setup's first part: no GPU needed, so it overlaps a GPU start).
void DistributedJob::read_and_split() {
  Timer tr;
  read_rows();
  r_.time_read = tr.seconds();
  trace_mark("distributed: rows read");
  Timer ts;
  split_rows();
  r_.time_setup = split_seconds_ = ts.seconds();
  trace_mark("distributed: local parts and halo lists");
}

void DistributedJob::read_rows() {
  if (reads_row_ranges(s_.matrix) && s_.partition != PartitionMethod::metis) read_row_ranges();
  else receive_rows();
  n_ = part_.starts.back(), nl_ = part_.rows(me_);
  if (nl_ < 1) throw UsageError(std::to_string(np_) + " ranks for " + std::to_string(n_) + " rows: use fewer ranks");
  r_.rows = n_;
}

// Stencil generators build, HDF5 groups read (hyperslabs) only this rank's rows, in ranges.
void DistributedJob::read_row_ranges() {
  ReadOptions ro;
  ro.require_square = true;
  std::int64_t total = 0;
  read_matrix_rows(s_.matrix, 0, 0, ro, &total);  // the size alone
  part_ = RowPartition::even(total, np_);
  mine_ = read_matrix_rows(s_.matrix, part_.starts[me_], part_.starts[me_ + 1], ro);
  probe_symmetry_ = !is_generator_spec(s_.matrix);  // a range cannot show its symmetry
  partition_ = "contiguous ranges (" +
               std::string(is_generator_spec(s_.matrix) ? "rows generated by each rank" : "read by hyperslab") + ")";
}

// Matrix Market, Rutherford-Boeing, other generators, or --partition metis: rank 0 reads and
// checks the whole matrix (symmetric, finite: as one process does), chooses the partition (METIS
// when it cuts fewer edges) and sends each rank its rows of B = P·A·Pᵀ.
void DistributedJob::receive_rows() {
  std::string error;
  std::shared_ptr<const PreparedMatrix> pm;
  PartitionChoice pc;
  Csr<double> permuted;
  MatrixCache cache;
  if (me_ == 0) {
    try {
      pm = cache.get(s_.matrix);
      pc = choose_partition(pm->a, np_, s_.partition);
      if (!pc.perm.empty()) permuted = permute_symmetric(pm->a, pc.perm);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm_.broadcast(error, 0);
  if (!error.empty()) throw InvalidArgument(error);  // every rank, the same message
  std::string head = me_ == 0 ? pc.how + "\n" + std::to_string(pc.perm.empty() ? 0 : 1) : std::string();
  comm_.broadcast(head, 0);
  partition_ = head.substr(0, head.find('\n'));
  const bool renumbered = head.back() == '1';
  std::vector<std::int64_t> starts(np_ + 1);
  if (me_ == 0) starts = pc.part.starts;
  std::string sb(reinterpret_cast<const char*>(starts.data()), 8 * (np_ + 1));
  comm_.broadcast(sb, 0);
  std::memcpy(starts.data(), sb.data(), 8 * (np_ + 1));
  part_ = RowPartition::from_starts(starts);
  if (me_ == 0) {
    send_rows(renumbered ? permuted : pm->a, pc.perm);
    perm_ = std::move(pc.perm);
    return;
  }
  std::int64_t cnt = 0;
  comm_.recv_bytes(0, &cnt, sizeof cnt);
  mine_.nrows = part_.rows(me_);
  mine_.ncols = part_.starts.back();
  mine_.row_ptr.resize(mine_.nrows + 1);
  mine_.col_idx.resize(cnt);
  mine_.values.resize(cnt);
  comm_.recv_bytes(0, mine_.row_ptr.data(), 8 * (mine_.nrows + 1));
  comm_.recv_bytes(0, mine_.col_idx.data(), 4 * cnt);
  comm_.recv_bytes(0, mine_.values.data(), 8 * cnt);
  if (renumbered) {
    perm_local_.resize(mine_.nrows);
    comm_.recv_bytes(0, perm_local_.data(), 4 * mine_.nrows);
  }
}

// Rank 0: each other rank's rows of `src` (and their original rows when renumbered), its own kept.
void DistributedJob::send_rows(const Csr<double>& src, const std::vector<std::int32_t>& perm) {
  for (int q = 1; q < np_; ++q) {
    const Csr<double> rq = row_range(src, part_.starts[q], part_.starts[q + 1]);
    const std::int64_t cnt = rq.nnz();
    comm_.send_bytes(q, &cnt, sizeof cnt);
    comm_.send_bytes(q, rq.row_ptr.data(), 8 * (rq.nrows + 1));
    comm_.send_bytes(q, rq.col_idx.data(), 4 * cnt);
    comm_.send_bytes(q, rq.values.data(), 8 * cnt);
    if (!perm.empty()) comm_.send_bytes(q, perm.data() + part_.starts[q], 4 * rq.nrows);
  }
  mine_ = row_range(src, part_.starts[0], part_.starts[1]);
  if (!perm.empty()) perm_local_.assign(perm.begin(), perm.begin() + part_.starts[1]);
}

// ‖A‖∞ and (solve with a preconditioner) the diagonal over this rank's rows, in parallel blocks
// of rows (one pass over the rows' 12 bytes a non-zero); then the interior and halo split.
void DistributedJob::split_rows() {
  const bool diag = !s_.eigs() && s_.precond != Precond::none;
  if (diag) diag_.assign(nl_, 0.0);
  const std::int64_t blocks = std::max<std::int64_t>(1, std::min<std::int64_t>(256, nl_ / 16384));
  std::vector<double> row_max(static_cast<std::size_t>(blocks), 0.0);
  const std::int64_t r0 = part_.starts[me_];
  parallel_for(blocks, [&](std::int64_t t) {
    double m = 0.0;
    for (std::int64_t i = nl_ * t / blocks; i < nl_ * (t + 1) / blocks; ++i) {
      double r = 0.0;
      for (std::int64_t e = mine_.row_ptr[i]; e < mine_.row_ptr[i + 1]; ++e) {
        r += std::abs(mine_.values[e]);
        if (diag && mine_.col_idx[e] == r0 + i) diag_[i] = mine_.values[e];
      }
      m = std::max(m, r);
    }
    row_max[t] = m;
  }, 1);
  a_inf_ = comm_.allreduce_max(*std::max_element(row_max.begin(), row_max.end()));
  nnz_local_ = mine_.nnz();
  r_.nnz = comm_.allreduce_sum_int(nnz_local_);
  trace_mark("distributed: row norms");
  parts_ = build_local_parts(mine_, part_, comm_);
  trace_mark("distributed: interior and halo blocks");
  mine_ = Csr<double>();  // the pieces hold it now
}

// The GPU (or CPU) side of the operator and the block operations on this rank's rows.
void DistributedJob::build_operator() {
  std::unique_ptr<DenseBlockOps> local_ops = local_ops_ ? std::move(local_ops_) : make_dense_ops(backend_);
  trace_mark("distributed: dense ops");
  if (!s_.eigs()) rhs_cols_ = parse_rhs(s_.rhs).random;
  OperatorOptions oo;
  oo.stream = local_ops->stream();
  oo.expected_cols = static_cast<int>(s_.eigs() ? std::min<std::int64_t>(s_.k + 16, 64) : rhs_cols_);
  oo.plan_by_trial = false;  // the cost model: a trial per rank would cost seconds at scale
  const std::int64_t max_cols = s_.eigs() ? std::max<std::int64_t>(2 * s_.k + 32, 64) : rhs_cols_;
  op_ = std::make_unique<DistributedOperator>(std::move(parts_), comm_, backend_, oo, max_cols);
  ops_ = std::make_unique<DistributedDenseOps>(std::move(local_ops), comm_, part_.starts[me_], nl_, n_);
  trace_mark("distributed: operator on the GPU");
  if (probe_symmetry_) check_symmetry(a_inf_);
  r_.backend = backend_ == Backend::cuda ? "cuda" : "cpu";
  r_.device = backend_ == Backend::cuda ? std::to_string(np_) + " x " + device_name()
                                        : std::to_string(np_) + (comm_.ranks_are_threads() ? " CPU threads" : " CPU processes");
  r_.spmm_kernel = to_string(op_->interior().plan().kernel);
  r_.spmm_plan = "interior of rank 0's rows: " + op_->interior().plan().describe();
}

// Rows read by ranges were not checked for symmetry as a whole: xᵀ(A·y) = yᵀ(A·x) for random x, y
// holds to rounding for symmetric A and fails with probability 1 otherwise.
void DistributedJob::check_symmetry(double a_inf) {
  MultiVector<double> xy = ops_->allocate(nl_, 2), axy = ops_->allocate(nl_, 2);
  ops_->fill_random(xy.view(), s_.seed * 31 + 7);
  op_->apply(xy.view(), axy.view());
  ops_->synchronize();
  double g[4], nrm[2];
  ops_->gram(xy.view(), axy.view(), g, 2);  // g(i, j) = x_iᵀ·A·x_j
  ops_->column_norms(xy.view(), nrm);
  const double scale = a_inf * nrm[0] * nrm[1];
  if (!(std::abs(g[2] - g[1]) <= 1e-10 * scale))
    throw InvalidArgument(s_.matrix + ": the matrix is not symmetric (xᵀAy − yᵀAx = " + format("%.3g", g[2] - g[1]) +
                          " for random x, y, against " + format("%.3g", scale) +
                          " = ‖A‖∞·‖x‖·‖y‖); eigs and solve need a symmetric matrix");
}

void DistributedJob::solve_eigs() {
  EigsOptions eo = eigs_options(s_);
  eo.method = EigsMethod::chebyshev;
  eo.precond = EigsPrecond::automatic;  // (LOBPCG's; block sizes are Lanczos'; no checkpoints here)
  eo.block_size = 0;
  eo.checkpoint_every = 0;
  eo.allow_factor = false;
  eo.backend = backend_;
  eo.own_operator = true;
  // --precision auto: the ladder's fp32 rung on the GPU, as on one process (A stays fp64).
  eo.ladder = s_.precision_auto() && backend_ == Backend::cuda;
  const char* fs = std::getenv("TCSOLVE_FUSED_STEP");  // 0: unfused filter (A/B benchmarks)
  if (!(fs && std::string(fs) == "0")) {
    fused_ = op_->make_fused_step();
    eo.fused_step = fused_.get();
  }
  if (backend_ == Backend::cuda) {
    // The n-vectors that fit beside the matrix on the fullest GPU (the driver narrows the
    // filter's block to them, or refuses with the sizes): the same limit on every rank.
    const double cols = std::floor(0.9 * static_cast<double>(device_free_bytes()) / (8.0 * static_cast<double>(nl_)));
    eo.workspace_columns = static_cast<std::int64_t>(std::max(0.0, -comm_.allreduce_max(-cols)));
  }
  Timer ts;
  if (me_ == 0) eo.on_iteration = eigs_progress(progress_, s_.k, ts);
  EigsResult er = eigs(*op_, nullptr, *ops_, eo, a_inf_);
  record_eigs(er, r_);
  r_.method_reason = "distributed over " + std::to_string(np_) + " ranks: Chebyshev-filtered subspace iteration "
                     "(the only distributed eigensolver; shift-invert and the certificate are single-process)" +
                     (er.why.empty() ? std::string() : "; " + er.why);
}

// Whether the whole diagonal (every rank's share) is constant: Jacobi is then dropped (M = c·I
// changes nothing), decided as one process decides it, not for each rank's share.
bool DistributedJob::diagonal_constant() {
  if (diag_.empty()) return false;
  double lo = std::abs(diag_[0]), hi = lo;
  for (double d : diag_) lo = std::min(lo, std::abs(d)), hi = std::max(hi, std::abs(d));
  return comm_.allreduce_max(hi) == -comm_.allreduce_max(-lo);
}

// --precond auto's facts for the whole matrix (every rank the same): a positive, varying diagonal;
// and where the polynomial would be chosen on the GPU, the memory on the fullest GPU for the
// fused step's copy of this rank's rows (12 bytes a non-zero), three fp32 blocks and the probe's
// shortest basis (9 n-vectors) within half of what is free (one process: chebyshev_step_fuses
// and the fit decide the same): its refusal, or "".
std::string DistributedJob::auto_facts(bool jacobi, SolvePlanFacts& f) {
  bool positive = true;
  for (double d : diag_) positive = positive && d > 0;
  positive = comm_.allreduce_max(positive ? 0.0 : 1.0) == 0.0;
  f.facts.diagonal_varies = f.facts.gpu && positive && jacobi;  // (not constant: jacobi kept)
  if (auto_precond_refusal(f.facts) || !f.facts.gpu) return {};
  const double need = 12.0 * static_cast<double>(nnz_local_) +
                      static_cast<double>(nl_) * (8.0 + 12.0 * static_cast<double>(rhs_cols_) + 72.0);
  const double room = 0.5 * static_cast<double>(device_free_bytes());
  if (comm_.allreduce_max(need > room ? 1.0 : 0.0) > 0.0)
    return "the GPU memory: the polynomial's copy of A and its blocks would not fit beside block CG's";
  return {};
}

// Block CG with the one-process plan (solvers/solve_plan.hpp): the polynomial's steps are the
// distributed fused step (halo exchanges inside) on fp32 blocks on the GPU, unscaled (the
// distributed step takes no row scales: with a varying diagonal auto keeps Jacobi, and an asked
// polynomial is the unscaled one, still symmetric positive definite since ‖A‖∞ ≥ λmax). Without
// it two H200s ran Jacobi block CG (375 iterations, 2.58 s on gen:lap3d:200 with 32 right-hand
// sides) against one H200's polynomial (17 iterations, 1.33 s).
void DistributedJob::solve_cg() {
  CgOptions co = cg_options(s_);
  co.checkpoint_every = 0;  // (no checkpoints under mpirun)
  co.jacobi_diagonal = diag_;
  if (!diag_.empty()) {
    if (diagonal_constant()) co.jacobi_diagonal.clear();
    co.drop_constant_jacobi = false;
  }
  co.apply_order = ApplyOrder::same_stream;
  SolvePlanFacts f = solve_plan_facts(s_, rhs_cols_);
  f.facts.gpu = backend_ == Backend::cuda;
  f.facts.n = n_, f.facts.nnz = r_.nnz;
  std::string refusal;
  if (f.asked == CgPrecond::automatic) refusal = auto_facts(!co.jacobi_diagonal.empty(), f);
  f.refusal = refusal.empty() ? nullptr : refusal.c_str();
  const SolvePlan plan = plan_solve(f);
  if (!plan.note.empty()) r_.preconditioner = plan.note;
  Timer ts;
  if (plan.precond == CgPrecond::chebyshev)
    cheb_ = attach_chebyshev(*op_, *ops_, s_, rhs_cols_, a_inf_, nullptr, false, op_->make_fused_step(), co, r_, ts);
  trace_mark("distributed: preconditioner ready");
  if (me_ == 0) co.on_iteration = cg_progress(progress_, rhs_cols_, ts);
  // The one-process run's right-hand sides, row for row: B(i, j) = random(seed + 1000, i, j) of
  // the original row i (generated where the solve runs, unless the rows were renumbered).
  SolveResult sr;
  if (perm_local_.empty()) {
    sr = block_cg_random(*op_, s_.seed + 1000, rhs_cols_, *ops_, co, !s_.out.empty());
  } else {
    std::vector<double> b(static_cast<std::size_t>(nl_ * rhs_cols_));
    for (std::int64_t j = 0; j < rhs_cols_; ++j)
      for (std::int64_t i = 0; i < nl_; ++i) b[i + j * nl_] = random_entry(s_.seed + 1000, perm_local_[i], j);
    sr = block_cg(*op_, b.data(), nl_, rhs_cols_, *ops_, co);
  }
  record_solve(sr, s_, cheb_.get(), ts.seconds(), r_);
  r_.right_hand_sides = rhs_cols_;
  if (r_.preconditioner != to_string(s_.precond)) add_note(r_, "preconditioner: " + r_.preconditioner);
}

// The record's account of the distributed run: ranks, GPUs, the partition, halo rows and bytes,
// applies and the time in MPI (with TCSOLVE_COMM_PROFILE, the synchronized exchange times).
void DistributedJob::describe() {
  const std::int64_t halo_max = comm_.allreduce_max(static_cast<double>(op_->parts().halo_rows()));
  const std::int64_t halo_sum = comm_.allreduce_sum_int(op_->parts().halo_rows());
  const auto& st = op_->stats();
  r_.ranks = np_;
  r_.distributed = format(
      "%d ranks (%s), %s; rows split by %s; halo %lld rows in all "
      "(largest rank %lld: %s per column and apply each way); %lld applies; host time in %s %s "
      "(rank 0)%s",
      np_, comm_.describe().c_str(), backend_ == Backend::cuda ? "one GPU per rank" : "CPU", partition_.c_str(),
      (long long)halo_sum, (long long)halo_max, format_bytes(8.0 * static_cast<double>(halo_max)).c_str(),
      (long long)st.applies, comm_.ranks_are_threads() ? "shared-memory collectives" : "MPI",
      format_seconds(comm_.host_comm_seconds()).c_str(),
      backend_ == Backend::cuda ? "; GPU exchanges and all-reduces run in stream order (NCCL), "
                                  "the exchange overlapped with the interior product"
                                : "");
  if (!launcher_binding_note().empty()) r_.distributed += "; host CPUs: " + launcher_binding_note();
  if (start_seconds_ >= 0)
    r_.distributed += format("; start-up (slowest rank): GPU context %s, overlapped with the rows' %s (%s) and "
                             "split (%s); NCCL overlapped with the operator's upload, then waited for %s",
                             format_seconds(comm_.allreduce_max(start_seconds_)).c_str(),
                             is_generator_spec(s_.matrix) ? "generation" : "reading",
                             format_seconds(comm_.allreduce_max(r_.time_read)).c_str(),
                             format_seconds(comm_.allreduce_max(split_seconds_)).c_str(),
                             format_seconds(comm_.allreduce_max(nccl_wait_)).c_str());
  if (comm_profiling()) {
    const double ex = comm_.allreduce_max(st.exchange_seconds), red = comm_.allreduce_max(ops_->reduce_seconds());
    r_.distributed += format("; profiled (TCSOLVE_COMM_PROFILE, synchronized, not overlapped): halo "
                             "exchanges %s, all-reduces %s (%lld of %lld doubles), %.1f %% of the solve",
                             format_seconds(ex).c_str(), format_seconds(red).c_str(), (long long)ops_->reductions(),
                             (long long)ops_->reduced_doubles(), 100.0 * (ex + red) / std::max(r_.time_solve, 1e-9));
  }
}

// The vectors gathered to rank 0 in the input's row order; rank 0 writes the record.
void DistributedJob::write() {
  if (s_.out.empty()) return;
  const std::int64_t cols = s_.eigs() ? static_cast<std::int64_t>(r_.eigenvalues.size()) : rhs_cols_;
  std::vector<double> all = cols > 0 && static_cast<std::int64_t>(r_.vectors.size()) == nl_ * cols
                                ? gather_block(comm_, r_.vectors, cols, part_)
                                : std::vector<double>();
  if (me_ == 0 && !perm_.empty() && !all.empty()) {  // back to the input's row order
    std::vector<double> orig(all.size());
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < n_; ++i) orig[perm_[i] + j * n_] = all[i + j * n_];
    all.swap(orig);
  }
  r_.vectors = std::move(all);
  if (me_ == 0) {
    write_result_file(s_.out, r_, 8.0 * static_cast<double>(n_ * cols) + 1e6, false, {});
    o_.wrote_output = true;
  }
  std::vector<double>().swap(r_.vectors);
  comm_.barrier();  // the file is complete before any rank reports
}

}  // namespace

void check_distributed_job(const JobSpec& s, int np, bool threads) {
  refuse(!s.mass.empty(), "--mass", np, threads);
  refuse(!s.sigma.empty() || s.which == Which::nearest, "--sigma / --which nearest", np, threads);
  refuse(s.certify, "--certify (a factorization)", np, threads);
  refuse(!s.start.empty(), s.eigs() ? "--start" : "--x0", np, threads);
  refuse(!s.checkpoint.empty() || !s.resume_from.empty(), "--checkpoint / --resume-from", np, threads);
  refuse(s.reorder == Reordering::symmetric, "--reorder", np, threads);
  refuse(!s.plot.empty(), "--plot", np, threads);
  refuse(s.eigs() && s.method != EigsMethod::automatic && s.method != EigsMethod::chebyshev,
         std::string("--method ") + to_string(s.method), np, threads);
  refuse(s.precision != PrecisionChoice::automatic && s.precision != PrecisionChoice::fp64,
         std::string("--precision ") + to_string(s.precision), np, threads);
  refuse(!s.eigs() && s.rhs.rfind("random:", 0) != 0, "--rhs " + s.rhs + " (files)", np, threads);
  // (the driver's constrained operator and the folded operator of smallest_magnitude, which
  // inverts B, are one process's)
  refuse(s.eigs() && !s.constraints.empty(), "--constraints", np, threads);
  refuse(s.eigs() && s.which == Which::smallest_magnitude, "--which smallest_magnitude", np, threads);
}

void require_visible_gpus(int n, const std::string& asked) {
  const int visible = device_count();
  if (visible == 0)
    throw UsageError("--gpus " + asked + ": no GPU visible" +
                     (built_with_cuda() ? std::string() : std::string(" (tcsolve was built without CUDA)")));
  if (n > visible)
    throw UsageError(format("--gpus %d: only %d GPU%s visible (CUDA_VISIBLE_DEVICES and the driver decide which)", n,
                            visible, visible == 1 ? " is" : "s are"));
}

bool gpus_start_beside_rows(const JobSpec& spec) {
  return reads_row_ranges(spec.matrix) && spec.partition != PartitionMethod::metis;
}

JobOutcome run_distributed_job(const JobSpec& spec, Communicator& comm, const ProgressFn& progress,
                               const std::string& command, bool leave_to_exit) {
  DistributedJob job(spec, comm, progress, command);
  JobOutcome o = job.run();
  // (ranks freeing their device memory themselves before the exit, at once, changed nothing:
  // --gpus 2 solve lap3d:200 wall 2.23–2.25 s against 2.24–2.32 s left to the exit, 2026-12-01)
  if (leave_to_exit) job.leave_to_exit();
  return o;
}

// The job on `ranks` threads of this process, one GPU each (--gpus N): the ranks' threads split
// the host's CPUs for their loops (each its own pool, as batch's workers); rank 0's outcome.
JobOutcome run_distributed_job_on_threads(const JobSpec& spec, int ranks, const ProgressFn& progress,
                                          const std::string& command,
                                          const std::function<void(std::exception_ptr)>& stuck,
                                          bool leave_to_exit) {
  check_distributed_job(spec, ranks, true);
  JobOutcome out;
  const int share = std::max(1, host_threads() / ranks);
  run_thread_ranks(
      ranks,
      [&](Communicator& comm) {
        HostShare pool(share);
        JobOutcome o = run_distributed_job(spec, comm, progress, command, leave_to_exit);
        trace_mark("distributed: job freed");
        if (comm.rank() == 0) out = std::move(o);
      },
      10.0, stuck, leave_to_exit);
  return out;
}

}  // namespace tcsolve::app
