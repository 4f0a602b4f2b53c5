// tcsolve batch: a broken job does not stop the others and is recorded; a bad job file is refused
// with its line before anything runs; an interrupted batch (killed) completes with --resume; a
// matrix shared by jobs is read once.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/csr.hpp"
#include "io/atomic_file.hpp"
#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "io/matrix_io.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

namespace fs = std::filesystem;

const char* const kJobs =
    "# three jobs on one matrix and a broken one\n"  // 1
    "[defaults]\n"                                    // 2
    "device = cpu\n"                                  // 3
    "tol = 1e-8\n"                                    // 4
    "\n"                                              // 5
    "[job.low]\n"                                     // 6
    "task = eigs\n"                                   // 7
    "matrix = gen:lap2d:21x17\n"                      // 8
    "k = 3\n"                                         // 9
    "\n"
    "[job.broken]\n"
    "task = eigs\n"
    "matrix = does_not_exist.mtx\n"
    "\n"
    "[job.poisson]\n"
    "task = solve\n"
    "matrix = gen:lap2d:21x17\n"
    "rhs = random:2\n"
    "\n"
    "[job.high]\n"
    "task = eigs\n"
    "matrix = gen:lap2d:21x17\n"
    "which = largest\n"
    "k = 2\n"
    "plot = high.svg   # relative to --output-dir\n";

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> t;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) t.push_back(e.path());
  return t;
}

TEST(AppsBatch, BrokenJobIsRecordedAndOthersComplete) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini", kJobs), out = d.file("out");
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
  EXPECT_EQ(r.status, 1) << r.err;  // one job failed
  for (const char* name : {"low", "poisson", "high"}) {
    Hdf5File f = Hdf5File::open(out + "/" + name + ".h5");
    EXPECT_EQ(f.attr_string("status"), "converged") << name;
    EXPECT_EQ(f.attr_string("job"), name);
  }
  Hdf5File b = Hdf5File::open(out + "/broken.h5");
  EXPECT_EQ(b.attr_string("status"), "failed");
  EXPECT_NE(b.attr_string("error").find("does_not_exist.mtx"), std::string::npos);
  EXPECT_FALSE(b.has_dataset("eigenvalues"));
  // summary table: every job with its status
  EXPECT_NE(r.out.find("broken"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5) << r.out;  // header + 4 jobs
  EXPECT_TRUE(fs::exists(out + "/high.svg"));
  // the shared matrix was read once: by the first job only
  EXPECT_GT(Hdf5File::open(out + "/low.h5").attr_double("time_read"), 0.0);
  EXPECT_EQ(Hdf5File::open(out + "/poisson.h5").attr_string("matrix_checksum"),
            Hdf5File::open(out + "/low.h5").attr_string("matrix_checksum"));
  for (const char* name : {"poisson", "high"}) {
    // solve reads its random right-hand sides (time > 0 possible); eigs reads nothing
    if (std::string(name) == "high")
      EXPECT_EQ(Hdf5File::open(out + "/high.h5").attr_double("time_read"), 0.0);
  }
  EXPECT_TRUE(temp_files(out).empty());
}

// A job's result file goes to disk while the next job runs (batch's deferred write); a job that
// starts from an earlier job's eigenvectors waits for that file, and every file is complete and
// in place when the batch ends.
TEST(AppsBatch, AJobReadsTheResultThePreviousJobIsStillWriting) {
  ScratchDir d;
  const std::string out = d.file("out");
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\nmatrix = gen:lap2d:60\nk = 6\n\n"
                                   "[job.first]\ntask = eigs\n\n"
                                   "[job.warm]\ntask = eigs\nstart = " + out + "/first.h5\n\n"
                                   "[job.third]\ntask = eigs\nwhich = largest\n\n"
                                   "[job.fourth]\ntask = solve\nrhs = random:3\n");
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"first", "warm", "third", "fourth"}) {
    Hdf5File f = Hdf5File::open(out + "/" + std::string(name) + ".h5");
    EXPECT_EQ(f.attr_string("status"), "converged") << name;
  }
  Hdf5File w = Hdf5File::open(out + "/warm.h5");
  EXPECT_EQ(w.attr_string("start"), out + "/first.h5");
  // the warm start began from the converged vectors: fewer iterations than the cold run
  EXPECT_LE(w.attr_int64("iterations"), Hdf5File::open(out + "/first.h5").attr_int64("iterations"));
  const auto e1 = Hdf5File::open(out + "/first.h5").read_doubles("eigenvalues");
  const auto e2 = w.read_doubles("eigenvalues");
  ASSERT_EQ(e1.size(), e2.size());
  for (std::size_t j = 0; j < e1.size(); ++j) EXPECT_NEAR(e2[j], e1[j], 1e-10 * std::abs(e1[j])) << j;
  EXPECT_TRUE(temp_files(out).empty());
  EXPECT_EQ(files_in(out), (std::vector<std::string>{"first.h5", "fourth.h5", "third.h5", "warm.h5"}));
}

