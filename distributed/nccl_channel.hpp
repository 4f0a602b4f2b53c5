// NCCL between the ranks' GPUs (internal to distributed/): all-reduce and grouped send/receive on
// device buffers, on the caller's stream (all-reduce) or on an own stream (exchanges, so that
// the caller's stream keeps computing; exchange_wait joins them with an event).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/comm.hpp"

namespace tcsolve {

class NcclChannel {
 public:
  virtual ~NcclChannel() = default;
  virtual void allreduce_sum(double* data, std::int64_t count, void* stream) = 0;
  virtual void exchange_start(const std::vector<Transfer>& sends,
                              const std::vector<Transfer>& recvs, void* stream) = 0;
  virtual void exchange_wait(void* stream) = 0;
  virtual std::string describe() const = 0;
  // Sets up NCCL's connections (all-reduces and a send/receive with every peer, small and large;
  // TCSOLVE_NCCL_WARMUP=0 skips it). Collective; make_nccl_channel(..., warm = true) calls it.
  virtual void warm_up() = 0;
};

// ncclGetUniqueId's 128 bytes (rank 0 calls it and broadcasts them).
std::string nccl_unique_id();
// ncclCommInitRank on `device` (cudaSetDevice first), then warm_up() unless `warm` is false (ranks
// that are threads of one process meet at a barrier between the two: a rank's first collective
// must not wait on a peer still inside ncclCommInitRank, whose allocations can then block on the
// CUDA driver's lock that the waiting rank's thread holds). Throws NotCompiled without NCCL.
std::unique_ptr<NcclChannel> make_nccl_channel(const std::string& id, int rank, int size,
                                               int device, bool warm = true);

}  // namespace tcsolve
