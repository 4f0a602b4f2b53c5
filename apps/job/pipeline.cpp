#include "apps/job/pipeline.hpp"

#include <algorithm>
#include <memory>

#include "core/trace.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve::app {

namespace {

// JobOutcome::solve_steps of a block CG solve: the iterations' stream time (marks around each
// iteration's queued work; solvers/block_cg.cpp) split into A's applies, the preconditioner's and
// the rest (Gram products, updates, small factorizations), and what the solve's host clock
// holds beyond it (workspace, start, the final true residuals, the copy of X, gaps).
std::string cg_solve_steps(const SolveResult& r, double solve_s) {
  double ap = 0.0, pc = 0.0, de = 0.0;
  for (const auto& h : r.history) ap += h.apply_seconds, pc += h.precond_seconds, de += h.dense_seconds;
  if (r.history.empty() || ap + de <= 0.0) return {};
  return format("%lld iterations %.3g s on the stream (A applies %.3g s, preconditioner %.3g s, "
                "the rest %.3g s), outside them %.3g s",
                static_cast<long long>(r.history.size()), ap + de, ap - pc, pc, de,
                std::max(0.0, solve_s - ap - de));
}

CgPrecond cg_precond(Precond p) {
  switch (p) {
    case Precond::none: return CgPrecond::none;
    case Precond::jacobi: return CgPrecond::jacobi;
    case Precond::chebyshev: return CgPrecond::chebyshev;
    default: return CgPrecond::automatic;
  }
}

EigsPrecond eigs_precond(Precond p) {
  switch (p) {
    case Precond::none: return EigsPrecond::none;
    case Precond::jacobi: return EigsPrecond::jacobi;
    case Precond::factor: return EigsPrecond::factor;
    default: return EigsPrecond::automatic;
  }
}

}  // namespace

ResultRecord start_record(const JobSpec& s, const std::string& command) {
  ResultRecord r;
  // identity
  r.task = to_string(s.task), r.job = s.name, r.command = command;
  r.matrix = s.matrix, r.mass = s.mass, r.rhs = s.rhs, r.start = s.start;
  r.job_options = job_options_string(s), r.input_stamps = input_stamps(s);
  // the options as asked (eigs: the driver says which method ran)
  r.method = s.eigs() ? to_string(s.method) : s.svds() ? "block GKL" : "block_cg";
  r.tolerance = s.tol, r.max_iterations = s.max_iterations(), r.seed = s.seed;
  r.precision = to_string(s.precision), r.preconditioner = to_string(s.precond), r.reorder = to_string(s.reorder);
  r.device_reason = s.device_reason;
  r.checkpoint = s.checkpoint, r.resumed_from = s.resume_from;
  r.k = s.k, r.which = which_name(s.which), r.has_sigma = !s.sigma.empty();
  r.centered = s.center;
  return r;
}

EigsOptions eigs_options(const JobSpec& s) {
  EigsOptions eo;
  // the problem and its test
  eo.k = s.k, eo.which = s.which, eo.has_sigma = !s.sigma.empty(), eo.sigma = s.sigma_value;
  eo.conv = s.conv, eo.tol = s.tol, eo.max_iterations = s.maxiter;
  // the method and what it may do
  eo.method = s.method, eo.block_size = s.block_size, eo.precond = eigs_precond(s.precond);
  eo.allow_factor = !s.no_factor, eo.recheck = !s.no_recheck, eo.certify = s.certify;
  eo.precision = s.storage(), eo.ladder = s.precision_auto(), eo.seed = s.seed;
  eo.want_vectors = !s.out.empty();  // (only a written result holds them)
  eo.checkpoint_every = s.checkpoint_every;
  return eo;
}

CgOptions cg_options(const JobSpec& s) {
  CgOptions co;
  co.tol = s.tol;
  co.max_iterations = s.max_iterations();
  co.checkpoint_every = s.checkpoint_every;
  return co;
}

SvdOptions svd_options(const JobSpec& s) {
  SvdOptions o;
  o.k = s.k, o.tol = s.tol, o.center = s.center, o.scale = s.scale;
  o.block = s.block_size, o.basis = s.basis, o.max_restarts = s.max_iterations(), o.seed = s.seed;
  o.checkpoint_every = s.checkpoint_every;
  o.certify = s.certify ? SvdCertify::always : s.no_certify ? SvdCertify::never : SvdCertify::automatic;
  o.recheck = !s.no_recheck;
  return o;
}

