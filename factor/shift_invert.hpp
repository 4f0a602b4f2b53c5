// Y = (A − σB)⁻¹·X on blocks, from a SparseFactor (factor/sparse_factor.hpp), as a LinearOperator
// in the space the solvers work in.
//   host:   the engine's own block solve (CHOLMOD or MUMPS).
//   device: with an exported CHOLMOD factor, two triangular solves on the GPU (cuSPARSE SpSM with
//           L and Lᵀ, the permutation folded into gather/scatter kernels; factor/triangular_solve.cu);
//           otherwise the block goes to pinned host memory, is solved by the engine and comes back
//           (two PCIe copies of n × s doubles per apply). `mode()` says which.
// The operator keeps a reference to the factor: it must outlive the operator.
#pragma once
#include <memory>
#include <string>

#include "core/operator.hpp"
#include "core/types.hpp"
#include "factor/sparse_factor.hpp"

namespace tcsolve {

enum class SolveMode { host, device_staged, device_triangular };
const char* to_string(SolveMode m);

class ShiftInvertOperator : public LinearOperator<double> {
 public:
  virtual SolveMode mode() const = 0;
  virtual const SparseFactor& factor() const = 0;
  // The mode and, on the GPU, the one-time trial that chose it.
  virtual std::string plan() const = 0;
};

// backend cpu: host solves. backend cuda: with an exportable factor (and prefer_device_solves),
// a one-time trial times one block solve on the device (SpSM) and on the host (staged) and keeps
// the faster; otherwise staged host solves. `stream` (cudaStream_t) orders the device
// work after the caller's; max_cols is the widest block apply() will see (workspace sized once).
std::unique_ptr<ShiftInvertOperator> make_shift_invert(const SparseFactor& f, Backend backend,
                                                       void* stream, std::int64_t max_cols,
                                                       bool prefer_device_solves = true);

}  // namespace tcsolve
