// tcsolve svds MATRIX --k K: the k largest singular triplets of any sparse matrix (square or
// rectangular), optionally of the column-centered matrix (PCA), with a table (or --json) on stdout
// and U, s, Vᵀ in an HDF5 file written atomically (docs/hdf5-schema.md, section 6).
//
// Its own small pipeline (read → svds → write → report) rather than the eigs/solve job pipeline
// (apps/job/): that one's record, batch file and checkpoints are shaped by eigenpairs and
// right-hand sides; svds in batch jobs is future work.
#include <algorithm>
#include <cmath>
#include <iostream>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/interrupt.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_file.hpp"
#include "io/matrix_io.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::app {

namespace {

struct SvdsArgs {
  std::string matrix, out, device = "auto";
  SvdOptions opt;
  bool json = false, quiet = false;
};

CommandSpec svds_command() {
  return CommandSpec{
      "svds", "svds MATRIX --k K [options]",
      "Computes the k largest singular triplets A v = s u, A^T u = s v of a sparse matrix, square or\n"
      "rectangular (thick-restart block Golub-Kahan-Lanczos on A and an explicit A^T, both on the\n"
      "SpMM kernels); --center subtracts the column means implicitly (PCA). Every triplet is\n"
      "checked on its recomputed residuals |A v - s u| and |A^T u - s v| against tol * s_1.",
      std::string(matrix_argument_help) +
          "\nExit status: 0 converged, 1 not converged (the best approximations are still written)\n"
          "or the result could not be written, 2 bad usage or input, 130/143 interrupted.\n"
          "The result file holds U [m][k], s [k], Vt [k][n], the residuals and, with --center, the\n"
          "column means, the scores U*diag(s) and the explained variance (docs/hdf5-schema.md).\n",
      {"MATRIX"}};
}

Backend choose_backend(const std::string& device) {
  if (device == "cpu") return Backend::cpu;
  if (device == "cuda") {
    if (device_count() == 0)
      throw UsageError(built_with_cuda() ? "--device cuda: no CUDA device present"
                                         : "--device cuda: this tcsolve was built without CUDA");
    return Backend::cuda;
  }
  if (device != "auto") throw UsageError("--device '" + device + "': expected auto, cpu or cuda");
  return device_count() > 0 ? Backend::cuda : Backend::cpu;
}

void validate(const SvdsArgs& a) {
  if (a.opt.k < 1) throw UsageError("--k " + std::to_string(a.opt.k) + ": must be at least 1");
  if (!(a.opt.tol > 0) || !std::isfinite(a.opt.tol))
    throw UsageError("--tol " + format("%g", a.opt.tol) + ": must be positive and finite");
  if (!(a.opt.tol < 1)) throw UsageError("--tol " + format("%g", a.opt.tol) + ": must be below 1");
  if (a.opt.block < 0 || a.opt.basis < 0) throw UsageError("--block and --basis must be ≥ 0");
  if (a.opt.max_restarts < 1) throw UsageError("--maxiter must be at least 1");
  if (!a.out.empty()) {
    if (!ends_with(a.out, ".h5") && !ends_with(a.out, ".hdf5"))
      throw UsageError("--out '" + a.out + "': the result is HDF5 (FILE.h5 or FILE.hdf5)");
    check_output_path("--out '" + a.out + "'", a.out, {a.matrix});
  }
}

// Column-major m × k → row-major [m][k].
std::vector<double> row_major(const std::vector<double>& cm, std::int64_t m, std::int64_t k,
                              const std::vector<double>* scale = nullptr) {
  std::vector<double> out(static_cast<std::size_t>(m * k));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) out[i * k + j] = cm[j * m + i] * (scale ? (*scale)[j] : 1.0);
  return out;
}

struct Times {
  double read = 0, write = 0;
};

