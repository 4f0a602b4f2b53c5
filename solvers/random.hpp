// Counter-based pseudo-random numbers shared by host and device code, so that fill_random gives
// the same block on every backend (splitmix64 of seed, row and column).
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define TCSOLVE_HOST_DEVICE __host__ __device__
#else
#define TCSOLVE_HOST_DEVICE
#endif

namespace tcsolve::detail {

TCSOLVE_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1): 53 random bits.
TCSOLVE_HOST_DEVICE inline double random_entry(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  std::uint64_t h = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(j) * 0x100000001B3ull ^
                                                 splitmix64(static_cast<std::uint64_t>(i))));
  return static_cast<double>(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

}  // namespace tcsolve::detail
