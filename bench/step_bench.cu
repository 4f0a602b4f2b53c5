// The fused Chebyshev step's kernel shapes (spmm/chebyshev_step.cu: kc columns per pass, g threads
// per row) on one matrix and block width, fp64 (the filter's fp64 rung and the preconditioner) and
// fp32 (the ladder's rung), against the device copy bandwidth measured in the same process.
//   step_bench SPEC COLS [REPS]        e.g. step_bench gen:lap2d:1000 48
// Per shape: median of REPS (default 30) launches timed with CUDA events after 3 warm-ups, the
// bytes of one step (fp64: 24·n·s + A; fp32: 12·n·s + A; A = 12·nnz + 8·(n+1)) over that time
// against the copy's rate, and the largest difference from the default shape's output (the same
// sums in the same order: 0 expected).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/event_timing.cuh"
#include "core/cuda_check.cuh"
#include "io/matrix_io.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/device_buffer.hpp"

using namespace tcsolve;

namespace {

double time_ms(const std::function<void()>& f, int reps) { return timing::median_event_ms(f, reps); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: step_bench SPEC COLS [REPS]\n");
    return 2;
  }
  try {
    const std::string spec = argv[1];
    const std::int64_t s = std::stoll(argv[2]);
    const int reps = argc > 3 ? std::stoi(argv[3]) : 30;
    const Csr<double> a = read_matrix(spec, {false, true});
    const std::int64_t n = a.nrows, nnz = a.nnz();
    DeviceArray<std::int64_t> rp(a.row_ptr);
    DeviceArray<std::int32_t> ci(a.col_idx);
    DeviceArray<double> v(a.values);
    std::vector<double> h(static_cast<std::size_t>(n * s));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = std::sin(0.731 * static_cast<double>(i) + 0.3);
    std::vector<float> hf(h.begin(), h.end());
    DeviceArray<double> cur(h), next(h), ref(h.size());
    DeviceArray<float> cur32(hf), next32(hf), ref32(hf.size());

    // Copy bandwidth: 1 GiB read and written.
    const std::size_t cbytes = std::size_t(1) << 30;
    DeviceArray<char> c0(cbytes), c1(cbytes);
    const double copy_ms = time_ms([&] { TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(c1.get(), c0.get(), cbytes, cudaMemcpyDeviceToDevice)); }, 10);
    const double copy_bw = 2.0 * static_cast<double>(cbytes) / (copy_ms * 1e-3);
    const double a_bytes = 12.0 * static_cast<double>(nnz) + 8.0 * static_cast<double>(n + 1);
    std::printf("%s n=%lld nnz=%lld cols=%lld copy %.0f GB/s\n", spec.c_str(), static_cast<long long>(n),
                static_cast<long long>(nnz), static_cast<long long>(s), copy_bw * 1e-9);

    const int shapes[][2] = {{8, 1}, {4, 1}, {2, 1}, {8, 2}, {4, 2}, {4, 4}, {2, 2}, {16, 1}, {16, 2}};
    const double a_ = 0.7, b_ = -0.3, c_ = 0.2;
    for (int prec = 64; prec >= 32; prec -= 32) {
      const double bytes = (prec == 64 ? 24.0 : 12.0) * static_cast<double>(n * s) + a_bytes;
      for (const auto& sh : shapes) {
        auto run = [&] {
          if (prec == 64)
            detail::launch_step_shape(sh[0], sh[1], n, rp.get(), ci.get(), v.get(), a_,
                                      MvView<const double>{cur.get(), n, s, n, Space::device}, b_, c_,
                                      MvView<double>{next.get(), n, s, n, Space::device}, nullptr);
          else
            detail::launch_step32_shape(sh[0], sh[1], n, rp.get(), ci.get(), v.get(), a_,
                                        MvView<const float>{cur32.get(), n, s, n, Space::device}, b_, c_,
                                        MvView<float>{next32.get(), n, s, n, Space::device}, nullptr);
        };
        // Output check: one step from the same next (restored), against the default shape's.
        double diff = 0;
        if (prec == 64) {
          TCSOLVE_CUDA_CHECK(cudaMemcpy(next.get(), h.data(), h.size() * 8, cudaMemcpyHostToDevice));
          run();
          std::vector<double> out(h.size());
          TCSOLVE_CUDA_CHECK(cudaMemcpy(out.data(), next.get(), out.size() * 8, cudaMemcpyDeviceToHost));
          if (sh[0] == 8 && sh[1] == 1) TCSOLVE_CUDA_CHECK(cudaMemcpy(ref.get(), next.get(), out.size() * 8, cudaMemcpyDeviceToDevice));
          std::vector<double> r(h.size());
          TCSOLVE_CUDA_CHECK(cudaMemcpy(r.data(), ref.get(), r.size() * 8, cudaMemcpyDeviceToHost));
          for (std::size_t i = 0; i < r.size(); ++i) diff = std::max(diff, std::abs(out[i] - r[i]));
        } else {
          TCSOLVE_CUDA_CHECK(cudaMemcpy(next32.get(), hf.data(), hf.size() * 4, cudaMemcpyHostToDevice));
          run();
          std::vector<float> out(hf.size()), r(hf.size());
          TCSOLVE_CUDA_CHECK(cudaMemcpy(out.data(), next32.get(), out.size() * 4, cudaMemcpyDeviceToHost));
          if (sh[0] == 8 && sh[1] == 1) TCSOLVE_CUDA_CHECK(cudaMemcpy(ref32.get(), next32.get(), out.size() * 4, cudaMemcpyDeviceToDevice));
          TCSOLVE_CUDA_CHECK(cudaMemcpy(r.data(), ref32.get(), r.size() * 4, cudaMemcpyDeviceToHost));
          for (std::size_t i = 0; i < r.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(out[i] - r[i])));
        }
        const double ms = time_ms(run, reps);
        std::printf("fp%d kc=%d g=%d  %.1f us  %.0f GB/s  %.0f %% of copy  max diff %.2g\n", prec, sh[0],
                    sh[1], ms * 1e3, bytes / (ms * 1e-3) * 1e-9, 100.0 * bytes / (ms * 1e-3) / copy_bw, diff);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "step_bench: %s\n", e.what());
    return 1;
  }
}
