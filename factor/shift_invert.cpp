// The shift-invert operator (factor/shift_invert.hpp): host solves, staged device solves, or GPU
// triangular solves.
#include "factor/shift_invert.hpp"

#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "factor/triangular_solve.hpp"

namespace tcsolve {

namespace {

class ShiftInvertImpl final : public ShiftInvertOperator {
 public:
  ShiftInvertImpl(const SparseFactor& f, Backend backend, void* stream, std::int64_t max_cols,
                  bool prefer_device)
      : f_(f), max_cols_(std::max<std::int64_t>(max_cols, 1)) {
    if (backend == Backend::cpu) {
      mode_ = SolveMode::host;
      return;
    }
    if (prefer_device && f.engine() == FactorEngine::cholmod) {
      const ExportedFactor* ef = nullptr;
      try {
        ef = &f.export_lower();
      } catch (const InvalidArgument&) {
        ef = nullptr;  // not exported: staged solves
      }
      if (ef) {
        tri_ = detail::make_device_triangular_solver(*ef, stream, max_cols_);
        mode_ = SolveMode::device_triangular;
        return;
      }
    }
    mode_ = SolveMode::device_staged;
    const std::size_t elems = static_cast<std::size_t>(f.n()) * static_cast<std::size_t>(max_cols_);
    hx_.resize(elems);
    hy_.resize(elems);
  }

  std::int64_t rows() const override { return f_.n(); }
  std::int64_t cols() const override { return f_.n(); }
  Space space() const override { return mode_ == SolveMode::host ? Space::host : Space::device; }
  SolveMode mode() const override { return mode_; }
  const SparseFactor& factor() const override { return f_; }

  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.rows == f_.n() && y.rows == f_.n() && x.cols == y.cols,
                    "shift-invert apply: shapes");
    if (x.cols == 0) return;
    switch (mode_) {
      case SolveMode::host:
        f_.solve(x, y);
        return;
      case SolveMode::device_triangular:
        for (std::int64_t c0 = 0; c0 < x.cols; c0 += max_cols_) {
          const std::int64_t c = std::min(max_cols_, x.cols - c0);
          tri_->solve(x.columns(c0, c), y.columns(c0, c));
        }
        return;
      case SolveMode::device_staged: {
        const std::int64_t n = f_.n();
        for (std::int64_t c0 = 0; c0 < x.cols; c0 += max_cols_) {
          const std::int64_t c = std::min(max_cols_, x.cols - c0);
          // Device block → host (column by column: X may have ld > n), solve, back.
          for (std::int64_t j = 0; j < c; ++j)
            copy_bytes(hx_.data() + j * n, Space::host, x.col(c0 + j), Space::device,
                       sizeof(double) * n);
          f_.solve(MvView<const double>{hx_.data(), n, c, n, Space::host},
                   MvView<double>{hy_.data(), n, c, n, Space::host});
          for (std::int64_t j = 0; j < c; ++j)
            copy_bytes(y.col(c0 + j), Space::device, hy_.data() + j * n, Space::host,
                       sizeof(double) * n);
        }
        return;
      }
    }
  }

 private:
  const SparseFactor& f_;
  std::int64_t max_cols_;
  SolveMode mode_ = SolveMode::host;
  std::unique_ptr<detail::DeviceTriangularSolver> tri_;
  mutable std::vector<double> hx_, hy_;
};

}  // namespace

std::unique_ptr<ShiftInvertOperator> make_shift_invert(const SparseFactor& f, Backend backend,
                                                       void* stream, std::int64_t max_cols,
                                                       bool prefer_device_solves) {
  return std::make_unique<ShiftInvertImpl>(f, backend, stream, max_cols, prefer_device_solves);
}

}  // namespace tcsolve
