// SIGINT/SIGTERM during a solve: the iteration stops at its next end, the partial result is
// written atomically with status "interrupted" and the exit status is 128 + signal; a second
// signal exits at once and leaves no file. In a batch the running job is recorded, no further job
// starts, and --resume runs the interrupted job again.
//
// The signal comes from a background subshell that knows the command's PID: the shell's $$,
// which exec hands to tcsolve. The solves below take 10–60 s on a 2-core machine; the signal comes
// after 1.5 s (if it came before the solve started, the solve would stop after one iteration: the
// same outcome).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

namespace fs = std::filesystem;

std::string signal_after(const std::string& sig, double seconds, int times = 1, double gap = 0.6) {
  std::string kills;
  // `gap` apart: within 0.25 s a second signal counts as the first delivered twice.
  for (int i = 0; i < times; ++i)
    kills += (i ? "; sleep " + std::to_string(gap) : std::string()) + "; kill -" + sig + " $$";
  return "(sleep " + std::to_string(seconds) + kills + ") & ";
}

TEST(AppsInterrupt, EigsWritesThePartialResultOnSigterm) {
  ScratchDir d;
  auto r = run_tcsolve_shell({}, signal_after("TERM", 1.5),
                             {"eigs", "gen:lap2d:500", "--k", "8", "--no-factor", "--device", "cpu", "--out",
                              d.file("r.h5")});
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_NE(r.err.find("eigs interrupted (SIGTERM) after"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the partial result is in " + d.file("r.h5")), std::string::npos) << r.err;
  ASSERT_EQ(files_in(d.path()), std::vector<std::string>{"r.h5"});
  Hdf5File f = Hdf5File::open(d.file("r.h5"));
  EXPECT_EQ(f.attr_string("status"), "interrupted");
  EXPECT_EQ(f.read_doubles("eigenvalues").size(), 8u);
  EXPECT_EQ(f.read_doubles("residual_norms").size(), 8u);
  // the current Ritz values: inside the spectrum (0, 8) and ascending (how close to the 8 smallest
  // depends on how many iterations ran before the signal: one, on a loaded machine)
  const auto vals = f.read_doubles("eigenvalues");
  for (std::size_t j = 0; j < vals.size(); ++j) {
    EXPECT_GT(vals[j], 0.0);
    EXPECT_LT(vals[j], 8.0);
    if (j) EXPECT_LE(vals[j - 1], vals[j]);
  }
  for (double r : f.read_doubles("residual_norms")) EXPECT_TRUE(std::isfinite(r));
}

TEST(AppsInterrupt, SolveWritesThePartialResultOnSigint) {
  ScratchDir d;
  auto r = run_tcsolve_shell({}, signal_after("INT", 1.5),
                             {"solve", "gen:lap2d:400", "--rhs", "random:8", "--tol", "1e-13", "--device", "cpu",
                              "--out", d.file("x.h5")});
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("solve interrupted (SIGINT) after"), std::string::npos) << r.err;
  ASSERT_EQ(files_in(d.path()), std::vector<std::string>{"x.h5"});
  Hdf5File f = Hdf5File::open(d.file("x.h5"));
  EXPECT_EQ(f.attr_string("status"), "interrupted");
  std::vector<std::int64_t> dims;
  f.read_doubles("solution", &dims);
  EXPECT_EQ(dims, (std::vector<std::int64_t>{8, 160000}));
  // never worse than the start x = 0 (1 when the signal came before the first iteration, as on a
  // loaded machine)
  for (double v : f.read_doubles("residual_norms")) EXPECT_LE(v, 1.0);
}

// The second signal comes 0.6 s after the first, while the iteration the first one stops is still
// running (a Chebyshev outer iteration on 640k rows: ~2 s here): nothing is printed and nothing
// written.
TEST(AppsInterrupt, SecondSignalExitsAtOnceLeavingNothing) {
  ScratchDir d;
  auto r = run_tcsolve_shell({}, signal_after("TERM", 1.5, 2),
                             {"eigs", "gen:lap2d:800", "--k", "8", "--no-factor", "--device", "cpu", "--out",
                              d.file("r.h5")});
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(files_in(d.path()).empty()) << files_in(d.path()).front();
}

// The same signal delivered twice at once (timeout(1) signals the child and its process group; a
// scheduler may signal the job and its steps) is one request: the partial result is written.
TEST(AppsInterrupt, TheSameSignalDeliveredTwiceIsOneRequest) {
  ScratchDir d;
  auto r = run_tcsolve_shell({}, signal_after("INT", 1.5, 2, 0.02),
                             {"eigs", "gen:lap2d:500", "--k", "8", "--no-factor", "--device", "cpu", "--out",
                              d.file("r.h5")});
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("eigs interrupted (SIGINT) after"), std::string::npos) << r.err;
  ASSERT_EQ(files_in(d.path()), std::vector<std::string>{"r.h5"});
  EXPECT_EQ(Hdf5File::open(d.file("r.h5")).attr_string("status"), "interrupted");
}

