// The operator contract the solvers are written against (after Spectra's perform_op and
// Anasazi's OperatorTraits::Apply): Y = Op·X on blocks of vectors.
#pragma once
#include <cstdint>

#include "core/multivector.hpp"
#include "core/types.hpp"

namespace tcsolve {

template <class T>
class LinearOperator {
 public:
  virtual ~LinearOperator() = default;
  virtual std::int64_t rows() const = 0;
  virtual std::int64_t cols() const = 0;
  // Where apply() expects X and Y to live.
  virtual Space space() const = 0;
  // Y = Op·X. X is cols() × k, Y is rows() × k, both column-major with their own leading
  // dimension, k >= 1. X and Y do not alias. Implementations must not allocate per call.
  virtual void apply(MvView<const T> x, MvView<T> y) const = 0;
};

}  // namespace tcsolve
