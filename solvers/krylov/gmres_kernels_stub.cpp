// CPU-only build: GMRES's CUDA kernels (gmres_kernels.cu) are not compiled in; the entries of
// gmres::cuda throw NotCompiled (a device-space solve cannot be set up there anyway: the dense
// ops' CUDA backend throws first).
#include "core/error.hpp"
#include "solvers/krylov/gmres_kernels.hpp"

namespace tcsolve::krylov::gmres::cuda {

namespace {
[[noreturn]] void missing() { throw NotCompiled("tcsolve was built without CUDA: no GPU GMRES kernels"); }
}  // namespace

std::int64_t partial_doubles(std::int64_t, std::int64_t, std::int64_t, int) { missing(); }
void ortho_pass(const Context&, const Basis&, int, MvView<double>, MvView<const double>, MvView<double>, bool,
                int) {
  missing();
}
void arnoldi_step(const Context&, const StateLayout&, int, MvView<const double>, MvView<const double>, int,
                  MvView<double>) {
  missing();
}
void start_cycle(const Context&, const StateLayout&, MvView<const double>, MvView<double>) { missing(); }
void normalize(const Context&, MvView<double>, MvView<const double>, const double*, MvView<double>) {
  missing();
}
void solve_triangular(const Context&, const StateLayout&, MvView<double>) { missing(); }
void combine(const Context&, const StateLayout&, const Basis&, int, MvView<const double>, const double*,
             MvView<double>) {
  missing();
}

}  // namespace tcsolve::krylov::gmres::cuda