TEST(AppsInterrupt, BatchRecordsTheInterruptedJobAndResumeRunsItAgain) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\n\n"
                                   "[job.long]\ntask = eigs\nmatrix = gen:lap2d:500\nk = 8\nno-factor = true\n\n"
                                   "[job.next]\ntask = eigs\nmatrix = gen:lap2d:21x17\nk = 3\n");
  const std::string out = d.file("out");
  auto r = run_tcsolve_shell({}, signal_after("TERM", 1.5), {"batch", jobs, "--output-dir", out, "--json"});
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_NE(r.out.find("{\"job\": \"long\", \"task\": \"eigs\", \"status\": \"interrupted\""), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("{\"job\": \"next\", \"task\": \"eigs\", \"status\": \"not run\""), std::string::npos) << r.out;
  EXPECT_EQ(files_in(out), std::vector<std::string>{"long.h5"});
  EXPECT_EQ(Hdf5File::open(out + "/long.h5").attr_string("status"), "interrupted");
  // --resume runs it again (not "skipped"): interrupted again here, to keep the test short
  auto again = run_tcsolve_shell({}, signal_after("TERM", 1.5),
                                 {"batch", jobs, "--output-dir", out, "--json", "--resume"});
  EXPECT_EQ(again.status, 143) << again.err;
  EXPECT_NE(again.out.find("{\"job\": \"long\", \"task\": \"eigs\", \"status\": \"interrupted\""),
            std::string::npos)
      << again.out;
}

// Workers at once (the test hook's CPU workers, as a worker per GPU runs): SIGTERM stops every
// running job at its next iteration (each recorded as interrupted, its partial result written),
// the jobs no worker took are listed as not run, and every job appears once, in the file's order.
TEST(AppsInterrupt, ConcurrentWorkersEachRecordTheirInterruptedJob) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\ntask = eigs\nk = 8\nno-factor = true\n\n"
                                   "[job.long1]\nmatrix = gen:lap2d:500\n\n"
                                   "[job.long2]\nmatrix = gen:lap2d:501\n\n"
                                   "[job.next1]\nmatrix = gen:lap2d:21x17\nk = 3\n\n"
                                   "[job.next2]\nmatrix = gen:lap2d:23x17\nk = 3\n");
  const std::string out = d.file("out");
  auto r = run_tcsolve_shell({"TCSOLVE_TEST_BATCH_WORKERS=2"}, signal_after("TERM", 2.0),
                             {"batch", jobs, "--output-dir", out, "--json"});
  EXPECT_EQ(r.status, 143) << r.err;
  for (const char* job : {"long1", "long2"})
    EXPECT_NE(r.out.find(std::string("{\"job\": \"") + job + "\", \"task\": \"eigs\", \"status\": \"interrupted\""),
              std::string::npos)
        << job << ": " << r.out;
  for (const char* job : {"next1", "next2"})
    EXPECT_NE(r.out.find(std::string("{\"job\": \"") + job + "\", \"task\": \"eigs\", \"status\": \"not run\""),
              std::string::npos)
        << job << ": " << r.out;
  std::size_t at = 0;
  for (const char* job : {"long1", "long2", "next1", "next2"}) {
    const auto p = r.out.find(std::string("\"job\": \"") + job + "\"", at);
    ASSERT_NE(p, std::string::npos) << job << " out of order: " << r.out;
    at = p;
  }
  EXPECT_EQ(files_in(out), (std::vector<std::string>{"long1.h5", "long2.h5"}));
  for (const char* job : {"long1", "long2"})
    EXPECT_EQ(Hdf5File::open(out + "/" + job + ".h5").attr_string("status"), "interrupted") << job;
}

}  // namespace
}  // namespace tcsolve::test
