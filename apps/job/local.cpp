// run_job: a job on this process (apps/job/run.hpp), in named steps:
//   start      the CUDA context and the dense ops' handles come up on a helper thread while the
//              matrix is read and checked (through the cache: once per matrix on a worker)
//   inputs     mass, right-hand sides, start block, the checkpoint resumed from: read and checked
//              before any solving
//   fit        GPU memory: the matrices must fit; the solver's blocks are fitted to what is left,
//              else the run is refused with the sizes (or falls back to the CPU when asked)
//   solve      operators (apps/job/local_solve.cpp), eigs or block CG, checkpoints; svds on the
//              matrix (solvers/svd: its own A and Aᵀ operators), with its checkpoints
//   record     the outcome's notes; the result file (apps/job/pipeline.hpp) and the plot
#include <algorithm>
#include <cmath>
#include <future>
#include <utility>

#include "apps/job/checkpoint.hpp"
#include "apps/job/inputs.hpp"
#include "apps/job/local_solve.hpp"
#include "apps/job/pipeline.hpp"
#include "apps/svg_plot.hpp"
#include "core/device.hpp"
#include "core/trace.hpp"
#include "io/atomic_file.hpp"
#include "solvers/chebyshev.hpp"

namespace tcsolve::app {

namespace {

// Rough device bytes of a matrix: CSR at the storage precision, twice (CSR and a possible BCSR
// copy).
double matrix_device_bytes(const JobSpec& s, const Csr<double>& a) {
  const double n = static_cast<double>(a.nrows), nnz = static_cast<double>(a.nnz());
  const double vb = s.storage() == Precision::fp64 ? 8 : s.storage() == Precision::fp32 ? 4 : 2;
  return 2.0 * (nnz * (vb + 4.0) + 8.0 * (n + 1));
}

// The matrix plus the solver's tall blocks of n doubles: block CG 8 blocks of s (b, x, its
// 5-block workspace, the dense scratch) and a diagonal; eigs the workspace of its method
// (workspace_vectors, solvers/eigs/plan.hpp; `auto`: Chebyshev for standard problems, LOBPCG with
// a mass matrix).
double device_bytes_needed(const JobSpec& s, const Csr<double>& a, std::int64_t cols) {
  const double n = static_cast<double>(a.nrows);
  const double blocks = !s.eigs() ? 8.0 * static_cast<double>(cols) + 1.0
                                  : static_cast<double>(workspace_vectors(s.method, a.nrows, s.k, s.block_size,
                                                                          !s.mass.empty()));
  return matrix_device_bytes(s, a) + 8.0 * n * blocks;
}

class LocalJob {
 public:
  LocalJob(const JobSpec& s, MatrixCache& cache, const ProgressFn& progress, int gpu, const std::string& command)
      : s_(s), cache_(cache), progress_(progress), gpu_(gpu) {
    o_.record = start_record(s, command);
  }
  JobOutcome run(bool defer_write);

 private:
  Backend start_and_read();
  void read_inputs();
  void read_mass();
  void read_start();
  void fit_device(Backend& backend);
  double tight_matrix_bytes(double rough) const;
  Backend solve(Backend backend);
  void solve_svds(Backend backend);
  void finish(Backend backend);
  void write(bool defer_write);

