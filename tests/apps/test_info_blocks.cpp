// tcsolve info --blocks/--reorder: block statistics before and after the Jaccard reordering and
// the SpMM plan, checked against hand-computed layouts and against the preprocess library.
#include <gtest/gtest.h>

#include <cmath>

#include "io/generators.hpp"
#include "preprocess/bcsr_stats.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

// The number after `"key": ` at or after position `from`.
double json_at(const std::string& json, const std::string& key, std::size_t from = 0) {
  auto p = json.find("\"" + key + "\": ", from);
  if (p == std::string::npos) {
    ADD_FAILURE() << "no key " << key << " in " << json;
    return NAN;
  }
  return std::strtod(json.c_str() + p + key.size() + 4, nullptr);
}

std::size_t find_or_fail(const std::string& s, const std::string& what, std::size_t from = 0) {
  auto p = s.find(what, from);
  if (p == std::string::npos) ADD_FAILURE() << "no '" << what << "' in " << s;
  return p;
}

TEST(AppsInfoBlocks, HandComputedDiagonalLayout) {
  // 5x5 diagonal with 2x2 blocks: block rows {0,1} {2,3} {4}; one block each on the diagonal:
  // 3 blocks, 12 stored entries, fill 5/12; blocks per block row 1, 1, 1 (std 0);
  // bytes = values 3·4·8 + block_col 3·4 + block_row_ptr 4·8 + perm 5·4 = 160.
  ScratchDir d;
  std::string p = d.write("diag.mtx",
                          "%%MatrixMarket matrix coordinate real general\n5 5 5\n"
                          "1 1 1.5\n2 2 -2\n3 3 3\n4 4 4.25\n5 5 5\n");
  auto r = run_tcsolve({"info", p, "--blocks", "2x2", "--reorder", "none", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto b = find_or_fail(r.out, "\"before\": ");
  EXPECT_EQ(json_at(r.out, "blocks", b), 3);
  EXPECT_EQ(json_at(r.out, "block_rows", b), 3);
  EXPECT_NEAR(json_at(r.out, "fill", b), 5.0 / 12.0, 1e-15);
  EXPECT_EQ(json_at(r.out, "blocks_per_row_mean", b), 1);
  EXPECT_EQ(json_at(r.out, "blocks_per_row_std", b), 0);
  EXPECT_EQ(json_at(r.out, "blocks_per_row_max", b), 1);
  EXPECT_EQ(json_at(r.out, "bytes", b), 160);
  EXPECT_NE(r.out.find("\"method\": \"none\""), std::string::npos) << r.out;
  // --precision changes the bytes of the values only: 3·4·2 + 12 + 32 + 20 = 88
  auto h = run_tcsolve({"info", p, "--blocks", "2x2", "--reorder", "none", "--json",
                        "--precision", "fp16"});
  ASSERT_EQ(h.status, 0) << h.err;
  EXPECT_EQ(json_at(h.out, "bytes", find_or_fail(h.out, "\"before\": ")), 88);
}

TEST(AppsInfoBlocks, MatchesLibraryAndReorderingNeverWorse) {
  const std::string spec = "gen:lap2d:37x23+scramble";
  const Csr<double> a = generate(spec);
  for (auto [h, w] : {std::pair{8, 4}, std::pair{16, 16}}) {
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
    const BcsrStats ref = block_stats(a, h, w);
    auto r = run_tcsolve({"info", spec, "--blocks", std::to_string(h) + "x" + std::to_string(w),
                          "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto b = find_or_fail(r.out, "\"before\": ");
    auto af = find_or_fail(r.out, "\"after\": ");
    auto ro = find_or_fail(r.out, "\"reorder\": ");
    EXPECT_EQ(json_at(r.out, "blocks", b), ref.nblocks);
    EXPECT_EQ(json_at(r.out, "bytes", b), ref.bytes);
    const double after = json_at(r.out, "blocks", af);
    EXPECT_LE(after, ref.nblocks);
    const bool applied = r.out.find("\"applied\": true", ro) != std::string::npos;
    if (applied) EXPECT_LT(after, ref.nblocks);
    else EXPECT_EQ(after, ref.nblocks);
    // fill = nnz / (blocks·h·w) after as well
    EXPECT_NEAR(json_at(r.out, "fill", af), double(a.nnz()) / (after * h * w), 1e-12);
  }
}

TEST(AppsInfoBlocks, ScrambledMatrixGetsFewerBlocks) {
  // A scrambled 3D Laplacian in the input order scatters every block row; the reordering must
  // find a layout with fewer 8x4 blocks and say it kept it.
  auto r = run_tcsolve({"info", "gen:lap3d:12+scramble", "--blocks", "8x4"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("input order"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("jaccard order"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reordering       kept"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spmm plan"), std::string::npos) << r.out;
}

TEST(AppsInfoBlocks, PlanIsReported) {
  auto r = run_tcsolve({"info", "gen:lap2d:20", "--plan", "--json", "--cols", "16"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto p = find_or_fail(r.out, "\"spmm_plan\": ");
  EXPECT_EQ(json_at(r.out, "cols", p), 16);
  EXPECT_NE(r.out.find("\"kernel\": \"", p), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"reason\": \"", p), std::string::npos) << r.out;
  auto c = run_tcsolve({"info", "gen:lap2d:20", "--plan", "--plan-device", "cpu"});
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("kernel cpu_csr"), std::string::npos) << c.out;
}

TEST(AppsInfoBlocks, BadOptionsAreUsageErrors) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"info", "gen:lap2d:5", "--blocks", "8by4"},
        {"info", "gen:lap2d:5", "--blocks", "0x4"},
        {"info", "gen:lap2d:5", "--blocks", "8x4,"},
        {"info", "gen:lap2d:5", "--reorder", "metis"},
        {"info", "gen:lap2d:5", "--blocks", "8x4", "--reorder-mode", "columns"},
        {"info", "gen:lap2d:5", "--plan", "--precision", "fp8"},
        {"info", "gen:lap2d:5", "--plan", "--cols", "0"}}) {
    auto r = run_tcsolve(args);
    EXPECT_EQ(r.status, 2) << args[3] << " " << args.back() << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(args.back()), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tcsolve::test
