// Minimal host parallelism: a static split of [0, n) over hardware threads (std::thread).
// Used by CPU reference kernels and preprocessing; no dependency beyond the standard library.
#pragma once
#ifdef __linux__
#include <sched.h>
#endif
#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace tcsolve {

// The CPUs this process may run on (its affinity mask: under mpirun --bind-to core that is one,
// not the node's hardware_concurrency).
inline int host_threads() {
#ifdef __linux__
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    const int n = CPU_COUNT(&mask);
    if (n > 0) return n;
  }
#endif
  unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(h);
}

// Calls body(i) for every i in [0, n), in contiguous chunks, one per thread. Below `grain`
// items per thread it runs inline. Exceptions from body are rethrown on the caller's thread.
template <class F>
void parallel_for(std::int64_t n, F&& body, std::int64_t grain = 4096) {
  int nt = static_cast<int>(std::min<std::int64_t>(host_threads(), std::max<std::int64_t>(1, n / grain)));
  if (nt <= 1) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> err(nt);
  for (int t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      try {
        std::int64_t b = n * t / nt, e = n * (t + 1) / nt;
        for (std::int64_t i = b; i < e; ++i) body(i);
      } catch (...) {
        err[t] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : err)
    if (e) std::rethrow_exception(e);
}

}  // namespace tcsolve
