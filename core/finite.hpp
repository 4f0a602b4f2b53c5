// Finiteness checks of large host arrays (start blocks, checkpoints: GBs), on all host threads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/parallel.hpp"

namespace tcsolve {

// The index of the first non-finite value of v[0, n), or -1 when all are finite. Chunks of 2^20
// values, each scanned by one thread up to its first hit.
inline std::int64_t first_non_finite(const double* v, std::int64_t n) {
  constexpr std::int64_t kChunk = std::int64_t(1) << 20;
  std::vector<std::int64_t> first((n + kChunk - 1) / kChunk, -1);
  parallel_for(static_cast<std::int64_t>(first.size()), [&](std::int64_t c) {
    for (std::int64_t i = c * kChunk, e = std::min(n, i + kChunk); i < e; ++i)
      if (!std::isfinite(v[i])) {
        first[c] = i;
        return;
      }
  }, 1);
  for (const std::int64_t i : first)
    if (i >= 0) return i;
  return -1;
}

}  // namespace tcsolve
