// tcsolve eigs / solve on the GPU (label gpu; skipped without a device): the same answers as the
// closed forms, the device named in the output, and fp16 storage running where the CPU refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/device.hpp"
#include "io/hdf5_file.hpp"
#include "tests/apps/reorder_check.hpp"
#include "tests/apps/run_tcsolve.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve::test {
namespace {

TEST(AppsGpu, EigsAndSolveOnTheDevice) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  ScratchDir d;
  const int nx = 31, ny = 23, k = 4;
  std::vector<double> exact;
  for (int i = 1; i <= nx; ++i)
    for (int j = 1; j <= ny; ++j)
      exact.push_back(4 - 2 * std::cos(i * M_PI / (nx + 1)) - 2 * std::cos(j * M_PI / (ny + 1)));
  std::sort(exact.begin(), exact.end());
  for (std::string method : {"lobpcg", "lanczos"}) {
    SCOPED_TRACE(method);
    const std::string which = method == "lobpcg" ? "smallest" : "largest";
    auto r = run_tcsolve({"eigs", "gen:lap2d:31x23", "--k", std::to_string(k), "--which", which,
                          "--method", method, "--device", "cuda", "--out", d.file("e.h5"), "-q"});
    ASSERT_EQ(r.status, 0) << r.err;
    Hdf5File f = Hdf5File::open(d.file("e.h5"));
    EXPECT_EQ(f.attr_string("backend"), "cuda");
    EXPECT_GT(f.attr_double("peak_device_bytes"), 8.0 * 31 * 23 * k);
    EXPECT_NE(f.attr_string("device"), "cpu");
    const auto vals = f.read_doubles("eigenvalues");
    ASSERT_EQ(vals.size(), std::size_t(k));
    for (int j = 0; j < k; ++j) {
      const double e = which == "smallest" ? exact[j] : exact[exact.size() - 1 - j];
      EXPECT_NEAR(vals[j], e, 1e-6) << j;
    }
  }
  auto s = run_tcsolve({"solve", "gen:lap2d:31x23", "--rhs", "random:5", "--device", "cuda",
                        "--out", d.file("s.h5"), "-q"});
  ASSERT_EQ(s.status, 0) << s.err;
  Hdf5File f = Hdf5File::open(d.file("s.h5"));
  for (double r : f.read_doubles("residual_norms")) EXPECT_LE(r, 1.01e-8);
  // fp16 storage of A runs on the GPU (the CPU refuses it); the fp16 operator is inexact, so only
  // a loose tolerance is asked
  auto h = run_tcsolve({"eigs", "gen:lap2d:31x23", "--k", "2", "--precision", "fp16", "--tol",
                        "1e-3", "--device", "cuda", "--json"});
  EXPECT_NE(h.status, 2) << h.err;
  EXPECT_NE(h.out.find("\"backend\": \"cuda\""), std::string::npos) << h.out;
}

// --reorder symmetric with the device operator of B = P·A·Pᵀ (twin of the CPU test).
TEST(AppsGpu, ReorderedBasisAnswersInTheInputOrder) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  expect_reorder_answers_in_input_order("cuda");
}

// Less GPU memory than the default blocks need (TCSOLVE_DEVICE_MEMORY_LIMIT): block CG runs the
// right-hand sides in batches, Chebyshev narrows its block, Lanczos shrinks its basis; below the
// minimum the run is refused with the sizes. gen:lap3d:30: 27,000 rows, the two matrix copies
// the estimate counts ≈ 4.97 MB, one n-vector 216 kB.
TEST(AppsGpu, FitsTheBlocksToTheMemoryLeft) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  ScratchDir d;
  const std::string limit = "TCSOLVE_DEVICE_MEMORY_LIMIT=20000000";  // 0.9·20 MB − 4.97 MB ≈ 60 vectors
  auto s = run_tcsolve_env({limit}, {"solve", "gen:lap3d:30", "--rhs", "random:24", "--device",
                                     "cuda", "--out", d.file("s.h5"), "--json"});
  ASSERT_EQ(s.status, 0) << s.err << s.out;
  EXPECT_NE(s.out.find("right-hand sides solved in 3 batches of up to 10 columns"), std::string::npos) << s.out;
  Hdf5File f = Hdf5File::open(d.file("s.h5"));
  const auto res = f.read_doubles("residual_norms");
  ASSERT_EQ(res.size(), 24u);
  for (double r : res) EXPECT_LE(r, 1.01e-8);
  EXPECT_EQ(f.read_doubles("solution").size(), std::size_t(24 * 27000));
  // k = 8: Chebyshev 3·16 + 16 = 64 vectors > 60: width 16 → (60 − 16)/3 = 14
  auto c = run_tcsolve_env({limit}, {"eigs", "gen:lap3d:30", "--k", "8", "--which", "largest",
                                     "--method", "chebyshev", "--device", "cuda", "--json"});
  ASSERT_EQ(c.status, 0) << c.err << c.out;
  EXPECT_NE(c.out.find("block width reduced from 16 to 14"), std::string::npos) << c.out;
  // Lanczos (b = 8) at 40 MB: 144 vectors, basis 128 → (144 − 32)/2 = 56
  auto l = run_tcsolve_env({"TCSOLVE_DEVICE_MEMORY_LIMIT=40000000"},
                           {"eigs", "gen:lap3d:30", "--k", "8", "--which", "largest",
                            "--method", "lanczos", "--device", "cuda", "--json"});
  ASSERT_EQ(l.status, 0) << l.err << l.out;
  EXPECT_NE(l.out.find("Lanczos basis reduced from 128 to 56"), std::string::npos) << l.out;
  auto refused = run_tcsolve_env({"TCSOLVE_DEVICE_MEMORY_LIMIT=7000000"},
                                 {"eigs", "gen:lap3d:30", "--k", "16", "--which", "largest",
                                  "--method", "chebyshev", "--device", "cuda"});
  EXPECT_EQ(refused.status, 2) << refused.out;
  // 3·(16 + 4) + 2·16 = 92 vectors at the smallest width
  EXPECT_NE(refused.err.find("chebyshev with k = 16 needs at least 92 vectors of 27000 rows (0.02 GiB) beside"),
            std::string::npos) << refused.err;
}

// Shift-invert with GPU triangular solves and a certified count; Chebyshev for the largest.
TEST(AppsGpu, ShiftInvertAndChebyshevOnTheDevice) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  auto r = run_tcsolve({"eigs", "gen:elast3d:10", "--k", "12", "--device", "cuda", "--json"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("\"transform\": \"shift-invert\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"certified\": \"yes\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trial at"), std::string::npos) << r.out;  // SpSM vs host, timed once
  auto c = run_tcsolve({"eigs", "gen:lap3d:30", "--k", "8", "--which", "largest", "--no-factor",
                        "--device", "cuda", "--json"});
  ASSERT_EQ(c.status, 0) << c.err << c.out;
  EXPECT_NE(c.out.find("\"method\": \"chebyshev\""), std::string::npos) << c.out;
}

}  // namespace
}  // namespace tcsolve::test
