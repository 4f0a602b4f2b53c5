// CommunicatorThread (distributed/comm_thread.hpp).
#include "distributed/comm_thread.hpp"

#include <stdexcept>
#include <utility>

namespace tcsolve {

CommunicatorThread::CommunicatorThread(std::function<std::unique_ptr<Communicator>()> make)
    : thread_([this, m = std::move(make)]() mutable { loop(std::move(m)); }) {}

CommunicatorThread::~CommunicatorThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Communicator& CommunicatorThread::communicator() {
  if (!comm_) std::rethrow_exception(error_);
  return *comm_;
}

void CommunicatorThread::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
  }
  cv_.notify_all();
}

void CommunicatorThread::loop(std::function<std::unique_ptr<Communicator>()> make) {
  try {
    comm_ = make();
  } catch (...) {
    error_ = std::current_exception();
  }
  if (!comm_ && !error_) error_ = std::make_exception_ptr(std::runtime_error("no communicator was made"));
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || job_; });
      if (job_) {
        job = std::move(job_);
        job_ = nullptr;
      } else {
        break;  // stop_, nothing left
      }
    }
    job();  // a packaged_task: its exception goes to the caller's future
  }
  comm_.reset();  // MPI_Finalize here, on the thread that initialized MPI
}

}  // namespace tcsolve
