// The engine-rate cache's writer (factor/engine_rates.hpp, detail::write_rate_cache) in a folder
// another user could write (TCSOLVE_CACHE_DIR under /tmp): links planted at the cache's name and
// at the temporary names an older tcsolve used (FILE.tmp-<pid>) must neither be followed by the
// write (their target keeps its bytes) nor be read and copied into the new cache.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "factor/engine_rates.hpp"
#include "tests/temp_dir.hpp"

namespace tcsolve::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_link(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

EngineRates some_rates(double analyze) {
  EngineRates r;
  r.analyze_s_per_entry = analyze;
  return r;
}

TEST(RateCache, PlantedLinksAreNeitherFollowedNorRead) {
  TempDir d;
  // The victim holds a valid-looking rates line: a writer that read through the link would copy
  // it into the (readable) cache.
  const std::string victim_text = "victim|cores=2 1 1 1 1 1 1 1 1 1 1 1\nsecret\n";
  const std::string victim = d.write("victim.txt", victim_text);
  const std::string dir = d / "cache";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/engine-rates-v8.txt";
  const std::string old_tmp = file + ".tmp-" + std::to_string(::getpid());
  ASSERT_EQ(::symlink(victim.c_str(), file.c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), old_tmp.c_str()), 0);

  detail::write_rate_cache(dir, file, "host|cores=2", some_rates(1.5e-7));

  EXPECT_EQ(slurp(victim), victim_text) << "the write followed a planted link";
  EXPECT_TRUE(is_regular(file)) << "the cache's own name must now be a regular file";
  const std::string cache = slurp(file);
  EXPECT_EQ(cache.find("victim"), std::string::npos) << cache;
  EXPECT_EQ(cache.find("secret"), std::string::npos) << cache;
  EXPECT_EQ(cache.rfind("host|cores=2 1.5e-07 ", 0), 0u) << cache;
  // The planted temporary is left as it was (never opened), and no other temporary remains.
  EXPECT_TRUE(is_link(old_tmp));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"engine-rates-v8.txt", std::filesystem::path(old_tmp).filename().string()}));
}

TEST(RateCache, KeepsTheOtherKeysLinesAndReplacesItsOwn) {
  TempDir d;
  const std::string dir = d / "cache";
  const std::string file = dir + "/engine-rates-v8.txt";
  detail::write_rate_cache(dir, file, "a|cores=2", some_rates(1e-7));
  detail::write_rate_cache(dir, file, "b|cores=2", some_rates(2e-7));
  detail::write_rate_cache(dir, file, "a|cores=2", some_rates(3e-7));
  const std::string cache = slurp(file);
  EXPECT_NE(cache.find("b|cores=2 2e-07 "), std::string::npos) << cache;
  EXPECT_NE(cache.find("a|cores=2 3e-07 "), std::string::npos) << cache;
  EXPECT_EQ(cache.find("a|cores=2 1e-07 "), std::string::npos) << cache;
  EXPECT_EQ(d.files(), std::vector<std::string>{"cache"});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
}

}  // namespace
}  // namespace tcsolve::test

namespace tcsolve::test {
namespace {
// The factorization's fit: exact data give back the coefficients; noisy data that would leave the
// flop coefficient near 0 are floored at a quarter of the 3D sample's whole rate.
TEST(RateFit, FactorCoefficientsAreFlooredAgainstNoise) {
  double a = 0, b = 0;
  const double fa = 1e-10, fb = 5e-8;
  detail::factor_coefficients(1e7 * fa + 1e6 * fb, 1e7, 1e6, 1e9 * fa + 5e6 * fb, 1e9, 5e6, &a, &b);
  EXPECT_NEAR(a, fa, 1e-14);
  EXPECT_NEAR(b, fb, 1e-12);
  // the 2D sample timed 1.37x slow (0.0699 s against 0.051): both coefficients of the exact solve
  // stay positive, but a = 5.3e-13; floored at 0.25 * t3 / flops3 = 8.75e-11
  const double t2 = 0.0699, t3 = 1e9 * fa + 5e6 * fb;
  detail::factor_coefficients(t2, 1e7, 1e6, t3, 1e9, 5e6, &a, &b);
  EXPECT_NEAR(a, 0.25 * t3 / 1e9, 1e-20);
  EXPECT_NEAR(b, (t2 - a * 1e7) / 1e6, 1e-18);
  EXPECT_GT(b, 0.0);
}

// Supernodal block solves: the 2D sample's pair at or below its front width, the 3D sample's at or
// above its own, geometric in log(flops / entries) between; a single pair (no wide sample) is
// used alone.
TEST(RateFit, SupernodalSolvesInterpolateInFrontWidth) {
  EngineRates r;
  r.solve_s_per_entry = 1e-9, r.solve_s_per_entry_col = 1.4e-9;
  r.wide_solve_s_per_entry = 0.9e-9, r.wide_solve_s_per_entry_col = 0.35e-9;
  r.narrow_flops_per_entry = 90, r.wide_flops_per_entry = 450;
  const double e = 1e6, narrow16 = e * (1e-9 + 16 * 1.4e-9), wide16 = e * (0.9e-9 + 16 * 0.35e-9);
  ASSERT_GE(50 * e, kSimplicialBelowFlops);
  EXPECT_NEAR(r.solve_seconds(e, 16, 50 * e, 1e4), narrow16, 1e-15);
  EXPECT_NEAR(r.solve_seconds(e, 16, 90 * e, 1e4), narrow16, 1e-15);
  EXPECT_NEAR(r.solve_seconds(e, 16, 450 * e, 1e4), wide16, 1e-15);
  EXPECT_NEAR(r.solve_seconds(e, 16, 900 * e, 1e4), wide16, 1e-15);
  const double mid = std::sqrt(90.0 * 450.0);  // halfway in the log: the geometric mean
  EXPECT_NEAR(r.solve_seconds(e, 16, mid * e, 1e4), std::sqrt(narrow16 * wide16), 1e-12);
  EXPECT_GT(r.solve_seconds(e, 16, 200 * e, 1e4), r.solve_seconds(e, 16, 300 * e, 1e4));
  r.wide_solve_s_per_entry = r.wide_solve_s_per_entry_col = 0;
  EXPECT_NEAR(r.solve_seconds(e, 16, 450 * e, 1e4), narrow16, 1e-15);
}
}  // namespace
}  // namespace tcsolve::test
