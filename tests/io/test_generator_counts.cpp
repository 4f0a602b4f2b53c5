// gen:counts:CELLS:GENES[:DENSITY] (io/generators_counts.cpp): a canonical rectangular matrix of
// positive integer counts with the asked density, power-law column totals, overdispersed values,
// the same bits for the same spec, and clear errors for bad specs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "io/generators.hpp"

namespace tcsolve {
namespace {

TEST(GeneratorCounts, ShapeDensityAndValues) {
  for (double density : {0.02, 0.04, 0.07}) {
    const std::string spec = "gen:counts:3000:700:" + std::to_string(density);
    const auto a = generate(spec);
    SCOPED_TRACE(spec);
    EXPECT_EQ(a.nrows, 3000);
    EXPECT_EQ(a.ncols, 700);
    EXPECT_EQ(a.symmetry, Symmetry::general);
    EXPECT_NO_THROW(validate(a));  // canonical: sorted, unique columns per row
    const double d = static_cast<double>(a.nnz()) / (3000.0 * 700.0);
    EXPECT_NEAR(d, density, 0.1 * density);  // the size factors average to 1
    for (double v : a.values) {
      ASSERT_GE(v, 1.0);
      ASSERT_EQ(v, std::floor(v));
    }
    for (std::int64_t i = 0; i < a.nrows; ++i) ASSERT_GT(a.row_ptr[i + 1], a.row_ptr[i]);
  }
}

// Power-law genes: the column totals span orders of magnitude, the top 1 % of genes hold a large
// share of all counts; negative-binomial-like values: variance above the mean (overdispersion).
TEST(GeneratorCounts, PowerLawGenesOverdispersedCounts) {
  const auto a = generate("gen:counts:4000:1000");
  std::vector<double> total(a.ncols, 0.0);
  for (std::int64_t p = 0; p < a.nnz(); ++p) total[a.col_idx[p]] += a.values[p];
  std::sort(total.begin(), total.end(), std::greater<double>());
  const double all = std::accumulate(total.begin(), total.end(), 0.0);
  const double top = std::accumulate(total.begin(), total.begin() + 10, 0.0);
  EXPECT_GT(top / all, 0.2);
  EXPECT_GT(total.front(), 1000 * std::max(total[900], 1.0));
  double s = 0, s2 = 0;
  for (double v : a.values) s += v, s2 += v * v;
  const double mean = s / a.nnz(), var = s2 / a.nnz() - mean * mean;
  EXPECT_GT(var, 2 * mean);
}

TEST(GeneratorCounts, DeterministicAndSeeded) {
  const auto a = generate("gen:counts:500:300"), b = generate("gen:counts:500:300"),
             c = generate("gen:counts:500:300@7");
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  EXPECT_EQ(a.values, b.values);
  EXPECT_NE(a.col_idx, c.col_idx);
}

TEST(GeneratorCounts, BadSpecs) {
  for (const char* spec : {"gen:counts:100", "gen:counts:0:10", "gen:counts:10:0", "gen:counts:10:10:0",
                           "gen:counts:10:10:0.6", "gen:counts:10:10:x", "gen:counts:10:10:0.1:3",
                           "gen:counts:100:50+scramble"})
    EXPECT_THROW(generate(spec), InvalidArgument) << spec;
  try {
    generate("gen:counts:100:50+scramble");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("square"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tcsolve
