// Exact CSR comparison for round-trip tests: same shape, structure, symmetry and bitwise-equal
// values (keeps -0.0 and 0.0 apart).
#pragma once
#include <cstring>

#include "core/csr.hpp"

namespace tcsolve::test {

inline bool same(const Csr<double>& a, const Csr<double>& b) {
  if (a.nrows != b.nrows || a.ncols != b.ncols || a.row_ptr != b.row_ptr || a.col_idx != b.col_idx ||
      a.symmetry != b.symmetry || a.values.size() != b.values.size())
    return false;
  return a.values.empty() ||
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(double)) == 0;
}

}  // namespace tcsolve::test