// --gpus N|all: a count that is not one is refused before any job runs; CPU jobs run in one
// worker whatever the count (no "gpu" in the rows).
TEST(AppsBatch, GpusOptionIsCheckedAndCpuJobsRunInOneWorker) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\nmatrix = gen:lap2d:20\nk = 2\n\n"
                                   "[job.a]\ntask = eigs\n\n[job.b]\ntask = eigs\nwhich = largest\n");
  for (const char* bad : {"0", "-1", "two", "2x", ""}) {
    auto r = run_tcsolve({"batch", jobs, "--gpus", bad, "--output-dir", d.file("bad")});
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--gpus"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(d.file("bad") + "/a.h5")) << bad;
  }
  auto r = run_tcsolve({"batch", jobs, "--gpus", "4", "--output-dir", d.file("out"), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("\"gpu\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"job\": \"b\""), std::string::npos) << r.out;
}

// The concurrent path (a worker per GPU) on the CPU, through the test hook's workers: every job
// runs once and right (closed forms), the chained job after its input on the same worker, a
// failing job fails alone, the summary is in the file's order, --resume skips what is done.
TEST(AppsBatch, ConcurrentWorkersRunEveryJobOnce) {
  ScratchDir d;
  const std::string out = d.file("out");
  std::string ini = "[defaults]\ndevice = cpu\ntask = eigs\nk = 3\nwhich = largest\n\n";
  const int sizes[] = {31, 29, 31, 27, 25, 23};
  for (int j = 0; j < 6; ++j)
    ini += "[job.j" + std::to_string(j) + "]\nmatrix = gen:lap2d:" + std::to_string(sizes[j]) + "\n" +
           (j == 2 ? "start = " + out + "/j0.h5\n" : std::string()) + "\n";
  ini += "[job.bad]\nmatrix = no_such.mtx\n\n[job.cg]\ntask = solve\nmatrix = gen:lap2d:30\nrhs = random:2\n";
  const std::string jobs = d.write("jobs.ini", ini);
  auto r = run_tcsolve_env({"TCSOLVE_TEST_BATCH_WORKERS=3"}, {"batch", jobs, "--output-dir", out});
  EXPECT_EQ(r.status, 1) << r.err;  // the bad job
  for (int j = 0; j < 6; ++j) {
    SCOPED_TRACE(j);
    Hdf5File f = Hdf5File::open(out + "/j" + std::to_string(j) + ".h5");
    ASSERT_EQ(f.attr_string("status"), "converged");
    const std::vector<double> exact = lap2d_eigenvalues(sizes[j], sizes[j]);
    const auto vals = f.read_doubles("eigenvalues");
    ASSERT_EQ(vals.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(vals[i], exact[exact.size() - 1 - i], 1e-7) << i;
  }
  EXPECT_EQ(Hdf5File::open(out + "/bad.h5").attr_string("status"), "failed");
  EXPECT_EQ(Hdf5File::open(out + "/cg.h5").attr_string("status"), "converged");
  // Every job once, in the file's order in the summary (header + 8 rows).
  EXPECT_EQ(count_lines(r.out), 9) << r.out;
  std::size_t at = 0;
  for (const char* name : {"j0", "j1", "j2", "j3", "j4", "j5", "bad", "cg"}) {
    const auto p = r.out.find(std::string("\n") + name + " ", at);
    ASSERT_NE(p, std::string::npos) << name << " after " << at << ": " << r.out;
    at = p + 1;
  }
  // More than one worker ran jobs; j2 (start = j0's result) ran on j0's worker.
  auto worker_of = [&](const std::string& job) {
    const auto p = r.err.find("] " + job + ": ");
    if (p == std::string::npos) return std::string("?");
    const auto line = r.err.rfind('\n', p);
    const std::string head = r.err.substr(line == std::string::npos ? 0 : line + 1, p - (line == std::string::npos ? 0 : line + 1));
    return head.substr(0, head.find(':'));
  };
  EXPECT_EQ(worker_of("j2"), worker_of("j0")) << r.err;
  EXPECT_NE(r.err.find("worker 1: "), std::string::npos) << r.err;
  EXPECT_TRUE(temp_files(out).empty());
  auto again = run_tcsolve_env({"TCSOLVE_TEST_BATCH_WORKERS=3"}, {"batch", jobs, "--output-dir", out, "--resume"});
  EXPECT_EQ(again.status, 1) << again.err;  // bad runs again and fails again
  EXPECT_EQ(count_lines(again.out), 9) << again.out;  // header + the 8 jobs
  for (const char* name : {"j0", "j1", "j2", "j3", "j4", "j5", "cg"}) {
    const auto p = again.out.find(std::string("\n") + name + " ");
    ASSERT_NE(p, std::string::npos) << again.out;
    EXPECT_NE(again.out.substr(p, again.out.find('\n', p + 1) - p).find("skipped"), std::string::npos) << name;
  }
}

TEST(AppsBatch, BadJobFileIsRefusedWithLineBeforeRunning) {
  ScratchDir d;
  const std::string out = d.file("out");
  struct Case {
    std::string text;
    int line;
    std::string what;
  };
  for (const Case& c : std::vector<Case>{
           {std::string(kJobs) + "tol = fast\n", 26, "'--tol' is invalid"},
           {std::string(kJobs) + "\n[job.x]\ntask = eigs\nmatrix = gen:lap2d:5\nrhs = random:2\n", 30,
            "'rhs' does not apply to task eigs"},
           {std::string(kJobs) + "colour = red\n", 26, "unknown key 'colour'"},
           {std::string(kJobs) + "[job.low]\n", 26, "appears twice"},
           {std::string(kJobs) + "[jobs.y]\n", 26, "unknown section"},
           {std::string(kJobs) + "[job.w]\ntask = eigs\nmatrix = gen:lap2d:5\nwhich = middle\n", 29,
            "--which 'middle'"},
           {std::string(kJobs) + "which = lowest\n", 26, "given twice"},
           {std::string(kJobs) + "[job.z]\ntask = invert\nmatrix = gen:lap2d:5\n", 27, "task 'invert'"},
           {std::string(kJobs) + "this line has no equals sign\n", 26, "expected 'key = value'"},
       }) {
    const std::string jobs = d.write("bad.ini", c.text);
    auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
    EXPECT_EQ(r.status, 2) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(jobs + ":" + std::to_string(c.line) + ":"), std::string::npos)
        << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.what), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_FALSE(fs::exists(out)) << "nothing may run for a bad job file";
  }
}

