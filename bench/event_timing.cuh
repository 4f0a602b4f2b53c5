// Median time of a GPU operation with CUDA events (the benchmarks' one timing loop): `warm` calls
// first, then `reps` calls each bracketed by events on the default stream, the median in ms.
// CUDA errors throw (core/cuda_check.cuh); an exception from f propagates.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/cuda_check.cuh"

namespace tcsolve::timing {

inline double median_event_ms(const std::function<void()>& f, int reps, int warm = 3) {
  struct Events {
    cudaEvent_t a = nullptr, b = nullptr;
    Events() {
      TCSOLVE_CUDA_CHECK(cudaEventCreate(&a));
      TCSOLVE_CUDA_CHECK(cudaEventCreate(&b));
    }
    ~Events() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } ev;
  for (int i = 0; i < warm; ++i) f();
  TCSOLVE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    TCSOLVE_CUDA_CHECK(cudaEventRecord(ev.a));
    f();
    TCSOLVE_CUDA_CHECK(cudaEventRecord(ev.b));
    TCSOLVE_CUDA_CHECK(cudaEventSynchronize(ev.b));
    float ms = 0;
    TCSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.a, ev.b));
    t.push_back(ms);
  }
  TCSOLVE_CUDA_CHECK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace tcsolve::timing
