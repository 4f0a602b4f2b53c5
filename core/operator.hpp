// The operator contract the solvers are written against (after Spectra's perform_op and
// Anasazi's OperatorTraits::Apply): Y = Op·X on blocks of vectors.
//
// Contract: an operator is any class with rows(), cols(), space() and apply(x, y). apply()
// computes Y = Op·X for a block of k >= 1 columns: X is cols() × k and Y rows() × k, column-major
// with their own leading dimensions, both in space() (host memory, or device memory for
// Space::device), never aliasing; it overwrites Y, must not allocate per call (workspace is
// sized at construction), and may be asynchronous on a stream of its own (the solvers
// synchronize around each apply). It is called from the solver's thread only, so it need not
// be re-entrant; an exception it throws leaves the solver and reaches the caller unchanged. The
// eigensolvers and block CG require Op symmetric (B and preconditioners also positive definite);
// they do not check it -- the command and the Python module do, before a solve.
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
