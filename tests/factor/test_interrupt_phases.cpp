// Interrupts in the phases that have nothing to return (core/interrupt.hpp): the engines'
// analyses and factorizations (run_interruptible: control comes back within kInterruptPoll while
// the abandoned call finishes on its worker), the shift-invert operator between block solves, and
// the spectral probe between steps. Each test asks for the interrupt from a thread after a delay,
// while the phase runs on a problem that takes seconds, and checks that the call throws
// Interrupted within a bound of the request; the abandoned workers are waited for at the end
// (their memory is freed by then: the ASan build checks it).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/interrupt.hpp"
#include "factor/shift_invert.hpp"
#include "factor/sparse_factor.hpp"
#include "io/generators.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve::test {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// request_interrupt() after `delay` seconds from a thread (unless the scope ends first); at the
// end the request is cleared and the abandoned workers are waited for.
class InterruptAfter {
 public:
  explicit InterruptAfter(double delay)
      : thread_([this, delay] {
          std::unique_lock<std::mutex> lock(m_);
          if (cv_.wait_for(lock, std::chrono::duration<double>(delay), [this] { return done_; })) return;
          at_ = Clock::now();
          request_interrupt();
        }) {}
  ~InterruptAfter() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    wait_for_abandoned_workers();
    clear_interrupt();
  }
  // Seconds from the request to now (negative: not requested yet).
  double since_request() const { return at_ == Clock::time_point{} ? -1.0 : seconds(Clock::now() - at_); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  Clock::time_point at_{};
  std::thread thread_;
};

// Runs f with an interrupt requested `delay` s into it; expects Interrupted naming `during`
// within `bound` s of the request. Returns that latency.
template <class F>
double expect_interrupted(F&& f, double delay, const std::string& during, double bound) {
  if (!built_with_factor()) return 0.0;
  InterruptAfter irq(delay);
  double latency = -1;
  try {
    f();
    ADD_FAILURE() << "the call ended without Interrupted";
  } catch (const Interrupted& e) {
    latency = irq.since_request();
    EXPECT_NE(std::string(e.what()).find("interrupted (on request) during " + during), std::string::npos) << e.what();
    EXPECT_EQ(e.signal(), -1);
  }
  EXPECT_GE(latency, 0.0) << "thrown before the request";
  EXPECT_LE(latency, bound) << during;
  std::printf("[ latency ] %s: %.3f s after the request\n", during.c_str(), latency);
  return latency;
}

#define SKIP_WITHOUT_FACTOR()                                                \
  do {                                                                       \
    if (!built_with_factor()) GTEST_SKIP() << "built without CHOLMOD/MUMPS"; \
  } while (0)

// 64k rows, nnz(L) 14 M (METIS): the numeric factorization takes 1-5 s on the 2-core CPU, MUMPS's
// LDLᵀ 4-13 s.
const Csr<double>& lap3d40() {
  static const Csr<double> a = generate("gen:lap3d:40");
  return a;
}

TEST(InterruptPhases, CholmodFactorization) {
  SKIP_WITHOUT_FACTOR();
  FactorOptions fo;
  fo.engine = FactorEngine::cholmod;
  expect_interrupted([&] { factor_shifted(lap3d40(), nullptr, -1e-3, fo); }, 0.3,
                     "the factorization of A - sigma*B (n = 64000", 1.0);
  EXPECT_EQ(abandoned_workers_running(), 0);  // (waited for by InterruptAfter)
}

TEST(InterruptPhases, MumpsInertia) {
  SKIP_WITHOUT_FACTOR();
  expect_interrupted([&] { inertia_at(lap3d40(), nullptr, 0.5); }, 0.5,
                     "the LDL^T (MUMPS) of A - sigma*B (n = 64000, sigma = 0.5) for its inertia", 1.0);
}

TEST(InterruptPhases, MumpsFactorizationForSolves) {
  SKIP_WITHOUT_FACTOR();
  FactorOptions fo;
  fo.engine = FactorEngine::mumps;
  expect_interrupted([&] { factor_shifted(lap3d40(), nullptr, 0.5, fo); }, 0.5, "the factorization of A - sigma*B",
                     1.0);
}

