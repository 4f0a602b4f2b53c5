// Internal to distributed/: the host seconds a communicator spends in its calls (added to an
// accumulator when the scope ends; host_comm_seconds() reports the sum).
#pragma once
#include <chrono>

namespace tcsolve {

inline double comm_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct CommTimer {
  explicit CommTimer(double& acc) : acc_(acc), t0_(comm_clock_seconds()) {}
  ~CommTimer() { acc_ += comm_clock_seconds() - t0_; }
  CommTimer(const CommTimer&) = delete;
  CommTimer& operator=(const CommTimer&) = delete;
  double& acc_;
  double t0_;
};

}  // namespace tcsolve
