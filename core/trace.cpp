#include "core/trace.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tcsolve {

namespace {
const auto kStart = std::chrono::steady_clock::now();
bool read_flag() {
  const char* v = std::getenv("TCSOLVE_TRACE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}
}  // namespace

bool trace_enabled() {
  static const bool on = read_flag();
  return on;
}

void trace_mark(const char* what) {
  if (!trace_enabled()) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kStart).count();
  std::fprintf(stderr, "tcsolve trace %10.3f ms  %s\n", ms, what);
}

}  // namespace tcsolve
