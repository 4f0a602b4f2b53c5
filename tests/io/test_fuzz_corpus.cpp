// Replays every file of the fuzz seed corpus (tests/fuzz/corpus/{mtx,rb}) through both readers:
// only tcsolve::Error (or success with a valid CSR) may come out. Files named ok_* must read
// successfully with the reader of their folder; files named bad_* must be refused by it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fuzz/fuzz_guard.hpp"
#include "tests/io/text_test_util.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

void replay(const std::string& folder, bool mtx) {
  const auto dir = test::source_dir() / "tests" / "fuzz" / "corpus" / folder;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int files = 0, ok = 0, bad = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string bytes = test::read_bytes(e.path().string());
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(e.path().string());
    bool own = false, other = false;
    EXPECT_NO_THROW(own = mtx ? fuzz::run_matrix_market(bytes.data(), bytes.size())
                              : fuzz::run_rutherford_boeing(bytes.data(), bytes.size()));
    EXPECT_NO_THROW(other = mtx ? fuzz::run_rutherford_boeing(bytes.data(), bytes.size())
                                : fuzz::run_matrix_market(bytes.data(), bytes.size()));
    (void)other;
    if (name.rfind("ok_", 0) == 0) {
      EXPECT_TRUE(own) << "valid seed file was refused";
      ++ok;
    } else if (name.rfind("bad_", 0) == 0) {
      EXPECT_FALSE(own) << "malformed seed file was accepted";
      ++bad;
    }
    ++files;
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(bad, 0);
  ::testing::Test::RecordProperty("files", files);
}

TEST(FuzzCorpus, MatrixMarketSeedsOnlyThrowTcsolveErrors) { replay("mtx", true); }
TEST(FuzzCorpus, RutherfordBoeingSeedsOnlyThrowTcsolveErrors) { replay("rb", false); }

}  // namespace
}  // namespace tcsolve
