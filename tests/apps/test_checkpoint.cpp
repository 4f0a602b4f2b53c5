// Checkpoints (issue 18 §3): --checkpoint writes the solver's block atomically while it runs; a
// run killed with SIGKILL continues with --resume-from and reaches the same answer (closed forms
// and true residuals); a batch job (eigs, svds) checkpoints on its own and `batch --resume`
// continues it; a
// checkpoint of another matrix or task, or a result file, is refused with what differs.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

namespace fs = std::filesystem;

// Eigenvalues of gen:lap2d:N (N × N), descending.
std::vector<double> lap2d_largest(int nn) {
  std::vector<double> v = lap2d_eigenvalues(nn, nn);
  std::reverse(v.begin(), v.end());
  return v;
}

// Runs `tcsolve ARGS` in the background (its shell's PID in pidfile: exec hands it to tcsolve),
// waits until `file` exists and has a committed checkpoint, then kills it with SIGKILL.
void run_until_checkpoint_then_kill(const ScratchDir& d, const std::vector<std::string>& args,
                                    const std::string& file) {
  const std::string pidfile = d.file("pid");
  auto child = std::async(std::launch::async, [&] {
    return run_tcsolve_shell({}, "echo $$ > " + pidfile + "; ", args);
  });
  bool killed = false;
  for (int i = 0; i < 1200 && child.wait_for(std::chrono::milliseconds(25)) != std::future_status::ready; ++i) {
    std::error_code ec;
    if (fs::exists(file, ec) && fs::exists(pidfile, ec)) {
      const int pid = std::stoi(read_file(pidfile));
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
  }
  const RunResult r = child.get();
  ASSERT_TRUE(killed) << "no checkpoint appeared: " << r.err << r.out;
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
}

TEST(AppsCheckpoint, EigsKilledThenResumedReachesTheSameAnswer) {
  ScratchDir d;
  const std::string ck = d.file("ck.h5");
  const std::vector<std::string> base = {"eigs", "gen:lap2d:160", "--k", "8", "--which", "largest",
                                         "--method", "chebyshev", "--tol", "1e-10", "--device", "cpu"};
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--checkpoint", ck, "--checkpoint-every", "0.05"});
  run_until_checkpoint_then_kill(d, first, ck);
  {
    Hdf5File f = Hdf5File::open(ck);
    EXPECT_EQ(f.attr_string("kind"), "tcsolve checkpoint");
    EXPECT_GE(f.attr_int64("iteration"), 1);
    std::vector<std::int64_t> dims;
    f.read_doubles("block", &dims);
    ASSERT_EQ(dims.size(), 2u);
    EXPECT_GE(dims[0], 8);
    EXPECT_EQ(dims[1], 25600);
  }
  // a temporary a killed writer may leave (one of the two kills on the H200 did) goes
  // when the next run with that checkpoint starts
  const std::string stale = dead_writers_temporary(ck, "abc123");
  std::ofstream(stale) << "half-written";
  std::vector<std::string> resume = base;
  resume.insert(resume.end(), {"--resume-from", ck, "--checkpoint", ck, "--checkpoint-every", "100",
                               "--out", d.file("r.h5"), "--json"});
  auto r = run_tcsolve(resume);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("resumed from " + ck + " (iteration"), std::string::npos) << r.out;
  Hdf5File f = Hdf5File::open(d.file("r.h5"));
  EXPECT_EQ(f.attr_string("status"), "converged");
  EXPECT_EQ(f.attr_string("resumed_from"), ck);
  EXPECT_FALSE(fs::exists(stale));
  const auto exact = lap2d_largest(160);
  const auto vals = f.read_doubles("eigenvalues");
  ASSERT_EQ(vals.size(), 8u);
  for (int j = 0; j < 8; ++j) EXPECT_NEAR(vals[j], exact[j], 1e-10 * exact[j]) << j;
}

TEST(AppsCheckpoint, SolveKilledThenResumedConverges) {
  ScratchDir d;
  const std::string ck = d.file("x.checkpoint.h5");
  const std::vector<std::string> base = {"solve", "gen:lap3d:50", "--rhs", "random:6", "--tol", "1e-12",
                                         "--device", "cpu"};
  std::vector<std::string> cold_args = base;
  cold_args.push_back("--json");
  auto cold = run_tcsolve(cold_args);
  ASSERT_EQ(cold.status, 0) << cold.err;
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--checkpoint", ck, "--checkpoint-every", "0.5"});
  run_until_checkpoint_then_kill(d, first, ck);
  std::vector<std::string> resume = base;
  resume.insert(resume.end(), {"--resume-from", ck, "--out", d.file("x.h5"), "--json"});
  auto r = run_tcsolve(resume);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  // from the checkpointed iterate: fewer iterations than from zero
  EXPECT_LT(json_number(r.out, "iterations"), json_number(cold.out, "iterations")) << r.out;
  Hdf5File f = Hdf5File::open(d.file("x.h5"));
  for (double v : f.read_doubles("residual_norms")) EXPECT_LE(v, 1.01e-12);
}

