// tcsolve batch JOBFILE: eigs/solve jobs from a file in Boost.Program_options' config syntax,
//
//   # comment                     [defaults]          keys for every job (a job overrides them)
//   [defaults]                    [job.NAME]          one job; NAME names its output NAME.h5
//   device = cpu                  key = value         task = eigs|solve, matrix, mass, rhs, out,
//   [job.lap]                                         plot and the long option names of eigs/solve
//   task = eigs
//   matrix = gen:lap2d:100
//
// The whole file is checked before any job runs (errors name the line, exit 2). Jobs run one after
// another; a matrix used by several jobs is read and prepared once (and dropped after its last
// use); a failing job is recorded in its output file and the summary, and the others still run.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <atomic>
#include <thread>
#include <tuple>
#include <utility>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "apps/batch/resume.hpp"
#include "apps/job/checkpoint.hpp"
#include "apps/job/run.hpp"
#include "core/device.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "distributed/comm.hpp"
#include "distributed/comm_thread.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve::app {

namespace {

namespace fs = std::filesystem;

struct Entry {
  std::string value;
  int line = 0;
};

struct JobSection {
  std::string name;
  int line = 0;
  std::map<std::string, Entry> keys;
};

struct JobFile {
  std::map<std::string, Entry> defaults;
  std::vector<JobSection> jobs;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void file_error(const std::string& file, int line, const std::string& msg) {
  throw InputError(file, line, msg);
}

// The structure of the file (sections, key = value, '#' comments, as Boost.Program_options'
// parse_config_file reads them), with the line of every key.
JobFile read_job_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open the job file");
  JobFile jf;
  std::map<std::string, Entry>* section = nullptr;
  std::set<std::string> seen;
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    std::string s = raw;
    if (auto h = s.find('#'); h != std::string::npos) s = s.substr(0, h);
    s = trim(s);
    if (s.empty()) continue;
    if (s.front() == '[') {
      if (s.back() != ']') file_error(path, line, "unterminated section header '" + s + "'");
      const std::string name = trim(s.substr(1, s.size() - 2));
      if (!seen.insert(name).second) file_error(path, line, "section [" + name + "] appears twice");
      if (name == "defaults") {
        section = &jf.defaults;
      } else if (name.rfind("job.", 0) == 0 && name.size() > 4) {
        const std::string job = name.substr(4);
        for (char c : job)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
            file_error(path, line, "job name '" + job + "' may hold only letters, digits, '_', '-' and '.'");
        jf.jobs.push_back({job, line, {}});
        section = &jf.jobs.back().keys;
      } else {
        file_error(path, line, "unknown section [" + name + "] (expected [defaults] or [job.NAME])");
      }
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos) file_error(path, line, "expected 'key = value', found '" + s + "'");
    const std::string key = trim(s.substr(0, eq)), value = trim(s.substr(eq + 1));
    if (key.empty()) file_error(path, line, "missing key before '='");
    if (!section) file_error(path, line, "'" + key + "' outside a section ([defaults] or [job.NAME])");
    if (section->count(key)) file_error(path, line, "'" + key + "' given twice in this section");
    (*section)[key] = {value, line};
  }
  if (jf.jobs.empty()) throw InputError(path, 0, "no [job.NAME] section: nothing to run");
  return jf;
}

// The options of a task plus the job-file-only keys.
void task_options(po::options_description& d, JobSpec& s, Task task) {
  add_job_options(d, s, task);
  d.add_options()("matrix", po::value(&s.matrix), "")
      ("task", po::value<std::string>()->notifier([&s](const std::string& v) { s.task = parse_task(v); }), "");
}

bool is_switch(const po::options_description& d, const std::string& key) {
  const po::option_description* o = d.find_nothrow(key, false);
  return o && o->semantic()->max_tokens() == 0;
}

// Command-line tokens for one key: "--key value", or "--key" for a true switch.
std::vector<std::string> tokens(const po::options_description& d, const std::string& key,
                                const std::string& value) {
  if (!is_switch(d, key)) return {"--" + key, value};
  if (value == "true" || value == "yes" || value == "1" || value == "on") return {"--" + key};
  if (value == "false" || value == "no" || value == "0" || value == "off") return {};
  throw UsageError("'" + key + "' expects true or false, not '" + value + "'");
}

// Where the job files' results may go: --output-dir (or the current folder), unless
// --allow-outside-output-dir.
struct OutputPlace {
  std::string dir;  // --output-dir ("" : the current folder)
  bool allow_outside = false;
};

// Whether `p` lies inside `dir`: by its name (no ".." out of it, an absolute path under it) and by
// where its folder resolves (symbolic links on the way followed; the file's own name is not: a
// link there is replaced by the atomic rename, never written through).
bool inside_folder(const fs::path& p, const fs::path& dir) {
  auto under = [](const fs::path& x, const fs::path& d) {
    const fs::path rel = x.lexically_relative(d);
    return !rel.empty() && rel != "." && *rel.begin() != "..";
  };
  const fs::path d = fs::absolute(dir).lexically_normal(), x = fs::absolute(p).lexically_normal();
  if (!under(x, d)) return false;
  std::error_code e1, e2;
  const fs::path rd = fs::weakly_canonical(d, e1), rx = fs::weakly_canonical(x.parent_path(), e2);
  return e1 || e2 || rx == rd || under(rx, rd);
}

