// Block CG's dense passes (DenseBlockOps, CUDA backend) on n × s blocks against the device copy
// rate measured in the same process (ops.copy of n × s: one read and one write):
//   dense_bench [N [S [REPS]]]          default 786432 32 30 (elast3d:64's rows, 32 rhs)
// Per operation: median of REPS calls timed with stream marks on the ops' stream after 3 warm-up
// calls, its passes over n × s blocks (bytes = passes · 8·n·s), GB/s, and the fraction of the
// copy's rate. The small solves (spd_factor / spd_solve on s × s) are latency, not bytes.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solvers/dense_ops.hpp"

using namespace tcsolve;

int main(int argc, char** argv) {
  try {
    const std::int64_t n = argc > 1 ? std::stoll(argv[1]) : 786432;
    const std::int64_t s = argc > 2 ? std::stoll(argv[2]) : 32;
    const int reps = argc > 3 ? std::stoi(argv[3]) : 30;
    if (n < 1 || s < 1 || s > 64 || reps < 1) {
      std::fprintf(stderr, "dense_bench: need N ≥ 1, 1 ≤ S ≤ 64, REPS ≥ 1\n");
      return 2;
    }
    auto ops = make_dense_ops(Backend::cuda);
    ops->reserve(n, s, 2 * s * s + s);
    ops->small().reserve_small(s);
    auto qr = ops->allocate(n, 2 * s), p = ops->allocate(n, s), z = ops->allocate(n, s);
    auto x = ops->allocate(n, s), d = ops->allocate(n, 1), c = ops->allocate(n, s);
    auto g = ops->allocate(2 * s + 1, s), al = ops->allocate(s, s), be = ops->allocate(s, s);
    auto f = ops->allocate(s, s + 1), st = ops->allocate(1, 1), nr = ops->allocate(s, 1);
    auto q = qr.columns(0, s), r = qr.columns(s, s);
    ops->fill_random(qr.view(), 1);
    ops->fill_random(p.view(), 2);
    ops->fill_random(x.view(), 3);
    ops->fill_random(al.view(), 4);
    ops->fill_random(be.view(), 5);
    {
      std::vector<double> h(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) h[i] = 0.5 + 0.25 * static_cast<double>((i * 7919) % 13) / 13.0;
      ops->from_host(h.data(), n, d.view());
    }
    const MvView<double> gsq{g.data(), s, s, g.rows(), g.view().space};
    ops->synchronize();
    auto median_ms = [&](const std::function<void()>& fn) {
      for (int i = 0; i < 3; ++i) fn();
      std::vector<double> t;
      for (int i = 0; i < reps; ++i) {
        const int a = ops->queue().mark();
        fn();
        const int b = ops->queue().mark();
        ops->synchronize();
        t.push_back(1e3 * ops->queue().elapsed_seconds(a, b));
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    const double block_bytes = 8.0 * static_cast<double>(n) * static_cast<double>(s);
    const double copy_ms = median_ms([&] { ops->copy(p.view(), c.view()); });
    const double copy_bw = 2.0 * block_bytes / (copy_ms * 1e-3);
    std::printf("n=%lld s=%lld reps=%d copy %.3f ms = %.0f GB/s\n", static_cast<long long>(n),
                static_cast<long long>(s), reps, copy_ms, copy_bw * 1e-9);
    std::printf("%-34s %9s %7s %8s %8s\n", "operation", "ms", "passes", "GB/s", "of copy");
    auto row = [&](const char* name, double passes, const std::function<void()>& fn) {
      const double ms = median_ms(fn);
      if (passes > 0) {
        const double bw = passes * block_bytes / (ms * 1e-3);
        std::printf("%-34s %9.4f %7.2f %8.0f %7.0f%%\n", name, ms, passes, bw * 1e-9, 100.0 * bw / copy_bw);
      } else {
        std::printf("%-34s %9.4f %7s %8s %8s\n", name, ms, "-", "-", "-");
      }
      std::fflush(stdout);
    };
    // Inputs are restored where an operation changes them (R, P, X drift but stay finite: the
    // coefficients are small random numbers and each call starts from the last one's output).
    row("gram_into P'Q (s x s)", 2, [&] { ops->gram_into(1.0, p.view(), q, 0.0, gsq); });
    row("gram_into [Q R]'Z (2s x s)", 3, [&] {
      ops->gram_into(1.0, qr.view(), z.view(), 0.0, MvView<double>{g.data(), 2 * s, s, g.rows(), g.view().space});
    });
    row("gemm_into R -= Q a", 3, [&] { ops->gemm_into(-1e-3, q, al.view(), 1.0, r); });
    row("scale_rows Z = D R", 2, [&] { ops->scale_rows(d.data(), r, z.view()); });
    row("column_dots_into R'R", 1, [&] { ops->column_dots_into(r, r, nr.view()); });
    row("cg_residual_update", 3, [&] {
      ops->cg().cg_residual_update(q, al.view(), r, MvView<double>{g.data(), 2 * s, s, g.rows(), g.view().space});
    });
    row("cg_residual_update_jacobi", 4, [&] {
      ops->cg().cg_residual_update_jacobi(q, al.view(), d.data(), r, z.view(), g.view());
    });
    row("cg_direction_update", 5, [&] {
      ops->cg().cg_direction_update(al.view(), be.view(), z.view(), p.view(), x.view());
    });
    // The small solves on an SPD matrix (the Gram above is overwritten first).
    {
      std::vector<double> gs(static_cast<std::size_t>(s * s));
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < s; ++i) gs[i + j * s] = (i == j ? s : 0.0) + 1.0 / (1.0 + i + j);
      ops->from_host(gs.data(), s, gsq);
    }
    row("spd_factor (s x s)", 0, [&] { ops->small().spd_factor(gsq, f.view(), st.view(), 1e-10); });
    row("spd_solve (s x s, s columns)", 0, [&] { ops->small().spd_solve(f.view(), al.view(), 1.0, st.view(), be.view()); });
    std::vector<double> status(1);
    ops->to_host(st.view(), status.data(), 1);
    std::printf("factor status %.0f (0: positive definite)\n", status[0]);
    return status[0] == 0.0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dense_bench: %s\n", e.what());
    return 1;
  }
}