TEST(AppsCheckpoint, ForeignFilesAreRefusedWithWhatDiffers) {
  ScratchDir d;
  const std::string ck = d.file("ck.h5");
  // a quick run that still writes checkpoints (every 1 ms)
  auto w = run_tcsolve({"eigs", "gen:lap2d:40", "--k", "4", "--method", "lobpcg", "--device", "cpu",
                        "--checkpoint", ck, "--checkpoint-every", "0.001", "--out", d.file("r.h5"),
                        "--json"});
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_GE(json_number(w.out.substr(w.out.find("\"checkpoints\"")), "count"), 1) << w.out;
  auto expect_refused = [](const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  };
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:41x39", "--k", "4", "--device", "cpu", "--resume-from", ck}),
                 "written for another matrix");
  expect_refused(run_tcsolve({"solve", "gen:lap2d:40", "--rhs", "random:1", "--device", "cpu", "--resume-from", ck}),
                 "a checkpoint of eigs, not of solve");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:40", "--k", "4", "--device", "cpu", "--resume-from", d.file("r.h5")}),
                 "not a tcsolve checkpoint");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:40", "--k", "4", "--device", "cpu", "--resume-from", ck,
                              "--start", d.file("r.h5")}),
                 "--resume-from and --start both give the start");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:40", "--k", "4", "--device", "cpu", "--checkpoint", ck,
                              "--checkpoint-every", "0"}),
                 "--checkpoint-every 0: expected a positive number");
  expect_refused(run_tcsolve({"eigs", "gen:lap2d:40", "--k", "4", "--device", "cpu", "--checkpoint",
                              d.file("r.h5"), "--out", d.file("r.h5")}),
                 "--checkpoint and --out name the same file");
}

// Shift-invert Lanczos checkpoints the Ritz vectors it keeps at a thick restart; a resumed run
// starts from the first block of them and reaches the closed form.
TEST(AppsCheckpoint, LanczosCheckpointsItsKeptRitzVectors) {
  ScratchDir d;
  const std::string ck = d.file("lk.h5");
  const std::vector<std::string> base = {"eigs", "gen:lap2d:150", "--k", "24", "--sigma", "0", "--method",
                                         "lanczos", "--device", "cpu", "--json"};
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--checkpoint", ck, "--checkpoint-every", "0.001"});
  auto w = run_tcsolve(first);
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_GE(json_number(w.out.substr(w.out.find("\"checkpoints\"")), "count"), 1) << w.out;
  {
    Hdf5File f = Hdf5File::open(ck);
    std::vector<std::int64_t> dims;
    f.read_doubles("block", &dims);
    ASSERT_EQ(dims.size(), 2u);
    EXPECT_GE(dims[0], 24);  // at least the k wanted are kept
    EXPECT_EQ(dims[1], 22500);
  }
  std::vector<std::string> resume = base;
  resume.insert(resume.end(), {"--resume-from", ck});
  auto r = run_tcsolve(resume);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("resumed from " + ck), std::string::npos) << r.out;
  std::vector<double> exact = lap2d_largest(150);
  std::reverse(exact.begin(), exact.end());  // ascending: the smallest first
  const char* c = r.out.c_str() + r.out.find("\"eigenvalues\": [") + 16;
  for (int j = 0; j < 24; ++j) {
    char* end = nullptr;
    EXPECT_NEAR(std::strtod(c, &end), exact[j], 1e-9 * exact[j]) << j;
    c = end + 1;
  }
}

// A batch job (`job`: its keys) killed mid-solve left OUT.checkpoint.h5; --resume continues it
// from there (the note says so) and removes the checkpoint once the result is written, whose
// `dataset` then holds `exact` (to 1e-10 relative).
void expect_batch_job_resumes(const std::string& job, const char* dataset, const std::vector<double>& exact) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini", "[defaults]\ndevice = cpu\n\n[job.long]\n" + job);
  const std::string out = d.file("out");
  const std::string ck = out + "/long.checkpoint.h5";
  run_until_checkpoint_then_kill(d, {"batch", jobs, "--output-dir", out, "--checkpoint-every", "0.05", "-q"}, ck);
  EXPECT_FALSE(fs::exists(out + "/long.h5"));
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out, "--resume", "--json"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("resumed from " + ck), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(ck));
  Hdf5File f = Hdf5File::open(out + "/long.h5");
  EXPECT_EQ(f.attr_string("status"), "converged");
  const auto vals = f.read_doubles(dataset);
  ASSERT_EQ(vals.size(), exact.size());
  for (std::size_t j = 0; j < exact.size(); ++j) EXPECT_NEAR(vals[j], exact[j], 1e-10 * exact[j]) << j;
  // a short job writes no checkpoint at the default interval, and leaves none
  auto again = run_tcsolve({"batch", jobs, "--output-dir", out, "--resume", "-q"});
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_FALSE(fs::exists(ck));
}

TEST(AppsCheckpoint, BatchJobsCheckpointOnTheirOwnAndResumeContinues) {
  const auto exact = lap2d_largest(160);
  expect_batch_job_resumes("task = eigs\nmatrix = gen:lap2d:160\nk = 8\nwhich = largest\nmethod = chebyshev\ntol = 1e-10\n",
                           "eigenvalues", {exact.begin(), exact.begin() + 8});
}

// svds (issue 44 §3): its checkpoint holds the right basis of a thick restart, which the resumed
// job continues; the singular values of gen:lap2d:60 are its eigenvalues.
TEST(AppsCheckpoint, BatchSvdsJobCheckpointsAndResumeContinues) {
  const auto exact = lap2d_largest(60);
  expect_batch_job_resumes("task = svds\nmatrix = gen:lap2d:60\nk = 6\ntol = 1e-10\n", "s",
                           {exact.begin(), exact.begin() + 6});
}

}  // namespace
}  // namespace tcsolve::test
