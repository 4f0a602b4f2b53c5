// Shared pieces of the matrix generators (io/generators.cpp and the families in
// io/generators_*.cpp): deterministic randomness, the parsed spec and its parameter checks.
// Internal to io/: not installed, not for other layers.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"

namespace tcsolve::gen {

using i64 = std::int64_t;
using u64 = std::uint64_t;
inline constexpr i64 max_rows = std::numeric_limits<std::int32_t>::max();  // 32-bit column indices

// ---- randomness ---------------------------------------------------------------------------

// splitmix64 finalizer: a bijective 64-bit mixer with good avalanche.
inline u64 mix64(u64 z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// Hash of (seed, stream, key): independent streams per generator role.
inline u64 hash3(u64 seed, u64 stream, u64 key) { return mix64(mix64(seed ^ mix64(stream)) ^ key); }
// Uniform double in [0, 1) from the top 53 bits.
inline double unit(u64 h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// xoshiro256** sequential generator, seeded through splitmix64 (for permutations and R-MAT).
class Xoshiro256 {
 public:
  explicit Xoshiro256(u64 seed) {
    u64 x = seed;
    for (auto& w : s_) {
      x += 0x9e3779b97f4a7c15ULL;
      w = mix64(x);
    }
  }
  u64 next() {
    const u64 result = rotl(s_[1] * 5, 7) * 9;
    const u64 t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64, irrelevant here).
  u64 below(u64 n) { return static_cast<u64>((static_cast<unsigned __int128>(next()) * n) >> 64); }

 private:
  static u64 rotl(u64 x, int k) { return (x << k) | (x >> (64 - k)); }
  u64 s_[4];
};

// Stream identifiers (arbitrary distinct constants).
enum Stream : u64 { s_band = 11, s_band_diag, s_random_pick, s_random_val, s_random_diag, s_elast,
                    s_elast_ghost, s_rmat, s_scramble, s_rgg, s_jump, s_constrain, s_wind };

// ---- spec parsing -------------------------------------------------------------------------

struct Spec {
  std::string name;
  std::vector<std::string> params;
  bool scramble = false;
  u64 seed = 1;
};

[[noreturn]] inline void bad(const std::string& spec, const std::string& what) {
  throw InvalidArgument("generator spec '" + spec + "': " + what);
}

// Parses a decimal unsigned integer (digits only, no sign, no overflow).
inline u64 parse_u64(const std::string& spec, const std::string& what, const std::string& s) {
  if (s.empty()) bad(spec, "missing " + what);
  u64 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') bad(spec, what + " '" + s + "' is not a non-negative integer");
    const u64 d = static_cast<u64>(c - '0');
    if (v > (std::numeric_limits<u64>::max() - d) / 10) bad(spec, what + " '" + s + "' is too large");
    v = v * 10 + d;
  }
  return v;
}

inline void expect_params(const std::string& spec, const Spec& s, std::size_t n, const char* usage) {
  if (s.params.size() != n)
    bad(spec, "'" + s.name + "' takes " + std::to_string(n) + " parameter" + (n == 1 ? "" : "s") +
                  " (" + usage + "), got " + std::to_string(s.params.size()));
}

// A positive size parameter bounded by `limit`.
inline i64 size_param(const std::string& spec, const std::string& what, const std::string& s, i64 limit) {
  u64 v = parse_u64(spec, what, s);
  if (v == 0) bad(spec, what + " must be positive");
  if (v > static_cast<u64>(limit))
    bad(spec, what + " = " + s + " is too large (at most " + std::to_string(limit) +
                  ": row and column indices are 32-bit)");
  return static_cast<i64>(v);
}

// Row count check for products of grid sizes.
inline void check_rows(const std::string& spec, long double rows) {
  if (rows > static_cast<long double>(max_rows))
    bad(spec, "the matrix would have " + std::to_string(static_cast<unsigned long long>(rows)) +
                  " rows, more than 32-bit indices allow (" + std::to_string(max_rows) + ")");
}

// Refuses sizes whose entry count alone would need terabytes (2^40 entries = 12 TiB of CSR).
inline void check_entries(const std::string& spec, long double entries) {
  if (entries > static_cast<long double>(i64(1) << 40))
    bad(spec, "the matrix would hold about " + std::to_string(static_cast<unsigned long long>(entries)) +
                  " entries, more than 2^40");
}

// A finite positive real parameter ("1e6", "0.5"), at most `limit`; with allow_zero, 0 too.
inline double real_param(const std::string& spec, const std::string& what, const std::string& s,
                         double limit, bool allow_zero = false) {
  if (s.empty()) bad(spec, "missing " + what);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v))
    bad(spec, what + " '" + s + "' is not a number");
  if (allow_zero && v < 0) bad(spec, what + " = " + s + " must be non-negative");
  if (!allow_zero && v <= 0) bad(spec, what + " = " + s + " must be positive");
  if (v > limit) bad(spec, what + " = " + s + " is too large (at most " + std::to_string(limit) + ")");
  return v;
}

// Between lo and hi parameters.
inline void expect_params_between(const std::string& spec, const Spec& s, std::size_t lo,
                                  std::size_t hi, const char* usage) {
  if (s.params.size() < lo || s.params.size() > hi)
    bad(spec, "'" + s.name + "' takes " + std::to_string(lo) + " to " + std::to_string(hi) +
                  " parameters (" + usage + "), got " + std::to_string(s.params.size()));
}

// ---- the families outside generators.cpp -------------------------------------------------
// io/generators_graph.cpp
Csr<double> gen_rgg(const std::string& spec, const Spec& s);
Csr<double> gen_neumann(const std::string& spec, const Spec& s);
// io/generators_pde.cpp
Csr<double> gen_jump(const std::string& spec, const Spec& s);
Csr<double> gen_stiff(const std::string& spec, const Spec& s);
Csr<double> gen_convdiff(const std::string& spec, const Spec& s);
Csr<double> gen_helmholtz(const std::string& spec, const Spec& s);
Csr<double> gen_counts(const std::string& spec, const Spec& s);  // io/generators_counts.cpp

}  // namespace tcsolve::gen
