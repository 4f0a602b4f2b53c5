// Pieces of factor/ that need no engine: error types and names.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>

#include "factor/shift_invert.hpp"
#include "factor/engines.hpp"
#include "factor/sparse_factor.hpp"

namespace tcsolve {

namespace {
std::string g(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
std::string gib(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / 1073741824.0);
  return b;
}
}  // namespace

SingularShift::SingularShift(double sigma, double suggestion, const std::string& detail)
    : InvalidArgument("A - sigma*B is singular at sigma = " + g(sigma) +
                      " (sigma is an eigenvalue to working precision: " + detail +
                      "); use a nearby shift, e.g. --sigma " + g(suggestion)),
      sigma_(sigma), suggestion_(suggestion), detail_(detail) {}

FactorTooLarge::FactorTooLarge(double estimated_bytes, double limit_bytes, const std::string& what)
    : Error(what + ": the factorization needs about " + gib(estimated_bytes) + ", more than the " +
            gib(limit_bytes) + " allowed (80% of the available host memory); use --no-factor " +
            "for an iterative method"),
      estimated_(estimated_bytes) {}

namespace detail {

static double read_memory_limit() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (f >> key) {
    if (key == "MemAvailable:") {
      f >> kb;
      break;
    }
    std::string rest;
    std::getline(f, rest);
  }
  if (kb <= 0) return 1e300;  // unknown: no limit
  return 0.8 * kb * 1024.0;
}

// 80 % of MemAvailable, read at most every 0.25 s (a small direct solve read /proc/meminfo on
// every factorization: about 3 % of a 207-row spsolve's time).
double factor_memory_limit(const FactorOptions& opt) {
  if (opt.memory_limit_bytes > 0) return opt.memory_limit_bytes;
  static std::mutex mu;
  static double cached = 0, cached_at = -1;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::lock_guard<std::mutex> lock(mu);
  if (cached_at >= 0 && t - cached_at < 0.25) return cached;
  cached = read_memory_limit();
  cached_at = t;
  return cached;
}

}  // namespace detail

double factor_memory_budget(const FactorOptions& opt) { return detail::factor_memory_limit(opt); }

const char* to_string(FactorEngine e) {
  switch (e) {
    case FactorEngine::automatic: return "auto";
    case FactorEngine::cholmod: return "cholmod";
    case FactorEngine::mumps: return "mumps";
    case FactorEngine::umfpack: return "umfpack";
  }
  return "?";
}

const char* to_string(SolveMode m) {
  switch (m) {
    case SolveMode::host: return "host";
    case SolveMode::device_staged: return "device_staged";
    case SolveMode::device_triangular: return "device_triangular";
  }
  return "?";
}

}  // namespace tcsolve
