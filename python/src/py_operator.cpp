// PyOperator: a Python callable as a host operator (bindings.hpp).
//
// What the callable gets is a NumPy array of its own, never a view of the solver's block: the
// solver reuses and frees its blocks, so a view kept after the call (a LinearOperator that
// stores its input, a callback that appends it to a list) would read other data or freed memory,
// and a write through it would change the solve. The copy is 8·n·k bytes against the callable's
// product, which reads at least as much (nnz(A)·k multiply-adds, and an n × k result that is
// copied back into Y below), so it costs no more than that copy back. The array is writable:
// the callable may change it (the solver reads Y only) or keep it (it keeps the values it had).
#include <cmath>
#include <string>

#include "python/src/bindings.hpp"

namespace tcsolve::pyext {

namespace {

std::string shape_string(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// x (n × k, leading dimension ld) -> a new F-ordered (n, k) array owned by NumPy.
py::array_t<double, py::array::f_style> owned_copy(MvView<const double> x) {
  py::array_t<double, py::array::f_style> xa({x.rows, x.cols});
  double* dst = xa.mutable_data();
  for (std::int64_t j = 0; j < x.cols; ++j)
    std::copy(x.data + j * x.ld, x.data + j * x.ld + x.rows, dst + j * x.rows);
  return xa;
}

}  // namespace

void PyOperator::apply(MvView<const double> x, MvView<double> y) const {
  py::gil_scoped_acquire gil;
  py::object r = fn_(owned_copy(x));
  // float64 in any layout (a C-ordered product is read through its strides, not copied twice).
  auto ya = py::array_t<double, py::array::forcecast>::ensure(r);
  if (!ya) throw py::error_already_set();
  if (ya.ndim() != 2 || ya.shape(0) != y.rows || ya.shape(1) != y.cols)
    throw InvalidArgument(name_ + ": the operator returned an array of shape " + shape_string(ya) +
                          " for an input of shape (" + std::to_string(x.rows) + ", " +
                          std::to_string(x.cols) + "), expected (" + std::to_string(y.rows) + ", " +
                          std::to_string(y.cols) + ")");
  const auto src = ya.unchecked<2>();
  for (std::int64_t j = 0; j < y.cols; ++j)
    for (std::int64_t i = 0; i < y.rows; ++i) {
      const double v = src(i, j);
      if (!std::isfinite(v))
        throw InvalidArgument(name_ + ": the operator returned a non-finite value (" +
                              (std::isnan(v) ? std::string("NaN") : std::string("Inf")) +
                              ") at row " + std::to_string(i) + ", column " + std::to_string(j));
      y.data[i + j * y.ld] = v;
    }
}

std::shared_ptr<py::object> shared_object(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

}  // namespace tcsolve::pyext
