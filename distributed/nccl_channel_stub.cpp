// Built without CUDA or without NCCL: device collectives are not available.
#include "core/error.hpp"
#include "distributed/nccl_channel.hpp"

namespace tcsolve {

std::string nccl_unique_id() {
  throw NotCompiled("tcsolve was built without NCCL: no collectives between GPUs");
}
std::unique_ptr<NcclChannel> make_nccl_channel(const std::string&, int, int, int, bool) {
  throw NotCompiled("tcsolve was built without NCCL: no collectives between GPUs");
}

}  // namespace tcsolve