void write_svds_file(const SvdsArgs& a, const Csr<double>& mat, const SvdResult& r, Backend backend,
                     const std::string& command, const Times& t) {
  const Timer clock;
  const std::int64_t m = r.m, n = r.n, k = r.k;
  AtomicFile af(a.out);
  Hdf5File f = Hdf5File::create(af.temp_path(), 8.0 * static_cast<double>((m + n) * k * 2 + n));
  f.write_2d("U", row_major(r.u, m, k).data(), m, k);
  f.write("s", r.values);
  f.write_2d("Vt", r.v.data(), k, n);  // column j of V (n contiguous values) = row j of Vᵀ
  f.write("residual_av", r.residual_av);
  f.write("residual_atu", r.residual_atu);
  if (a.opt.center) {
    f.write("means", r.means);
    f.write_2d("scores", row_major(r.u, m, k, &r.values).data(), m, k);
    f.write("explained_variance", r.explained_variance());
    f.write("explained_variance_ratio", r.explained_variance_ratio());
  }
  if (!r.history.empty()) {  // the iteration's records (none for the dense path)
    std::vector<std::int64_t> it, conv;
    std::vector<double> est;
    for (const auto& h : r.history) {
      it.push_back(h.iteration);
      conv.push_back(h.converged);
      est.insert(est.end(), h.residual_norms.begin(), h.residual_norms.end());
    }
    f.write("history/iteration", it);
    f.write("history/converged", conv);
    f.write_2d("history/residual_estimates", est.data(), static_cast<std::int64_t>(r.history.size()), k);
  }
  f.set_attr("task", "svds");
  f.set_attr("status", to_string(r.status));
  f.set_attr("reason", r.reason);
  f.set_attr("method", r.method);
  f.set_attr("matrix", a.matrix);
  f.set_attr("matrix_checksum", csr_checksum(mat));
  f.set_attr("command", command);
  f.set_attr("centered", a.opt.center ? "yes" : "no");
  f.set_attr("backend", backend == Backend::cuda ? "cuda" : "cpu");
  f.set_attr("k", k);
  f.set_attr("rows", m);
  f.set_attr("cols", n);
  f.set_attr("nnz", mat.nnz());
  f.set_attr("iterations", r.iterations);
  f.set_attr("operator_applies", r.operator_applies);
  f.set_attr("seed", static_cast<std::int64_t>(a.opt.seed));
  f.set_attr("tolerance", r.tol);
  f.set_attr("a_norm", r.a_norm);
  if (a.opt.center) f.set_attr("total_sq", r.total_sq);
  f.set_attr("time_read", t.read);
  f.set_attr("time_setup", r.phases.setup_s);
  f.set_attr("time_solve", r.phases.iterate_s);
  f.set_attr("time_verify", r.phases.verify_s);
  f.set_attr("time_write", clock.seconds());
  f.close();
  af.commit();
}

std::string json_array(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_number(v[i]);
  return s + "]";
}

std::string svds_json(const SvdsArgs& a, const Csr<double>& mat, const SvdResult& r, Backend backend,
                      const Times& t) {
  std::string s = "{\"task\":\"svds\",\"status\":" + json_string(to_string(r.status)) +
                  ",\"message\":" + json_string(r.reason) + ",\"matrix\":" + json_string(a.matrix) +
                  ",\"rows\":" + std::to_string(r.m) + ",\"cols\":" + std::to_string(r.n) +
                  ",\"nnz\":" + std::to_string(mat.nnz()) + ",\"k\":" + std::to_string(r.k) +
                  ",\"centered\":" + (a.opt.center ? "true" : "false") +
                  ",\"method\":" + json_string(r.method) +
                  ",\"backend\":" + json_string(backend == Backend::cuda ? "cuda" : "cpu") +
                  ",\"tolerance\":" + json_number(r.tol) + ",\"a_norm\":" + json_number(r.a_norm) +
                  ",\"iterations\":" + std::to_string(r.iterations) +
                  ",\"operator_applies\":" + std::to_string(r.operator_applies) +
                  ",\"singular_values\":" + json_array(r.values) +
                  ",\"residual_av\":" + json_array(r.residual_av) +
                  ",\"residual_atu\":" + json_array(r.residual_atu);
  if (a.opt.center)
    s += ",\"explained_variance\":" + json_array(r.explained_variance()) +
         ",\"explained_variance_ratio\":" + json_array(r.explained_variance_ratio());
  double apply_s = 0, dense_s = 0;  // the iteration's split (history)
  for (const auto& h : r.history) apply_s += h.apply_seconds, dense_s += h.dense_seconds;
  s += ",\"seconds\":{\"read\":" + json_number(t.read) + ",\"setup\":" + json_number(r.phases.setup_s) +
       ",\"solve\":" + json_number(r.phases.iterate_s) + ",\"solve_apply\":" + json_number(apply_s) +
       ",\"solve_dense\":" + json_number(dense_s) + ",\"verify\":" + json_number(r.phases.verify_s) +
       ",\"write\":" + json_number(t.write) + ",\"process\":" + json_number(process_seconds()) + "}";
  s += ",\"out\":" + (a.out.empty() ? std::string("null") : json_string(a.out)) + "}";
  return s;
}

