// CPU-only build: no GPU triangular solves.
#include "core/error.hpp"
#include "factor/triangular_solve.hpp"

namespace tcsolve::detail {

std::unique_ptr<DeviceTriangularSolver> make_device_triangular_solver(const ExportedFactor&, void*,
                                                                      std::int64_t) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU triangular solves");
}

}  // namespace tcsolve::detail
