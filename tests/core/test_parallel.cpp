// parallel_for on the persistent host workers (core/parallel.hpp): every index once, exceptions
// rethrown on the caller, nested loops and loops from two threads at once (both run inline when
// the pool is taken), a child process after fork() (its pool's workers stayed in the parent), and
// no heap allocation a loop (this binary counts operator new).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <cstdlib>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/host_memory.hpp"
#include "core/parallel.hpp"

// Every operator new of this test binary, counted (the other sizes and alignments go through
// these or through aligned_alloc, which parallel loops do not use). Not under AddressSanitizer,
// which replaces them itself (scripts/sanitize.sh).
#if defined(__SANITIZE_ADDRESS__)
#define TCSOLVE_COUNTS_NEW 0
#else
#define TCSOLVE_COUNTS_NEW 1
std::atomic<long> g_news{0};
void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace tcsolve {
namespace {

std::int64_t checksum(std::int64_t n, std::int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
  parallel_for(n, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); }, grain);
  std::int64_t bad = 0;
  for (auto& h : hits) bad += h.load() != 1;
  return bad;
}

TEST(Parallel, EveryIndexOnceOverManyLoops) {
  for (int rep = 0; rep < 200; ++rep)
    for (std::int64_t n : {0, 1, 7, 4095, 4096, 8193, 40001}) ASSERT_EQ(checksum(n, 1 + rep % 3 * 2048), 0) << n;
}

TEST(Parallel, ExceptionsReachTheCaller) {
  for (int rep = 0; rep < 20; ++rep) {
    std::atomic<std::int64_t> done{0};
    EXPECT_THROW(parallel_for(100000, [&](std::int64_t i) {
      if (i == 99999 - rep) throw std::runtime_error("row");
      done.fetch_add(1);
    }, 16), std::runtime_error);
    EXPECT_GE(done.load(), 1);
    EXPECT_EQ(checksum(50000, 16), 0);  // the pool works after a throw
  }
}

// The solvers call these loops inside their iterations (the CPU SpMM, block CG's row parts):
// after the pool's first use, a loop allocates nothing (its task captured a dozen references, a
// std::function on the heap each call, and parallel_for kept a vector of exceptions).
TEST(Parallel, LoopsAllocateNothing) {
#if !TCSOLVE_COUNTS_NEW
  GTEST_SKIP() << "AddressSanitizer owns operator new here";
#else
  if (host_threads() < 2) GTEST_SKIP() << "one host thread: the loops run inline";
  std::vector<std::int64_t> out(1 << 16);
  const auto pf = [&] { parallel_for(static_cast<std::int64_t>(out.size()), [&](std::int64_t i) { out[i] = i; }, 64); };
  const auto pp = [&] { parallel_parts(8, [&](int p) { out[p] += p; }); };
  pf(), pp();  // the pool starts
  const long before = g_news.load();
  for (int rep = 0; rep < 100; ++rep) pf(), pp();
  EXPECT_EQ(g_news.load() - before, 0);
#endif
}

TEST(Parallel, NestedAndConcurrentLoops) {
  std::atomic<std::int64_t> total{0};
  parallel_for(64, [&](std::int64_t) {
    parallel_for(1000, [&](std::int64_t) { total.fetch_add(1); }, 10);
  }, 1);
  EXPECT_EQ(total.load(), 64000);
  std::atomic<std::int64_t> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) bad.fetch_add(checksum(20000, 64));
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// Two threads, each with its own share (HostShare, as batch's workers per GPU), both run their
// overlapping loops on more than one thread; with the one process pool the second would run
// inline. Each loop's body waits until the other loop has started, so the two overlap.
TEST(Parallel, EachThreadsShareRunsItsLoopsInParallel) {
  if (host_threads() < 2) GTEST_SKIP() << "one CPU";
  std::atomic<int> started{0};
  std::vector<int> threads_seen(2, 0);
  auto loop = [&](int who) {
    HostShare share(2);
    std::mutex m;
    std::set<std::thread::id> ids;
    bool counted = false;
    parallel_for(
        64,
        [&](std::int64_t) {
          {
            std::lock_guard<std::mutex> lock(m);
            ids.insert(std::this_thread::get_id());
            if (!counted) counted = true, started.fetch_add(1);
          }
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (started.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        },
        /*grain=*/1);
    threads_seen[who] = static_cast<int>(ids.size());
  };
  std::thread a(loop, 0), b(loop, 1);
  a.join();
  b.join();
  EXPECT_EQ(threads_seen[0], 2);
  EXPECT_EQ(threads_seen[1], 2);
  // After the share, the thread's loops are the process pool's again (still right).
  EXPECT_EQ(checksum(100000, 1000), 0);
}

TEST(Parallel, ChildProcessAfterFork) {
  ASSERT_EQ(checksum(50000, 16), 0);  // the pool exists in this process
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(checksum(50000, 16) == 0 ? 0 : 3);  // would hang on the parent's workers
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace tcsolve

// resize_huge: an empty vector of 300 MiB (faulted in from every thread first) and a vector that
// grows (its old entries kept): zeros where new, the size asked, the old values where they were.
TEST(HostMemory, ResizeHugeZeroesAndKeeps) {
  std::vector<std::int32_t> v;
  const std::size_t n = (std::size_t(300) << 20) / sizeof(std::int32_t) + 7;
  tcsolve::resize_huge(v, n);
  ASSERT_EQ(v.size(), n);
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < n; i += 1021) nonzero += v[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  EXPECT_EQ(v.back(), 0);
  std::vector<double> w(1000, 2.5);
  tcsolve::resize_huge(w, std::size_t(40) << 20);
  EXPECT_EQ(w[999], 2.5);
  EXPECT_EQ(w[1000], 0.0);
  EXPECT_EQ(w.back(), 0.0);
}
