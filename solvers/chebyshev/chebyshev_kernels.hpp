// The eigensolvers' fused passes (DenseBlockOps::chebyshev()): the Chebyshev three-term
// recurrence (the filter, the spectral probes, the Chebyshev preconditioner, the re-checks) and
// the Ritz residual norms, into backend blocks. CPU (chebyshev_kernels.cpp): loops on host
// memory. CUDA (chebyshev_kernels.cu): one kernel each. Distributed: the norms all-reduced.
#pragma once
#include "core/error.hpp"
#include "core/multivector.hpp"

namespace tcsolve {

class ChebyshevKernels {
 public:
  virtual ~ChebyshevKernels() = default;
  // Z = a·X + b·Y + c·Z, one fused pass (3 reads, 1 write; c == 0: Z is not read, 2 + 1).
  // Z must not alias X or Y. (The Chebyshev three-term recurrence.)
  virtual void axpbypcz(double a, MvView<const double> x, double b, MvView<const double> y,
                        double c, MvView<double> z) = 0;
  // out[j] = ‖AX_j − s·θ_j·X_j‖₂ for the q columns (θ, out: backend q × 1). Reads AX and X
  // once: residual_sq_norms_into, then the square roots in place.
  void residual_norms_into(MvView<const double> ax, MvView<const double> x,
                           MvView<const double> theta, double s, MvView<double> out) {
    residual_sq_norms_into(ax, x, theta, s, out);
    sqrt_elements({out.data, x.cols, 1, x.cols, out.space});
  }
  // The same without the square root: out[j] = ‖AX_j − s·θ_j·X_j‖₂².
  virtual void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                                      MvView<const double> theta, double s,
                                      MvView<double> out) = 0;

 protected:
  // v = √v element-wise (the backend's DenseBlockOps::sqrt_elements).
  virtual void sqrt_elements(MvView<double> v) = 0;
  // The shapes residual_sq_norms_into requires (InvalidArgument otherwise).
  static void check_residual_norms(MvView<const double> ax, MvView<const double> x,
                                   MvView<const double> theta, MvView<const double> out) {
    TCSOLVE_REQUIRE(ax.rows == x.rows && ax.cols == x.cols && theta.rows >= x.cols &&
                        out.rows >= x.cols,
                    "residual_norms_into: shapes");
  }
};

}  // namespace tcsolve
