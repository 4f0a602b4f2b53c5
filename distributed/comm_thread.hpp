// A communicator made and used on a thread of its own (after the "MPI progress/funnel thread"
// pattern): MPI_Init (0.25 s under Open MPI on the H200 hosts) runs while the caller starts its
// work, and every MPI call, MPI_Finalize included, runs on the thread that initialized MPI (the
// MPI standard's main thread; the caller's threads never call MPI). For callers that need MPI
// only late: `batch` under mpirun, whose jobs are independent and whose ranks meet only to gather
// the rows (apps/cmd_batch.cpp).
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

#include "distributed/comm.hpp"

namespace tcsolve {

class CommunicatorThread {
 public:
  // Starts the thread, which calls `make` at once. `make`'s exception is rethrown by every run().
  explicit CommunicatorThread(std::function<std::unique_ptr<Communicator>()> make);
  // The communicator is destroyed (MPI_Finalize) on its thread; then the thread is joined.
  ~CommunicatorThread();
  CommunicatorThread(const CommunicatorThread&) = delete;
  CommunicatorThread& operator=(const CommunicatorThread&) = delete;

  // Runs f(communicator) on the thread and returns its result (or rethrows its exception); waits
  // for the communicator first. One call at a time from any one thread of the caller.
  template <class F>
  std::invoke_result_t<F, Communicator&> run(F f) {
    using R = std::invoke_result_t<F, Communicator&>;
    std::packaged_task<R()> task([this, &f]() -> R { return f(communicator()); });
    std::future<R> done = task.get_future();
    post([&task] { task(); });
    return done.get();
  }

 private:
  Communicator& communicator();  // on the thread: the communicator, or the maker's error
  void post(std::function<void()> job);
  void loop(std::function<std::unique_ptr<Communicator>()> make);

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;  // at most one pending (run() waits for its own)
  bool stop_ = false;
  std::unique_ptr<Communicator> comm_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace tcsolve
