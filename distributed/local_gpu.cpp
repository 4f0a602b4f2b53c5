// select_local_gpu (distributed/comm.hpp) with CUDA.
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {
namespace {
int g_selected = -1;
}

int selected_gpu() { return g_selected; }

void use_gpu(int device) {
  if (device < 0) return;
  const cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    throw DeviceError("cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(e),
                      __FILE__, __LINE__);
}

int select_local_gpu(const Communicator& comm) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw DeviceError("rank " + std::to_string(comm.rank()) + ": no CUDA device visible", __FILE__, __LINE__);
  const int local = local_rank(comm), nlocal = local_size(comm);
  if (nlocal > count)
    throw InvalidArgument(std::to_string(nlocal) + " ranks on this node for " +
                          std::to_string(count) +
                          " GPUs: one GPU per rank (start at most that many ranks per node)");
  const int dev = local % count;
  use_gpu(dev);
  g_selected = dev;
  return dev;
}

}  // namespace tcsolve
