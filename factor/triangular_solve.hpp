// Internal: (A − σB)⁻¹·X on the GPU from an exported CHOLMOD factor S(p, p) = L·Lᵀ:
//   Z = X(perm, :)           gather (one pass over n × s)
//   L·W = Z, Lᵀ·V = W         cuSPARSE SpSM, L uploaded once as CSR of L (lower) and of Lᵀ (upper)
//   Y(perm, :) = V            scatter
// Workspace (two n × max_cols blocks, the SpSM buffers and analyses) is sized at construction;
// solve() allocates nothing. triangular_solve_stub.cpp throws NotCompiled in CPU-only builds.
#pragma once
#include <cstdint>
#include <memory>

#include "core/multivector.hpp"
#include "factor/sparse_factor.hpp"

namespace tcsolve::detail {

class DeviceTriangularSolver {
 public:
  virtual ~DeviceTriangularSolver() = default;
  // X, Y: device, n × s with s ≤ max_cols, column-major with their own leading dimensions.
  virtual void solve(MvView<const double> x, MvView<double> y) = 0;
  virtual double device_bytes() const = 0;
};

std::unique_ptr<DeviceTriangularSolver> make_device_triangular_solver(const ExportedFactor& f,
                                                                      void* stream,
                                                                      std::int64_t max_cols);

}  // namespace tcsolve::detail
