// TCSOLVE_TRACE=1: timestamps of named points of a run on stderr, in milliseconds since the
// process started (the first static initializer of tcsolve_core). A diagnostic for the default
// path's phases (docs/performance.md): when unset, a mark costs one predictable branch.
// TCSOLVE_TRACE=mem adds the GPU memory the process holds at each mark (device_footprint()).
#pragma once

namespace tcsolve {

bool trace_enabled();
// Prints "tcsolve trace  <ms>  <what>" when TCSOLVE_TRACE is set (not to an empty or "0" value);
// the first mark also prints "tcsolve trace clock <s>", the zero's steady_clock (CLOCK_MONOTONIC)
// reading.
void trace_mark(const char* what);

}  // namespace tcsolve
