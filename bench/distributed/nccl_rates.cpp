// Issue 17's communication rates through tcsolve's own Communicator (MPI + NCCL, the path the
// distributed solvers take), in one run: NCCL all-reduce of fp64 blocks (the Gram matrices:
// 16² .. 256² and larger), the halo exchange (each rank sends and receives `bytes` to and from
// its peer at once, as DistributedOperator does), and a device-local copy as the reference.
//   mpirun -np 2 -x NCCL_NVLS_ENABLE=0 build/bench/nccl_rates
// CUDA events on each rank's stream, 10 warm-up calls, median of 50; rank 0 prints.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "distributed/comm.hpp"

using namespace tcsolve;

namespace {
void ck(cudaError_t e) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA: %s\n", cudaGetErrorString(e));
    std::exit(2);
  }
}
template <class F>
double median_ms(cudaStream_t s, Communicator& comm, F&& f) {
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a)), ck(cudaEventCreate(&b));
  for (int i = 0; i < 10; ++i) f();
  ck(cudaStreamSynchronize(s));
  comm.barrier();
  std::vector<float> t;
  for (int i = 0; i < 50; ++i) {
    ck(cudaEventRecord(a, s));
    f();
    ck(cudaEventRecord(b, s));
    ck(cudaEventSynchronize(b));
    float ms = 0;
    ck(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  cudaEventDestroy(a), cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  // The slower rank's median: a collective ends when both ranks are done.
  return comm.allreduce_max(t[t.size() / 2]);
}
}  // namespace

int main() {
  auto comm = make_communicator();
  const int dev = select_local_gpu(*comm);
  if (comm->size() > 1) comm->enable_device(dev);
  cudaStream_t s;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int me = comm->rank(), np = comm->size();
  if (me == 0) std::printf("%s\n", comm->describe().c_str());

  const std::int64_t most = 64ll << 20;  // doubles: 512 MiB per buffer
  double *x = nullptr, *y = nullptr;
  ck(cudaMalloc(&x, most * sizeof(double))), ck(cudaMalloc(&y, most * sizeof(double)));
  ck(cudaMemset(x, 0, most * sizeof(double))), ck(cudaMemset(y, 0, most * sizeof(double)));

  if (me == 0) std::printf("all-reduce (fp64, in place)\n%12s %12s %12s\n", "doubles", "us", "GB/s");
  for (std::int64_t n : {256ll, 1024ll, 4096ll, 16384ll, 65536ll, 1ll << 20, 8ll << 20}) {
    const double ms = median_ms(s, *comm, [&] { comm->allreduce_sum(x, n, Space::device, s); });
    if (me == 0) std::printf("%12lld %12.1f %12.1f\n", (long long)n, 1e3 * ms, n * 8.0 / ms * 1e-6);
  }
  if (np > 1) {
    if (me == 0)
      std::printf("halo exchange (send and receive at once to/from the next rank)\n%12s %12s %12s\n",
                  "MiB each way", "us", "GB/s each way");
    const int peer_next = (me + 1) % np, peer_prev = (me + np - 1) % np;
    for (std::int64_t n : {1ll << 14, 1ll << 17, 1ll << 20, 1ll << 22, 1ll << 24, 1ll << 25}) {
      std::vector<Transfer> sends{{peer_next, x, n, false}}, recvs{{peer_prev, y, n, false}};
      const double ms = median_ms(s, *comm, [&] {
        comm->exchange_start(sends, recvs, Space::device, s);
        comm->exchange_wait(s);
      });
      if (me == 0)
        std::printf("%12.2f %12.1f %12.1f\n", n * 8.0 / (1 << 20), 1e3 * ms, n * 8.0 / ms * 1e-6);
    }
  }
  {
    const std::int64_t n = 32ll << 20;
    const double ms = median_ms(s, *comm, [&] {
      ck(cudaMemcpyAsync(y, x, n * sizeof(double), cudaMemcpyDeviceToDevice, s));
    });
    if (me == 0)
      std::printf("device copy %lld MiB: %.1f us, %.1f GB/s (read + write)\n",
                  (long long)(n * 8 >> 20), 1e3 * ms, 2.0 * n * 8.0 / ms * 1e-6);
  }
  cudaFree(x), cudaFree(y);
  cudaStreamDestroy(s);
  return 0;
}
