// svds as a job of the job pipeline (issue 44 §3): a batch file with svds jobs beside an eigs job
// and broken svds jobs (each recorded, the others complete; --resume skips the finished ones);
// --checkpoint / --resume-from continue the thick restart (same singular values, the restarts the
// stopped run had left; a batch svds job killed mid-solve: test_checkpoint.cpp); --plot draws
// the spectrum.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

namespace fs = std::filesystem;
using Mat = Eigen::MatrixXd;

// The number after "KEY": in svds' compact --json (NaN when absent).
double compact_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// The array after "KEY":[ in svds' compact --json.
std::vector<double> compact_array(const std::string& json, const std::string& key) {
  std::vector<double> v;
  auto at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return v;
  const char* c = json.c_str() + at + key.size() + 4;
  while (*c && *c != ']') {
    char* end = nullptr;
    v.push_back(std::strtod(c, &end));
    c = *end == ',' ? end + 1 : end;
  }
  return v;
}

// Singular values of the column-centered dense form of a generated matrix.
Eigen::VectorXd centered_singular_values(const std::string& spec) {
  const Csr<double> a = generate(spec);
  Mat d = Mat::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) = a.values[p];
  d.rowwise() -= d.colwise().mean();
  return Eigen::BDCSVD<Mat>(d).singularValues();
}

// The largest singular values of gen:lap2d:N (its eigenvalues, all positive), descending.
std::vector<double> lap2d_top(int nn) {
  std::vector<double> v = lap2d_eigenvalues(nn, nn);
  std::reverse(v.begin(), v.end());
  return v;
}

