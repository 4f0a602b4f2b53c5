// See core/interrupt.hpp.
#include "core/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <cstring>
#include <mutex>

namespace tcsolve {

namespace {

std::atomic<int> g_request{0};  // 0: none; else the signal (or -1)

constexpr int kSlots = 16;
constexpr std::size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<bool> g_used[kSlots];     // read by the handler: the path is complete
std::atomic<bool> g_claimed[kSlots];  // owned by a TempFileGuard

std::atomic<long long> g_first_ns{0};  // CLOCK_MONOTONIC of the first signal

long long monotonic_ns() {  // clock_gettime is async-signal-safe
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

// A second signal within this long of the first is the same request delivered twice (timeout(1)
// signals the child and then its process group; a scheduler may signal the job and each step),
// not a user asking again.
constexpr long long kDuplicateNs = 250000000LL;

extern "C" void on_signal(int signo) {
  int expected = 0;
  if (g_request.compare_exchange_strong(expected, signo)) {  // first: ask the solve to stop
    g_first_ns.store(monotonic_ns());
    return;
  }
  if (monotonic_ns() - g_first_ns.load() < kDuplicateNs) return;
  // Second: remove what is half-written and leave now.
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i].load()) ::unlink(g_paths[i]);
  ::_exit(128 + signo);
}

}  // namespace

bool interrupt_requested() { return g_request.load(std::memory_order_relaxed) != 0; }
int interrupt_signal() { return g_request.load(); }
void request_interrupt(int signo) {
  int expected = 0;
  g_request.compare_exchange_strong(expected, signo == 0 ? -1 : signo);
}
void clear_interrupt() { g_request.store(0); }

void install_interrupt_handlers() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

namespace {
std::string signal_words(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "on request";
}
}  // namespace

Interrupted::Interrupted(const std::string& phase)
    : Error("interrupted (" + signal_words(interrupt_signal()) + ") during " + phase),
      signal_(interrupt_signal()) {}

void throw_if_interrupted(const std::string& phase) {
  if (interrupt_requested()) throw Interrupted(phase);
}

namespace {
// Never destroyed: an abandoned worker may still finish while the process runs its exit handlers.
struct WorkerRegistry {
  std::mutex m;
  std::condition_variable cv;
  int abandoned_running = 0;
};
WorkerRegistry& registry() {
  static WorkerRegistry* r = new WorkerRegistry;
  return *r;
}
}  // namespace

void detail::WorkerTicket::abandon() {
  WorkerRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  if (abandoned_ || finished_) return;
  abandoned_ = true;
  ++r.abandoned_running;
}

void detail::WorkerTicket::finish() {
  WorkerRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  finished_ = true;
  if (!abandoned_) return;
  --r.abandoned_running;
  r.cv.notify_all();
}

int abandoned_workers_running() {
  WorkerRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  return r.abandoned_running;
}

void wait_for_abandoned_workers() {
  WorkerRegistry& r = registry();
  std::unique_lock<std::mutex> lock(r.m);
  r.cv.wait(lock, [&] { return r.abandoned_running == 0; });
}

TempFileGuard::TempFileGuard(const std::string& path) {
  if (path.size() + 1 > kPathMax) return;
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_claimed[i].compare_exchange_strong(expected, true)) continue;
    std::memcpy(g_paths[i], path.c_str(), path.size() + 1);  // before the handler may read it
    g_used[i].store(true);
    slot_ = i;
    return;
  }
}

TempFileGuard::~TempFileGuard() {
  if (slot_ < 0) return;
  g_used[slot_].store(false);
  g_claimed[slot_].store(false);
}

}  // namespace tcsolve
