#include <gtest/gtest.h>

#include "core/multivector.hpp"
#include "core/types.hpp"
#include "core/device.hpp"

#include <cstdlib>
#include <string>
#include <utility>

using namespace tcsolve;

TEST(MultiVector, ColumnViewsShareStorage) {
  MultiVector<double> m(5, 4);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 5; ++i) m.data()[i + 5 * j] = 10 * j + i;
  auto v = m.columns(1, 2);
  EXPECT_EQ(v.cols, 2);
  EXPECT_EQ(v.ld, 5);
  EXPECT_EQ(v.col(1)[3], 23);
  EXPECT_THROW(m.columns(3, 2), InvalidArgument);
}

TEST(Types, ParsePrecisionAndBackend) {
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_THROW(parse_precision("fp8"), InvalidArgument);
  EXPECT_EQ(resolve_backend("cpu"), Backend::cpu);
  EXPECT_THROW(resolve_backend("tpu"), InvalidArgument);
}

// TCSOLVE_DEVICE_MEMORY_LIMIT: a positive byte count (1e9 notation too) is the limit; unset,
// empty, zero, negative, non-numeric or absurd values mean none.
TEST(Device, MemoryLimitFromTheEnvironment) {
  const char* old = std::getenv("TCSOLVE_DEVICE_MEMORY_LIMIT");
  const std::string saved = old ? old : "";
  ::unsetenv("TCSOLVE_DEVICE_MEMORY_LIMIT");
  EXPECT_EQ(device_memory_limit(), 0u);
  const std::pair<const char*, std::size_t> cases[] = {
      {"1000000000", 1000000000u}, {"2.5e9", 2500000000u}, {"4096", 4096u}, {"", 0u},
      {"0", 0u}, {"-5", 0u}, {"lots", 0u}, {"1e30", 0u}};
  for (const auto& [text, want] : cases) {
    ::setenv("TCSOLVE_DEVICE_MEMORY_LIMIT", text, 1);
    EXPECT_EQ(device_memory_limit(), want) << text;
  }
  if (old) ::setenv("TCSOLVE_DEVICE_MEMORY_LIMIT", saved.c_str(), 1);
  else ::unsetenv("TCSOLVE_DEVICE_MEMORY_LIMIT");
}
