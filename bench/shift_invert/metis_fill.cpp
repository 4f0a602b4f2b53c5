// AMD's analysis (what the eigs planner measures: factor/sparse_factor.hpp analyze_factor)
// against the factorization's own ordering (CHOLMOD's default: METIS where AMD fills in much),
// for the planner's expected fill (solvers/eigs/plan.hpp kMetisEntriesOverAmd/kMetisFlopsOverAmd).
//   build-dev/bench/metis_fill gen:lap3d:30 gen:stiff:12:74 gen:elast3d:20 FILE.mtx ...
// Each A is factored at σ = 0 (a matrix that is not positive definite is reported and skipped).
#include <cstdio>
#include <exception>
#include <string>

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
    } catch (const std::exception& e) {
      std::printf("%s: %s\n", argv[i], e.what());
    }
  }
  return 0;
}
