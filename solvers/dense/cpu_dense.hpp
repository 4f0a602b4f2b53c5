// Internal to the CPU backend of DenseBlockOps (solvers/dense_ops.cpp and its parts: dense/queue.cpp,
// dense/small_dense.cpp, cg/cg_kernels.cpp, chebyshev/chebyshev_kernels.cpp): Eigen maps of
// blocks (never copies) and the parts' factories. The CUDA twin is dense/cuda_context.cuh.
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve::cpu_dense {

using Stride = Eigen::OuterStride<>;
using MatMap = Eigen::Map<Eigen::MatrixXd, 0, Stride>;
using CMatMap = Eigen::Map<const Eigen::MatrixXd, 0, Stride>;

inline MatMap map(MvView<double> v) { return MatMap(v.data, v.rows, v.cols, Stride(v.ld)); }
inline CMatMap map(MvView<const double> v) { return CMatMap(v.data, v.rows, v.cols, Stride(v.ld)); }

// Y[:, j] = X[:, idx[j]], j < count (fp64 and fp32 blocks).
template <class T>
void gather_host(MvView<const T> x, const std::int64_t* idx, std::int64_t count, MvView<T> y) {
  TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
  for (std::int64_t j = 0; j < count; ++j) {
    TCSOLVE_REQUIRE(idx[j] >= 0 && idx[j] < x.cols, "gather: index out of range");
    std::copy(x.col(idx[j]), x.col(idx[j]) + x.rows, y.col(j));
  }
}

// The parts of the CPU ops (each on the generic operations of `ops`, the object that owns it).
// scratch: the generic ops' n × r workspace (multiply_inplace), shared with the direction pass.
std::unique_ptr<DenseQueue> make_queue(DenseBlockOps& ops);
std::unique_ptr<SmallDense> make_small_dense();
std::unique_ptr<CgKernels> make_cg_kernels(DenseBlockOps& ops, std::vector<double>& scratch);
std::unique_ptr<ChebyshevKernels> make_chebyshev_kernels(DenseBlockOps& ops);

}  // namespace tcsolve::cpu_dense
