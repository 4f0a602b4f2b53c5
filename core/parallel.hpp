// Minimal host parallelism: a static split of [0, n) over hardware threads (persistent
// std::thread workers).
// Used by CPU reference kernels and preprocessing; no dependency beyond the standard library.
#pragma once
#ifdef __linux__
#include <sched.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
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

namespace detail {

// Persistent host workers for parallel_for: starting threads for every loop cost 70 µs a call on
// the 2-core development machine (more on 16 cores), against ~20 µs of SpMV on a 10k-row graph
// Laplacian. One loop at a time; the caller runs chunk 0. Created at the first parallel loop
// with host_threads() − 1 workers; never destroyed (the workers wait on a condition variable
// until the process ends). run() declines — and the caller then runs every chunk itself — when
// another thread's loop holds the pool, when called from a worker (a nested loop), and in a
// child process after fork() (the workers stayed in the parent).
class HostPool {
 public:
  static HostPool& instance() {
    static HostPool* pool = new HostPool(std::max(0, host_threads() - 1));
    return *pool;
  }
  // The pool of the calling thread's loops: its own (HostShare) or the process's.
  static HostPool& for_this_thread() {
    HostPool* p = own();
    return p ? *p : instance();
  }
  // A pool of its own for the calling thread (never destroyed, like the process's).
  static void own_pool(int workers) { own() = new HostPool(std::max(0, workers)); }
  static void drop_own_pool() { own() = nullptr; }
  int workers() const { return workers_; }
  // task(t) for t in [0, nt), nt ≤ workers() + 1; task must not throw. Called from a worker or
  // from inside another run() on this thread, it declines (in_worker()).
  bool run(int nt, const std::function<void(int)>& task) {
    if (nt <= 1 || in_worker() || ::getpid() != pid_ || nt > workers_ + 1) return false;
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    // The caller's own chunk may hold a nested loop: it runs inline (as in a worker), never
    // trying busy_ again from this thread.
    struct Mark {
      Mark() { in_worker() = true; }
      ~Mark() { in_worker() = false; }
    } mark;
    {
      std::lock_guard<std::mutex> lk(m_);
      task_ = &task;
      nt_ = nt;
      pending_.store(nt - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    task(0);
    // The workers are usually done by now: spin briefly before sleeping.
    spin_while([&] { return pending_.load(std::memory_order_acquire) != 0; });
    if (pending_.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lk(m_);
      done_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    return true;
  }

 private:
  // The caller spins up to 50 µs for the workers before sleeping. The workers themselves sleep
  // at once (a loop: 11 µs on the 2-core machine). Workers that also spun 50 µs after every loop
  // cut it to 1.8 µs, but would hold up to 15 CPUs of the 16-core H200 host between loops while
  // CHOLMOD and OpenBLAS want them; the one run with them there was 2x slower on host
  // shift-invert and block CG, though that machine proved slower with the pool off as well
  // (docs/performance.md), so the cause was not shown. Sleeping workers cannot do that.
  template <class Pred>
  static void spin_while(Pred busy) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    for (int i = 1; busy(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      std::this_thread::yield();
#endif
      if ((i & 255) == 0 && std::chrono::steady_clock::now() > until) return;
    }
  }
  explicit HostPool(int workers) : pid_(::getpid()), workers_(workers) {
    for (int w = 0; w < workers_; ++w) std::thread([this, w] { loop(w + 1); }).detach();
  }
  static bool& in_worker() {
    static thread_local bool flag = false;
    return flag;
  }
  static HostPool*& own() {
    static thread_local HostPool* pool = nullptr;
    return pool;
  }
  void loop(int t) {
    in_worker() = true;
    std::uint64_t seen = 0;
    for (;;) {
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lk(m_);
        wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      const std::function<void(int)>* task;
      int nt;
      {
        std::lock_guard<std::mutex> lk(m_);  // task_ and nt_ of the newest loop
        seen = generation_.load(std::memory_order_acquire);
        task = task_;
        nt = nt_;
      }
      if (t >= nt) continue;  // not needed in this loop
      (*task)(t);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(m_);
        done_.notify_one();
      }
    }
  }
  std::mutex busy_, m_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  int nt_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<std::uint64_t> generation_{0};
  const pid_t pid_;
  const int workers_;
};

// TCSOLVE_HOST_POOL=0 starts threads for every loop instead (the earlier way; for same-run A/B).
inline bool host_pool_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TCSOLVE_HOST_POOL");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

}  // namespace detail

// For its scope, the calling thread's parallel loops run on a pool of their own of `threads`
// CPUs (the caller and threads − 1 workers; the workers stay, asleep, until the process ends).
// batch runs a job per GPU at once: with one pool, the second job's loops found it busy and ran
// on one CPU each. Threads the caller starts keep the process's pool.
class HostShare {
 public:
  explicit HostShare(int threads) { detail::HostPool::own_pool(threads - 1); }
  ~HostShare() { detail::HostPool::drop_own_pool(); }
  HostShare(const HostShare&) = delete;
  HostShare& operator=(const HostShare&) = delete;
};

namespace detail {
// The first exception of a parallel loop, kept for the caller's thread.
struct FirstError {
  std::mutex m;
  std::exception_ptr err;
  std::atomic<bool> failed{false};
  void keep() {
    std::lock_guard<std::mutex> lk(m);
    if (!err) err = std::current_exception();
    failed.store(true, std::memory_order_relaxed);
  }
  void rethrow() const {
    if (err) std::rethrow_exception(err);
  }
};
}  // namespace detail

// Calls body(i) for every i in [0, n), in contiguous chunks, one per thread (the persistent
// workers of detail::HostPool). Below `grain` items per thread it runs inline. The first
// exception from body is rethrown on the caller's thread. The loop's state lives on this frame
// and the task captures one pointer to it (std::function keeps that in place): no allocation a
// call, as the solvers call these in their iterations.
template <class F>
void parallel_for(std::int64_t n, F&& body, std::int64_t grain = 4096) {
  int nt = static_cast<int>(std::min<std::int64_t>(host_threads(), std::max<std::int64_t>(1, n / grain)));
  if (nt <= 1) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  const bool pooled = detail::host_pool_enabled();
  if (pooled) nt = std::min(nt, detail::HostPool::for_this_thread().workers() + 1);
  struct Loop {
    std::int64_t n = 0;
    int nt = 0;
    std::remove_reference_t<F>* body = nullptr;
    detail::FirstError error;
  } loop;
  loop.n = n, loop.nt = nt, loop.body = &body;
  const std::function<void(int)> chunk = [l = &loop](int t) {
    try {
      const std::int64_t b = l->n * t / l->nt, e = l->n * (t + 1) / l->nt;
      for (std::int64_t i = b; i < e; ++i) (*l->body)(i);
    } catch (...) {
      l->error.keep();
    }
  };
  if (!pooled) {  // TCSOLVE_HOST_POOL=0: a thread per chunk and loop (A/B)
    std::vector<std::thread> threads;
    for (int t = 0; t < nt; ++t) threads.emplace_back(chunk, t);
    for (auto& th : threads) th.join();
  } else if (!detail::HostPool::for_this_thread().run(nt, chunk)) {
    for (int t = 0; t < nt; ++t) chunk(t);  // the pool is busy, nested or forked away
  }
  loop.error.rethrow();
}

// Calls body(p) for every part p in [0, parts), the parts handed out one at a time to the
// threads (a shared counter): a thread that another process slows down takes fewer parts, where
// parallel_for's one chunk a thread waits for the slowest. Which thread runs a part is not fixed,
// so body(p) must compute the same whoever runs it (the CPU kernels' rows do). The first
// exception is rethrown on the caller's thread (the parts not yet started are skipped). No
// allocation a call (as parallel_for).
template <class F>
void parallel_parts(int parts, F&& body) {
  int nt = std::min(host_threads(), parts);
  const bool pooled = detail::host_pool_enabled();
  if (pooled && nt > 1) nt = std::min(nt, detail::HostPool::for_this_thread().workers() + 1);
  if (nt <= 1) {
    for (int p = 0; p < parts; ++p) body(p);
    return;
  }
  struct Loop {
    int parts = 0;
    std::remove_reference_t<F>* body = nullptr;
    std::atomic<int> next{0};
    detail::FirstError error;
  } loop;
  loop.parts = parts, loop.body = &body;
  const std::function<void(int)> task = [l = &loop](int) {
    for (int p = l->next.fetch_add(1, std::memory_order_relaxed);
         p < l->parts && !l->error.failed.load(std::memory_order_relaxed);
         p = l->next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        (*l->body)(p);
      } catch (...) {
        l->error.keep();
      }
    }
  };
  if (!pooled) {  // TCSOLVE_HOST_POOL=0 (A/B)
    std::vector<std::thread> threads;
    for (int t = 0; t < nt; ++t) threads.emplace_back(task, t);
    for (auto& th : threads) th.join();
  } else if (!detail::HostPool::for_this_thread().run(nt, task)) {
    task(0);  // the pool is busy, nested or forked away: every part on this thread
  }
  loop.error.rethrow();
}

}  // namespace tcsolve
