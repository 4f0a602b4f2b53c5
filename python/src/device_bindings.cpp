// The CUDA dense ops shared by every call on CuPy input, and the small device helpers of
// tcsolve._tcsolve (see bindings.hpp):
//   device_csr_check(n, nnz, ptrs)                 checks of CuPy CSR arrays in one device pass
//   device_widen_int32(src, dst, count)            int32 -> int64 indices on the device
//   device_to_column_major(src, rs, cs, n, s, dst) a strided float64 block -> column-major
//   device_column_norms(ptr, n, s)                 ‖x_j‖₂ of a column-major block
//   release_device_cache(), device_allocated_bytes(), device_name(), device_count(),
//   built_with_cuda()
#include <algorithm>
#include <vector>

#include "core/device.hpp"
#include "python/src/bindings.hpp"
#include "spmm/device_csr_view.hpp"

namespace tcsolve::pyext {

DevicePtrs device_ptrs(const py::tuple& t) {
  if (t.size() != 3) throw InvalidArgument("device CSR: expected (indptr, indices, data) addresses");
  return {reinterpret_cast<const std::int64_t*>(t[0].cast<std::uintptr_t>()),
          reinterpret_cast<const std::int32_t*>(t[1].cast<std::uintptr_t>()),
          reinterpret_cast<const double*>(t[2].cast<std::uintptr_t>())};
}

CachedDeviceOps& cached_device_ops() {
  static CachedDeviceOps c;
  return c;
}

DenseBlockOps& device_ops_locked() {
  auto& ops = cached_device_ops().ops;
  if (!ops) ops = make_dense_ops(Backend::cuda);
  return *ops;
}

namespace {

// Checks of CuPy CSR arrays in one device pass (spmm/device_csr_view.hpp).
py::dict device_csr_check(std::int64_t n, std::int64_t nnz, const py::tuple& pa) {
  const DevicePtrs da = device_ptrs(pa);
  DeviceCsrCheck c;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps* ops = &device_ops_locked();
    c = check_device_csr(n, nnz, da.indptr, da.indices, da.data, nullptr, ops->stream());
  }
  py::dict d;
  d["max_abs"] = c.max_abs;
  d["symmetry_defect"] = c.symmetry_defect;
  d["inf_norm"] = c.inf_norm;
  d["min_diag"] = c.min_diag;
  d["min_diag_row"] = c.min_diag_row;
  d["max_diag"] = c.max_diag;
  d["nonfinite_at"] = c.nonfinite_at;
  d["unsorted_row"] = c.unsorted_row;
  return d;
}

// CuPy arrays made into what the solvers take, by tcsolve's kernels on the cached ops' stream
// (spmm/device_csr_view.hpp): no CuPy kernel, so nothing for CuPy to compile on a first call.

void device_widen_int32(std::uintptr_t src, std::uintptr_t dst, std::int64_t count) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
  widen_indices(reinterpret_cast<const std::int32_t*>(src), reinterpret_cast<std::int64_t*>(dst), count,
                device_ops_locked().stream());
}

void device_to_column_major(std::uintptr_t src, std::int64_t row_stride, std::int64_t col_stride,
                            std::int64_t n, std::int64_t s, std::uintptr_t dst) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
  to_column_major(reinterpret_cast<const double*>(src), row_stride, col_stride, n, s,
                  reinterpret_cast<double*>(dst), device_ops_locked().stream());
}

// ‖x_j‖₂ of a column-major n × s float64 block on the device (NaN/Inf when a column holds one).
py::array_t<double> device_column_norms(std::uintptr_t ptr, std::int64_t n, std::int64_t s) {
  std::vector<double> out(static_cast<std::size_t>(std::max<std::int64_t>(s, 0)), 0.0);
  if (n > 0 && s > 0) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps& ops = device_ops_locked();
    MvView<const double> x{reinterpret_cast<const double*>(ptr), n, s, n, Space::device};
    ops.column_norms(x, out.data());
  }
  return vec(out);
}

}  // namespace

void define_device(py::module_& m) {
  m.def("device_csr_check", &device_csr_check);
  m.def("device_widen_int32", &device_widen_int32);
  m.def("device_to_column_major", &device_to_column_major);
  m.def("device_column_norms", &device_column_norms);
  m.def("built_with_cuda", &built_with_cuda);
  m.def("device_count", &device_count);
  // bytes tcsolve holds on the GPU now (core/device.hpp): the tests check that nothing stays behind
  m.def("device_allocated_bytes", [] { return static_cast<std::int64_t>(device_allocated_bytes()); });
  // drops the cached CUDA dense ops (their stream, handles and workspaces: see cached_device_ops)
  m.def("release_device_cache", [] {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    cached_device_ops().ops.reset();
  });
  m.def("device_name", &device_name);
}

}  // namespace tcsolve::pyext
