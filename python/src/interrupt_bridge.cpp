// Ctrl-C while a solver runs without the GIL (bindings.hpp: InterruptScope, the iteration hooks).
//
// Python's SIGINT handler (C level) only records the signal; the interpreter runs the Python
// handler -- signal.default_int_handler raises KeyboardInterrupt -- when it next executes
// bytecode, which it does not while C++ runs. So for the duration of a call (the outermost one,
// on the main thread, where Python runs its handlers, and only while a Python handler is
// installed for SIGINT) a C handler of ours sits in front of Python's:
//   1. it passes every SIGINT on to Python's handler, so that the interpreter has it pending;
//   2. when the Python handler is default_int_handler (Ctrl-C will be a KeyboardInterrupt), the
//      first SIGINT also sets the solvers' stop request (core/interrupt.hpp: request_interrupt):
//      the solvers poll it at iteration ends (and the driver's long phases inside), stop there
//      and return; the GIL is taken back and PyErr_CheckSignals() runs the Python handler, so
//      KeyboardInterrupt is raised as the call returns;
//   3. a second SIGINT at least 0.25 s after the first (closer: the same press delivered twice,
//      as core/interrupt.cpp counts it), while the call has still not returned, ends the process
//      as SIGINT's default action does (terminated by SIGINT, status 130 in a shell), after a
//      line on stderr: the solver is somewhere it does not poll and the user asked again.
// With another Python handler (signal.signal(SIGINT, f)) step 2 is: the per-iteration hook takes
// the GIL and runs f (PyErr_CheckSignals); an exception f raises ends the solve and propagates.
// The per-iteration hook runs the handlers of other signals too (SIGALRM, SIGTERM with a Python
// handler), as before. When the call returns the previous C handler is put back and the request
// cleared. Nested calls (a tcsolve call inside a LinearOperator's callback) use the outer scope.
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/interrupt.hpp"
#include "python/src/bindings.hpp"

namespace tcsolve::pyext {

namespace {

enum Mode : int { kNone = 0, kStop = 1, kCustom = 2 };

struct sigaction g_python_action;      // the handler we chain to (Python's), set while installed
std::atomic<int> g_mode{kNone};         // what a SIGINT does while our handler is installed
std::atomic<bool> g_seen{false};        // a SIGINT arrived since the scope began
std::atomic<long long> g_first_ns{0};   // when (CLOCK_MONOTONIC)
int g_depth = 0;                        // nesting of scopes on the main thread (GIL held)
constexpr long long kDuplicateNs = 250000000LL;

long long monotonic_ns() {  // async-signal-safe
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

void chain_to_python(int signo, siginfo_t* info, void* context) {
  const struct sigaction& p = g_python_action;
  if (p.sa_flags & SA_SIGINFO) {
    if (p.sa_sigaction) p.sa_sigaction(signo, info, context);
  } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler) {
    p.sa_handler(signo);
  }
}

extern "C" void on_sigint(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const long long now = monotonic_ns();
  const bool first = !g_seen.exchange(true);
  if (first) {
    g_first_ns.store(now);
    if (g_mode.load() == kStop) request_interrupt(signo);
  } else if (g_mode.load() == kStop && now - g_first_ns.load() >= kDuplicateNs) {
    static const char msg[] =
        "\ntcsolve: Ctrl-C again while the solver has not stopped yet: ending the process\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    ::signal(SIGINT, SIG_DFL);  // SIGINT is blocked in its handler: delivered when it returns
    ::raise(SIGINT);
    errno = saved_errno;
    return;
  }
  chain_to_python(signo, info, context);
  errno = saved_errno;
}

// Python's handler for SIGINT decides the mode: default_int_handler (KeyboardInterrupt) stops
// the solve; another callable is run by the iteration hook; SIG_IGN / SIG_DFL: nothing to do.
Mode python_mode() {
  py::module_ signal = py::module_::import("signal");
  py::object h = signal.attr("getsignal")(signal.attr("SIGINT"));
  if (h.is(signal.attr("default_int_handler"))) return kStop;
  return PyCallable_Check(h.ptr()) ? kCustom : kNone;
}

bool on_main_thread() {
  py::module_ threading = py::module_::import("threading");
  return threading.attr("current_thread")().is(threading.attr("main_thread")());
}

}  // namespace

InterruptScope::InterruptScope() {
  if (g_depth > 0 || !on_main_thread()) return;  // a nested call, or a thread Python never signals
  const Mode mode = python_mode();
  if (mode == kNone) return;
  struct sigaction current {};
  if (::sigaction(SIGINT, nullptr, &current) != 0) return;
  if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN))
    return;  // Python's C handler is not the one installed (an embedding application's choice)
  g_python_action = current;
  g_mode.store(mode);
  g_seen.store(false);
  clear_interrupt();  // a request left from elsewhere is not this call's
  struct sigaction ours {};
  ours.sa_sigaction = on_sigint;
  ours.sa_mask = current.sa_mask;
  // Python's flags (no SA_RESTART: a blocking call in a callback returns EINTR, as Python expects)
  ours.sa_flags = SA_SIGINFO | (current.sa_flags & (SA_ONSTACK | SA_RESTART));
  if (::sigaction(SIGINT, &ours, nullptr) != 0) return;
  installed_ = true;
  ++g_depth;
}

void InterruptScope::restore() {
  if (!installed_) return;
  installed_ = false;
  --g_depth;
  ::sigaction(SIGINT, &g_python_action, nullptr);
  if (g_seen.load() && g_mode.load() == kStop) clear_interrupt();
  g_mode.store(kNone);
}

InterruptScope::~InterruptScope() { restore(); }

std::function<void(const IterationRecord&)> interrupt_check() {
  return [](const IterationRecord&) {
    // Stopping on Ctrl-C already: the KeyboardInterrupt is raised when the call returns, with
    // the solver's state unwound normally (not thrown through it from here).
    if (g_mode.load(std::memory_order_relaxed) == kStop && g_seen.load(std::memory_order_relaxed)) return;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
}

std::function<void(const IterationRecord&)> progress_and_interrupt(const py::dict& opt) {
  if (!opt.contains("progress") || opt["progress"].is_none()) return interrupt_check();
  std::shared_ptr<py::object> f = shared_object(opt["progress"]);
  auto check = interrupt_check();
  return [f, check](const IterationRecord& r) {
    check(r);
    py::gil_scoped_acquire gil;
    py::array_t<double> vals(static_cast<py::ssize_t>(r.values.size()));
    if (!r.values.empty()) std::memcpy(vals.mutable_data(), r.values.data(), r.values.size() * sizeof(double));
    py::array_t<double> rn(static_cast<py::ssize_t>(r.residual_norms.size()));
    if (!r.residual_norms.empty())
      std::memcpy(rn.mutable_data(), r.residual_norms.data(), r.residual_norms.size() * sizeof(double));
    (*f)(r.iteration, vals, rn, r.converged);
  };
}

// Test hook (python/tests/test_interrupt.py): `seconds` of C++ work without the GIL inside the
// bridge, as a solver phase that polls the stop request (poll=True: it returns once the request
// is set) or one that never polls (poll=False). Returns the seconds it ran.
void define_interrupt(py::module_& m) {
  m.def("_interrupt_test_wait", [](double seconds, bool poll) {
    const auto t0 = std::chrono::steady_clock::now();
    return run_interruptible([&] {
      while (seconds_since(t0) < seconds && !(poll && interrupt_requested()))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return seconds_since(t0);
    });
  });
}

}  // namespace tcsolve::pyext
