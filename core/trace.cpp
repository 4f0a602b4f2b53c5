#include "core/trace.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/device.hpp"

namespace tcsolve {

namespace {
const auto kStart = std::chrono::steady_clock::now();
bool read_flag() {
  const char* v = std::getenv("TCSOLVE_TRACE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}
}  // namespace

bool trace_memory() {
  static const bool on = [] {
    const char* v = std::getenv("TCSOLVE_TRACE");
    return v != nullptr && std::strcmp(v, "mem") == 0;
  }();
  return on;
}

bool trace_enabled() {
  static const bool on = read_flag();
  return on;
}

void trace_mark(const char* what) {
  if (!trace_enabled()) return;
  // Once: where the trace's zero lies on CLOCK_MONOTONIC (steady_clock), so that a harness that
  // starts the process can split its wall time into before the zero, marks, and after the last.
  static const bool clock_printed = [] {
    std::fprintf(stderr, "tcsolve trace clock %.6f s\n",
                 std::chrono::duration<double>(kStart.time_since_epoch()).count());
    return true;
  }();
  (void)clock_printed;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kStart).count();
  // The thread, numbered in the order threads first mark (a batch runs a worker per GPU).
  static std::atomic<int> threads{0};
  thread_local const int thread = threads.fetch_add(1);
  if (!trace_memory() || device_count() == 0) {
    std::fprintf(stderr, "tcsolve trace %10.3f ms t%d  %s\n", ms, thread, what);
    return;
  }
  const DeviceFootprint f = device_footprint();
  std::fprintf(stderr, "tcsolve trace %10.3f ms t%d  %s  [device: process %.1f MB (%s), tcsolve %.1f MB]\n", ms,
               thread, what, f.known ? f.process / 1e6 : -1.0, f.how.c_str(), f.held / 1e6);
}

}  // namespace tcsolve
