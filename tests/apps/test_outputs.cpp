// Output files never lose or damage anything: a full disk (simulated by a file size limit, whose
// EFBIG takes the same path as ENOSPC) leaves no file, no temporary file and a plain message, and
// never a crash; an output naming a missing folder, a folder, or one of the job's own inputs is
// refused before the solve, for eigs, solve and each job of a batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

namespace fs = std::filesystem;

void expect_usage_error(const RunResult& r, const std::string& must_contain) {
  EXPECT_EQ(r.status, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos) << "expected '" << must_contain << "' in: " << r.err;
  EXPECT_EQ(r.out, "") << "it solved before refusing the output";
}

// 300 blocks: 150 KiB under dash, 300 KiB under bash. The results below are 0.6–1.3 MB.
constexpr std::int64_t kLimitBlocks = 300;

TEST(AppsOutputs, FullDiskLeavesNoFileAndSaysWhy) {
  ScratchDir d;
  // Control: without the limit the same command writes its file (so the limit is what fails).
  const std::vector<std::string> eigs = {"eigs", "gen:lap2d:100", "--k", "8", "--device", "cpu",
                                         "--out", d.file("r.h5")};
  auto ok = run_tcsolve(eigs);
  ASSERT_EQ(ok.status, 0) << ok.err;
  ASSERT_GT(fs::file_size(d.file("r.h5")), 400000u);
  fs::remove(d.file("r.h5"));

  auto r = run_tcsolve_file_limit(kLimitBlocks, eigs);
  EXPECT_EQ(r.status, 1) << r.err;  // ran, could not save: not 139 (HDF5's exit handler on a failed close)
  EXPECT_NE(r.err.find("file size limit exceeded writing " + d.file("r.h5")), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_TRUE(files_in(d.path()).empty()) << files_in(d.path()).front();

  auto s = run_tcsolve_file_limit(kLimitBlocks, {"solve", "gen:lap2d:100", "--rhs", "random:16", "--device",
                                                 "cpu", "--out", d.file("x.h5")});
  EXPECT_EQ(s.status, 1) << s.err;
  EXPECT_NE(s.err.find("file size limit exceeded writing " + d.file("x.h5")), std::string::npos) << s.err;
  EXPECT_TRUE(files_in(d.path()).empty());

  // A matrix written by convert: the same, and an existing file is left as it was.
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:20", d.file("m.h5")}).status, 0);
  const auto before = read_file(d.file("m.h5"));
  auto c = run_tcsolve_file_limit(kLimitBlocks, {"convert", "gen:lap2d:200", d.file("m.h5")});
  EXPECT_EQ(c.status, 1) << c.err;
  EXPECT_NE(c.err.find("file size limit exceeded"), std::string::npos) << c.err;
  EXPECT_EQ(read_file(d.file("m.h5")), before);
  EXPECT_EQ(files_in(d.path()), std::vector<std::string>{"m.h5"});
}

TEST(AppsOutputs, BatchRecordsTheJobThatCouldNotBeWrittenAndKeepsTheOthers) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\n\n"
                                   "[job.small]\ntask = eigs\nmatrix = gen:lap2d:21x17\nk = 3\n\n"
                                   "[job.big]\ntask = solve\nmatrix = gen:lap2d:100\nrhs = random:16\n");
  const std::string out = d.file("out");
  auto r = run_tcsolve_file_limit(kLimitBlocks, {"batch", jobs, "--output-dir", out});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(Hdf5File::open(out + "/small.h5").attr_string("status"), "converged");
  Hdf5File b = Hdf5File::open(out + "/big.h5");  // the failure record is small enough
  EXPECT_EQ(b.attr_string("status"), "failed");
  EXPECT_NE(b.attr_string("error").find("file size limit exceeded"), std::string::npos) << b.attr_string("error");
  EXPECT_EQ(files_in(out), (std::vector<std::string>{"big.h5", "small.h5"}));
}

// The output folder is removed while the solve runs (2–3 s on a 2-core machine; removed at 0.5 s,
// 1.5 s for the batch).
TEST(AppsOutputs, VanishedFolderIsAnErrorWithNothingLeft) {
  ScratchDir d;
  for (const char* task : {"eigs", "solve", "batch"}) {
    SCOPED_TRACE(task);
    const std::string v = d.file(std::string("v_") + task);
    fs::create_directory(v);
    // (batch: later, and a longer first job: it creates its output folder when it starts, which
    // a loaded machine may take more than 0.5 s to reach)
    const bool batch = std::string(task) == "batch";
    const std::string rm = std::string("(sleep ") + (batch ? "1.5" : "0.5") + "; rm -rf '" + v + "') & ";
    RunResult r;
    if (std::string(task) == "eigs") {
      r = run_tcsolve_shell({}, rm, {"eigs", "gen:lap2d:300", "--k", "8", "--device", "cpu", "--out", v + "/r.h5"});
    } else if (std::string(task) == "solve") {
      r = run_tcsolve_shell({}, rm, {"solve", "gen:lap2d:250", "--rhs", "random:8", "--device", "cpu", "--out",
                                     v + "/r.h5"});
    } else {
      const std::string jobs = d.write("jobs.ini",
                                       "[defaults]\ndevice = cpu\n\n"
                                       "[job.a]\ntask = eigs\nmatrix = gen:lap2d:400\nk = 8\n\n"
                                       "[job.b]\ntask = eigs\nmatrix = gen:lap2d:21x17\nk = 3\n");
      r = run_tcsolve_shell({}, rm, {"batch", jobs, "--output-dir", v});
    }
    // 1: the work was done and could not be saved; 2 only if the folder went before the check.
    EXPECT_TRUE(r.status == 1 || r.status == 2) << r.status << " " << r.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(1600));  // the rm has happened
    EXPECT_FALSE(fs::exists(v));
    if (std::string(task) == "batch") {
      // both jobs failed to write and are in the summary; the batch itself did not fail
      EXPECT_NE(r.out.find("failed"), std::string::npos) << r.out;
      EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
    } else {
      EXPECT_EQ(count_lines(r.err), 1) << r.err;
      EXPECT_NE(r.err.find(v + "/r.h5"), std::string::npos) << r.err;
    }
  }
  EXPECT_EQ(files_in(d.path()), std::vector<std::string>{"jobs.ini"});
}

