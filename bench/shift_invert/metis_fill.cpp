// AMD's analysis (what the eigs planner measures: factor/sparse_factor.hpp analyze_factor)
// against the factorization's own ordering (CHOLMOD's default: METIS where AMD fills in much),
// for the planner's expected fill (solvers/eigs/plan.hpp kMetisEntriesOverAmd/kMetisFlopsOverAmd).
//   build-dev/bench/metis_fill gen:lap3d:30 gen:stiff:12:74 gen:elast3d:20 FILE.mtx ...
// Each A is factored at σ = 0 (a matrix that is not positive definite is reported and skipped).
// Then block solves of 1, 2, 6 and 16 columns are timed (median of 7 after one warm-up) against
// the planner's price (EngineRates::solve_seconds at the factor's own entries and flops).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/multivector.hpp"
#include "factor/engine_rates.hpp"
#include "factor/sparse_factor.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"

int main(int argc, char** argv) {
  using namespace tcsolve;
  for (int i = 1; i < argc; ++i) {
    const std::string spec = argv[i];
    const Csr<double> a = spec.rfind("gen:", 0) == 0 ? generate(spec) : read_matrix(spec, {});
    const SymbolicAnalysis amd = analyze_factor(a, nullptr);
    FactorOptions o;
    o.engine = FactorEngine::cholmod;
    try {
      const auto f = factor_shifted(a, nullptr, 0.0, o);
      std::printf("%-40s n=%7lld amd: lnz %.3g fl %.3g (%.3f s) | %s: lnz %.3g (%.2f of amd) fl %.3g (%.2f) "
                  "analysis %.3f s factor %.3f s, metis_follows %d\n",
                  argv[i], static_cast<long long>(a.nrows), amd.factor_entries, amd.flops, amd.seconds,
                  f->describe().c_str(), f->factor_entries(), f->factor_entries() / amd.factor_entries,
                  f->factor_flops(), f->factor_flops() / amd.flops, f->analyze_seconds(), f->factor_seconds(),
                  amd.metis_follows ? 1 : 0);
      const EngineRates& r = engine_rates();
      for (const std::int64_t cols : {1, 2, 6, 16}) {
        MultiVector<double> rhs(a.nrows, cols), x(a.nrows, cols);
        for (std::int64_t i = 0; i < a.nrows * cols; ++i) rhs.data()[i] = 1.0 + 1e-3 * static_cast<double>(i % 97);
        std::vector<double> t;
        for (int rep = 0; rep < 8; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          f->solve(std::as_const(rhs).view(), x.view());
          const std::chrono::duration<double> d = std::chrono::steady_clock::now() - t0;
          if (rep > 0) t.push_back(d.count());
        }
        std::nth_element(t.begin(), t.begin() + 3, t.end());
        const double priced = r.solve_seconds(f->factor_entries(), static_cast<double>(cols), f->factor_flops(),
                                              static_cast<double>(a.nrows));
        std::printf("    solve of %2lld columns: %.3g ms measured, %.3g ms priced (%.2f)\n",
                    static_cast<long long>(cols), 1e3 * t[3], 1e3 * priced, t[3] / priced);
      }
    } catch (const std::exception& e) {
      std::printf("%s: %s\n", argv[i], e.what());
    }
  }
  return 0;
}