// The key a path is compared by across jobs: the file it names (symbolic links of its folders
// resolved), as one spelling.
std::string path_key(const std::string& f) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(f, ec);
  return ec ? fs::absolute(f).lexically_normal().string() : p.string();
}

// A job's written files (result, plot, checkpoint: explicit or the automatic one) with the line
// that names each.
struct WrittenFile {
  std::string role, path, key;
  std::size_t job = 0;
  int line = 0;
};

// Every file the jobs write must be written by one job in one role: no result, plot or
// checkpoint is another's (a checkpoint is removed once its job's result is on disk, and a
// result replaced by a checkpoint is lost). InputError naming both jobs and the path. (Nor can
// one be another's temporary, "PATH.tmp-PID-HOST-XXXXXX": results and checkpoints end in .h5 or
// .hdf5, plots in .svg, a temporary in six letters and digits.)
void check_written_files(const std::string& path, const std::vector<JobSpec>& jobs,
                         const std::vector<WrittenFile>& files) {
  std::map<std::string, std::size_t> first;  // key -> its first entry
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto [it, fresh] = first.try_emplace(files[i].key, i);
    if (fresh) continue;
    const WrittenFile &a = files[i], &b = files[it->second];
    const std::string whose = a.job == b.job ? "its own " + b.role : "the " + b.role + " of job '" + jobs[b.job].name + "'";
    file_error(path, a.line,
               "job." + jobs[a.job].name + ": " + a.role + " " + a.path + " is also " + whose +
                   format(" (line %d)", b.line) +
                   (a.role == "automatic checkpoint" ? "; give the job another 'checkpoint = FILE.h5'" : ""));
  }
}

std::vector<JobSpec> build_jobs(const std::string& path, const JobFile& jf, const OutputPlace& place) {
  const std::string& outdir = place.dir;
  std::vector<JobSpec> jobs;
  std::vector<WrittenFile> written;
  po::options_description all_keys;
  JobSpec scratch_e, scratch_s;
  task_options(all_keys, scratch_e, Task::eigs);
  {
    po::options_description solve_only;
    add_job_options(solve_only, scratch_s, Task::solve);
    for (const auto& o : solve_only.options())
      if (!all_keys.find_nothrow(o->long_name(), false)) all_keys.add(o);
  }
  auto check_known = [&](const std::map<std::string, Entry>& keys) {
    for (const auto& [k, e] : keys)
      if (!all_keys.find_nothrow(k, false))
        file_error(path, e.line, "unknown key '" + k + "' (see 'tcsolve eigs --help', 'tcsolve solve --help')");
  };
  check_known(jf.defaults);
  for (const JobSection& js : jf.jobs) {
    check_known(js.keys);
    const std::string where = "job." + js.name + ": ";
    if (!js.keys.count("task") && !jf.defaults.count("task"))
      file_error(path, js.line, where + "no 'task' (eigs or solve)");
    const Entry& task_e = js.keys.count("task") ? js.keys.at("task") : jf.defaults.at("task");
    Task task = Task::eigs;
    try {
      task = parse_task(task_e.value);
    } catch (const UsageError& ex) {
      file_error(path, task_e.line, where + ex.what());
    }
    JobSpec s;
    s.name = js.name;
    po::options_description d;
    task_options(d, s, task);
    // Defaults first, then the job's own keys; defaults for the other task are ignored.
    std::map<std::string, Entry> merged;
    for (const auto& [k, e] : jf.defaults)
      if (d.find_nothrow(k, false)) merged[k] = e;
    for (const auto& [k, e] : js.keys) {
      if (!d.find_nothrow(k, false))
        file_error(path, e.line, where + "'" + k + "' does not apply to task " + task_e.value);
      merged[k] = e;
    }
    std::vector<std::string> args;
    for (const auto& [k, e] : merged) {
      try {  // one key at a time, so that a bad value names its line
        JobSpec probe;
        po::options_description pd;
        task_options(pd, probe, task);
        po::variables_map vm;
        po::store(po::command_line_parser(tokens(pd, k, e.value)).options(pd).run(), vm);
        po::notify(vm);
      } catch (const po::error& ex) {
        file_error(path, e.line, where + ex.what());
      } catch (const UsageError& ex) {
        file_error(path, e.line, where + ex.what());
      }
      auto t = tokens(d, k, e.value);
      args.insert(args.end(), t.begin(), t.end());
    }
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(d).run(), vm);
    po::notify(vm);
    if (s.matrix.empty()) file_error(path, js.line, where + "no 'matrix'");
    if (s.out.empty()) s.out = s.name + ".h5";
    // out, plot and checkpoint: relative to --output-dir, and inside it
    auto line_of = [&](const char* key) { return merged.count(key) ? merged[key].line : js.line; };
    for (auto [key, p] : {std::pair<const char*, std::string*>{"out", &s.out}, {"plot", &s.plot},
                          {"checkpoint", &s.checkpoint}}) {
      if (p->empty()) continue;
      if (!outdir.empty() && fs::path(*p).is_relative()) *p = (fs::path(outdir) / *p).string();
      if (!place.allow_outside && !inside_folder(*p, outdir.empty() ? "." : outdir))
        file_error(path, line_of(key),
                   where + key + " " + *p + " is outside the output folder " + (outdir.empty() ? "(the current folder)" : outdir) +
                       " (--allow-outside-output-dir lets a job file write there)");
    }
    try {
      validate_job(s);
    } catch (const UsageError& ex) {
      // Name the line of the offending key when the message starts with "--key".
      int line = js.line;
      std::string msg = ex.what();
      if (msg.rfind("--", 0) == 0) {
        const std::string k = msg.substr(2, msg.find_first_of(" :'", 2) - 2);
        if (merged.count(k)) line = merged[k].line;
      }
      file_error(path, line, where + msg);
    }
    const std::size_t j = jobs.size();
    written.push_back({"output", s.out, path_key(s.out), j, line_of("out")});
    if (!s.plot.empty()) written.push_back({"plot", s.plot, path_key(s.plot), j, line_of("plot")});
    const std::string ck = s.checkpoint.empty() ? checkpoint_path_for(s.out) : s.checkpoint;
    written.push_back({s.checkpoint.empty() ? "automatic checkpoint" : "checkpoint", ck, path_key(ck), j,
                       s.checkpoint.empty() ? line_of("out") : line_of("checkpoint")});
    jobs.push_back(s);
  }
  check_written_files(path, jobs, written);
  return jobs;
}