// An SVG as the spectrum plot writes it: one document, the three series with k markers each.
void expect_spectrum_svg(const std::string& path, std::size_t k) {
  ASSERT_TRUE(fs::exists(path)) << path;
  const std::string svg = read_file(path);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg.substr(0, 80);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  auto count = [&](const std::string& what) {
    std::size_t c = 0;
    for (auto at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++c;
    return c;
  };
  EXPECT_EQ(count("<svg"), 1u);
  EXPECT_EQ(count("<polyline"), 3u);
  EXPECT_EQ(count("<circle"), 3 * k);
  EXPECT_EQ(count("<"), count(">"));
  EXPECT_NE(svg.find("singular value s_j"), std::string::npos);
  EXPECT_NE(svg.find("tol * s_1"), std::string::npos);
}

const char* const kJobs =
    "[defaults]\n"           // 1
    "device = cpu\n"         // 2
    "tol = 1e-10\n"          // 3
    "which = largest   # eigs' key: ignored by the svds jobs\n"
    "\n"
    "[job.pca]\n"
    "task = svds\n"
    "matrix = gen:counts:400:90\n"
    "k = 5\n"
    "center = true\n"
    "plot = pca.svg\n"
    "\n"
    "[job.eig]\n"
    "task = eigs\n"
    "matrix = gen:lap2d:21x17\n"
    "k = 3\n"
    "\n"
    "[job.missing]\n"
    "task = svds\n"
    "matrix = does_not_exist.mtx\n"
    "\n"
    "[job.toomany]\n"
    "task = svds\n"
    "matrix = gen:counts:50:20\n"
    "k = 21\n"
    "\n"
    "[job.wide]\n"
    "task = svds\n"
    "matrix = gen:counts:60:300\n"
    "k = 4\n"
    "block = 2\n";

TEST(SvdsJobs, BatchRunsSvdsBesideEigsAndRecordsBrokenOnes) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini", kJobs), out = d.file("out");
  auto r = run_tcsolve({"batch", jobs, "--output-dir", out});
  EXPECT_EQ(r.status, 1) << r.err;  // two jobs failed
  for (const auto& [job, task] : std::map<std::string, std::string>{{"pca", "svds"}, {"eig", "eigs"}, {"wide", "svds"}}) {
    Hdf5File f = Hdf5File::open(out + "/" + job + ".h5");
    EXPECT_EQ(f.attr_string("task") + " " + f.attr_string("job") + " " + f.attr_string("status"),
              task + " " + job + " converged");
  }
  {
    Hdf5File f = Hdf5File::open(out + "/pca.h5");
    EXPECT_EQ(f.attr_string("centered"), "yes");
    EXPECT_EQ(f.attr_double("tolerance"), 1e-10);
    EXPECT_NE(f.attr_string("job_options").find("task=svds"), std::string::npos);
    const auto s = f.read_doubles("s");
    const Eigen::VectorXd ref = centered_singular_values("gen:counts:400:90");
    ASSERT_EQ(s.size(), 5u);
    for (int j = 0; j < 5; ++j) EXPECT_NEAR(s[j], ref(j), 1e-10 * ref(0)) << j;
    std::vector<std::int64_t> dims;
    f.read_doubles("U", &dims);
    EXPECT_EQ(dims, (std::vector<std::int64_t>{400, 5}));
    f.read_doubles("Vt", &dims);
    EXPECT_EQ(dims, (std::vector<std::int64_t>{5, 90}));
    EXPECT_EQ(f.read_doubles("explained_variance_ratio").size(), 5u);
  }
  {
    Hdf5File f = Hdf5File::open(out + "/wide.h5");  // rectangular, wider than tall
    EXPECT_EQ(f.attr_int64("rows"), 60);
    EXPECT_EQ(f.attr_int64("cols"), 300);
    std::vector<std::int64_t> dims;
    f.read_doubles("Vt", &dims);
    EXPECT_EQ(dims, (std::vector<std::int64_t>{4, 300}));
  }
  EXPECT_EQ(Hdf5File::open(out + "/eig.h5").read_doubles("eigenvalues").size(), 3u);
  Hdf5File missing = Hdf5File::open(out + "/missing.h5");
  EXPECT_EQ(missing.attr_string("status"), "failed");
  EXPECT_EQ(missing.attr_string("task"), "svds");
  EXPECT_NE(missing.attr_string("error").find("does_not_exist.mtx"), std::string::npos);
  EXPECT_FALSE(missing.has_dataset("s"));
  Hdf5File toomany = Hdf5File::open(out + "/toomany.h5");
  EXPECT_EQ(toomany.attr_string("status"), "failed");
  EXPECT_NE(toomany.attr_string("error").find("at most min(m, n) = 20"), std::string::npos);
  EXPECT_NE(r.out.find("svds"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6) << r.out;  // header + 5 jobs
  expect_spectrum_svg(out + "/pca.svg", 5);
  // --resume: the finished jobs stand (skipped, files untouched), the broken ones run again
  const auto pca_time = fs::last_write_time(out + "/pca.h5");
  auto again = run_tcsolve({"batch", jobs, "--output-dir", out, "--resume", "--json"});
  EXPECT_EQ(again.status, 1) << again.err;
  for (const char* name : {"pca", "wide"})
    EXPECT_NE(again.out.find("{\"job\": \"" + std::string(name) + "\", \"task\": \"svds\", \"status\": \"skipped\""),
              std::string::npos)
        << again.out;
  EXPECT_NE(again.out.find("{\"job\": \"missing\", \"task\": \"svds\", \"status\": \"failed\""), std::string::npos)
      << again.out;
  EXPECT_EQ(fs::last_write_time(out + "/pca.h5"), pca_time) << "a complete output was redone";
}

// A key of another task in an svds job's own section names its line.
TEST(SvdsJobs, JobFileRefusesAnotherTasksKey) {
  ScratchDir d;
  const std::string jobs = d.write("jobs.ini", "[job.s]\ntask = svds\nmatrix = gen:counts:50:20\nsigma = 1\n");
  auto r = run_tcsolve({"batch", jobs, "--output-dir", d.file("out")});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("jobs.ini:4: job.s: 'sigma' does not apply to task svds"), std::string::npos) << r.err;
}

