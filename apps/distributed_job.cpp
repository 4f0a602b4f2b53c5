// One eigs/solve job over MPI ranks (apps/job.hpp: run_distributed_job). Every rank:
//   rows      generators build the rank's rows directly (lap2d/lap3d; the others build the whole
//             matrix and keep the range); a matrix file is read and checked by every rank
//   operator  distributed/: interior SpMM + halo exchange (NCCL between GPUs, MPI on the CPU)
//   solve     eigs: the eigs driver's operator form with Chebyshev (its true-residual check and
//             re-check run distributed too); solve: block CG with random right-hand sides made
//             where they are used (the values of the one-process run, row for row)
//   result    gathered to rank 0, which writes --out atomically; every rank returns the outcome
// Decisions inside the solvers come from reduced values, identical on every rank; nothing here
// may branch on a rank's own clock or memory (the workspace limit is the smallest rank's).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "apps/job.hpp"
#include "core/device.hpp"
#include "distributed/affinity.hpp"
#include "distributed/distributed_operator.hpp"
#include "distributed/distributed_ops.hpp"
#include "distributed/partition.hpp"
#include "io/atomic_file.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/eigs/eigs.hpp"

namespace tcsolve::app {
namespace {

void refuse(bool bad, const std::string& option, int ranks) {
  if (bad)
    throw UsageError(option + ": not available under mpirun (" + std::to_string(ranks) +
                     " ranks); run it as one process");
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

}  // namespace

void check_distributed_job(const JobSpec& s, int np) {
  const bool eigs_task = s.task == "eigs";
  refuse(!s.mass.empty(), "--mass", np);
  refuse(!s.sigma.empty() || s.which == "nearest", "--sigma / --which nearest", np);
  refuse(s.certify, "--certify (a factorization)", np);
  refuse(!s.start.empty(), eigs_task ? "--start" : "--x0", np);
  refuse(!s.checkpoint.empty() || !s.resume_from.empty(), "--checkpoint / --resume-from", np);
  refuse(s.reorder != "none", "--reorder", np);
  refuse(!s.plot.empty(), "--plot", np);
  refuse(eigs_task && s.method != "auto" && s.method != "chebyshev", "--method " + s.method, np);
  refuse(s.precision != "auto" && s.precision != "fp64", "--precision " + s.precision, np);
  refuse(!eigs_task && s.rhs.rfind("random:", 0) != 0, "--rhs " + s.rhs + " (files)", np);
}

JobOutcome run_distributed_job(const JobSpec& s, Communicator& comm, const ProgressFn& progress,
                               const std::string& command) {
  Timer total;
  JobOutcome o;
  const int np = comm.size(), me = comm.rank();
  const bool eigs_task = s.task == "eigs";
  check_distributed_job(s, np);
  if (!s.out.empty()) check_job_outputs(s);

  // ---- device: one GPU per rank, NCCL between them
  Backend backend = Backend::cpu;
  if (s.device == "cuda" || (s.device == "auto" && device_count() > 0)) backend = Backend::cuda;
  Timer tr;
  int gpu = -1;
  if (backend == Backend::cuda) {
    gpu = select_local_gpu(comm);
    comm.enable_device(gpu);
  }
  o.init_s = tr.seconds();

  // ---- this rank's rows
  tr = Timer();
  Csr<double> mine;
  RowPartition part;
  std::vector<std::int32_t> perm_local;  // METIS: the original row of each local row (else empty)
  std::vector<std::int32_t> perm;        // rank 0 with METIS: the whole renumbering
  bool probe_symmetry = false;
  const PartitionMethod pmethod = parse_partition_method(s.partition);
  if (reads_row_ranges(s.matrix) && pmethod != PartitionMethod::metis) {
    // Stencil generators build, HDF5 groups read (hyperslabs) only this rank's rows, in ranges.
    ReadOptions ro;
    ro.require_square = true;
    std::int64_t total = 0;
    read_matrix_rows(s.matrix, 0, 0, ro, &total);  // the size alone
    part = RowPartition::even(total, np);
    mine = read_matrix_rows(s.matrix, part.starts[me], part.starts[me + 1], ro);
    probe_symmetry = !is_generator_spec(s.matrix);  // a range cannot show its symmetry
    o.distributed_partition = "contiguous ranges (" + std::string(is_generator_spec(s.matrix) ? "rows generated by each rank" : "read by hyperslab") + ")";
  } else {
    // Matrix Market, Rutherford-Boeing, other generators, or --partition metis: rank 0 reads and
    // checks the whole matrix (symmetric, finite: as one process does), chooses the partition
    // (METIS when it cuts fewer edges) and sends each rank its rows of B = P·A·Pᵀ.
    std::string error;
    std::shared_ptr<const PreparedMatrix> pm;
    PartitionChoice pc;
    Csr<double> permuted;
    MatrixCache cache;
    if (me == 0) {
      try {
        pm = cache.get(s.matrix);
        pc = choose_partition(pm->a, np, pmethod);
        if (!pc.perm.empty()) permuted = permute_symmetric(pm->a, pc.perm);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    comm.broadcast(error, 0);
    if (!error.empty()) throw InvalidArgument(error);  // every rank, the same message
    std::string head = me == 0 ? pc.how + "\n" + std::to_string(pc.perm.empty() ? 0 : 1) : std::string();
    comm.broadcast(head, 0);
    o.distributed_partition = head.substr(0, head.find('\n'));
    const bool renumbered = head.back() == '1';
    std::vector<std::int64_t> starts(np + 1);
    if (me == 0) starts = pc.part.starts;
    std::string sb(reinterpret_cast<const char*>(starts.data()), 8 * (np + 1));
    comm.broadcast(sb, 0);
    std::memcpy(starts.data(), sb.data(), 8 * (np + 1));
    part = RowPartition::from_starts(starts);
    const Csr<double>* src = me == 0 ? (renumbered ? &permuted : &pm->a) : nullptr;
    if (me == 0) {
      for (int q = 1; q < np; ++q) {
        const Csr<double> rq = row_range(*src, part.starts[q], part.starts[q + 1]);
        const std::int64_t cnt = rq.nnz();
        comm.send_bytes(q, &cnt, sizeof cnt);
        comm.send_bytes(q, rq.row_ptr.data(), 8 * (rq.nrows + 1));
        comm.send_bytes(q, rq.col_idx.data(), 4 * cnt);
        comm.send_bytes(q, rq.values.data(), 8 * cnt);
        if (renumbered) comm.send_bytes(q, pc.perm.data() + part.starts[q], 4 * rq.nrows);
      }
      mine = row_range(*src, part.starts[0], part.starts[1]);
      if (renumbered) perm_local.assign(pc.perm.begin(), pc.perm.begin() + part.starts[1]);
      perm = std::move(pc.perm);
    } else {
      std::int64_t cnt = 0;
      comm.recv_bytes(0, &cnt, sizeof cnt);
      mine.nrows = part.rows(me);
      mine.ncols = part.starts.back();
      mine.row_ptr.resize(mine.nrows + 1);
      mine.col_idx.resize(cnt);
      mine.values.resize(cnt);
      comm.recv_bytes(0, mine.row_ptr.data(), 8 * (mine.nrows + 1));
      comm.recv_bytes(0, mine.col_idx.data(), 4 * cnt);
      comm.recv_bytes(0, mine.values.data(), 8 * cnt);
      if (renumbered) {
        perm_local.resize(mine.nrows);
        comm.recv_bytes(0, perm_local.data(), 4 * mine.nrows);
      }
    }
  }
  const std::int64_t n = part.starts.back(), nl = part.rows(me);
  if (nl < 1) throw UsageError(std::to_string(np) + " ranks for " + std::to_string(n) + " rows: use fewer ranks");
  o.read_s = tr.seconds();
  o.n = n;

  // ---- operator and dense ops
  tr = Timer();
  double a_inf = 0.0;  // ‖A‖∞ ≥ ‖A‖₂ (symmetric A): the filter's bound, no power iteration
  for (std::int64_t i = 0; i < nl; ++i) {
    double r = 0.0;
    for (std::int64_t e = mine.row_ptr[i]; e < mine.row_ptr[i + 1]; ++e) r += std::abs(mine.values[e]);
    a_inf = std::max(a_inf, r);
  }
  a_inf = comm.allreduce_max(a_inf);
  std::vector<double> diag;
  if (!eigs_task && s.precond != "none") {
    diag.assign(nl, 0.0);
    for (std::int64_t i = 0; i < nl; ++i)
      for (std::int64_t e = mine.row_ptr[i]; e < mine.row_ptr[i + 1]; ++e)
        if (mine.col_idx[e] == part.starts[me] + i) diag[i] = mine.values[e];
  }
  const std::int64_t nnz_local = mine.nnz(), nnz_global = comm.allreduce_sum_int(nnz_local);
  LocalParts lp = build_local_parts(mine, part, comm);
  mine = Csr<double>();  // the pieces hold it now
  auto local_ops = make_dense_ops(backend);
  std::int64_t rhs_cols = 0;
  if (!eigs_task) rhs_cols = std::stoll(s.rhs.substr(7));
  OperatorOptions oo;
  oo.stream = local_ops->stream();
  oo.expected_cols = static_cast<int>(eigs_task ? std::min<std::int64_t>(s.k + 16, 64) : rhs_cols);
  oo.plan_by_trial = false;  // the cost model: a trial per rank would cost seconds at scale
  const std::int64_t max_cols = eigs_task ? std::max<std::int64_t>(2 * s.k + 32, 64) : rhs_cols;
  DistributedOperator op(std::move(lp), comm, backend, oo, max_cols);
  DistributedDenseOps ops(std::move(local_ops), comm, part.starts[me], nl, n);
  if (probe_symmetry) {
    // Rows read by ranges were not checked for symmetry as a whole: xᵀ(A·y) = yᵀ(A·x) for random
    // x, y holds to rounding for symmetric A and fails with probability 1 otherwise.
    MultiVector<double> xy = ops.allocate(nl, 2), axy = ops.allocate(nl, 2);
    ops.fill_random(xy.view(), s.seed * 31 + 7);
    op.apply(xy.view(), axy.view());
    ops.synchronize();
    double g[4], nrm[2];
    ops.gram(xy.view(), axy.view(), g, 2);  // g(i, j) = x_iᵀ·A·x_j
    ops.column_norms(xy.view(), nrm);
    const double scale = a_inf * nrm[0] * nrm[1];
    if (!(std::abs(g[2] - g[1]) <= 1e-10 * scale))
      throw InvalidArgument(s.matrix + ": the matrix is not symmetric (xᵀAy − yᵀAx = " +
                            format("%.3g", g[2] - g[1]) + " for random x, y, against " +
                            format("%.3g", scale) + " = ‖A‖∞·‖x‖·‖y‖); eigs and solve need a symmetric matrix");
  }
  o.setup_s = tr.seconds();
  o.backend = backend == Backend::cuda ? "cuda" : "cpu";
  o.device = backend == Backend::cuda ? std::to_string(np) + " x " + device_name() : std::to_string(np) + " CPU processes";
  o.kernel = to_string(op.interior().plan().kernel);
  o.kernel_reason = "interior of rank 0's rows: " + op.interior().plan().describe();
  const std::int64_t halo_max = comm.allreduce_max(static_cast<double>(op.parts().halo_rows()));
  const std::int64_t halo_sum = comm.allreduce_sum_int(op.parts().halo_rows());

  // ---- solve
  if (backend == Backend::cuda) reset_device_peak();
  tr = Timer();
  std::vector<double> vectors_local;
  std::int64_t vec_cols = 0;
  std::unique_ptr<ChebyshevStep> fused;
  if (eigs_task) {
    EigsOptions eo;
    eo.k = s.k;
    eo.which = s.which == "largest" ? Which::largest : Which::smallest;
    eo.method = EigsMethod::chebyshev;
    eo.conv = parse_conv_test(s.conv);
    eo.tol = s.tol;
    eo.max_iterations = s.maxiter;
    eo.allow_factor = false;
    eo.recheck = !s.no_recheck;
    eo.backend = backend;
    eo.seed = s.seed;
    eo.own_operator = true;
    eo.want_vectors = !s.out.empty();  // (gathered to rank 0 only for --out)
    // --precision auto: the ladder's fp32 rung on the GPU, as on one process (A stays fp64).
    eo.ladder = s.precision == "auto" && backend == Backend::cuda;
    const char* fs = std::getenv("TCSOLVE_FUSED_STEP");  // 0: unfused filter (A/B benchmarks)
    if (!(fs && std::string(fs) == "0")) {
      fused = op.make_fused_step();
      eo.fused_step = fused.get();
    }
    if (backend == Backend::cuda) {
      // The n-vectors that fit beside the matrix on the fullest GPU (the driver narrows the
      // filter's block to them, or refuses with the sizes): the same limit on every rank.
      const double cols = std::floor(0.9 * static_cast<double>(device_free_bytes()) / (8.0 * static_cast<double>(nl)));
      eo.workspace_columns = static_cast<std::int64_t>(std::max(0.0, -comm.allreduce_max(-cols)));
    }
    if (progress && me == 0)
      eo.on_iteration = [&](const IterationRecord& r) {
        double mx = 0;
        for (double v : r.residual_norms) mx = std::max(mx, v);
        progress(r.iteration, r.converged, s.k, mx, tr.seconds());
      };
    EigsResult er = eigs(op, nullptr, ops, eo, a_inf);
    o.status = to_string(er.status);
    o.message = er.reason;
    o.iterations = er.iterations;
    o.values = er.values;
    o.residuals = er.residual_norms;
    take_eigs_result(er, o);
    o.why = "distributed over " + std::to_string(np) + " ranks: Chebyshev-filtered subspace iteration "
            "(the only distributed eigensolver; shift-invert and the certificate are single-process)" +
            (er.why.empty() ? std::string() : "; " + er.why);
    vectors_local = std::move(er.vectors);
    vec_cols = static_cast<std::int64_t>(o.values.size());
  } else {
    CgOptions co;
    co.tol = s.tol;
    co.max_iterations = s.maxiter > 0 ? s.maxiter : co.max_iterations;
    co.jacobi_diagonal = diag;
    // Jacobi is dropped for a constant diagonal (M = c·I changes nothing): decided for the whole
    // diagonal, as one process decides it, not for each rank's share.
    if (!diag.empty()) {
      double lo = std::abs(diag[0]), hi = lo;
      for (double d : diag) lo = std::min(lo, std::abs(d)), hi = std::max(hi, std::abs(d));
      const bool constant = comm.allreduce_max(hi) == -comm.allreduce_max(-lo);
      if (constant) co.jacobi_diagonal.clear();
      co.drop_constant_jacobi = false;
    }
    co.apply_order = ApplyOrder::same_stream;
    // The Chebyshev polynomial preconditioner as one process has it (solve --precond auto:
    // auto_precond_refusal on the whole matrix; --precond chebyshev), its steps the distributed
    // fused step (halo exchanges inside) on fp32 blocks on the GPU. Unscaled here (the
    // distributed step takes no row scales): with a varying diagonal auto keeps Jacobi, and an
    // asked polynomial is the unscaled one (still symmetric positive definite, ‖A‖∞ ≥ λmax).
    // Without it two H200s ran Jacobi block CG (375 iterations, 2.58 s on gen:lap3d:200 with 32
    // right-hand sides) against one H200's polynomial (17 iterations, 1.33 s).
    std::string precond = s.precond;
    if (precond == "auto") {
      bool positive = true;
      for (double d : diag) positive = positive && d > 0;
      positive = comm.allreduce_max(positive ? 0.0 : 1.0) == 0.0;
      AutoPrecondFacts f;
      f.gpu = backend == Backend::cuda;
      f.n = n, f.nnz = nnz_global;
      f.diagonal_varies = f.gpu && positive && !co.jacobi_diagonal.empty();  // not constant (above)
      const char* why = auto_precond_refusal(f);
      // Memory on the fullest GPU: the fused step's copy of this rank's rows (12 bytes a
      // non-zero), three fp32 blocks and the probe's shortest basis (9 n-vectors) within half of
      // what is free (one process: chebyshev_step_fuses and fit_columns decide the same).
      if (!why && f.gpu) {
        const double need = 12.0 * static_cast<double>(nnz_local) +
                            static_cast<double>(nl) * (8.0 + 12.0 * static_cast<double>(rhs_cols) + 72.0);
        const double room = 0.5 * static_cast<double>(device_free_bytes());
        if (comm.allreduce_max(need > room ? 1.0 : 0.0) > 0.0)
          why = "the GPU memory: the polynomial's copy of A and its blocks would not fit beside block CG's";
      }
      precond = auto_precond_choice(f, o, why);
    }
    std::unique_ptr<ChebyshevPreconditioner> cheb;
    if (precond == "chebyshev") {
      double probe_s = 0;
      cheb = make_chebyshev_preconditioner(op, ops, rhs_cols, a_inf, s.seed + 77, &probe_s, s.precond_degree,
                                           nullptr, backend == Backend::cuda ? Precision::fp32 : Precision::fp64,
                                           false, op.make_fused_step());
      co.preconditioner = cheb.get();
      co.jacobi_diagonal.clear();
      o.precond_note = cheb->describe() + format(" (bounds in %.3g s)", probe_s) + o.precond_note;
      o.setup_s += probe_s;
      tr = Timer();  // the polynomial's set-up is setup, not solve
    }
    if (progress && me == 0)
      co.on_iteration = [&](const IterationRecord& r) {
        double mx = 0;
        for (double v : r.residual_norms) mx = std::max(mx, v);
        progress(r.iteration, r.converged, rhs_cols, mx, tr.seconds());
      };
    // The one-process run's right-hand sides, row for row: B(i, j) = random(seed + 1000, i, j)
    // of the original row i (generated where the solve runs, unless the rows were renumbered).
    SolveResult sr;
    if (perm_local.empty()) {
      sr = block_cg_random(op, s.seed + 1000, rhs_cols, ops, co, !s.out.empty());
    } else {
      std::vector<double> b(static_cast<std::size_t>(nl * rhs_cols));
      for (std::int64_t j = 0; j < rhs_cols; ++j)
        for (std::int64_t i = 0; i < nl; ++i) b[i + j * nl] = random_entry(s.seed + 1000, perm_local[i], j);
      sr = block_cg(op, b.data(), nl, rhs_cols, ops, co);
    }
    o.status = to_string(sr.status);
    o.message = sr.reason;
    if (!o.precond_note.empty())
      o.message = o.message.empty() ? "preconditioner: " + o.precond_note
                                    : o.message + "; preconditioner: " + o.precond_note;
    o.iterations = sr.iterations;
    o.residuals = sr.residual_norms;
    o.column_iterations = sr.column_iterations;
    o.method = "block_cg";
    o.operator_applies = sr.operator_applies + (cheb ? cheb->columns_applied() : 0);
    o.solve_s = tr.seconds();
    vectors_local = std::move(sr.solutions);
    vec_cols = rhs_cols;
  }
  for (double v : o.residuals) o.max_residual = std::max(o.max_residual, v);
  if (backend == Backend::cuda)
    o.peak_device_bytes = comm.allreduce_max(static_cast<double>(device_peak_bytes()));
  const auto& st = op.stats();
  o.distributed = format(
      "%d ranks (%s), %s; rows split by %s; halo %lld rows in all "
      "(largest rank %lld: %s per column and apply each way); %lld applies; host time in MPI %s "
      "(rank 0)%s",
      np, comm.describe().c_str(), backend == Backend::cuda ? "one GPU per rank" : "CPU",
      o.distributed_partition.c_str(), (long long)halo_sum, (long long)halo_max,
      format_bytes(8.0 * static_cast<double>(halo_max)).c_str(), (long long)st.applies,
      format_seconds(comm.host_comm_seconds()).c_str(),
      backend == Backend::cuda ? "; GPU exchanges and all-reduces run in stream order (NCCL), "
                                 "the exchange overlapped with the interior product"
                               : "");
  if (!launcher_binding_note().empty()) o.distributed += "; host CPUs: " + launcher_binding_note();

  if (comm_profiling()) {
    const double ex = comm.allreduce_max(st.exchange_seconds), red = comm.allreduce_max(ops.reduce_seconds());
    o.distributed += format("; profiled (TCSOLVE_COMM_PROFILE, synchronized, not overlapped): halo "
                            "exchanges %s, all-reduces %s (%lld of %lld doubles), %.1f %% of the solve",
                            format_seconds(ex).c_str(), format_seconds(red).c_str(),
                            (long long)ops.reductions(), (long long)ops.reduced_doubles(),
                            100.0 * (ex + red) / std::max(o.solve_s, 1e-9));
  }

  // ---- result: rank 0 writes
  Timer tw;
  if (!s.out.empty()) {
    std::vector<double> all = vec_cols > 0 && static_cast<std::int64_t>(vectors_local.size()) == nl * vec_cols
                                  ? gather_block(comm, vectors_local, vec_cols, part)
                                  : std::vector<double>();
    if (me == 0 && !perm.empty() && !all.empty()) {  // back to the input's row order
      std::vector<double> orig(all.size());
      for (std::int64_t j = 0; j < vec_cols; ++j)
        for (std::int64_t i = 0; i < n; ++i) orig[perm[i] + j * n] = all[i + j * n];
      all.swap(orig);
    }
    if (me == 0) {
      AtomicFile af(s.out);
      {
        Hdf5File f = Hdf5File::create(af.temp_path(), 8.0 * static_cast<double>(n * vec_cols) + 1e6);
        ResultRecord rec = job_record(s, o, command);
        rec.nnz = nnz_global;
        rec.ranks = np;
        rec.right_hand_sides = rhs_cols;
        rec.vectors = std::move(all);
        write_result(rec, f);
        f.close();
      }
      af.commit();
      o.wrote_output = true;
    }
    comm.barrier();  // the file is complete before any rank reports
  }
  o.write_s = tw.seconds();
  o.seconds = total.seconds() - o.init_s;
  return o;
}

}  // namespace tcsolve::app
