// Issue 47: reliability of the command line and batch. A batch never deletes or overwrites a file
// another job declares (outputs, plots and checkpoints are checked against one another before
// anything runs) nor one it did not write; job files write inside --output-dir unless allowed; a
// closed pipe does not end a batch; the job file's right-hand sides are checked with the rest;
// checkpoints count only what was written; a killed writer's temporary goes with the next write
// to its target; convert writes FILE.h5:GROUP.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/csr.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_file.hpp"
#include "io/matrix_io.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> t;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) t.push_back(e.path());
  return t;
}

// The summary row's status of `job` in a batch --json output ("absent" when not there).
std::string status_of(const RunResult& r, const std::string& job) {
  const std::string key = "{\"job\": \"" + job + "\", \"task\": \"";
  const auto p = r.out.find(key);
  if (p == std::string::npos) return "absent";
  const auto s = r.out.find("\"status\": \"", p) + 11;
  return r.out.substr(s, r.out.find('"', s) - s);
}

// 1. The reproducer of the issue: job b's result is named like job a's automatic checkpoint, and
// job a fails. The file is refused before anything runs, naming both jobs and the path.
TEST(AppsReliability, JobPathsThatCollideAreRefusedBeforeAnythingRuns) {
  ScratchDir d;
  const std::string out = d.file("out");
  const std::string jobs = d.write("jobs.ini",
                                   "[defaults]\ndevice = cpu\ntask = eigs\nk = 2\n\n"
                                   "[job.b]\nmatrix = gen:lap2d:10\nout = a.checkpoint.h5\n\n"  // line 6-8
                                   "[job.a]\nmatrix = not_yet_there.mtx\n");                     // line 10
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(jobs + ":10: job.a: automatic checkpoint " + out + "/a.checkpoint.h5 is also the output "
                       "of job 'b' (line 8)"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(out + "/a.checkpoint.h5"));

  // an explicit checkpoint naming another job's result, a plot or checkpoint shared by two jobs
  struct Case {
    std::string text, what;
  };
  for (const Case& c : std::vector<Case>{
           {"[job.x]\nmatrix = gen:lap2d:10\n\n[job.y]\nmatrix = gen:lap2d:11\ncheckpoint = x.h5\n",
            "job.y: checkpoint " + out + "/x.h5 is also the output of job 'x' (line 6)"},
           {"[job.x]\nmatrix = gen:lap2d:10\ncheckpoint = ck.h5\n\n[job.y]\nmatrix = gen:lap2d:11\ncheckpoint = ck.h5\n",
            "job.y: checkpoint " + out + "/ck.h5 is also the checkpoint of job 'x' (line 8)"},
           {"[job.x]\nmatrix = gen:lap2d:10\nplot = p.svg\n\n[job.y]\nmatrix = gen:lap2d:11\nplot = p.svg\n",
            "job.y: plot " + out + "/p.svg is also the plot of job 'x' (line 8)"},
           {"[job.x]\nmatrix = gen:lap2d:10\nout = r.h5\n\n[job.y]\nmatrix = gen:lap2d:11\nout = sub/../r.h5\n",
            "job.y: output " + out + "/sub/../r.h5 is also the output of job 'x' (line 8)"},
       }) {
    const std::string f = d.write("c.ini", "[defaults]\ndevice = cpu\ntask = eigs\nk = 2\n\n" + c.text);
    auto rc = run_tcsolve({"batch", f, "--output-dir", out});
    EXPECT_EQ(rc.status, 2) << c.text << rc.err;
    EXPECT_NE(rc.err.find(c.what), std::string::npos) << rc.err;
    EXPECT_FALSE(fs::exists(out)) << "nothing may run: " << c.text;
  }
}