// Stopped after 20 restarts (--maxiter; exit 1, the best approximations written), the run's last
// checkpoint holds V's kept Ritz vectors and next block; --resume-from continues that restart:
// the same singular values as an uninterrupted run, in the restarts that run had left.
TEST(SvdsJobs, CheckpointThenResumeContinuesTheRestart) {
  ScratchDir d;
  const std::string ck = d.file("ck.h5");
  const std::vector<std::string> base = {"svds", "gen:lap2d:60", "--k", "6", "--tol", "1e-10", "--device", "cpu",
                                         "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_tcsolve(a);
  };
  const auto full = with({});
  ASSERT_EQ(full.status, 0) << full.err;
  const double full_restarts = compact_number(full.out, "iterations");
  ASSERT_GT(full_restarts, 30) << full.out;
  const auto stopped = with({"--maxiter", "20", "--checkpoint", ck, "--checkpoint-every", "0.0001"});
  ASSERT_EQ(stopped.status, 1) << stopped.err;
  EXPECT_GE(compact_number(stopped.out.substr(stopped.out.find("\"checkpoints\"")), "count"), 1) << stopped.out;
  {
    Hdf5File f = Hdf5File::open(ck);
    EXPECT_EQ(f.attr_string("kind"), "tcsolve checkpoint");
    EXPECT_EQ(f.attr_string("task"), "svds");
    EXPECT_EQ(f.attr_int64("iteration"), 20);
    std::vector<std::int64_t> dims;
    f.read_doubles("block", &dims);
    EXPECT_EQ(dims, (std::vector<std::int64_t>{27 + 6, 3600}));  // keep 27 + the next block of 6
  }
  const auto r = with({"--resume-from", ck, "--out", d.file("r.h5")});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("resumed from " + ck + " (iteration 20"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("continued the thick restart"), std::string::npos) << r.out;
  const double restarts = compact_number(r.out, "iterations");
  EXPECT_LT(restarts, full_restarts);
  EXPECT_LE(std::abs(restarts - (full_restarts - 20)), 1) << restarts << " of " << full_restarts;
  const auto exact = lap2d_top(60);
  const auto vals = compact_array(r.out, "singular_values");
  ASSERT_EQ(vals.size(), 6u) << r.out;
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(vals[j], exact[j], 1e-10 * exact[j]) << j;
  Hdf5File f = Hdf5File::open(d.file("r.h5"));
  EXPECT_EQ(f.attr_string("resumed_from"), ck);
  EXPECT_EQ(f.read_doubles("s"), vals);
  // another matrix's checkpoint is refused with what differs
  auto other = run_tcsolve({"svds", "gen:lap2d:59", "--k", "6", "--device", "cpu", "--resume-from", ck});
  EXPECT_EQ(other.status, 2) << other.err;
  EXPECT_NE(other.err.find("written for another matrix"), std::string::npos) << other.err;
}

// A rectangular matrix's checkpoint holds right singular vectors: rows of A's columns (900, not
// its 300 rows), and a resumed run continues from them.
TEST(SvdsJobs, RectangularCheckpointHoldsColumnsOfTheRightSide) {
  ScratchDir d;
  const std::string ck = d.file("ck.h5");
  const std::vector<std::string> base = {"svds", "gen:counts:300:900", "--k", "4", "--tol", "1e-15", "--maxiter", "1",
                                         "--device", "cpu", "--json"};
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--checkpoint", ck, "--checkpoint-every", "0.000001"});
  ASSERT_EQ(run_tcsolve(first).status, 1);
  std::vector<std::int64_t> dims;
  Hdf5File::open(ck).read_doubles("block", &dims);
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims[1], 900);
  std::vector<std::string> resume = base;
  resume.insert(resume.end(), {"--resume-from", ck});
  const auto r = run_tcsolve(resume);
  EXPECT_NE(r.out.find("continued the thick restart"), std::string::npos) << r.out << r.err;
}

// --plot: the spectrum of the k triplets; a plot name that is no .svg is refused before the run.
TEST(SvdsJobs, PlotDrawsTheSpectrum) {
  ScratchDir d;
  const std::string plot = d.file("s.svg");
  auto r = run_tcsolve({"svds", "gen:counts:300:120", "--k", "7", "--device", "cpu", "--plot", plot});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("written: " + plot), std::string::npos) << r.out;
  expect_spectrum_svg(plot, 7);
  auto bad = run_tcsolve({"svds", "gen:counts:300:120", "--plot", d.file("s.png")});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--plot"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tcsolve::test
