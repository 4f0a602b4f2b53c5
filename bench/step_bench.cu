// The fused Chebyshev step's kernel shapes (spmm/chebyshev_step.cu: kc columns per pass, g threads
// per row) on one matrix and block width, fp64 (the filter's fp64 rung and the preconditioner) and
// fp32 (the ladder's rung), against the device copy bandwidth measured in the same process.
//   step_bench SPEC COLS [REPS]        e.g. step_bench gen:lap2d:1000 48
// Per shape: median of REPS (default 30) launches timed with CUDA events after 3 warm-ups, the
// bytes of one step (fp64: 24·n·s + A; fp32: 12·n·s + A; A = 12·nnz + 8·(n+1)) over that time
// against the copy's rate, and the largest difference from the default shape's output (the same
// sums in the same order: 0 expected).
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/event_timing.cuh"
#include "core/cuda_check.cuh"
#include "core/device_buffer.hpp"
#include "io/matrix_io.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/sparse_operator.hpp"

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
    // ---- Long rows in natural blocks (3D elasticity): the BSR step (spmm/chebyshev_step.cu) in
    // each shape, against the operator's own SpMM (the one the unfused filter runs: BCSR DMMA on
    // elast3d) and cuSPARSE's BSR SpMM (A·X alone, generic API BSR_ALG1 and the legacy bsrmm).
    const int nb_b = natural_block_size(a);
    if (nb_b > 0) {
      const BsrBlocks bs = to_bsr_blocks(a, nb_b);
      const std::int64_t nb = bs.blocks(), bb = static_cast<std::int64_t>(nb_b) * nb_b;
      auto step = make_chebyshev_step_bsr(bs, Precision::fp64, nullptr);
      TCSOLVE_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("BSR %dx%d: %lld blocks, fill %.3f; %s\n", nb_b, nb_b, static_cast<long long>(nb),
                  static_cast<double>(nb * bb) / static_cast<double>(nnz), step->describe().c_str());
      // The CSR fp64 step (default shape) is the reference for both rungs: same sums, the BSR
      // kernel's explicit zeros add 0·x.
      TCSOLVE_CUDA_CHECK(cudaMemcpy(next.get(), h.data(), h.size() * 8, cudaMemcpyHostToDevice));
      detail::launch_step_shape(4, 2, n, rp.get(), ci.get(), v.get(), a_,
                                MvView<const double>{cur.get(), n, s, n, Space::device}, b_, c_,
                                MvView<double>{next.get(), n, s, n, Space::device}, nullptr);
      std::vector<double> want(h.size());
      TCSOLVE_CUDA_CHECK(cudaMemcpy(want.data(), next.get(), want.size() * 8, cudaMemcpyDeviceToHost));
      double scale = 0;
      for (double w : want) scale = std::max(scale, std::abs(w));
      const int bshapes[][2] = {{8, 1}, {4, 1}, {4, 2}, {8, 2}, {2, 2}, {12, 2}, {16, 2}};
      for (int prec = 64; prec >= 32; prec -= 32) {
        const double abytes = static_cast<double>(nb) * (static_cast<double>(bb) * (prec / 8) + 4.0) +
                              8.0 * static_cast<double>(bs.mb + 1);
        const double bytes = (prec == 64 ? 24.0 : 12.0) * static_cast<double>(n * s) + abytes;
        for (const auto& sh : bshapes) {
          if (nb_b != 3 && !(sh[0] == 2 && sh[1] == 2)) continue;
          auto run = [&] {
            if (prec == 64)
              detail::launch_bsr_step_shape(*step, 64, sh[0], sh[1], a_, cur.get(), n, b_, c_, next.get(), n, s);
            else
              detail::launch_bsr_step_shape(*step, 32, sh[0], sh[1], a_, cur32.get(), n, b_, c_, next32.get(), n, s);
          };
          double diff = 0;
          if (prec == 64) {
            TCSOLVE_CUDA_CHECK(cudaMemcpy(next.get(), h.data(), h.size() * 8, cudaMemcpyHostToDevice));
            run();
            std::vector<double> out(h.size());
            TCSOLVE_CUDA_CHECK(cudaMemcpy(out.data(), next.get(), out.size() * 8, cudaMemcpyDeviceToHost));
            for (std::size_t i = 0; i < out.size(); ++i) diff = std::max(diff, std::abs(out[i] - want[i]));
          } else {
            TCSOLVE_CUDA_CHECK(cudaMemcpy(next32.get(), hf.data(), hf.size() * 4, cudaMemcpyHostToDevice));
            run();
            std::vector<float> out(hf.size());
            TCSOLVE_CUDA_CHECK(cudaMemcpy(out.data(), next32.get(), out.size() * 4, cudaMemcpyDeviceToHost));
            for (std::size_t i = 0; i < out.size(); ++i) diff = std::max(diff, std::abs(static_cast<double>(out[i]) - want[i]));
          }
          const double ms = time_ms(run, reps);
          std::printf("bsr fp%d kc=%d g=%d  %.1f us  %.0f GB/s  %.0f %% of copy  max diff/max %.2g\n", prec,
                      sh[0], sh[1], ms * 1e3, bytes / (ms * 1e-3) * 1e-9, 100.0 * bytes / (ms * 1e-3) / copy_bw,
                      diff / scale);
        }
      }
      // The operator the solvers get (kernel trial as in tcsolve), A·X alone, fp64.
      {
        OperatorOptions oo;
        oo.expected_cols = static_cast<int>(s);
        auto op = make_sparse_operator(a, Backend::cuda, oo);
        MvView<const double> x{cur.get(), n, s, n, Space::device};
        MvView<double> y{ref.get(), n, s, n, Space::device};
        const double ms = time_ms([&] { op->apply(x, y); }, reps);
        std::printf("operator %s (A·X, fp64)  %.1f us\n", to_string(op->plan().kernel), ms * 1e3);
      }
      // cuSPARSE BSR SpMM, A·X (column-major X, Y).
      cusparseHandle_t hs;
      if (cusparseCreate(&hs) != CUSPARSE_STATUS_SUCCESS) throw std::runtime_error("cusparseCreate");
      std::vector<std::int32_t> brp32(bs.row_ptr.begin(), bs.row_ptr.end());
      DeviceArray<std::int32_t> d_brp(brp32), d_bci(std::vector<std::int32_t>(bs.col.begin(), bs.col.end()));
      DeviceArray<double> d_bv(std::vector<double>(bs.values.begin(), bs.values.end()));
      DeviceArray<float> d_bv32(std::vector<float>(bs.values.begin(), bs.values.end()));
      for (int prec = 64; prec >= 32; prec -= 32) {
        const cudaDataType vt = prec == 64 ? CUDA_R_64F : CUDA_R_32F;
        void* vals = prec == 64 ? static_cast<void*>(d_bv.get()) : static_cast<void*>(d_bv32.get());
        void* xd = prec == 64 ? static_cast<void*>(cur.get()) : static_cast<void*>(cur32.get());
        void* yd = prec == 64 ? static_cast<void*>(ref.get()) : static_cast<void*>(ref32.get());
        cusparseSpMatDescr_t ma;
        cusparseDnMatDescr_t mx, my;
        cusparseStatus_t st = cusparseCreateBsr(&ma, bs.mb, bs.mb, nb, nb_b, nb_b, d_brp.get(), d_bci.get(), vals,
                                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                                vt, CUSPARSE_ORDER_ROW);
        cusparseCreateDnMat(&mx, n, s, n, xd, vt, CUSPARSE_ORDER_COL);
        cusparseCreateDnMat(&my, n, s, n, yd, vt, CUSPARSE_ORDER_COL);
        double one64 = 1.0, zero64 = 0.0;
        float one32 = 1.0f, zero32 = 0.0f;
        const void* al = prec == 64 ? static_cast<const void*>(&one64) : static_cast<const void*>(&one32);
        const void* be = prec == 64 ? static_cast<const void*>(&zero64) : static_cast<const void*>(&zero32);
        std::size_t wb = 0;
        if (st == CUSPARSE_STATUS_SUCCESS)
          st = cusparseSpMM_bufferSize(hs, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, al, ma,
                                       mx, be, my, vt, CUSPARSE_SPMM_BSR_ALG1, &wb);
        DeviceArray<char> wbuf(wb + 1);
        if (st == CUSPARSE_STATUS_SUCCESS)
          st = cusparseSpMM(hs, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, al, ma, mx, be,
                            my, vt, CUSPARSE_SPMM_BSR_ALG1, wbuf.get());
        if (st == CUSPARSE_STATUS_SUCCESS) {
          const double ms = time_ms([&] {
            cusparseSpMM(hs, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, al, ma, mx, be, my,
                         vt, CUSPARSE_SPMM_BSR_ALG1, wbuf.get());
          }, reps);
          std::printf("cusparse SpMM BSR_ALG1 fp%d (A·X)  %.1f us\n", prec, ms * 1e3);
        } else {
          std::printf("cusparse SpMM BSR_ALG1 fp%d: %s\n", prec, cusparseGetErrorString(st));
        }
        cusparseMatDescr_t md;
        cusparseCreateMatDescr(&md);
        // The legacy bsrmm is deprecated in CUDA 12–13 but still the other cuSPARSE BSR product
        // worth timing next to the generic SpMM (the reference, not a dependency of tcsolve).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        auto legacy = [&] {
          return prec == 64
                     ? cusparseDbsrmm(hs, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                      CUSPARSE_OPERATION_NON_TRANSPOSE, static_cast<int>(bs.mb), static_cast<int>(s),
                                      static_cast<int>(bs.mb), static_cast<int>(nb), &one64, md, d_bv.get(),
                                      d_brp.get(), d_bci.get(), nb_b, cur.get(), static_cast<int>(n), &zero64,
                                      ref.get(), static_cast<int>(n))
                     : cusparseSbsrmm(hs, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                      CUSPARSE_OPERATION_NON_TRANSPOSE, static_cast<int>(bs.mb), static_cast<int>(s),
                                      static_cast<int>(bs.mb), static_cast<int>(nb), &one32, md, d_bv32.get(),
                                      d_brp.get(), d_bci.get(), nb_b, cur32.get(), static_cast<int>(n), &zero32,
                                      ref32.get(), static_cast<int>(n));
        };
#pragma GCC diagnostic pop
        const cusparseStatus_t ls = legacy();
        if (ls == CUSPARSE_STATUS_SUCCESS)
          std::printf("cusparse bsrmm fp%d (A·X)  %.1f us\n", prec, time_ms([&] { legacy(); }, reps) * 1e3);
        else
          std::printf("cusparse bsrmm fp%d: %s\n", prec, cusparseGetErrorString(ls));
        cusparseDestroyMatDescr(md);
        cusparseDestroySpMat(ma);
        cusparseDestroyDnMat(mx);
        cusparseDestroyDnMat(my);
      }
      cusparseDestroy(hs);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "step_bench: %s\n", e.what());
    return 1;
  }
}
