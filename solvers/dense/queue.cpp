// CPU backend of DenseQueue (solvers/dense/queue.hpp): every deferred result is written at once
// (through the generic ops), fetches are no-ops, marks read the host clock. The CUDA twin is
// queue.cu.
#include <chrono>
#include <vector>

#include "solvers/dense/cpu_dense.hpp"

namespace tcsolve::cpu_dense {

namespace {

class CpuQueue final : public DenseQueue {
 public:
  explicit CpuQueue(DenseBlockOps& ops) : ops_(ops) {}

  void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                     std::int64_t ldg) override {
    ops_.gram(x, y, g, ldg);
  }
  void column_dots_deferred(MvView<const double> x, MvView<const double> y,
                            double* out) override {
    ops_.column_dots(x, y, out);
  }
  void fetch() override {}

  void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) override {
    ops_.to_host(src, host, ldh);
  }
  std::uint64_t fetch_async() override { return ++ticket_; }
  void fetch_wait(std::uint64_t) override {}
  bool pin_host(void*, std::size_t) override { return false; }
  void unpin_host(void*) override {}
  void external_begin() override {}
  void external_end() override {}
  int mark() override {
    const int id = next_mark_;
    marks_[id] = std::chrono::duration<double>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count();
    next_mark_ = (next_mark_ + 1) % static_cast<int>(marks_.size());
    return id;
  }
  double elapsed_seconds(int from, int to) override { return marks_[to] - marks_[from]; }

 private:
  DenseBlockOps& ops_;
  std::uint64_t ticket_ = 0;
  std::vector<double> marks_ = std::vector<double>(1024, 0.0);
  int next_mark_ = 0;
};

}  // namespace

std::unique_ptr<DenseQueue> make_queue(DenseBlockOps& ops) { return std::make_unique<CpuQueue>(ops); }

}  // namespace tcsolve::cpu_dense