struct Row {
  std::string job, task, status, message, out;
  double seconds = 0, residual = NAN;
  std::int64_t iterations = 0;
  std::size_t index = 0;  // the job's place in the file
  int rank = 0;           // the MPI rank that ran it
  int gpu = -1;           // the GPU of the worker that ran it (one worker per GPU; -1: one worker)
};

// Rows as text for the gather to rank 0 (unit and record separators: no field holds them).
std::string pack_rows(const std::vector<Row>& rows) {
  std::string s;
  for (const Row& r : rows)
    s += r.job + '\x1f' + r.task + '\x1f' + r.status + '\x1f' + r.message + '\x1f' + r.out + '\x1f' +
         format("%.17g\x1f%.17g\x1f%lld\x1f%zu\x1f%d", r.seconds, r.residual, (long long)r.iterations,
                r.index, r.rank) +
         '\x1e';
  return s;
}
std::vector<Row> unpack_rows(const std::string& s) {
  std::vector<Row> rows;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t end = s.find('\x1e', at);
    std::vector<std::string> f;
    std::size_t p = at;
    while (true) {
      const std::size_t q = s.find('\x1f', p);
      if (q == std::string::npos || q > end) {
        f.push_back(s.substr(p, end - p));
        break;
      }
      f.push_back(s.substr(p, q - p));
      p = q + 1;
    }
    if (f.size() == 10) {
      Row r{f[0], f[1], f[2], f[3], f[4]};
      r.seconds = std::strtod(f[5].c_str(), nullptr);
      r.residual = std::strtod(f[6].c_str(), nullptr);
      r.iterations = std::strtoll(f[7].c_str(), nullptr, 10);
      r.index = std::strtoull(f[8].c_str(), nullptr, 10);
      r.rank = std::atoi(f[9].c_str());
      rows.push_back(std::move(r));
    }
    at = end + 1;
  }
  return rows;
}