TEST(AppsOutputs, ReadOnlyFolderIsRefusedBeforeTheSolve) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: a mode-0555 folder is writable to root";
  ScratchDir d;
  const std::string ro = d.file("ro");
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  expect_usage_error(run_tcsolve({"eigs", "gen:lap2d:30", "--device", "cpu", "--out", ro + "/r.h5"}),
                     "is not writable");
  expect_usage_error(run_tcsolve({"solve", "gen:lap2d:30", "--rhs", "random:2", "--device", "cpu", "--out",
                                  ro + "/r.h5"}),
                     "is not writable");
  const std::string jobs = d.write("jobs.ini", "[job.a]\ntask = eigs\nmatrix = gen:lap2d:21x17\ndevice = cpu\n");
  auto b = run_tcsolve({"batch", jobs, "--output-dir", ro});
  EXPECT_EQ(b.status, 2) << b.err;
  EXPECT_NE(b.err.find("is not writable"), std::string::npos) << b.err;
  fs::permissions(ro, fs::perms::owner_all);
  EXPECT_TRUE(files_in(ro).empty());
}

TEST(AppsOutputs, BadOutputPathsAreRefusedBeforeTheSolve) {
  ScratchDir d;
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:30", d.file("m.h5")}).status, 0);
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:30", d.file("m.mtx")}).status, 0);
  const auto m_h5 = read_file(d.file("m.h5"));
  expect_usage_error(run_tcsolve({"eigs", "gen:lap2d:30", "--device", "cpu", "--out", d.file("nope/r.h5")}),
                     "no such folder '" + d.file("nope") + "'");
  expect_usage_error(run_tcsolve({"eigs", d.file("m.h5"), "--device", "cpu", "--out", d.file("m.h5")}),
                     "is the input file");
  // the same file by another name
  expect_usage_error(run_tcsolve({"eigs", d.file("m.h5") + ":matrix", "--device", "cpu", "--out",
                                  d.file("nope/../m.h5")}),
                     "no such folder");
  expect_usage_error(run_tcsolve({"eigs", d.file("m.h5") + ":matrix", "--device", "cpu", "--out",
                                  (d.path() / "." / "m.h5").string()}),
                     "is the input file");
  expect_usage_error(run_tcsolve({"eigs", d.file("m.mtx"), "--mass", d.file("m.h5"), "--device", "cpu",
                                  "--out", d.file("m.h5")}),
                     "is the input file");
  ASSERT_EQ(run_tcsolve({"solve", d.file("m.mtx"), "--rhs", "random:2", "--device", "cpu", "--out",
                         d.file("x.h5")}).status, 0);
  const auto x_h5 = read_file(d.file("x.h5"));
  expect_usage_error(run_tcsolve({"solve", d.file("m.mtx"), "--rhs", d.file("x.h5") + ":solution", "--device", "cpu",
                                  "--out", d.file("x.h5")}),
                     "is the input file");
  fs::create_directory(d.file("dir.h5"));
  expect_usage_error(run_tcsolve({"eigs", "gen:lap2d:30", "--device", "cpu", "--out", d.file("dir.h5")}),
                     "is a folder");
  expect_usage_error(run_tcsolve({"eigs", "gen:lap2d:30", "--device", "cpu", "--plot", d.file("nope/p.svg")}),
                     "--plot");
  EXPECT_EQ(read_file(d.file("m.h5")), m_h5);
  EXPECT_EQ(read_file(d.file("x.h5")), x_h5);

  // batch: refused as a whole (exit 2) before the first job runs, naming the job
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\n\n"
                                   "[job.first]\ntask = eigs\nmatrix = gen:lap2d:21x17\nk = 3\n\n"
                                   "[job.clobber]\ntask = eigs\nmatrix = " + d.file("m.h5") +
                                       "\nout = " + d.file("m.h5") + "\n");
  // (the clobbering result lies outside --output-dir: allowed here, so that the input check speaks)
  auto b = run_tcsolve({"batch", jobs, "--output-dir", d.file("out"), "--allow-outside-output-dir"});
  EXPECT_EQ(b.status, 2) << b.err;
  EXPECT_NE(b.err.find("job 'clobber'"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("is the input file"), std::string::npos) << b.err;
  EXPECT_FALSE(fs::exists(d.file("out/first.h5")));
  EXPECT_EQ(read_file(d.file("m.h5")), m_h5);
}

}  // namespace
}  // namespace tcsolve::test
