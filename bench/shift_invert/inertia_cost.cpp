// MUMPS inertia counts (one Sylvester count of the certificate, solvers/eigs/certificate.cpp)
// against EngineRates' model (factor/engine_rates.hpp: call + n·per_row + ratio·(analysis +
// factor)), the median of five counts at τ = 0.37 per matrix (issue 46 B7's certificate price).
//   build-dev/bench/inertia_cost gen:lap2d:3000x1 gen:lap2d:55x55 gen:lap3d:15 ...
// The rates are this process's: the cache's line for its BLAS kernels, else measured (~1 s).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "factor/engine_rates.hpp"
#include "factor/sparse_factor.hpp"
#include "io/generators.hpp"

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace tcsolve;
  const EngineRates& r = engine_rates();
  for (int i = 1; i < argc; ++i) {
    const Csr<double> a = generate(argv[i]);
    const SymbolicAnalysis sym = analyze_factor(a, nullptr);
    const double lower = 0.5 * static_cast<double>(a.nnz() + a.nrows);
    std::vector<double> t;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = now();
      inertia_at(a, nullptr, 0.37);
      t.push_back(now() - t0);
    }
    std::sort(t.begin(), t.end());
    std::printf("%-22s n=%8lld lnz=%.3g fl=%.3g  count %.3f ms  model %.3f ms (call %.3f, rows %.3f, analysis %.3f, "
                "factor %.3f, ratio %.2f)\n",
                argv[i], static_cast<long long>(a.nrows), sym.factor_entries, sym.flops, t[2] * 1e3,
                r.inertia_seconds(sym, lower) * 1e3, r.inertia_call_s * 1e3, sym.n * r.inertia_s_per_row * 1e3,
                r.analyze_seconds(lower) * 1e3, r.factor_seconds(sym) * 1e3, r.inertia_ratio);
  }
  return 0;
}
