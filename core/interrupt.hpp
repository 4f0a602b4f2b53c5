// Interrupts (SIGINT, SIGTERM): a process-wide request that the running solve stop at its next
// safe point (the end of an iteration) and return what it has, with status `interrupted`.
//
// The solvers poll interrupt_requested() once per iteration (a relaxed atomic load: no host
// synchronization, no allocation). Only the command (apps/) installs signal handlers; a library
// caller may call request_interrupt() itself (e.g. from another thread) and clear_interrupt()
// before the next solve.
//
// Signals: the first SIGINT/SIGTERM sets the request. A second one exits at once with status
// 128 + signal, after removing the temporary files registered with TempFileGuard (the handler
// only unlinks fixed buffers: async-signal-safe), so that nothing half-written is left. A second
// signal within 0.25 s of the first is the same request delivered twice (timeout(1) signals the
// child and its process group) and is ignored.
#pragma once
#include <string>

namespace tcsolve {

bool interrupt_requested();
// The signal that asked (SIGINT, SIGTERM), or -1 for a request made by request_interrupt().
int interrupt_signal();
void request_interrupt(int signo = -1);
void clear_interrupt();

// Installs the SIGINT/SIGTERM handlers described above (idempotent).
void install_interrupt_handlers();

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