TEST(InterruptPhases, SymbolicAnalysis) {
  SKIP_WITHOUT_FACTOR();
  // AMD on 1M rows: 0.7-3 s.
  const Csr<double> a = generate("gen:lap2d:1000");
  expect_interrupted([&] { analyze_factor(a, nullptr); }, 0.1, "the symbolic analysis (AMD ordering)", 1.0);
}

// A request made before the call: nothing starts.
TEST(InterruptPhases, AnEarlierRequestStopsEveryEntryAtOnce) {
  SKIP_WITHOUT_FACTOR();
  request_interrupt();
  const auto t0 = Clock::now();
  EXPECT_THROW(factor_shifted(lap3d40(), nullptr, -1e-3), Interrupted);
  EXPECT_THROW(inertia_at(lap3d40(), nullptr, 0.5), Interrupted);
  EXPECT_THROW(analyze_factor(lap3d40(), nullptr), Interrupted);
  EXPECT_THROW(require_positive_definite(lap3d40(), "B"), Interrupted);
  EXPECT_LT(seconds(Clock::now() - t0), 0.5);
  EXPECT_EQ(abandoned_workers_running(), 0);  // nothing was started
  clear_interrupt();
}

// Without a request the worker's result comes back as before (the same factor, solves agree).
TEST(InterruptPhases, WithoutARequestTheFactorIsReturned) {
  SKIP_WITHOUT_FACTOR();
  const Csr<double> a = generate("gen:lap2d:30");
  auto f = factor_shifted(a, nullptr, -0.01);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->n(), 900);
  EXPECT_EQ(analyze_factor(a, nullptr).perm->size(), 900u);
  EXPECT_EQ(inertia_at(a, nullptr, 0.5).negative + inertia_at(a, nullptr, 0.5).positive, 900);
  EXPECT_EQ(abandoned_workers_running(), 0);
}

// The operator looks at the flag before each block: a request stops the next apply.
TEST(InterruptPhases, ShiftInvertApplyBetweenBlocks) {
  SKIP_WITHOUT_FACTOR();
  const Csr<double> a = generate("gen:lap2d:30");
  auto f = factor_shifted(a, nullptr, -0.01);
  auto op = make_shift_invert(*f, Backend::cpu, nullptr, 4);
  std::vector<double> x(900 * 4, 1.0), y(900 * 4);
  MvView<const double> xv{x.data(), 900, 4, 900, Space::host};
  MvView<double> yv{y.data(), 900, 4, 900, Space::host};
  op->apply(xv, yv);
  request_interrupt();
  try {
    op->apply(xv, yv);
    ADD_FAILURE() << "no Interrupted";
  } catch (const Interrupted& e) {
    EXPECT_NE(std::string(e.what()).find("during the shift-invert solves (a block of 4 columns, n = 900)"),
              std::string::npos)
        << e.what();
  }
  clear_interrupt();
  op->apply(xv, yv);
}

// The probe stops between its steps (here 50 ms each) and returns what the steps made give: an
// iterative solve then starts and ends at its first iteration with a partial result.
TEST(InterruptPhases, SpectralProbeStopsBetweenSteps) {
  const Csr<double> a = generate("gen:lap2d:30");
  auto ops = make_dense_ops(Backend::cpu);
  auto slow_apply = [&](MvView<const double> x, MvView<double> y) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      double s = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) s += a.values[p] * x.data[a.col_idx[p]];
      y.data[i] = s;
    }
  };
  const SpectralProbe full = spectral_probe(slow_apply, *ops, a.nrows, 30, 7);
  EXPECT_FALSE(full.interrupted);
  EXPECT_EQ(full.steps, 30);
  InterruptAfter irq(0.3);
  const SpectralProbe p = spectral_probe(slow_apply, *ops, a.nrows, 30, 7);
  const double latency = irq.since_request();
  EXPECT_TRUE(p.interrupted);
  EXPECT_GE(p.steps, 1);
  EXPECT_LT(p.steps, 15);
  EXPECT_GE(latency, 0.0);
  EXPECT_LE(latency, 0.2);
  // Ritz values of the steps made: inside the full probe's (and the spectrum's) range.
  EXPECT_GE(p.lower, full.lower - 1e-12);
  EXPECT_LE(p.upper, full.upper + 1e-12);
  EXPECT_LE(p.lower, p.upper);
}

}  // namespace
}  // namespace tcsolve::test
