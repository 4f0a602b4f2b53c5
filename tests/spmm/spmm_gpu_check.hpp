// Device SpMM results against the CPU reference (csr_spmm_reference) for the GPU tests: X with a
// padded leading dimension, Y poisoned with NaN (every element must be written, its padding rows
// never).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/multivector.hpp"
#include "tests/spmm/spmm_test_util.hpp"

namespace tcsolve::test {

struct Check {
  double rel_err = 0;        // ‖Y − Yref‖_F / ‖Yref‖_F
  double rel_to_ax = 0;      // ‖Y − Yref‖_F / (‖A‖_F ‖X‖_F)
  std::int64_t unwritten = 0;  // NaN left inside Y
  std::int64_t clobbered = 0;  // padding rows of Y that changed
};

// Runs `apply` on device copies of X (ld = n + 3) and NaN-poisoned Y (ld = m + 5), compares.
template <class Apply>
inline Check run_and_compare(const Csr<double>& a, int k, unsigned seed, Apply&& apply) {
  const std::int64_t m = a.nrows, n = a.ncols, ldx = n + 3, ldy = m + 5;
  std::vector<double> x = random_vector(static_cast<std::size_t>(ldx * k), seed);
  std::vector<double> yref(static_cast<std::size_t>(m * k));
  csr_spmm_reference(a, x.data(), ldx, yref.data(), m, k);
  std::vector<double> y(static_cast<std::size_t>(ldy * k), std::numeric_limits<double>::quiet_NaN());
  MultiVector<double> xd(ldx, k, Space::device), yd(ldy, k, Space::device);
  copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
  copy_bytes(yd.data(), Space::device, y.data(), Space::host, y.size() * 8);
  apply(xd.data(), ldx, yd.data(), ldy);
  device_synchronize();
  copy_bytes(y.data(), Space::host, yd.data(), Space::device, y.size() * 8);
  Check c;
  double diff = 0;
  for (int j = 0; j < k; ++j) {
    for (std::int64_t i = 0; i < m; ++i) {
      const double v = y[i + j * ldy];
      if (std::isnan(v)) {
        ++c.unwritten;
        continue;
      }
      const double d = v - yref[i + j * m];
      diff += d * d;
    }
    for (std::int64_t i = m; i < ldy; ++i)
      if (!std::isnan(y[i + j * ldy])) ++c.clobbered;
  }
  const double ny = frobenius(yref.data(), m, k, m);
  const double nx = frobenius(x.data(), n, k, ldx);
  c.rel_err = std::sqrt(diff) / (ny > 0 ? ny : 1.0);
  c.rel_to_ax = std::sqrt(diff) / std::max(1e-300, frobenius(a) * nx);
  return c;
}

inline void expect_ok(const Check& c, double tol, bool against_ax, const std::string& what) {
  EXPECT_EQ(c.unwritten, 0) << what << ": Y elements left unwritten (NaN)";
  EXPECT_EQ(c.clobbered, 0) << what << ": writes beyond the rows of Y";
  const double e = against_ax ? c.rel_to_ax : c.rel_err;
  EXPECT_LE(e, tol) << what;
}

}  // namespace tcsolve::test
