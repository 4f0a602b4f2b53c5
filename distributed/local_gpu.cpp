// select_local_gpu and its early start (distributed/comm.hpp) with CUDA.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"
#include "distributed/affinity.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {
namespace {
std::atomic<int> g_selected{-1};
// A rank thread's GPU (ranks that are threads of this process: each its own).
thread_local int t_rank_gpu = -1;
// The selection start_local_gpu_selection began (set once, before any reader; each reader waits
// through its own copy, as shared_future requires across threads).
std::shared_future<int> g_pending;
LaunchPlace g_pending_place;

// The ordinal for local rank `local` of `nlocal`, or -1 without a visible GPU when `none_ok`.
int choose(int rank, int local, int nlocal, bool none_ok) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    if (none_ok) return -1;
    throw DeviceError("rank " + std::to_string(rank) + ": no CUDA device visible", __FILE__, __LINE__);
  }
  if (nlocal > count)
    throw InvalidArgument(std::to_string(nlocal) + " ranks on this node for " + std::to_string(count) +
                          " GPUs: one GPU per rank (start at most that many ranks per node)");
  return local % count;
}

int wait_pending() {
  std::shared_future<int> mine = g_pending;
  const int dev = mine.get();
  g_selected = dev;
  return dev;
}
}  // namespace

int selected_gpu() {
  if (t_rank_gpu >= 0) return t_rank_gpu;
  if (g_pending.valid()) return wait_pending();
  return g_selected;
}

void use_gpu(int device) {
  if (device >= 0) use_device(device);
}

void start_local_gpu_selection(const LaunchPlace& place) {
  if (!place.known || g_pending.valid()) return;
  widen_launcher_binding(place.local_rank, place.local_size);
  g_pending_place = place;
  g_pending = std::async(std::launch::async, [place] {
                const int dev = choose(place.rank, place.local_rank, place.local_size, /*none_ok=*/true);
                if (dev >= 0) {
                  use_gpu(dev);  // CUDA 12: cudaSetDevice creates the device's primary context
                  const cudaError_t e = cudaFree(nullptr);
                  if (e != cudaSuccess)
                    throw DeviceError(std::string("CUDA context: ") + cudaGetErrorString(e), __FILE__, __LINE__);
                }
                trace_mark("start-up: this rank's GPU and its context");
                return dev;
              }).share();
}

int select_local_gpu(const Communicator& comm) {
  const int local = local_rank(comm), nlocal = local_size(comm);
  if (comm.ranks_are_threads()) {  // not the process's selection: this thread's
    const int dev = choose(comm.rank(), local, nlocal, /*none_ok=*/false);
    use_gpu(dev);
    t_rank_gpu = dev;
    return dev;
  }
  if (g_pending.valid() && g_pending_place.local_rank == local && g_pending_place.local_size == nlocal) {
    const int dev = wait_pending();
    if (dev < 0)
      throw DeviceError("rank " + std::to_string(comm.rank()) + ": no CUDA device visible", __FILE__, __LINE__);
    use_gpu(dev);
    return dev;
  }
  const int dev = choose(comm.rank(), local, nlocal, /*none_ok=*/false);
  use_gpu(dev);
  g_selected = dev;
  return dev;
}

}  // namespace tcsolve
