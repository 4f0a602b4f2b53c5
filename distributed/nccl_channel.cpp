// NCCL channel (distributed/nccl_channel.hpp). Exchanges run on an own non-blocking stream:
// the caller's stream records `ready`, the NCCL stream waits for it, runs the grouped
// ncclSend/ncclRecv and records `done`; exchange_wait makes the caller's stream wait for `done`.
#include "distributed/nccl_channel.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

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
  Nccl(const std::string& id, int rank, int size, int device) : device_(device) {
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
  }
  ~Nccl() override {
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
  int device_ = 0;
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
                                               int device) {
  return std::make_unique<Nccl>(id, rank, size, device);
}

}  // namespace tcsolve
