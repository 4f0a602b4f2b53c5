// CPU-only build: device blocks cannot occur; the CUDA row copies throw NotCompiled.
#include "core/error.hpp"
#include "distributed/row_copy.hpp"

namespace tcsolve::detail {

void gather_rows_cuda(const std::int32_t*, MvView<const double>, MvView<double>, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no device row copies");
}
void scatter_add_rows_cuda(const std::int32_t*, double, MvView<const double>, MvView<double>, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no device row copies");
}

}  // namespace tcsolve::detail
