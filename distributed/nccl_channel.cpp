// NCCL channel (distributed/nccl_channel.hpp). Exchanges run on an own non-blocking stream:
// the caller's stream records `ready`, the NCCL stream waits for it, runs the grouped
// ncclSend/ncclRecv and records `done`; exchange_wait makes the caller's stream wait for `done`.
#include "distributed/nccl_channel.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace tcsolve {
namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw Error(std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(r));
}
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw DeviceError(std::string(what) + ": " + cudaGetErrorString(e), __FILE__, __LINE__);
}

class Nccl final : public NcclChannel {
 public:
  Nccl(const std::string& id, int rank, int size, int device, bool warm)
      : device_(device), rank_(rank), size_(size) {
    TCSOLVE_REQUIRE(id.size() == sizeof(ncclUniqueId), "NCCL: unique id of the wrong size");
    ncclUniqueId uid;
    std::memcpy(&uid, id.data(), sizeof uid);
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    nccl_check(ncclCommInitRank(&comm_, size, uid, rank), "ncclCommInitRank");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
    int v = 0;
    ncclGetVersion(&v);
    version_ = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100);
    if (warm) warm_up();
  }
  // NCCL connects lazily: the first all-reduce of an algorithm and the first send/receive with a
  // peer set up their connections. Unwarmed, the first ones landed in the solve: the Chebyshev
  // filter's spectral bounds (25 Lanczos steps) took 0.37 s on two H200s (gen:lap3d:200), 15 ms
  // a step, against ~0.5 ms a step on one GPU. Here, in the communicator's set-up: all-reduces
  // of the sizes the solvers use (a Gram matrix to a block) and a send and receive with every
  // peer, small and large (a halo plane). TCSOLVE_NCCL_WARMUP=0 skips it (A/B).
  void warm_up() override {
    const int rank = rank_, size = size_;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    const char* env = std::getenv("TCSOLVE_NCCL_WARMUP");
    if (size < 2 || (env && std::string(env) == "0")) return;
    constexpr std::int64_t kLarge = std::int64_t(1) << 20;  // 8 MiB of doubles
    double* buf = nullptr;
    cuda_check(cudaMalloc(&buf, 2 * kLarge * sizeof(double)), "cudaMalloc (NCCL warm-up)");
    try {
      cuda_check(cudaMemsetAsync(buf, 0, 2 * kLarge * sizeof(double), stream_), "cudaMemsetAsync");
      for (std::int64_t count : {std::int64_t(1), std::int64_t(4096), kLarge})
        nccl_check(ncclAllReduce(buf, buf, static_cast<size_t>(count), ncclDouble, ncclSum, comm_, stream_),
                   "ncclAllReduce (warm-up)");
      for (std::int64_t count : {std::int64_t(1), kLarge}) {
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int peer = 0; peer < size; ++peer) {
          if (peer == rank) continue;
          nccl_check(ncclSend(buf, static_cast<size_t>(count), ncclDouble, peer, comm_, stream_), "ncclSend (warm-up)");
          nccl_check(ncclRecv(buf + kLarge, static_cast<size_t>(count), ncclDouble, peer, comm_, stream_), "ncclRecv (warm-up)");
        }
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      }
      cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (NCCL warm-up)");
    } catch (...) {
      cudaFree(buf);
      throw;
    }
    cuda_check(cudaFree(buf), "cudaFree (NCCL warm-up)");
  }
  ~Nccl() override {
    cudaSetDevice(device_);  // (destroyed on any thread: ranks that are threads end on the launcher's)
    if (done_) cudaEventDestroy(done_);
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
    if (comm_) ncclCommDestroy(comm_);
  }
  void allreduce_sum(double* data, std::int64_t count, void* stream) override {
    if (count <= 0) return;
    nccl_check(ncclAllReduce(data, data, static_cast<size_t>(count), ncclDouble, ncclSum, comm_,
                             static_cast<cudaStream_t>(stream)),
               "ncclAllReduce");
  }
  void exchange_start(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs,
                      void* stream) override {
    cuda_check(cudaEventRecord(ready_, static_cast<cudaStream_t>(stream)), "cudaEventRecord");
    cuda_check(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (const Transfer& t : sends)
      if (t.count > 0)
        nccl_check(ncclSend(t.data, static_cast<size_t>(t.count), t.fp32 ? ncclFloat : ncclDouble, t.peer,
                            comm_, stream_),
                   "ncclSend");
    for (const Transfer& t : recvs)
      if (t.count > 0)
        nccl_check(ncclRecv(t.data, static_cast<size_t>(t.count), t.fp32 ? ncclFloat : ncclDouble, t.peer,
                            comm_, stream_),
                   "ncclRecv");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    cuda_check(cudaEventRecord(done_, stream_), "cudaEventRecord");
  }
  void exchange_wait(void* stream) override {
    cuda_check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), done_, 0),
               "cudaStreamWaitEvent");
  }
  std::string describe() const override {
    return "NCCL " + version_ + " on GPU " + std::to_string(device_);
  }

 private:
  int device_ = 0, rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
  std::string version_;
};

}  // namespace

std::string nccl_unique_id() {
  ncclUniqueId uid;
  nccl_check(ncclGetUniqueId(&uid), "ncclGetUniqueId");
  return std::string(reinterpret_cast<const char*>(&uid), sizeof uid);
}

std::unique_ptr<NcclChannel> make_nccl_channel(const std::string& id, int rank, int size,
                                               int device, bool warm) {
  return std::make_unique<Nccl>(id, rank, size, device, warm);
}

}  // namespace tcsolve
