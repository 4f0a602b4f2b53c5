// CUDA backend of DenseQueue (solvers/dense/queue.hpp): deferred results staged in device memory
// (dense/cuda_context.cuh) and copied to pinned host memory in one copy per fetch; fetch_async's
// tickets each with a pinned slot and an event; ordering events against the legacy default
// stream; a pool of timing events. The CPU twin is queue.cpp.
#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "solvers/dense/cuda_context.cuh"

namespace tcsolve::cuda_dense {

namespace {

class CudaQueue final : public DenseQueue {
 public:
  CudaQueue(CudaContext& ctx, DenseBlockOps& ops) : ctx_(ctx), ops_(ops) {
    TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&ext_begin_, cudaEventDisableTiming));
    TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&ext_end_, cudaEventDisableTiming));
    marks_.resize(1024);
    for (auto& e : marks_) TCSOLVE_CUDA_CHECK(cudaEventCreate(&e));
    for (auto& sl : slots_) sl.event = nullptr;
  }
  ~CudaQueue() override {
    cudaStreamSynchronize(ctx_.stream);
    for (auto& sl : slots_) {
      if (sl.pinned) cudaFreeHost(sl.pinned);
      if (sl.event) cudaEventDestroy(sl.event);
    }
    for (auto& e : marks_) cudaEventDestroy(e);
    cudaEventDestroy(ext_begin_);
    cudaEventDestroy(ext_end_);
  }

  // G (p × q) into the next slice of ctx_.small; copied to g by fetch().
  void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                     std::int64_t ldg) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows, "gram: row counts differ");
    const std::int64_t p = x.cols, q = y.cols;
    if (p == 0 || q == 0) return;
    TCSOLVE_REQUIRE(ldg >= p, "gram: ldg < rows of G");
    const std::size_t off = ctx_.stage(static_cast<std::size_t>(p * q));
    // (through gram_into: the same kernels as the solvers' loops, none loaded for this alone)
    ops_.gram_into(1.0, x, y, 0.0, MvView<double>{ctx_.small + off, p, q, p, Space::device});
    ctx_.pending.push_back({off, p, q, g, ldg});
  }

  void column_dots_deferred(MvView<const double> x, MvView<const double> y,
                            double* out) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "column_dots: shapes differ");
    const std::int64_t c = x.cols;
    if (c == 0) return;
    const std::size_t off = ctx_.stage(static_cast<std::size_t>(c));
    ctx_.column_dots_to(x, y, ctx_.small + off, 1);
    ctx_.pending.push_back({off, c, 1, out, c});
  }
  void fetch() override { ctx_.fetch(); }

  void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) override {
    if (src.rows == 0 || src.cols == 0) return;
    const std::size_t off = ctx_.stage(static_cast<std::size_t>(src.rows * src.cols));
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(ctx_.small + off, src.rows * sizeof(double), src.data,
                                         src.ld * sizeof(double), src.rows * sizeof(double),
                                         src.cols, cudaMemcpyDeviceToDevice, ctx_.stream));
    ctx_.pending.push_back({off, src.rows, src.cols, host, ldh});
  }

  std::uint64_t fetch_async() override {
    // A free slot (the oldest ticket is completed when all are in flight).
    if (inflight_.size() >= slots_.size()) fetch_wait(inflight_.front().id);
    int si = -1;
    for (int i = 0; i < static_cast<int>(slots_.size()); ++i)
      if (!slots_[i].busy) si = i;
    Slot& sl = slots_[si];
    if (!sl.event) TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&sl.event, cudaEventDisableTiming));
    if (sl.elems < ctx_.small_pos) {
      if (sl.pinned) cudaFreeHost(sl.pinned);
      sl.elems = std::max<std::size_t>(ctx_.small_pos, ctx_.coef_elems);
      TCSOLVE_CUDA_CHECK(cudaMallocHost(&sl.pinned, sl.elems * sizeof(double)));
    }
    if (ctx_.small_pos > 0)
      TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(sl.pinned, ctx_.small, sizeof(double) * ctx_.small_pos,
                                         cudaMemcpyDeviceToHost, ctx_.stream));
    TCSOLVE_CUDA_CHECK(cudaEventRecord(sl.event, ctx_.stream));
    sl.busy = true;
    Ticket tk;
    tk.id = ++ticket_;
    tk.slot = si;
    tk.pending.swap(ctx_.pending);
    ctx_.pending.reserve(16);
    ctx_.small_pos = 0;
    inflight_.push_back(std::move(tk));
    return ticket_;
  }

  void fetch_wait(std::uint64_t ticket) override {
    while (!inflight_.empty() && inflight_.front().id <= ticket) {
      Ticket& tk = inflight_.front();
      Slot& sl = slots_[tk.slot];
      TCSOLVE_CUDA_CHECK(cudaEventSynchronize(sl.event));
      for (const Pending& e : tk.pending)
        for (std::int64_t j = 0; j < e.q; ++j)
          std::copy(sl.pinned + e.off + j * e.p, sl.pinned + e.off + (j + 1) * e.p,
                    e.host + j * e.ld);
      sl.busy = false;
      inflight_.pop_front();
    }
  }

  // Called on helper threads (HostResult), which start on device 0: this GPU first (a batch
  // worker or an mpirun rank on GPU 1 would otherwise make a context on GPU 0 for the lock).
  bool pin_host(void* p, std::size_t bytes) override {
    if (cudaSetDevice(ctx_.device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
    cudaGetLastError();  // not fatal: the copy is pageable then
    return false;
  }
  void unpin_host(void* p) override {
    if (cudaSetDevice(ctx_.device) != cudaSuccess || cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
  }

  void external_begin() override {
    TCSOLVE_CUDA_CHECK(cudaEventRecord(ext_begin_, ctx_.stream));
    TCSOLVE_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, ext_begin_, 0));
  }
  void external_end() override {
    TCSOLVE_CUDA_CHECK(cudaEventRecord(ext_end_, cudaStreamLegacy));
    TCSOLVE_CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream, ext_end_, 0));
  }

  int mark() override {
    const int id = next_mark_;
    TCSOLVE_CUDA_CHECK(cudaEventRecord(marks_[id], ctx_.stream));
    next_mark_ = (next_mark_ + 1) % static_cast<int>(marks_.size());
    return id;
  }
  double elapsed_seconds(int from, int to) override {
    TCSOLVE_CUDA_CHECK(cudaEventSynchronize(marks_[to]));
    float ms = 0.0f;
    TCSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[from], marks_[to]));
    return 1e-3 * ms;
  }

 private:
  using Pending = CudaContext::Pending;
  struct Slot {  // pinned staging of one fetch_async ticket
    double* pinned = nullptr;
    std::size_t elems = 0;
    cudaEvent_t event = nullptr;
    bool busy = false;
  };
  std::array<Slot, 4> slots_;
  struct Ticket {
    std::uint64_t id = 0;
    int slot = 0;
    std::vector<Pending> pending;
  };
  std::deque<Ticket> inflight_;
  std::uint64_t ticket_ = 0;
  cudaEvent_t ext_begin_ = nullptr, ext_end_ = nullptr;
  std::vector<cudaEvent_t> marks_;
  int next_mark_ = 0;
  CudaContext& ctx_;
  DenseBlockOps& ops_;
};

}  // namespace

std::unique_ptr<DenseQueue> make_queue(CudaContext& ctx, DenseBlockOps& ops) {
  return std::make_unique<CudaQueue>(ctx, ops);
}

}  // namespace tcsolve::cuda_dense
