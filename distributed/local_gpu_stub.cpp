#include "core/error.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {

int selected_gpu() { return -1; }
void use_gpu(int) {}

int select_local_gpu(const Communicator&) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU to select");
}

}  // namespace tcsolve