void print_table(const SvdsArgs& a, const SvdResult& r) {
  std::cout << format("svds: %lld × %lld, k = %lld%s, %s: %s after %lld restarts (%lld applies), "
                      "%s\n",
                      (long long)r.m, (long long)r.n, (long long)r.k, a.opt.center ? " (centered)" : "",
                      r.method.c_str(), to_string(r.status), (long long)r.iterations,
                      (long long)r.operator_applies, format_seconds(r.seconds).c_str());
  const auto ratio = r.explained_variance_ratio();
  std::cout << format("%4s  %24s  %12s  %12s%s\n", "j", "singular value", "|Av-su|/s1", "|A'u-sv|/s1",
                      a.opt.center ? "  explained" : "");
  const double s1 = r.a_norm > 0 ? r.a_norm : 1.0;
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(r.values.size()); ++j)
    std::cout << format("%4lld  %24.17g  %12.3e  %12.3e", (long long)j + 1, r.values[j], r.residual_av[j] / s1,
                        r.residual_atu[j] / s1)
              << (a.opt.center && j < (std::int64_t)ratio.size() ? format("  %9.4f%%", 100 * ratio[j]) : "")
              << "\n";
  if (!a.out.empty()) std::cout << "written: " << a.out << "\n";
}

}  // namespace

int run_svds(const Args& args) {
  const CommandSpec spec = svds_command();
  SvdsArgs a;
  po::options_description opts = option_table();
  opts.add_options()
      ("k", po::value(&a.opt.k)->default_value(6), "number of singular triplets (largest first)")
      ("center", po::bool_switch(&a.opt.center), "subtract the column means implicitly (PCA)")
      ("tol", po::value(&a.opt.tol)->default_value(1e-8, "1e-8"),
       "residual test of each triplet, relative to the largest singular value")
      ("block", po::value(&a.opt.block)->default_value(0), "block size (0: min(k, 16))")
      ("basis", po::value(&a.opt.basis)->default_value(0), "Krylov basis columns (0: automatic)")
      ("maxiter", po::value(&a.opt.max_restarts)->default_value(1000), "restart limit")
      ("seed", po::value(&a.opt.seed)->default_value(1), "seed of the random start block")
      ("device", po::value(&a.device)->default_value("auto"), "auto | cpu | cuda")
      ("out,o", po::value(&a.out), "write U, s, Vt (and the PCA outputs) to FILE.h5")
      ("json", po::bool_switch(&a.json), "print the result as one JSON object")
      ("quiet,q", po::bool_switch(&a.quiet), "print nothing on success");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  a.matrix = vm["MATRIX"].as<std::string>();
  validate(a);
  const Backend backend = choose_backend(a.device);
  Times t;
  Timer clock;
  const Csr<double> mat = read_matrix(a.matrix);
  t.read = clock.seconds();
  if (a.opt.k > std::min(mat.nrows, mat.ncols))
    throw UsageError(format("--k %lld: the matrix is %lld × %lld, k can be at most min(m, n) = %lld",
                            (long long)a.opt.k, (long long)mat.nrows, (long long)mat.ncols,
                            (long long)std::min(mat.nrows, mat.ncols)));
  install_interrupt_handlers();
  const SvdResult r = svds(mat, backend, a.opt);
  std::string command = "tcsolve svds";
  for (const auto& s : args) command += " " + s;
  const Timer wclock;
  if (!a.out.empty()) write_svds_file(a, mat, r, backend, command, t);
  t.write = wclock.seconds();
  if (a.json) std::cout << svds_json(a, mat, r, backend, t) << "\n";
  else if (!a.quiet) print_table(a, r);
  if (r.status == SolverStatus::interrupted) {
    std::cerr << "tcsolve: svds " << r.reason << "\n";
    return 128 + (interrupt_signal() > 0 ? interrupt_signal() : 2);
  }
  if (r.status != SolverStatus::converged) {
    std::cerr << "tcsolve: svds did not converge: " << to_string(r.status)
              << (r.reason.empty() ? "" : " (" + r.reason + ")") << "\n";
    return exit_failed;
  }
  return exit_ok;
}

}  // namespace tcsolve::app