// A job removes only a checkpoint it wrote or continued from, and that is provably its own: a
// failing job leaves a file it finds at its checkpoint's path; --resume leaves a checkpoint it
// cannot use (and says so), and the job then writes none over it.
TEST(AppsReliability, BatchRemovesOnlyItsOwnCheckpoints) {
  ScratchDir d;
  const std::string out = d.file("out");
  fs::create_directories(out);
  // not a checkpoint at all (a matrix), at job a's automatic checkpoint path; job a fails
  ASSERT_EQ(run_tcsolve({"convert", "gen:lap2d:5", out + "/a.checkpoint.h5"}).status, 0);
  const std::string kept = read_file(out + "/a.checkpoint.h5");
  const std::string failing = d.write("fail.ini", "[defaults]\ndevice = cpu\n\n[job.a]\ntask = eigs\nmatrix = "
                                                  "not_there.mtx\n");
  auto f = run_tcsolve({"batch", failing, "--output-dir", out, "--json"});
  EXPECT_EQ(f.status, 1) << f.err;
  EXPECT_EQ(status_of(f, "a"), "failed") << f.out;
  EXPECT_EQ(read_file(out + "/a.checkpoint.h5"), kept) << "a failing job removed a file it did not write";

  // a job that runs long enough to checkpoint, with a foreign file there: no checkpoint replaces it
  const std::string long_job = d.write("long.ini", "[defaults]\ndevice = cpu\n\n[job.a]\ntask = eigs\nmatrix = "
                                                   "gen:lap2d:100\nk = 6\nwhich = largest\nmethod = chebyshev\n");
  auto l = run_tcsolve({"batch", long_job, "--output-dir", out, "--checkpoint-every", "0.001", "--json"});
  EXPECT_EQ(l.status, 0) << l.err;
  EXPECT_EQ(read_file(out + "/a.checkpoint.h5"), kept);
  EXPECT_NE(l.err.find("no checkpoints this run: " + out + "/a.checkpoint.h5 exists and is not this job's"),
            std::string::npos) << l.err;

  // --resume with a checkpoint of other options (written by the command line for this output):
  // not used, left, and said
  fs::remove(out + "/a.checkpoint.h5");
  fs::remove(out + "/a.h5");
  ASSERT_EQ(run_tcsolve({"eigs", "gen:lap2d:100", "--k", "4", "--which", "largest", "--method", "chebyshev",
                         "--device", "cpu", "--checkpoint", out + "/a.checkpoint.h5", "--checkpoint-every",
                         "0.001", "-q"}).status, 0);
  const std::string other = read_file(out + "/a.checkpoint.h5");
  auto rs = run_tcsolve({"batch", long_job, "--output-dir", out, "--checkpoint-every", "0.001", "--resume", "--json"});
  EXPECT_EQ(rs.status, 0) << rs.err;
  EXPECT_EQ(status_of(rs, "a"), "converged");
  EXPECT_NE(rs.err.find("checkpoint " + out + "/a.checkpoint.h5 not used (written for other options or inputs): "
                        "left as it is"), std::string::npos) << rs.err;
  EXPECT_EQ(read_file(out + "/a.checkpoint.h5"), other) << "--resume deleted or replaced a checkpoint it could not use";

  // its own checkpoints (this run's) go once the result is written
  fs::remove(out + "/a.checkpoint.h5");
  fs::remove(out + "/a.h5");
  auto own = run_tcsolve({"batch", long_job, "--output-dir", out, "--checkpoint-every", "0.001", "--json"});
  EXPECT_EQ(own.status, 0) << own.err;
  EXPECT_FALSE(fs::exists(out + "/a.checkpoint.h5"));
  EXPECT_TRUE(temporaries(out).empty());
}

