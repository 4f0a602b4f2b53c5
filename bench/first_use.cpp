// What each GPU operation of the solvers costs the first time a process runs it, against the
// second time (issue 16: the default path's seconds outside the engine). With the CUDA runtime's
// lazy module loading (the default), a kernel is loaded into the context on its first launch:
// cuBLAS/cuSOLVER pick kernels by shape, so the first product of a new shape can load another.
//
//   first_use N C [SPEC] [--no-warm-up] [--warm-width W]
//
// N rows, C columns (a block CG or Chebyshev block), SPEC a generator for the SpMM rows
// (default gen:lap3d:50). Prints, per operation, the first and second call (host clock, each
// followed by a stream synchronization) in milliseconds. Run it in a fresh process: the numbers
// are the process's first uses only once.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "io/generators.hpp"
#include "solvers/dense_ops.hpp"
#include "spmm/sparse_operator.hpp"

using namespace tcsolve;

namespace {
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: first_use N C [SPEC] [--no-warm-up] [--warm-width W]\n");
    return 2;
  }
  const std::int64_t n = std::atoll(argv[1]), c = std::atoll(argv[2]);
  std::string spec = "gen:lap3d:50";
  bool warm = true;
  std::int64_t warm_width = 8;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-warm-up") == 0) warm = false;
    else if (std::strcmp(argv[i], "--warm-width") == 0 && i + 1 < argc) warm_width = std::atoll(argv[++i]);
    else spec = argv[i];
  }
  if (n < 2 || c < 1 || c > 512) {
    std::fprintf(stderr, "first_use: N must be ≥ 2 and C in 1..512 (got %lld, %lld)\n", (long long)n, (long long)c);
    return 2;
  }
  // Without a GPU the same calls run on the CPU backend (a check of the calls, not of loading).
  const Backend be = device_count() > 0 ? Backend::cuda : Backend::cpu;
  if (be == Backend::cpu) std::printf("no GPU: the CPU backend (no module loading to measure)\n");
  double t = now_ms();
  auto own = make_dense_ops(be);
  DenseBlockOps& ops = *own;
  ops.synchronize();
  std::printf("%-34s %9.2f ms\n", "context and dense ops' handles", now_ms() - t);
  if (warm) {
    t = now_ms();
    warm_up(ops, warm_width);
    std::printf("%-34s %9.2f ms\n", "warm_up (as the apps run it)", now_ms() - t);
  }
  MultiVector<double> x = ops.allocate(n, c), y = ops.allocate(n, c), z = ops.allocate(n, c),
                      g = ops.allocate(2 * c, c), m = ops.allocate(2 * c, c), f = ops.allocate(c, c + 1),
                      w = ops.allocate(c, 1), st = ops.allocate(2, 1), nrm = ops.allocate(c, 1),
                      xy = ops.allocate(n, 2 * c);
  ops.reserve(n, c, 4 * c * c);
  ops.small().reserve_small(2 * c);
  struct Op {
    const char* name;
    std::function<void()> run;
  };
  const auto gx = x.columns(0, c);
  const MvView<double> gcc{g.data(), c, c, 2 * c, ops.space()};  // C × C corners of g and m
  const MvView<double> mcc{m.data(), c, c, 2 * c, ops.space()};
  const MvView<double> st1{st.data(), 1, 1, 2, ops.space()};
  std::vector<Op> list = {
      {"fill_random", [&] {
         ops.fill_random(x.view(), 7), ops.fill_random(y.view(), 8), ops.fill_random(xy.view(), 9);
       }},
      {"copy", [&] { ops.copy(x.view(), z.view()); }},
      {"normalize_columns", [&] { ops.normalize_columns(z.view(), nrm.view()); }},
      {"gram_into (C x C, k = N)", [&] { ops.gram_into(1.0, x.view(), y.view(), 0.0, gcc); }},
      {"gram_into ([X Y]^T Y)", [&] {
         MvView<double> gg{g.data(), 2 * c, c, 2 * c, ops.space()};
         ops.gram_into(1.0, xy.view(), xy.columns(c, c), 0.0, gg);
       }},
      {"pip_factor", [&] {
         MvView<double> gg{g.data(), 2 * c, c, 2 * c, ops.space()};
         MvView<double> mm{m.data(), 2 * c, c, 2 * c, ops.space()};
         ops.small().pip_factor(gg, c, mm, st.view());
       }},
      {"gemm_into (N x C times C x C)", [&] { ops.gemm_into(1.0, x.view(), mcc, 0.0, z.view()); }},
      {"eigh_small (C x C)", [&] {
         ops.gram_into(1.0, gx, gx, 0.0, gcc);
         MvView<double> h{g.data(), c, c, 2 * c, ops.space()};
         ops.small().eigh_small(h, w.view());
       }},
      {"axpbypcz", [&] { ops.chebyshev().axpbypcz(0.5, x.view(), -0.25, y.view(), 1.0, z.view()); }},
      {"residual_norms_into", [&] { ops.chebyshev().residual_norms_into(x.view(), y.view(), w.view(), 1.0, nrm.view()); }},
      {"spd_factor", [&] {
         ops.gram_into(1.0, gx, gx, 0.0, gcc);
         MvView<double> h{g.data(), c, c, 2 * c, ops.space()};
         ops.small().spd_factor(h, f.view(), st1, 1e-14);
       }},
      {"spd_solve", [&] {
         MvView<double> h{g.data(), c, c, 2 * c, ops.space()};
         ops.small().spd_solve(f.view(), h, 1.0, st1, mcc);
       }},
      {"cg_residual_update", [&] {
         MvView<double> gg{g.data(), 2 * c, c, 2 * c, ops.space()};
         ops.cg().cg_residual_update(y.view(), mcc, z.view(), gg);
       }},
      {"cg_direction_update", [&] { ops.cg().cg_direction_update(mcc, mcc, y.view(), x.view(), z.view()); }},
      {"column_dots_into", [&] { ops.column_dots_into(x.view(), y.view(), nrm.view()); }},
  };
  std::printf("%-34s %9s %9s   (N = %lld, C = %lld)\n", "operation", "first", "second", (long long)n, (long long)c);
  double first_sum = 0.0, second_sum = 0.0;
  for (auto& op : list) {
    double t0 = now_ms();
    op.run();
    ops.synchronize();
    const double a = now_ms() - t0;
    t0 = now_ms();
    op.run();
    ops.synchronize();
    const double b = now_ms() - t0;
    first_sum += a, second_sum += b;
    std::printf("%-34s %9.2f %9.2f\n", op.name, a, b);
  }
  // Steady state of the two tall-skinny products: 20 calls back to back, one synchronization.
  for (int which = 0; which < 2; ++which) {
    const double t0 = now_ms();
    for (int rep = 0; rep < 20; ++rep) {
      if (which == 0) ops.gemm_into(1.0, x.view(), mcc, 0.0, z.view());
      else ops.gram_into(1.0, x.view(), y.view(), 0.0, gcc);
    }
    ops.synchronize();
    const double per = (now_ms() - t0) / 20.0;
    const double gb = 8.0 * static_cast<double>(n) * (which == 0 ? 2.0 * c : 2.0 * c) * 1e-9;
    std::printf("%-34s %9.3f ms a call, %.2f TB/s\n", which == 0 ? "gemm_into, 20 calls" : "gram_into, 20 calls",
                per, gb / (per * 1e-3) * 1e-3);
  }
  // The operator: generated matrix, the apps' automatic plan (trial), then its applies.
  const Csr<double> a = generate(spec);
  t = now_ms();
  OperatorOptions oo;
  oo.expected_cols = static_cast<int>(c);
  oo.stream = ops.stream();
  auto op = make_sparse_operator(a, be, oo);
  std::printf("%-34s %9.2f ms (%s: %s)\n", "operator built", now_ms() - t, spec.c_str(),
              to_string(op->plan().kernel));
  MultiVector<double> ax = ops.allocate(a.nrows, c), ay = ops.allocate(a.nrows, c);
  ops.fill_random(ax.view(), 3);
  for (int rep = 0; rep < 2; ++rep) {
    const double t0 = now_ms();
    op->apply(ax.view(), ay.view());
    ops.synchronize();
    std::printf("%-34s %9.2f ms\n", rep ? "SpMM (second)" : "SpMM (first after build)", now_ms() - t0);
  }
  std::printf("%-34s %9.2f %9.2f\n", "dense operations, sum", first_sum, second_sum);
  return 0;
}
