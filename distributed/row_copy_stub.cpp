// CPU-only build: device blocks cannot occur; the CUDA row kernels throw NotCompiled.
#include "core/error.hpp"
#include "distributed/row_copy.hpp"

namespace tcsolve::detail {

template <class T>
void gather_rows_cuda(const std::int32_t*, MvView<const T>, MvView<T>, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no device row copies");
}
template <class T>
void sparse_rows_add_cuda(const SparseRows&, double, MvView<const T>, MvView<T>, void*) {
  throw NotCompiled("tcsolve was built without CUDA: no device row updates");
}
template void gather_rows_cuda<double>(const std::int32_t*, MvView<const double>, MvView<double>, void*);
template void gather_rows_cuda<float>(const std::int32_t*, MvView<const float>, MvView<float>, void*);
template void sparse_rows_add_cuda<double>(const SparseRows&, double, MvView<const double>,
                                           MvView<double>, void*);
template void sparse_rows_add_cuda<float>(const SparseRows&, double, MvView<const float>,
                                          MvView<float>, void*);

}  // namespace tcsolve::detail