// 2. out, plot and checkpoint stay inside --output-dir (the current folder without it) unless
// --allow-outside-output-dir; a symbolic link to a folder elsewhere does not lead out either.
TEST(AppsReliability, JobFilesWriteOnlyInsideTheOutputFolder) {
  ScratchDir d;
  const std::string out = d.file("a/b/out");
  fs::create_directories(d.file("elsewhere"));
  fs::create_directories(out);
  fs::create_directory_symlink(d.file("elsewhere"), out + "/link");
  struct Case {
    std::string key, value, escaped;
  };
  for (const Case& c : std::vector<Case>{
           {"out", "../../escaped.h5", d.file("a/escaped.h5")},
           {"out", d.file("abs.h5"), d.file("abs.h5")},
           {"plot", "../p.svg", d.file("a/b/p.svg")},
           {"checkpoint", "../../../ck.h5", d.file("ck.h5")},
           {"out", "link/through.h5", d.file("elsewhere/through.h5")},
       }) {
    const std::string jobs = d.write("jobs.ini", "[defaults]\ndevice = cpu\n\n[job.j]\ntask = eigs\nmatrix = "
                                                 "gen:lap2d:10\nk = 2\n" + c.key + " = " + c.value + "\n");
    auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
    EXPECT_EQ(r.status, 2) << c.value << ": " << r.err;
    EXPECT_NE(r.err.find(jobs + ":8: job.j: " + c.key + " "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is outside the output folder " + out + " (--allow-outside-output-dir"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(c.escaped)) << c.value;
    EXPECT_FALSE(fs::exists(out + "/j.h5")) << "nothing may run";
  }
  // allowed by the flag
  const std::string jobs = d.write("jobs.ini", "[defaults]\ndevice = cpu\n\n[job.j]\ntask = eigs\nmatrix = "
                                               "gen:lap2d:10\nk = 2\nout = ../../escaped.h5\n");
  auto ok = run_tcsolve({"batch", jobs, "--output-dir", out, "--allow-outside-output-dir"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(Hdf5File::open(d.file("a/escaped.h5")).attr_string("status"), "converged");
  // absolute paths inside the folder are inside
  const std::string inside = d.write("in.ini", "[defaults]\ndevice = cpu\n\n[job.j]\ntask = eigs\nmatrix = "
                                               "gen:lap2d:10\nk = 2\nout = " + out + "/./j2.h5\n");
  EXPECT_EQ(run_tcsolve({"batch", inside, "--output-dir", out, "-q"}).status, 0);
  EXPECT_TRUE(fs::exists(out + "/j2.h5"));
}

// 3. `tcsolve batch ... 2>&1 | head -c 1`: the reader is gone after the first line; the batch
// still runs every job, leaves its results and no temporary, and exits with its own status.
TEST(AppsReliability, AClosedPipeDoesNotEndTheBatch) {
  ScratchDir d;
  const std::string out = d.file("out");
  std::string ini = "[defaults]\ndevice = cpu\ntask = eigs\nk = 3\n\n";
  for (int j = 0; j < 4; ++j) ini += "[job.j" + std::to_string(j) + "]\nmatrix = gen:lap2d:" + std::to_string(40 + j) + "\n\n";
  const std::string jobs = d.write("four.ini", ini);
  auto r = run_tcsolve_piped({"batch", jobs, "--output-dir", out}, "head -c 1");
  EXPECT_EQ(r.status, 0) << "exit status of tcsolve (141: killed by SIGPIPE)";
  EXPECT_EQ(r.out.size(), 1u);
  for (int j = 0; j < 4; ++j)
    EXPECT_EQ(Hdf5File::open(out + "/j" + std::to_string(j) + ".h5").attr_string("status"), "converged") << j;
  EXPECT_TRUE(temporaries(out).empty());
  // with a failing job: its normal status 1
  const std::string bad = d.write("bad.ini", ini + "[job.bad]\nmatrix = no_such.mtx\n\n[job.last]\nmatrix = gen:lap2d:20\n");
  auto b = run_tcsolve_piped({"batch", bad, "--output-dir", d.file("out2")}, "head -c 1");
  EXPECT_EQ(b.status, 1);
  EXPECT_EQ(Hdf5File::open(d.file("out2/last.h5")).attr_string("status"), "converged");
  EXPECT_EQ(Hdf5File::open(d.file("out2/bad.h5")).attr_string("status"), "failed");
}

// 4. The job file's right-hand sides are checked with the rest of the file, before anything runs.
TEST(AppsReliability, RightHandSidesAreCheckedWithTheJobFile) {
  ScratchDir d;
  const std::string out = d.file("out");
  for (const char* rhs : {"random:abc", "random:0", "random:-1", "random:100000000", "random:", "random:+5",
                          "random: 5", "random:4097", "x.h5", "x.h5:", ":sol"}) {
    const std::string jobs = d.write("jobs.ini", std::string("[defaults]\ndevice = cpu\n\n[job.ok]\ntask = eigs\n"
                                                             "matrix = gen:lap2d:10\nk = 2\n\n[job.s]\ntask = "
                                                             "solve\nmatrix = gen:lap2d:10\nrhs = ") + rhs + "\n");
    auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
    EXPECT_EQ(r.status, 2) << rhs << ": " << r.err;
    EXPECT_NE(r.err.find(jobs + ":12: job.s: --rhs '" + rhs + "': expected "), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << rhs << ": nothing may run";
  }
  auto big = run_tcsolve({"solve", "gen:lap2d:10", "--rhs", "random:100000000", "--device", "cpu"});
  EXPECT_EQ(big.status, 2) << big.err;
  EXPECT_NE(big.err.find("1 <= S <= 4096"), std::string::npos) << big.err;
}

// "checkpoints: N written" counts files that reached the disk; a failed write is said.
TEST(AppsReliability, CheckpointsCountOnlyWhatWasWritten) {
  ScratchDir d;
  const std::vector<std::string> args = {"eigs", "gen:lap2d:100", "--k", "6", "--which", "largest", "--method",
                                         "chebyshev", "--device", "cpu", "--checkpoint", d.file("ck.h5"),
                                         "--checkpoint-every", "0.001"};
  // 64 blocks of the shell's ulimit unit (32-64 KiB): a checkpoint of 10000 rows (0.6 MiB and more) fails
  auto r = run_tcsolve_file_limit(64, args);
  EXPECT_EQ(r.status, 0) << r.err;  // the solve went on
  EXPECT_NE(r.out.find("checkpoints: 0 written to " + d.file("ck.h5") + "; 1 failed, no more were tried "
                       "(checkpoints stopped: file size limit exceeded"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d.file("ck.h5")));
  std::vector<std::string> json = args;
  json.push_back("--json");
  auto j = run_tcsolve_file_limit(64, json);
  const std::string ck = j.out.substr(j.out.find("\"checkpoints\""));
  EXPECT_EQ(json_number(ck, "count"), 0) << j.out;
  EXPECT_EQ(json_number(ck, "failed"), 1) << j.out;
  EXPECT_TRUE(temporaries(d.path()).empty());
  // without a limit: written, counted, none failed
  auto ok = run_tcsolve(args);
  EXPECT_NE(ok.out.find("checkpoints: "), std::string::npos);
  EXPECT_EQ(ok.out.find("checkpoints: 0 written"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("failed"), std::string::npos) << ok.out;
}

// A writer killed outright (SIGKILL) leaves OUT.tmp-PID-HOST-XXXXXX; the next successful write of
// OUT removes it, and leaves a live writer's, another host's and other names alone.
TEST(AppsReliability, AKilledWritersTemporaryGoesWithTheNextWrite) {
  ScratchDir d;
  const std::string big = d.file("big.h5");
  const std::string host = atomic_file_detail::host_tag();
  const std::string dead = dead_writers_temporary(big);
  const std::string live = big + ".tmp-" + std::to_string(::getpid()) + "-" + host + "-abcdef";
  const std::string other_host = big + ".tmp-" + std::to_string(dead_pid()) + "-" + (host == "00000000" ? "11111111" : "00000000") + "-abcdef";
  const std::string old_pattern = big + ".tmp-abc123";
  for (const std::string& f : {dead, live, other_host, old_pattern}) std::ofstream(f) << "half";
  auto r = run_tcsolve({"eigs", "gen:lap2d:20", "--k", "2", "--device", "cpu", "--out", big, "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other_host));
  EXPECT_TRUE(fs::exists(old_pattern));
  EXPECT_EQ(Hdf5File::open(big).attr_string("status"), "converged");
}

// docs/hdf5-schema.md: FILE.h5:GROUP for writing (a new file with the matrix at GROUP).
TEST(AppsReliability, ConvertWritesAnHdf5Group) {
  ScratchDir d;
  const std::string f = d.file("out.h5");
  auto r = run_tcsolve({"convert", "gen:lap2d:5", f + ":grp/A"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Csr<double> a = read_matrix(f + ":grp/A"), want = read_matrix("gen:lap2d:5");
  EXPECT_EQ(a.row_ptr, want.row_ptr);
  EXPECT_EQ(a.col_idx, want.col_idx);
  EXPECT_EQ(a.values, want.values);
  EXPECT_FALSE(Hdf5File::open(f).has_group("matrix"));
  auto e = run_tcsolve({"convert", "gen:lap2d:5", f + ":"});
  EXPECT_EQ(e.status, 2);
  EXPECT_NE(e.err.find("empty GROUP"), std::string::npos) << e.err;
  auto x = run_tcsolve({"convert", "gen:lap2d:5", d.file("out.txt:grp")});
  EXPECT_EQ(x.status, 2);
  EXPECT_NE(x.err.find("unsupported output format"), std::string::npos) << x.err;
  EXPECT_TRUE(temporaries(d.path()).empty());
}

}  // namespace
}  // namespace tcsolve::test
