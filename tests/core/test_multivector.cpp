#include <gtest/gtest.h>

#include "core/multivector.hpp"
#include "core/types.hpp"

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
