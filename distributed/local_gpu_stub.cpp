#include "core/error.hpp"
#include "distributed/affinity.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {

int selected_gpu() { return -1; }
void use_gpu(int) {}

void start_local_gpu_selection(const LaunchPlace& place) {
  if (place.known) widen_launcher_binding(place.local_rank, place.local_size);
}

int select_local_gpu(const Communicator&) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU to select");
}

}  // namespace tcsolve