TEST(AppsBatch, InterruptedBatchResumes) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini", kJobs), out = d.file("out");
  // killed (SIGKILL) right after job "low": later jobs never ran
  auto k = run_tcsolve_env({"TCSOLVE_TEST_ABORT_AFTER_JOB=low"}, {"batch", jobs, "--output-dir", out, "-q"});
  EXPECT_EQ(k.status, 128 + 9) << k.err;
  EXPECT_TRUE(fs::exists(out + "/low.h5"));
  EXPECT_FALSE(fs::exists(out + "/poisson.h5"));
  EXPECT_FALSE(fs::exists(out + "/high.h5"));
  const auto low_time = fs::last_write_time(out + "/low.h5");
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(r.status, 1) << r.err;  // the broken job still fails
  EXPECT_NE(r.out.find("{\"job\": \"low\", \"task\": \"eigs\", \"status\": \"skipped\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"job\": \"poisson\", \"task\": \"solve\", \"status\": \"converged\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"job\": \"high\", \"task\": \"eigs\", \"status\": \"converged\""), std::string::npos) << r.out;
  EXPECT_EQ(fs::last_write_time(out + "/low.h5"), low_time) << "a complete output was redone";
  EXPECT_EQ(Hdf5File::open(out + "/high.h5").attr_string("status"), "converged");
  EXPECT_TRUE(temp_files(out).empty());
}