  const JobSpec& s_;
  MatrixCache& cache_;
  const ProgressFn& progress_;
  int gpu_;
  Timer total_;
  JobOutcome o_;
  ResultRecord& r_ = o_.record;
  LocalInputs in_;
  std::int64_t fit_columns_ = 0;  // n-vectors that fit beside the matrices (0: no limit)
  std::string fallback_note_;
  LocalNotes notes_;
};

JobOutcome LocalJob::run(bool defer_write) {
  trace_mark("job: start");
  validate_job(s_);
  check_job_outputs(s_);
  Backend backend = start_and_read();
  read_inputs();
  fit_device(backend);
  trace_mark("job: solve starts");
  backend = solve(backend);
  finish(backend);
  write(defer_write);
  return std::move(o_);
}

// The CUDA context and the dense ops' library handles (cuBLAS, cuSOLVER: 0.1–0.5 s) come up on a
// helper thread while this one reads the matrix. The helper uses this process's GPU (a rank of
// `mpirun ... batch` runs on its own, chosen and its context made on a thread started before
// MPI_Init: selected_gpu() waits for that here).
Backend LocalJob::start_and_read() {
  const bool on_gpu = s_.device != DeviceChoice::cpu;
  auto job_gpu = [gpu = gpu_] { return gpu >= 0 ? gpu : selected_gpu(); };
  const std::int64_t width = s_.eigs() ? chebyshev_block(std::int64_t(1) << 40, s_.k, -1) : 8;
  std::future<Backend> warm =
      std::async(std::launch::async, [&cache = cache_, device = std::string(to_string(s_.device)), on_gpu, job_gpu, width] {
        if (on_gpu) use_gpu(job_gpu());
        const Backend b = resolve_backend(device);
        trace_mark("start-up: backend resolved");
        if (b == Backend::cuda) {
          DenseBlockOps& ops = cache.ops(b);
          trace_mark("start-up: context and dense ops' handles");
          // Chebyshev's block for the job's k (the eigs default), else the 8 columns alone.
          warm_up(ops, width);
          trace_mark("start-up: warm-up done");
        }
        return b;
      });
  bool fresh = false;
  try {
    in_.A = cache_.get(s_.matrix, &fresh, s_.eigs() ? MatrixCache::Need::symmetric : MatrixCache::Need::any);
  } catch (...) {
    warm.wait();
    throw;
  }
  trace_mark("job: matrix read and checked");
  Timer init_wait;
  const Backend backend = warm.get();
  if (on_gpu) use_gpu(job_gpu());  // this thread's too (done: no wait)
  r_.time_init = init_wait.seconds();
  trace_mark("job: CUDA context and handles ready");
  const Precision prec = s_.storage();
  if (backend == Backend::cpu && prec != Precision::fp64 && prec != Precision::fp32)
    throw UsageError(std::string("--precision ") + to_string(s_.precision) +
                     " needs the GPU (the CPU operator stores fp64 or fp32)");
  if (fresh) r_.time_read += in_.A->read_seconds, r_.time_preprocess += in_.A->check_seconds;
  r_.rows = in_.A->a.nrows;
  r_.nnz = in_.A->a.nnz();
  return backend;
}

void LocalJob::read_mass() {
  bool fresh = false;
  const std::int64_t n = in_.A->a.nrows;
  in_.B = cache_.get(s_.mass, &fresh);
  if (fresh) r_.time_read += in_.B->read_seconds, r_.time_preprocess += in_.B->check_seconds;
  if (in_.B->a.nrows != n)
    throw InvalidArgument(format("mass matrix %s is %lld x %lld but %s is %lld x %lld", s_.mass.c_str(),
                                 (long long)in_.B->a.nrows, (long long)in_.B->a.nrows, s_.matrix.c_str(),
                                 (long long)n, (long long)n));
  for (std::int64_t i = 0; i < n; ++i)
    if (!(in_.B->diagonal[i] > 0))
      throw InvalidArgument(format("mass matrix %s is not positive definite (b_ii = %g at row %lld)",
                                   s_.mass.c_str(), in_.B->diagonal[i], (long long)i + 1));
}

void LocalJob::read_inputs() {
  const std::int64_t n = in_.A->a.nrows;
  if (!s_.mass.empty()) read_mass();
  if (s_.svds()) {
    const Csr<double>& a = in_.A->a;
    r_.cols = a.ncols;
    if (s_.k > std::min(a.nrows, a.ncols))
      throw UsageError(format("--k %lld: the matrix is %lld × %lld, k can be at most min(m, n) = %lld",
                              (long long)s_.k, (long long)a.nrows, (long long)a.ncols,
                              (long long)std::min(a.nrows, a.ncols)));
  } else if (s_.eigs()) {
    if (s_.k >= n)
      throw InvalidArgument(format("k = %lld is too large for %s with n = %lld (need k < n)", (long long)s_.k,
                                   s_.matrix.c_str(), (long long)n));
    if (!s_.constraints.empty()) {
      Timer tr;
      std::int64_t p = 0;
      in_.constraints = read_block(s_.constraints, "eigenvectors", n, "constraints", &p);
      r_.time_read += tr.seconds();
    }
  } else {
    Timer tr;
    in_.rhs = load_rhs(s_.rhs, n, &in_.nrhs, s_.seed, /*materialize=*/false);
    r_.time_read += tr.seconds();
    // (the matrix's kind decides the method: apps/job/local_methods.cpp)
  }
  read_start();
}

// Warm start (--start / --x0) and the checkpoint resumed from, read and checked before solving.
void LocalJob::read_start() {
  const std::int64_t n = in_.A->a.nrows;
  if (!s_.start.empty()) {
    Timer tr;
    const auto [file, dataset] = split_start(s_.start, s_.eigs() ? "eigenvectors" : "solution");
    std::int64_t cols = 0;
    in_.start = read_columns(file, dataset, n, s_.eigs() ? "start vectors" : "initial guesses", &cols);
    if (!s_.eigs() && cols != in_.nrhs)
      throw InputError(file, 0, format("/%s: %lld initial guesses for %lld right-hand sides (--x0 needs one per "
                                       "right-hand side)", dataset.c_str(), (long long)cols, (long long)in_.nrhs));
    r_.time_read += tr.seconds();
  }
  // A checkpoint whose writer was killed (SIGKILL) left CHECKPOINT.tmp-...: removed first, also
  // beside the checkpoint a run resumes from (its writer is the run that was killed; a resumed
  // solve that writes no checkpoint of its own left it behind: AppsKillResume.SolveAtRandomPoints).
  if (!s_.checkpoint.empty()) remove_stale_temporaries(s_.checkpoint);
  if (!s_.resume_from.empty() && s_.resume_from != s_.checkpoint) remove_stale_temporaries(s_.resume_from);
  if (!s_.resume_from.empty()) {
    Timer tr;
    std::int64_t cols = 0;
    in_.start = read_checkpoint(s_, *in_.A, &cols, &notes_.resume);
    if (s_.task == Task::solve && cols != in_.nrhs)
      throw InputError(s_.resume_from, 0, format("the checkpoint holds %lld columns for %lld right-hand sides",
                                                 (long long)cols, (long long)in_.nrhs));
    r_.time_read += tr.seconds();
  }
}

// Tight (a shared GPU, a cap), block CG: the matrices at what their planned kernels keep (the
// cost model's plan, predict_device_bytes) instead of the rough two copies, plus the polynomial
// preconditioner's fp32 copy of A when asked for. (eigs keeps the rough count: its driver's dense
// workspace and the re-check's blocks live in that margin.)
double LocalJob::tight_matrix_bytes(double rough) const {
  OperatorOptions oo;
  oo.precision = s_.storage();
  oo.plan_by_trial = false;
  const Csr<double>& a = in_.A->a;
  double m = static_cast<double>(predict_device_bytes(a, plan_spmm(a, Backend::cuda, oo)));
  if (in_.B) m += static_cast<double>(predict_device_bytes(in_.B->a, plan_spmm(in_.B->a, Backend::cuda, oo)));
  if (s_.precond == Precond::chebyshev)  // (auto takes Jacobi when tight)
    m += 8.0 * static_cast<double>(a.nnz()) + 8.0 * static_cast<double>(a.nrows + 1);
  return std::min(m, rough);
}

// GPU memory: the matrices must fit; the solver's blocks are fitted to what is left (eigs: the
// driver shrinks its basis or width; solve: batches of right-hand sides), and only when even the
// minimum does not fit is the run refused, with the sizes (or falls back to the CPU when asked).
void LocalJob::fit_device(Backend& backend) {
  // (svds sizes its own bases and operators: solvers/svd/bidiag.hpp states the bytes)
  if (backend != Backend::cuda || s_.svds()) return;
  const std::int64_t n = in_.A->a.nrows;
  const double mass = in_.B ? matrix_device_bytes(s_, in_.B->a) : 0;
  double matrices = matrix_device_bytes(s_, in_.A->a) + mass;
  double need = device_bytes_needed(s_, in_.A->a, in_.nrhs) + mass;
  const double avail = static_cast<double>(device_free_bytes());
  if (need > 0.9 * avail && !s_.eigs() && s_.reorder != Reordering::symmetric) {
    const double rough = matrices;
    matrices = tight_matrix_bytes(rough);
    need += matrices - rough;
  }
  const double min_cols = s_.eigs() ? 1.0 : 9.0;
  const double cols = n > 0 ? std::floor((0.9 * avail - matrices) / (8.0 * static_cast<double>(n))) : 0;
  if (need > 0.9 * avail && cols >= min_cols) {
    fit_columns_ = static_cast<std::int64_t>(cols);
    need = matrices + 8.0 * static_cast<double>(n) * min_cols;
  }
  if (need <= 0.9 * avail) return;
  const std::string msg = format("%s needs about %s of GPU memory, %s free on %s", s_.matrix.c_str(),
                                 format_bytes(need).c_str(), format_bytes(avail).c_str(), device_name().c_str());
  if (!s_.cpu_fallback) throw Error(msg + " (use --device cpu, or --cpu-fallback to fall back automatically)");
  fallback_note_ = msg + "; ran on the CPU (--cpu-fallback)";
  backend = Backend::cpu;
}

// The solve, on the CPU again when the GPU runs out of memory and --cpu-fallback asks so: the
// driver's refusal (even its smallest basis/width does not fit: bytes of those blocks) or a
// failed allocation (bytes of that request).
Backend LocalJob::solve(Backend backend) {
  if (backend == Backend::cuda) reset_device_peak();
  if (s_.svds()) {
    solve_svds(backend);
    return backend;
  }
  LocalSolve solver(s_, cache_, in_, progress_, r_, notes_);
  try {
    solver.run(backend, fit_columns_);
  } catch (const OutOfDeviceMemory& e) {
    const std::string msg =
        format("%s: not enough GPU memory on %s (%s free; %s)", s_.matrix.c_str(), device_name().c_str(),
               format_bytes(static_cast<double>(device_free_bytes())).c_str(), e.what());
    if (!s_.cpu_fallback || backend != Backend::cuda) throw Error(msg + " (use --device cpu, or --cpu-fallback)");
    fallback_note_ = msg + "; ran on the CPU (--cpu-fallback)";
    solver.run(Backend::cpu, 0);
  }
  return backend;
}

// svds(Csr, Backend, SvdOptions) on the matrix as read: its own Aᵀ, operators and dense ops
// (and the centered pair with --center); the checkpoint resumed from is its start block (a
// restart's state continues that restart), its restarts are checkpointed.
void LocalJob::solve_svds(Backend backend) {
  SvdOptions o = svd_options(s_);
  if (!in_.start.empty()) o.start.assign(in_.start.data(), in_.start.data() + in_.start.size());
  CheckpointWriter ck(s_, *in_.A, nullptr, r_);
  o.on_checkpoint = ck.callback();
  Timer ts;
  o.on_iteration = eigs_progress(progress_, s_.k, ts);  // the estimates of the k wanted
  SvdResult sr = svds(in_.A->a, backend, o);
  ck.finish();
  r_.backend = to_string(backend);
  r_.device = backend == Backend::cuda ? device_name() : "cpu";
  if (!s_.resume_from.empty() && !sr.start.empty()) notes_.resume += ": " + sr.start;
  record_svds(sr, r_);
  notes_.wanted = s_.k;
}

// Peak of tcsolve's own device allocations during the solve (operators, blocks, workspaces; not
// the CUDA libraries' internal buffers), core/device.hpp; under a device-memory cap the process's
// whole peak (context, libraries from NVML, plus tcsolve's), which the cap covers together. Then
// the run's notes after the solver's reason.
void LocalJob::finish(Backend backend) {
  if (backend == Backend::cuda) r_.peak_device_bytes = static_cast<double>(device_peak_bytes());
  if (backend == Backend::cuda && device_memory_limit() > 0 && device_memory_limit_covers_process()) {
    const DeviceFootprint f = device_footprint();
    if (f.known) r_.process_device_bytes = static_cast<double>(f.other) + r_.peak_device_bytes;
  }
  add_note(r_, notes_.batch);
  if (r_.preconditioner != to_string(s_.precond)) add_note(r_, "preconditioner: " + r_.preconditioner);
  add_note(r_, fallback_note_);
  add_note(r_, notes_.resume);
  add_note(r_, r_.checkpoint_note);
  for (const auto* res : {&r_.residual_norms, &r_.residual_av, &r_.residual_atu})
    for (double v : *res) o_.max_residual = std::max(o_.max_residual, v);
}

void LocalJob::write(bool defer_write) {
  trace_mark("job: solved");
  Timer tw;
  if (!s_.out.empty()) {
    // The datasets' bytes (vectors or solutions dominate): small results are built in memory.
    const double cols = static_cast<double>(s_.eigs() ? r_.eigenvalues.size() : static_cast<std::size_t>(in_.nrhs));
    // (svds: U and the scores m × k, Vt k × n)
    const double data_bytes = s_.svds() ? 8.0 * static_cast<double>(2 * r_.rows + r_.cols) * static_cast<double>(s_.k) + 1e6
                                        : 8.0 * static_cast<double>(r_.rows) * cols + 1e6;
    r_.matrix_checksum = in_.A->checksum();  // (a pass over A: only for a written result)
    if (in_.B) r_.mass_checksum = in_.B->checksum();
    o_.finish_write = write_result_file(s_.out, r_, data_bytes, defer_write, [&tw] { return tw.seconds(); });
    o_.wrote_output = true;
  }
  std::vector<double>().swap(r_.vectors);  // (in the file now)
  std::vector<double>().swap(r_.left_vectors);
  const std::string title = format("tcsolve %s %s: %s", r_.task.c_str(), r_.method.c_str(), s_.matrix.c_str());
  if (!s_.plot.empty() && s_.svds())
    write_spectrum_svg(s_.plot, r_.singular_values, r_.residual_av, r_.residual_atu, r_.tolerance * r_.a_norm, title);
  else if (!s_.plot.empty())
    write_convergence_svg(s_.plot, r_.history, static_cast<std::size_t>(notes_.wanted), title);
  r_.time_write = tw.seconds();
  r_.time_total = total_.seconds() - r_.time_init;
  trace_mark("job: written");
}

}  // namespace

JobOutcome run_job(const JobSpec& spec, MatrixCache& cache, const ProgressFn& progress, const std::string& command,
                   bool defer_write, int gpu) {
  LocalJob job(spec, cache, progress, gpu, command);
  return job.run(defer_write);
}

}  // namespace tcsolve::app
