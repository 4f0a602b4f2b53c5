// Interrupts (SIGINT, SIGTERM): a process-wide request that the running solve stop at its next
// safe point (the end of an iteration) and return what it has, with status `interrupted`.
//
// The solvers poll interrupt_requested() once per iteration (a relaxed atomic load: no host
// synchronization, no allocation). Only the command (apps/) installs signal handlers; a library
// caller may call request_interrupt() itself (e.g. from another thread) and clear_interrupt()
// before the next solve.
//
// Phases with no partial result to return (the spectral probe, a symbolic analysis, a sparse
// factorization, a block of triangular solves) poll the same flag at bounded intervals and throw
// Interrupted. Library calls that cannot be interrupted from inside (CHOLMOD's and MUMPS's
// analyses and factorizations: no progress callback in cholmod_core.h / dmumps_c.h) run through
// run_interruptible: on a worker thread, waited for while the flag is polled.
//
// Signals: the first SIGINT/SIGTERM sets the request. A second one exits at once with status
// 128 + signal, after removing the temporary files registered with TempFileGuard (the handler
// only unlinks fixed buffers: async-signal-safe), so that nothing half-written is left. A second
// signal within 0.25 s of the first is the same request delivered twice (timeout(1) signals the
// child and its process group) and is ignored.
#pragma once
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.hpp"

namespace tcsolve {

bool interrupt_requested();
// The signal that asked (SIGINT, SIGTERM), or -1 for a request made by request_interrupt().
int interrupt_signal();
void request_interrupt(int signo = -1);
void clear_interrupt();

// Installs the SIGINT/SIGTERM handlers described above (idempotent).
void install_interrupt_handlers();

// A phase stopped on request before it had anything to return: what() is "interrupted (SIGINT)
// during PHASE" (SIGTERM, or "on request" for request_interrupt()). Callers that hold a partial
// result (the verification of found pairs) catch it and return that result with status
// `interrupted`; otherwise it leaves the library call, for the caller to report like an
// interrupted solve (the command: exit 128 + signal; the Python module: KeyboardInterrupt).
class Interrupted : public Error {
 public:
  explicit Interrupted(const std::string& phase);
  int signal() const { return signal_; }

 private:
  int signal_;
};

// Throws Interrupted(phase) when an interrupt is requested.
void throw_if_interrupted(const std::string& phase);

// How often run_interruptible looks at the flag while it waits.
constexpr std::chrono::milliseconds kInterruptPoll{20};

namespace detail {
// Bookkeeping of the workers run_interruptible left running (below). Defined in interrupt.cpp.
class WorkerTicket {
 public:
  void abandon();  // the caller stops waiting (counted until finish())
  void finish();   // the worker is done and has freed what it owned
 private:
  bool abandoned_ = false, finished_ = false;  // under the registry's mutex
};
}  // namespace detail

// Runs fn() on a worker thread and waits for it, looking at interrupt_requested() every
// kInterruptPoll: returns fn's result or rethrows its exception. On an interrupt it throws
// Interrupted(phase) at once and leaves the worker to finish on its own: fn must own (capture by
// value or shared_ptr) everything it touches, and its result (or exception) is destroyed on the
// worker when fn returns. For library calls that cannot be stopped from inside.
// Costs: a thread start per call (~0.1 ms; the engines' calls it wraps take milliseconds to
// minutes), and after an interrupt the abandoned call keeps its cores and memory until it ends:
// the command exits at once (std::_Exit: nothing waits for it), a Python session gets its
// KeyboardInterrupt at once while the call finishes in the background (at most the time it would
// have taken; a MUMPS call started later waits for it: MUMPS calls take turns, mumps_factor.cpp).
// Where no thread can be started, fn runs on the caller's thread (not interruptible).
template <class F>
auto run_interruptible(const std::string& phase, F fn) -> decltype(fn()) {
  using R = decltype(fn());
  throw_if_interrupted(phase);
  auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
  std::future<R> done = task->get_future();
  auto ticket = std::make_shared<detail::WorkerTicket>();
  try {
    std::thread([task, ticket]() mutable {
      (*task)();
      task.reset();  // an abandoned call's result is freed here, on the worker
      ticket->finish();
    }).detach();
  } catch (const std::system_error&) {
    (*task)();
    return done.get();
  }
  while (done.wait_for(kInterruptPoll) != std::future_status::ready) {
    if (interrupt_requested()) {
      ticket->abandon();
      throw Interrupted(phase);
    }
  }
  return done.get();
}

// The same where the call is known to be short: `small` (a problem of at most
// kInlineEngineRows rows and kInlineEngineEntries entries, run_inline_small below) runs fn on
// the caller's thread, after an interrupt check, without the worker thread's start (~0.05–0.1 ms,
// about 10 % of a 207-row direct solve's time). The worst such call (a dense LU of 2000 rows,
// ~5e9 flops) stays well inside the commands' 2 s interrupt latency.
constexpr std::int64_t kInlineEngineRows = 2000, kInlineEngineEntries = 20000;
inline bool run_inline_small(std::int64_t rows, std::int64_t entries) {
  return rows <= kInlineEngineRows && entries <= kInlineEngineEntries;
}
template <class F>
auto run_interruptible(const std::string& phase, bool small, F fn) -> decltype(fn()) {
  if (!small) return run_interruptible(phase, std::move(fn));
  throw_if_interrupted(phase);
  return fn();
}

// Workers run_interruptible abandoned that are still running, and a wait until none is (tests,
// and callers that must not exit while one runs).
int abandoned_workers_running();
void wait_for_abandoned_workers();

// Registers a temporary file for removal by the second signal's immediate exit while it lives.
// At most 16 at once (further ones are not registered); paths up to 4095 bytes.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::string& path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace tcsolve
