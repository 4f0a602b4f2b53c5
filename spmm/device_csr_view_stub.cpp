// CPU-only build: there is no GPU to view CSR arrays on.
#include "core/error.hpp"
#include "spmm/device_csr_view.hpp"

namespace tcsolve {

std::unique_ptr<LinearOperator<double>> make_device_csr_view(std::int64_t, std::int64_t,
                                                             std::int64_t, const std::int64_t*,
                                                             const std::int32_t*, const double*,
                                                             void*) {
  throw NotCompiled("tcsolve was built without CUDA: no GPU sparse operator on device arrays");
}

DeviceCsrCheck check_device_csr(std::int64_t, std::int64_t, const std::int64_t*, const std::int32_t*,
                                const double*, double*, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no checks of device arrays");
}

void widen_indices(const std::int32_t*, std::int64_t*, std::int64_t, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no device arrays");
}

void to_column_major(const double*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, double*, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no device arrays");
}

}  // namespace tcsolve