// --resume keeps a stored result only for the same job: a changed option or a matrix file with
// new content runs again (the same content under a new modification time does not); the
// temporary files an interrupted writer left next to the outputs are removed, others are not.
TEST(AppsBatch, ResumeRerunsChangedJobsAndRemovesStaleTemporaries) {
  ScratchDir d;
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:30", d.file("m.mtx")}).status, 0);
  auto jobs_with = [&](const std::string& gen) {
    return d.write("jobs.ini", "[defaults]\ndevice = cpu\n\n[job.a]\ntask = eigs\nmatrix = " + gen +
                                   "\nk = 3\n\n[job.b]\ntask = eigs\nmatrix = " + d.file("m.mtx") + "\nk = 3\n");
  };
  const std::string out = d.file("out");
  auto status_of = [](const RunResult& r, const std::string& job) {
    const std::string key = "{\"job\": \"" + job + "\", \"task\": \"eigs\", \"status\": \"";
    const auto p = r.out.find(key);
    if (p == std::string::npos) return std::string("absent");
    return r.out.substr(p + key.size(), r.out.find('"', p + key.size()) - p - key.size());
  };
  ASSERT_EQ(run_tcsolve({"batch", jobs_with("gen:lap2d:60"), "--output-dir", out, "-q"}).status, 0);
  // (the AtomicFile pattern, TARGET.tmp-PID-HOST-XXXXXX: removed only when the writer is gone)
  std::ofstream(dead_writers_temporary(out + "/a.h5")) << "half";
  std::ofstream(dead_writers_temporary(out + "/b.h5", "000000")) << "";
  const std::string other = dead_writers_temporary(out + "/other.h5", "abcdef");
  std::ofstream(other) << "not ours";
  d.write("out/a.h5.tmp-long-name", "not the pattern");
  const std::string live = out + "/a.h5.tmp-" + std::to_string(::getpid()) + "-" + atomic_file_detail::host_tag() + "-abcdef";
  std::ofstream(live) << "a live writer's";

  auto same = run_tcsolve({"batch", jobs_with("gen:lap2d:60"), "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(same.status, 0) << same.err;
  EXPECT_EQ(status_of(same, "a"), "skipped");
  EXPECT_EQ(status_of(same, "b"), "skipped");
  EXPECT_NE(same.err.find("removed 2 temporary file(s)"), std::string::npos) << same.err;
  std::vector<std::string> left;
  for (const auto& t : temp_files(out)) left.push_back(fs::path(t).filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> want = {"a.h5.tmp-long-name", fs::path(live).filename().string(),
                                   fs::path(other).filename().string()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(left, want);

  // a changed option (the generator's size): job a runs again, b stays
  auto changed = run_tcsolve({"batch", jobs_with("gen:lap2d:61"), "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(status_of(changed, "a"), "converged") << changed.out;
  EXPECT_EQ(status_of(changed, "b"), "skipped");
  EXPECT_NE(changed.err.find("a: running again: the job's options changed"), std::string::npos) << changed.err;
  EXPECT_EQ(Hdf5File::open(out + "/a.h5").attr_int64("rows"), 61 * 61);

  // the matrix file rewritten with the same content (new time): kept; with new content: rerun
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:30", d.file("m.mtx")}).status, 0);
  auto touched = run_tcsolve({"batch", jobs_with("gen:lap2d:61"), "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(status_of(touched, "b"), "skipped") << touched.err;
  // a result of an earlier version (its checksum "fnv1a64:", FNV-1a over every byte) is still
  // recognised as this matrix's, and a wrong one of that kind is not
  {
    const Csr<double> m = read_matrix(d.file("m.mtx"));
    const std::string legacy = csr_checksum_fnv1a64(m);
    ASSERT_EQ(legacy.rfind("fnv1a64:", 0), 0u);
    Hdf5File::open(out + "/b.h5", true).set_attr("matrix_checksum", legacy);
  }
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:30", d.file("m.mtx")}).status, 0);  // (new time again)
  auto legacy = run_tcsolve({"batch", jobs_with("gen:lap2d:61"), "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(status_of(legacy, "b"), "skipped") << legacy.err;
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:31", d.file("m.mtx")}).status, 0);
  auto rewritten = run_tcsolve({"batch", jobs_with("gen:lap2d:61"), "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(status_of(rewritten, "a"), "skipped");
  EXPECT_EQ(status_of(rewritten, "b"), "converged") << rewritten.err;
  EXPECT_NE(rewritten.err.find("the matrix " + d.file("m.mtx") + " changed"), std::string::npos) << rewritten.err;
  EXPECT_EQ(Hdf5File::open(out + "/b.h5").attr_int64("rows"), 31 * 31);
}

// Batch jobs solve every kind of matrix with the method and restart they name (issue 43): GMRES(10)
// and UMFPACK on a convection-diffusion matrix, MINRES and auto on a Helmholtz matrix, against a
// known solution; a method that does not fit the matrix's kind fails that job alone, naming the kind.
TEST(AppsBatch, SolveJobsTakeEveryKindAndTheirMethod) {
  ScratchDir d;
  const std::string conv = "gen:convdiff2d:40", helm = "gen:helmholtz2d:40";
  const std::int64_t s = 2;
  std::map<std::string, std::pair<Csr<double>, std::vector<double>>> sys;  // spec -> (A, X true)
  for (const std::string& spec : {conv, helm}) {
    Csr<double> a = generate(spec);
    const std::int64_t n = a.nrows;
    std::vector<double> x(n * s), b(n * s);
    for (std::int64_t i = 0; i < n * s; ++i) x[i] = std::cos(0.11 * i) + 0.5;
    csr_spmm_reference(a, x.data(), n, b.data(), n, static_cast<int>(s));
    Hdf5File f = Hdf5File::create(d.file(spec.substr(4, 4) + "_b.h5"));
    f.write_2d("B", b.data(), s, n);
    f.close();
    sys.emplace(spec, std::make_pair(std::move(a), std::move(x)));
  }
  const std::string bc = d.file("conv_b.h5") + ":B", bh = d.file("helm_b.h5") + ":B", out = d.file("out");
  const std::string jobs = d.write(
      "jobs.ini", "[defaults]\ndevice = cpu\ntask = solve\ntol = 1e-10\n\n"
                  "[job.gm]\nmatrix = " + conv + "\nrhs = " + bc + "\nmethod = gmres\nrestart = 10\n\n"
                  "[job.lu]\nmatrix = " + conv + "\nrhs = " + bc + "\nmethod = direct\n\n"
                  "[job.wrong]\nmatrix = " + conv + "\nrhs = " + bc + "\nmethod = cg\n\n"
                  "[job.mr]\nmatrix = " + helm + "\nrhs = " + bh + "\nmethod = minres\n\n"
                  "[job.auto]\nmatrix = " + helm + "\nrhs = " + bh + "\n");
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
  EXPECT_EQ(r.status, 1) << r.err;  // the wrong job only
  const struct { const char* job; const std::string& spec; const char* method; const char* kind; } rows[] = {
      {"gm", conv, "gmres(10)", "unsymmetric"},
      {"lu", conv, "klu", "unsymmetric"},  // (a small A of low fill: KLU's LU)
      {"mr", helm, "minres", "symmetric"},
      {"auto", helm, "", "symmetric"}};
  for (const auto& row : rows) {
    SCOPED_TRACE(row.job);
    Hdf5File f = Hdf5File::open(out + "/" + row.job + ".h5");
    ASSERT_EQ(f.attr_string("status"), "converged") << f.attr_string("method_reason");
    EXPECT_EQ(f.attr_string("method").rfind(row.method, 0), 0u) << f.attr_string("method");
    EXPECT_NE(f.attr_string("matrix_kind").find(row.kind), std::string::npos) << f.attr_string("matrix_kind");
    const auto& [a, xt] = sys.at(row.spec);
    const std::int64_t n = a.nrows;
    std::vector<std::int64_t> dims;
    const auto x = f.read_doubles("solution", &dims);
    ASSERT_EQ(dims, (std::vector<std::int64_t>{s, n}));
    std::vector<double> ax(n * s), b(n * s);
    csr_spmm_reference(a, x.data(), n, ax.data(), n, static_cast<int>(s));
    csr_spmm_reference(a, xt.data(), n, b.data(), n, static_cast<int>(s));
    for (std::int64_t j = 0; j < s; ++j) {
      double rr = 0, bb = 0, ee = 0, xx = 0;
      for (std::int64_t i = j * n; i < (j + 1) * n; ++i) {
        rr += (b[i] - ax[i]) * (b[i] - ax[i]), bb += b[i] * b[i];
        ee += (x[i] - xt[i]) * (x[i] - xt[i]), xx += xt[i] * xt[i];
      }
      EXPECT_LE(std::sqrt(rr / bb), 1e-9) << "column " << j;  // tol 1e-10 plus the stored answer's rounding
      EXPECT_LE(std::sqrt(ee / xx), 1e-5) << "column " << j;
    }
  }
  Hdf5File w = Hdf5File::open(out + "/wrong.h5");
  EXPECT_EQ(w.attr_string("status"), "failed");
  EXPECT_NE(w.attr_string("error").find("unsymmetric"), std::string::npos) << w.attr_string("error");
  EXPECT_TRUE(temp_files(out).empty());
}

}  // namespace
}  // namespace tcsolve::test