// The jobs in groups that must run in order on one worker: a job that reads another job's output
// (its matrix, mass, right-hand sides, start block or --resume-from file) joins that job's group,
// so that the two run in the file's order as in one process. Groups in the order of their first
// jobs, each in the file's order; independent jobs are groups of one.
std::vector<std::vector<std::size_t>> job_groups(const std::vector<JobSpec>& jobs) {
  const std::size_t n = jobs.size();
  std::vector<std::size_t> parent(n);
  for (std::size_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  auto key = [](const std::string& f) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(f, ec);
    return ec ? fs::absolute(f).lexically_normal().string() : p.string();
  };
  std::map<std::string, std::size_t> writer;  // output file -> its job
  for (std::size_t i = 0; i < n; ++i)
    if (!jobs[i].out.empty()) writer[key(jobs[i].out)] = i;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> in = job_input_files(jobs[i]);
    if (!jobs[i].resume_from.empty()) in.push_back(jobs[i].resume_from);
    for (const std::string& f : in) {
      const auto it = writer.find(key(f));
      if (it != writer.end()) parent[find(i)] = find(it->second);
    }
  }
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::size_t, std::size_t> at;  // a group's root -> its place in groups
  for (std::size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = at.try_emplace(find(i), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

// GPUs to spread over in this process (--gpus N|all: N, or 0 for every visible one); 1 when the
// jobs cannot spread: under mpirun (a rank has one GPU), no job that may run on a GPU, or a
// device-memory cap (TCSOLVE_DEVICE_MEMORY_LIMIT: its accounting is the process's).
int gpus_wanted(const std::vector<JobSpec>& jobs, const std::string& gpus, bool distributed) {
  int want = 0;  // 0: all
  if (gpus != "all") {
    char* end = nullptr;
    const long v = std::strtol(gpus.c_str(), &end, 10);
    if (gpus.empty() || *end != '\0' || v < 1 || v > 1024)
      throw UsageError("--gpus " + gpus + ": expected a number of GPUs (1 or more) or 'all'");
    want = static_cast<int>(v);
  }
  bool gpu_jobs = false;
  for (const JobSpec& s : jobs) gpu_jobs = gpu_jobs || s.device != DeviceChoice::cpu;
  if (distributed || !gpu_jobs || device_memory_limit() > 0) return 1;
  return want;
}

}  // namespace

int run_batch(const Args& args) {
  CommandSpec spec{
      "batch", "batch JOBFILE [options]",
      "Runs the eigs/solve jobs of a job file, one after another on each GPU (every visible GPU by\n"
      "default: --gpus), and writes one HDF5 result per job.",
      "JOBFILE uses Boost.Program_options' config syntax: a [defaults] section and one [job.NAME]\n"
      "section per job, 'key = value' lines, '#' comments. Keys: task = eigs|solve, matrix, mass,\n"
      "rhs, out (default NAME.h5), plot, and the long options of 'tcsolve eigs' / 'tcsolve solve'\n"
      "(k, which, method, tol, maxiter, block-size, precond, reorder, precision, device, cpu-fallback, seed).\n"
      "out, plot and checkpoint are relative to --output-dir and must stay inside it (no absolute\n"
      "path elsewhere, no '..' out of it) unless --allow-outside-output-dir; no two jobs may write\n"
      "the same file (results, plots, checkpoints: OUT.checkpoint.h5 by default).\n"
      "Example:\n"
      "  [defaults]\n  device = cpu\n  tol = 1e-8\n\n"
      "  [job.lap]\n  task = eigs\n  matrix = gen:lap2d:100\n  k = 4\n\n"
      "  [job.poisson]\n  task = solve\n  matrix = gen:lap2d:100\n  rhs = random:8\n\n"
      "The file is checked completely before anything runs (errors name the line). A matrix used\n"
      "by several jobs is read and prepared once. A failing job is recorded (status \"failed\" and\n"
      "the error in its output file) and the others still run. Outputs are written atomically;\n"
      "--resume skips jobs whose output is complete and was written for the same options and\n"
      "inputs (a job whose options or matrix changed, or that failed, runs again) and removes the\n"
      "temporary files an interrupted run left.\n"
      "SIGINT/SIGTERM stop the running job at its next iteration (its partial result is written\n"
      "with status interrupted and --resume runs it again) and start no further job.\n"
      "Exit status: 0 every job converged (or was skipped), 1 some job failed or did not converge,\n"
      "130/143 interrupted (SIGINT/SIGTERM), 2 bad job file or usage.\n"
      "With more than one GPU the jobs are spread over them (job i on GPU i mod N), one job at a\n"
      "time on each; a job that reads another job's output (matrix, right-hand sides, start, resume)\n"
      "runs after it on the same GPU. Under mpirun -np N they are spread over the ranks the same\n"
      "way, one GPU per rank; each job still writes its own result atomically, and rank 0 prints\n"
      "the summary.\n",
      {"JOBFILE"}};
  bool resume = false, quiet = false, json = false, allow_outside = false;
  std::string outdir, gpus_opt = "all";
  double checkpoint_every = 60.0;
  po::options_description opts = option_table();
  opts.add_options()
      ("resume", po::bool_switch(&resume),
       "skip jobs whose output file is complete; a job that left a checkpoint continues from it")
      ("checkpoint-every", po::value(&checkpoint_every)->value_name("SECONDS"),
       "jobs write a checkpoint (OUT.checkpoint.h5 beside their output) every SECONDS while they "
       "run, so that a long job that is killed loses at most that much (default 60: shorter jobs "
       "write none); it is removed when the job's result is written")
      ("output-dir", po::value(&outdir)->value_name("DIR"),
       "folder of the jobs' results, plots and checkpoints (created if missing; default the current "
       "folder): relative paths are relative to it, and none may lead out of it")
      ("allow-outside-output-dir", po::bool_switch(&allow_outside),
       "let the job file write results, plots and checkpoints outside the output folder (absolute "
       "paths, '..')")
      ("gpus", po::value(&gpus_opt)->value_name("N|all"),
       "GPUs to spread the jobs over in this process, one worker each (default all visible GPUs; "
       "1: one job at a time). Under mpirun each rank takes one GPU instead; under "
       "TCSOLVE_DEVICE_MEMORY_LIMIT the jobs run one at a time")
      ("quiet,q", po::bool_switch(&quiet), "no progress line and no summary table")
      ("json", po::bool_switch(&json), "print the summary as JSON");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  if (!(checkpoint_every > 0) || !std::isfinite(checkpoint_every))
    throw UsageError(format("--checkpoint-every %g: expected a positive number of seconds", checkpoint_every));
  const std::string path = vm["JOBFILE"].as<std::string>();
  const JobFile jf = read_job_file(path);
  const std::vector<JobSpec> jobs = build_jobs(path, jf, OutputPlace{outdir, allow_outside});
  if (!outdir.empty()) {
    std::error_code ec;
    fs::create_directories(outdir, ec);
    if (ec) throw Error(outdir + ": cannot create the output folder: " + ec.message());
  }
  // --resume: what an interrupted writer left is removed first (only the AtomicFile pattern of
  // this batch's own outputs).
  if (resume) {
    int removed = 0;
    for (const JobSpec& s : jobs) {
      removed += remove_stale_temporaries(s.out);
      if (!s.plot.empty()) removed += remove_stale_temporaries(s.plot);
      removed += remove_stale_temporaries(s.checkpoint.empty() ? checkpoint_path_for(s.out) : s.checkpoint);
    }
    if (removed > 0 && !quiet)
      std::cerr << "removed " << removed << " temporary file(s) left by an interrupted run\n";
  }
  // Every job's outputs before the first job runs (folders, inputs named as outputs).
  for (const JobSpec& s : jobs) {
    try {
      check_job_outputs(s);
    } catch (const UsageError& e) {
      throw UsageError(path + ": job '" + s.name + "': " + e.what());
    }
  }

  // Test hook: the process is killed (SIGKILL) right after this job, as by an interruption.
  const char* abort_after = std::getenv("TCSOLVE_TEST_ABORT_AFTER_JOB");

  // Under mpirun: job i runs on rank i mod N, each rank on its own GPU (jobs are independent: no
  // NCCL), rank 0 gathers the rows and prints the summary. Every rank checked the file above.
  // Where the launcher's environment places the rank, nothing waits for MPI: MPI_Init runs on
  // the communicator's own thread, the rank's GPU and CUDA context come up on another (the first
  // job's start-up waits for them while it reads its matrix), and the jobs start at once. MPI is
  // needed only for the rows at the end (2 x H200: each rank started its first job at 0.55-0.60 s,
  // after MPI_Init 0.25 s and the GPU's context 0.3 s, one after the other).
  std::unique_ptr<CommunicatorThread> mpi;
  int np = 1, me = 0;
  if (launched_by_mpi()) {
    bool gpu = false;
    for (const JobSpec& s : jobs) gpu = gpu || s.device != DeviceChoice::cpu;
    const LaunchPlace place = launch_place_from_env();
    if (place.known && gpu) start_local_gpu_selection(place);
    mpi = std::make_unique<CommunicatorThread>([] { return make_communicator(); });
    if (place.known) {
      np = place.size, me = place.rank;
    } else {  // the rank from MPI itself: wait for it (and choose the GPU after it, as before)
      std::tie(np, me) = mpi->run([gpu](Communicator& c) {
        if (c.size() > 1 && gpu && device_count() > 0) select_local_gpu(c);
        return std::make_pair(c.size(), c.rank());
      });
    }
    if (np == 1) mpi.reset();
    trace_mark("batch: jobs may start");
  }
  const bool distributed = mpi != nullptr;
  // SIGINT/SIGTERM: the running job stops at its next iteration's end and writes its partial
  // result; no further job starts; the summary is printed; exit 130/143 (core/interrupt.hpp).
  // (Not under mpirun: mpirun ends every rank on Ctrl-C; --resume reruns what was cut.)
  if (!distributed) install_interrupt_handlers();
  // The groups of jobs this process runs (job_groups): under mpirun the groups are dealt round
  // robin over the ranks (independent jobs: job i on rank i mod N). In this process a worker per
  // GPU (--gpus; one under mpirun) takes the next group from a queue; each worker has its own
  // matrices, operators, library handles, host threads and write in flight. Worker 0 starts at
  // once on this thread (the process's GPU, 0); the others once the GPUs are counted (cuInit,
  // 0.1–0.25 s, not waited for). Workers share the progress line and stderr (out_mu).
  const int wanted_gpus = gpus_wanted(jobs, gpus_opt, distributed);
  // Test hook: this many workers without GPUs (the CPU tests run the concurrent path with it).
  const char* cpu_workers_env = std::getenv("TCSOLVE_TEST_BATCH_WORKERS");
  const int cpu_workers = cpu_workers_env && !distributed ? std::max(0, std::atoi(cpu_workers_env)) : 0;
  std::vector<std::vector<std::size_t>> groups;
  {
    const std::vector<std::vector<std::size_t>> all = job_groups(jobs);
    for (std::size_t g = 0; g < all.size(); ++g)
      if (static_cast<int>(g % static_cast<std::size_t>(np)) == me) groups.push_back(all[g]);
  }
  std::atomic<std::size_t> next_group{0};
  std::atomic<int> nworkers{1};  // known once the GPUs are counted (labels)
  // The last group of this process using each matrix: a worker drops a matrix once no group it
  // could still take uses it.
  std::map<std::string, std::size_t> last_group;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i : groups[g]) {
      last_group[jobs[i].matrix] = g;
      if (!jobs[i].mass.empty()) last_group[jobs[i].mass] = g;
    }
  ProgressLine line(!quiet && !json && me == 0);
  std::mutex out_mu;
  struct Worker {
    std::unique_ptr<MatrixCache> cache = std::make_unique<MatrixCache>();  // freed on its thread
    std::vector<Row> rows;
    bool all_ok = true;
    int gpu = -1;    // this worker's GPU (-1: the process's)
    int index = 0;   // its place among the workers (labels)
    // A job's result file goes to disk (bytes, fsync, rename: 7–9 ms for 5 MB on the H200
    // machine) while the worker's next job runs (run_job's finish_write: built in memory on the
    // job's thread, no HDF5 call on the writer's). One write in flight per worker; a job that
    // reads the file being written waits for it. A write that fails turns its row into a failure.
    struct PendingWrite {
      std::future<void> done;
      std::size_t row = 0;
      JobSpec spec;
      bool drop_checkpoint = false;  // remove_own_checkpoint(spec) once the result is on disk
      std::string command;
    } pending;
  };
  // "rank 1: " under mpirun, "GPU 1: " with a worker per GPU, else "".
  auto who = [&](const Worker& w) {
    return distributed ? format("rank %d: ", me)
           : nworkers.load() > 1 ? format(cpu_workers > 0 ? "worker %d: " : "GPU %d: ", w.index)
                                 : std::string();
  };
  auto not_run = [&](std::vector<Row>& rows, std::size_t j) {
    rows.push_back(Row{jobs[j].name, to_string(jobs[j].task), "not run", "interrupted before it started", jobs[j].out});
    rows.back().index = j, rows.back().rank = me;
  };
  auto finish_pending = [&](Worker& w) {
    auto& pending = w.pending;
    auto& rows = w.rows;
    if (!pending.done.valid()) return;
    Row& row = rows[pending.row];
    try {
      pending.done.get();
      if (pending.drop_checkpoint) remove_own_checkpoint(pending.spec);
    } catch (const std::exception& e) {
      row.status = "failed";
      row.message = e.what();
      for (char& c : row.message)
        if (c == '\n') c = ' ';
      w.all_ok = false;
      try {
        write_failure_file(pending.spec, row.message, pending.command);
      } catch (const std::exception& e2) {
        row.message += std::string(" (and the failure record could not be written: ") + e2.what() + ")";
      }
      std::lock_guard<std::mutex> lock(out_mu);
      line.clear();
      if (!quiet && !json)
        std::cerr << format("%s[%zu/%zu] %s: failed: %s\n", who(w).c_str(),
                            row.index + 1, jobs.size(), row.job.c_str(), row.message.c_str());
    }
  };
  auto reads_pending_output = [&](const Worker& w, const JobSpec& s) {
    const auto& pending = w.pending;
    if (!pending.done.valid()) return false;
    std::error_code ec;
    const fs::path out = fs::weakly_canonical(pending.spec.out, ec);
    std::vector<std::string> in = job_input_files(s);
    if (!s.resume_from.empty()) in.push_back(s.resume_from);
    for (const std::string& f : in) {
      std::error_code e2;
      if (fs::weakly_canonical(f, e2) == out) return true;
    }
    return false;
  };
  // A worker's jobs: the next group from the queue, in the file's order, until none is left.
  auto run_worker = [&](Worker& w) {
    MatrixCache& cache = *w.cache;
    auto& rows = w.rows;
    auto& pending = w.pending;
    std::vector<std::size_t> mine;  // the group this worker runs
    std::size_t at = 0;              // the job of it running now
    auto next_job = [&]() -> bool {
      if (!mine.empty() && ++at < mine.size()) return true;
      const std::size_t g = next_group.fetch_add(1);
      if (g >= groups.size()) return false;
      mine = groups[g];
      at = 0;
      return true;
    };
    while (next_job()) {
      const std::size_t i = mine[at];
      JobSpec s = jobs[i];
      if (reads_pending_output(w, s)) finish_pending(w);
      Row row{s.name, to_string(s.task), "", "", s.out};
      row.index = i, row.rank = me;
      // Automatic checkpoints of a job that asked for none: OUT.checkpoint.h5, the first after
      // checkpoint_every seconds of its solve.
      const std::string auto_checkpoint =
          s.checkpoint.empty() && !s.out.empty() ? checkpoint_path_for(s.out) : std::string();
      if (!auto_checkpoint.empty()) s.checkpoint = auto_checkpoint, s.checkpoint_every = checkpoint_every;
      const std::string head = format("[%zu/%zu] %s", i + 1, jobs.size(), s.name.c_str());
      {
        std::lock_guard<std::mutex> lock(out_mu);
        line.update(head + ": starting", true);
      }
      Timer t;
      std::string stale;
      if (resume && !stored_result_stands(s, cache, stale) && result_is_complete(s.out) && !quiet) {
        std::lock_guard<std::mutex> lock(out_mu);
        std::cerr << head << ": running again: " << stale << "\n";
      }
      if (resume && stale.empty()) {
        row.status = "skipped";
        row.message = "output already complete (--resume)";
        try {  // show what the earlier run found
          Hdf5File f = Hdf5File::open(s.out);
          row.iterations = f.attr_int64("iterations");
          double mx = 0;
          for (double v : f.read_doubles("residual_norms")) mx = std::max(mx, v);
          row.residual = mx;
        } catch (const Error&) {
        }
      } else {
        const std::string command = "tcsolve batch " + path + " (job " + s.name + ")";
        const std::string ck_note = claim_checkpoint(s, resume);
        if (!ck_note.empty() && !quiet) {
          std::lock_guard<std::mutex> lock(out_mu);
          std::cerr << head << ": " << ck_note << "\n";
        }
        // The automatic checkpoint is removed once the result is on disk: only one this run
        // wrote or continued from (a job that failed keeps it; --resume continues from it).
        bool drop_checkpoint = false;
        try {
          JobOutcome o = run_job(
              s, cache,
              [&](std::int64_t it, std::int64_t conv, std::int64_t wanted, double res, double secs) {
                std::lock_guard<std::mutex> lock(out_mu);
                line.update(format("%s: %s iteration %lld, %lld/%lld, max residual %.2e, %s",
                                   head.c_str(), to_string(s.task), (long long)it, (long long)conv,
                                   (long long)wanted, res, format_seconds(secs).c_str()));
              },
              command, /*defer_write=*/true, w.gpu);
          drop_checkpoint = !auto_checkpoint.empty() && !s.checkpoint.empty() && o.record.status != "interrupted" &&
                            (o.record.checkpoints > 0 || s.resume_from == s.checkpoint);
          if (o.finish_write) {
            finish_pending(w);  // the previous job's file first: one write in flight
            pending.done = std::async(std::launch::async, std::move(o.finish_write));
            pending.row = rows.size();
            pending.spec = s;
            pending.command = command;
            pending.drop_checkpoint = drop_checkpoint;
            drop_checkpoint = false;  // (finish_pending does it)
          }
          row.status = o.record.status;
          row.message = o.record.reason;
          if (!ck_note.empty()) row.message += (row.message.empty() ? "" : "; ") + ck_note;
          row.iterations = o.record.iterations;
          row.residual = o.max_residual;
        } catch (const std::exception& e) {
          row.status = "failed";
          row.message = e.what();
          for (char& c : row.message)
            if (c == '\n') c = ' ';
          try {
            write_failure_file(s, row.message, command);
          } catch (const std::exception& e2) {
            row.message += std::string(" (and the failure record could not be written: ") + e2.what() + ")";
          }
        }
        if (drop_checkpoint) remove_own_checkpoint(s);
      }
      row.seconds = t.seconds();
      if (row.status != "converged" && row.status != "skipped") w.all_ok = false;
      {
        std::lock_guard<std::mutex> lock(out_mu);
        line.clear();
        if (!quiet && !json)
          std::cerr << format("%s%s: %s (%s)%s\n", who(w).c_str(),
                            head.c_str(), row.status.c_str(),
                            format_seconds(row.seconds).c_str(),
                            row.status == "failed" ? (": " + row.message).c_str() : "");
      }
      rows.push_back(row);
      // Matrices no later job of this group and no group still in the queue uses.
      for (const auto& [m, last] : last_group) {
        bool later = last >= next_group.load();
        for (std::size_t k = at + 1; k < mine.size() && !later; ++k)
          later = jobs[mine[k]].matrix == m || jobs[mine[k]].mass == m;
        if (!later) cache.drop(m);
      }
      if (abort_after && s.name == abort_after) {
        finish_pending(w);  // the job is complete, its file on disk
        ::kill(::getpid(), SIGKILL);  // as if killed
      }
      if (interrupt_requested()) {
        finish_pending(w);
        // The job that ran is recorded (its partial result says interrupted; --resume runs it
        // again); the rest of its group is listed as not run (and, below, the groups no worker
        // took).
        for (std::size_t k = at + 1; k < mine.size(); ++k) not_run(rows, mine[k]);
        w.all_ok = false;
        break;
      }
    }
    finish_pending(w);
    if (w.gpu >= 0) use_gpu(w.gpu);  // (set by its jobs; not when the first failed early)
    w.cache.reset();  // its GPU's operators and handles, on the thread that uses that GPU
  };

  // Worker 0 here, at once; the others (one per further GPU) from a thread that counts the GPUs
  // first. A worker's error outside its jobs (the jobs' own are rows) ends the batch once all
  // are joined.
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>());
  std::vector<std::unique_ptr<Worker>> more;
  std::vector<std::exception_ptr> errors;
  std::thread spawner;
  if ((wanted_gpus != 1 || cpu_workers > 1) && groups.size() > 1) {
    spawner = std::thread([&] {
      try {
        const int visible = cpu_workers > 1 ? cpu_workers : device_count();
        const int n = static_cast<int>(std::min<std::size_t>(
            groups.size(), static_cast<std::size_t>(wanted_gpus == 0 || cpu_workers > 1 ? visible
                                                                                      : std::min(wanted_gpus, visible))));
        if (n <= 1) return;
        nworkers = n;
        trace_mark("batch: a worker per GPU");
        errors.resize(static_cast<std::size_t>(n) + 1);  // [n]: this thread's own error
        std::vector<std::thread> threads;
        struct JoinAll {  // the workers started are joined also when starting another fails
          std::vector<std::thread>& t;
          ~JoinAll() {
            for (std::thread& x : t)
              if (x.joinable()) x.join();
          }
        } join_all{threads};
        for (int wi = 1; wi < n; ++wi) {
          more.push_back(std::make_unique<Worker>());
          more.back()->gpu = cpu_workers > 1 ? -1 : wi;
          more.back()->index = wi;
          threads.emplace_back([&, wi, &w = *more.back()] {
            try {
              // (No cudaSetDevice here: it would make the GPU's context before the first matrix
              // is read; run_job makes it on a helper meanwhile and then sets this thread's GPU.)
              HostShare share(std::max(1, host_threads() / n));
              run_worker(w);
            } catch (...) {
              errors[static_cast<std::size_t>(wi)] = std::current_exception();
            }
          });
        }
      } catch (...) {
        if (errors.empty()) errors.resize(1);
        errors.back() = std::current_exception();
      }
    });
  }
  std::exception_ptr first;
  try {
    run_worker(*workers[0]);
  } catch (...) {
    first = std::current_exception();
  }
  if (spawner.joinable()) spawner.join();
  if (first) std::rethrow_exception(first);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (auto& w : more) workers.push_back(std::move(w));
  // With a worker per GPU, each row names its worker's GPU (worker i runs on GPU i).
  if (nworkers.load() > 1 && cpu_workers <= 1)
    for (auto& w : workers)
      for (Row& r : w->rows) r.gpu = w->index;
  // Groups no worker took (an interrupt): not run.
  for (std::size_t g = next_group.load(); g < groups.size(); ++g)
    for (std::size_t i : groups[g]) not_run(workers[0]->rows, i);
  std::vector<Row> rows;
  bool all_ok = true;
  for (auto& w : workers) {
    for (Row& r : w->rows) rows.push_back(std::move(r));
    all_ok = all_ok && w->all_ok;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.index < y.index; });
  trace_mark("batch: jobs done");
  if (distributed) {
    // Every rank's rows on rank 0, in the file's order; one exit status for all. The place the
    // jobs were dealt by must be MPI's.
    const std::string mine = pack_rows(rows);
    std::vector<std::string> parts;
    bool ok_everywhere = false;
    mpi->run([&](Communicator& c) {
      if (c.rank() != me || c.size() != np) {  // every rank ends: none waits in the gather
        std::cerr << format("tcsolve batch: the launcher's environment placed this process as rank "
                            "%d of %d, MPI as rank %d of %d: the jobs were dealt by the wrong place\n",
                            me, np, c.rank(), c.size());
        c.abort(exit_failed);
      }
      parts = c.gather_strings_to_root(mine);
      ok_everywhere = c.allreduce_max(all_ok ? 0.0 : 1.0) == 0.0;
      return 0;
    });
    trace_mark("batch: rows gathered");
    if (me != 0) return ok_everywhere ? exit_ok : exit_failed;
    rows.clear();
    for (const std::string& p : parts)
      for (Row& r : unpack_rows(p)) rows.push_back(std::move(r));
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.index < b.index; });
    all_ok = ok_everywhere;
  }
  if (json) {
    std::cout << "{\"jobs\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::cout << (i ? ", " : "") << "{\"job\": " << json_string(r.job) << ", \"task\": "
                << json_string(r.task) << ", \"status\": " << json_string(r.status)
                << ", \"seconds\": " << json_number(r.seconds) << ", \"iterations\": "
                << r.iterations << ", \"max_residual\": " << json_number(r.residual)
                << ", \"out\": " << json_string(r.out) << ", \"message\": " << json_string(r.message)
                << (distributed ? ", \"rank\": " + std::to_string(r.rank) : std::string())
                << (r.gpu >= 0 ? ", \"gpu\": " + std::to_string(r.gpu) : std::string()) << "}";
    }
    std::cout << "], \"ok\": " << (all_ok ? "true" : "false") << "}\n";
  } else if (!quiet) {
    std::cout << format("%-16s %-6s %-14s %10s %10s %12s  %s\n", "job", "task", "status", "time",
                        "iterations", "residual", "output / error");
    for (const Row& r : rows)
      std::cout << format("%-16s %-6s %-14s %10s %10lld %12.3e  %s\n", r.job.c_str(),
                          r.task.c_str(), r.status.c_str(), format_seconds(r.seconds).c_str(),
                          (long long)r.iterations, r.residual,
                          r.status == "failed" ? r.message.c_str() : r.out.c_str());
  }
  if (interrupt_requested()) return 128 + (interrupt_signal() > 0 ? interrupt_signal() : 2);
  return all_ok ? exit_ok : exit_failed;
}

}  // namespace tcsolve::app
