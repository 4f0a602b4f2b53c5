// Internal: a host result buffer (eigenvectors, solutions) prepared on a helper thread while the
// solve runs: the first touch of its pages (value-initialization) and page locking with the dense
// ops (CUDA: cudaHostRegister), so that the final device → host copy runs at pinned speed instead
// of a pageable copy into freshly faulted memory (128–512 MB for the 1M-row benchmarks: 60–300 ms
// measured on the H200 machine before this). Unlocked by release() or the destructor.
#pragma once
#include <cstdint>
#include <future>
#include <vector>

#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve::detail {

class HostResult {
 public:
  HostResult(DenseBlockOps& ops, std::vector<double>& v, std::int64_t count) : ops_(ops), v_(v) {
    job_ = std::async(std::launch::async, [this, count] {
      v_.resize(static_cast<std::size_t>(count));
      if (!v_.empty()) pinned_ = ops_.pin_host(v_.data(), v_.size() * sizeof(double));
    });
  }
  HostResult(const HostResult&) = delete;
  HostResult& operator=(const HostResult&) = delete;
  ~HostResult() {
    try {
      release();
    } catch (...) {
    }
  }
  // Waits for the buffer (sized, possibly locked); rethrows what the helper thread threw.
  void wait() {
    if (job_.valid()) job_.get();
  }
  void release() {
    if (job_.valid()) job_.wait();
    if (pinned_) ops_.unpin_host(v_.data());
    pinned_ = false;
  }

 private:
  DenseBlockOps& ops_;
  std::vector<double>& v_;
  std::future<void> job_;
  bool pinned_ = false;
};

// The host entry points of the linear solvers (block_cg, gmres): B (host, n × s, ldb) and the
// optional initial guess x0 (same shape) copied into blocks of ops' space, solve(b, x, use_x0)
// run on them, and x copied back into SolveResult::solutions through a HostResult buffer
// prepared meanwhile.
template <class Solve>
SolveResult solve_from_host(DenseBlockOps& ops, std::int64_t n, const double* rhs, std::int64_t ldb,
                            std::int64_t s, const double* x0, Solve&& solve) {
  MultiVector<double> b = ops.allocate(n, s), x = ops.allocate(n, s);
  ops.from_host(rhs, ldb, b.view());
  if (x0) ops.from_host(x0, ldb, x.view());
  std::vector<double> sol;
  HostResult prep(ops, sol, n * s);
  SolveResult res = solve(b.view(), x.view(), x0 != nullptr);
  prep.wait();
  ops.to_host(x.view(), sol.data(), n);
  prep.release();
  res.solutions = std::move(sol);
  return res;
}

}  // namespace tcsolve::detail
