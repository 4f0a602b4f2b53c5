// tcsolve batch: a broken job does not stop the others and is recorded; a bad job file is refused
// with its line before anything runs; an interrupted batch (killed) completes with --resume; a
// matrix shared by jobs is read once.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/hdf5_file.hpp"
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

}  // namespace
}  // namespace tcsolve::test