SolvePlanFacts solve_plan_facts(const JobSpec& s, std::int64_t rhs) {
  SolvePlanFacts f;
  f.asked = cg_precond(s.precond);
  f.facts.reordered = s.reorder == Reordering::symmetric;
  f.rhs = rhs;
  return f;
}

std::unique_ptr<ChebyshevPreconditioner> attach_chebyshev(const LinearOperator<double>& a, DenseBlockOps& ops,
                                                          const JobSpec& s, std::int64_t cols, double upper,
                                                          const Csr<double>* csr, bool jacobi,
                                                          std::unique_ptr<ChebyshevStep> fused, CgOptions& co,
                                                          ResultRecord& r, Timer& solve_clock) {
  // upper ≥ λmax keeps M positive definite; the lower bound and the degree from a Lanczos probe.
  // On the GPU the steps store A in fp32 (only M changes; CG tests fp64 residuals on A).
  double probe_s = 0;
  auto cheb = make_chebyshev_preconditioner(a, ops, cols, upper, s.seed + 77, &probe_s, s.precond_degree, csr,
                                            ops.backend() == Backend::cuda ? Precision::fp32 : Precision::fp64,
                                            jacobi, std::move(fused));
  co.preconditioner = cheb.get();
  co.jacobi_diagonal.clear();
  // (after the plan's note: " (auto: ...)" reads on from the description)
  const std::string plan_note = r.preconditioner == to_string(s.precond) ? std::string() : r.preconditioner;
  r.preconditioner = cheb->describe() + format(" (bounds in %.3g s)", probe_s) + plan_note;
  r.time_setup += probe_s;
  solve_clock = Timer();  // (the polynomial's set-up is setup, not solve: it was counted in both)
  return cheb;
}

void record_solve(SolveResult& sr, const JobSpec& s, const ChebyshevPreconditioner* cheb, double solve_seconds,
                  ResultRecord& r) {
  r.time_solve = solve_seconds, r.solve_steps = cg_solve_steps(sr, solve_seconds);
  tcsolve::record_solve(sr, r);
  if (sr.status == SolverStatus::breakdown && r.method == "block_cg")
    r.reason = s.matrix + " is not positive definite (block CG breakdown: " + r.reason + ")";
  r.operator_applies += cheb ? cheb->columns_applied() : 0;  // the polynomial's too
}

void add_note(ResultRecord& r, const std::string& note) {
  if (!note.empty()) r.reason = r.reason.empty() ? note : r.reason + "; " + note;
}

std::function<void(const IterationRecord&)> eigs_progress(const ProgressFn& progress, std::int64_t k,
                                                          const Timer& clock) {
  if (!progress) return {};
  return [progress, k, &clock](const IterationRecord& rec) {
    double mx = 0;
    for (std::size_t j = 0; j < rec.residual_norms.size() && j < static_cast<std::size_t>(k); ++j)
      mx = std::max(mx, rec.residual_norms[j]);
    progress(rec.iteration, std::min(rec.converged, k), k, mx, clock.seconds());
  };
}

std::function<void(const IterationRecord&)> cg_progress(const ProgressFn& progress, std::int64_t rhs,
                                                        const Timer& clock) {
  if (!progress) return {};
  return [progress, rhs, &clock](const IterationRecord& rec) {
    double mx = 0;
    for (double v : rec.residual_norms) mx = std::max(mx, v);
    progress(rec.iteration, rec.converged, rhs, mx, clock.seconds());
  };
}

std::function<void()> write_result_file(const std::string& out, const ResultRecord& r, double data_bytes,
                                        bool defer, const std::function<double()>& time_write) {
  auto af = std::make_shared<AtomicFile>(out);
  trace_mark("write: temporary file");
  Hdf5File f = Hdf5File::create(af->temp_path(), data_bytes);
  trace_mark("write: file created");
  write_result(r, f, time_write);
  trace_mark("write: datasets");
  if (defer && f.in_memory()) {
    // The bytes, fsync and rename later (no HDF5 call left): the caller's finish_write.
    auto image = std::make_shared<const FileImage>(f.take_image());
    trace_mark("write: image built");
    return [af, image] {
      write_file_image(af->temp_path(), *image);
      af->commit();
    };
  }
  f.close();
  trace_mark("write: closed");
  af->commit();
  return {};
}

void write_failure_file(const JobSpec& s, const std::string& error, const std::string& command) {
  if (s.out.empty()) return;
  ResultRecord r = start_record(s, command);
  r.status = "failed";
  r.error = error;
  write_result_file(s.out, r, 0.0, false, {});
}

}  // namespace tcsolve::app
