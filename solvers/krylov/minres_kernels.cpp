// CPU reference of pseudo-block MINRES's kernels (minres_kernels.hpp), and the backend choice.
// One thread a column (parallel_for over the columns): each column's sums run in row order on one
// thread, so the results do not depend on the number of threads.
#include "solvers/krylov/minres_kernels.hpp"

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve::mr {

namespace {

class CpuMinresKernels final : public MinresKernels {
 public:
  void dots(MvView<const double> zc, MvView<const double> q, MvView<const double> y, const double* d,
            MvView<double> s, DotStep step, const ScalarParams& p) override {
    TCSOLVE_REQUIRE(zc.cols == s.cols && q.cols == s.cols && q.rows == zc.rows &&
                        (!y.data || (y.cols == s.cols && y.rows == zc.rows)) && s.rows == kFields,
                    "minres dots: shapes");
    parallel_for(
        s.cols,
        [&](std::int64_t j) {
          double* c = s.col(j);
          if (step == DotStep::coefficients && c[kState] != kActive) return;
          const double* z = zc.col(j);
          const double* qq = q.col(j);
          const double* yy = y.data ? y.col(j) : nullptr;
          double t1 = 0.0, t2 = 0.0, t3 = 0.0, t4 = 0.0;
          for (std::int64_t i = 0; i < zc.rows; ++i) {
            t1 += z[i] * qq[i];
            t3 += qq[i] * qq[i];
            t4 += z[i] * z[i];
            if (yy) t2 += z[i] * (d ? d[i] * yy[i] : yy[i]);
          }
          c[kT1] = t1, c[kT2] = t2, c[kT3] = t3, c[kT4] = t4;
          if (step == DotStep::start)
            step_start(c, p);
          else
            step_coefficients(c);
        },
        1);
  }

  void update(const UpdateBlocks& b, MvView<double> s) override {
    const bool general = b.up.data != nullptr;
    TCSOLVE_REQUIRE(s.rows == kFields && b.q.cols == s.cols && b.zc.cols == s.cols && b.zp.cols == s.cols &&
                        b.wp.cols == s.cols && b.w.cols == s.cols && b.x.cols == s.cols &&
                        (!b.r.data || b.r.cols == s.cols) &&
                        (!general || (b.uc.cols == s.cols && b.up.cols == s.cols)),
                    "minres update: shapes");
    parallel_for(
        s.cols, [&](std::int64_t j) { update_column(b, general, j, s.col(j)); }, 1);
  }

  void rotate(MvView<double> s, MvView<const double> beta2, const ScalarParams& p) override {
    for (std::int64_t j = 0; j < s.cols; ++j) {
      double* c = s.col(j);
      step_rotate(c, beta2.data ? beta2.data[j] : c[kNrm], p);
    }
  }

  void finish_all(MvView<double> s) override {
    for (std::int64_t j = 0; j < s.cols; ++j) step_finish(s.col(j));
  }

 private:
  // One column of the update pass (minres.cpp), one sweep over the rows: the pending x (and r)
  // update of the last step, then, for an active column (kLanczos), the next Lanczos vector and
  // its β². Compiled for each combination of the modes (the branches leave the inner loop).
  static void update_column(const UpdateBlocks& b, bool general, std::int64_t j, double* c) {
    if (c[kState] == kDone) return;
    const bool lanczos = c[kState] == kActive, with_r = b.r.data != nullptr, jacobi = b.d != nullptr;
    const int mode = (lanczos ? 8 : 0) | (general ? 4 : 0) | (with_r ? 2 : 0) | (jacobi ? 1 : 0);
    switch (mode) {
#define TCSOLVE_MINRES_CASE(m) \
  case m:                      \
    return sweep<(m & 8) != 0, (m & 4) != 0, (m & 2) != 0, (m & 1) != 0>(b, j, c);
      TCSOLVE_MINRES_CASE(0)
      TCSOLVE_MINRES_CASE(1) TCSOLVE_MINRES_CASE(2) TCSOLVE_MINRES_CASE(3) TCSOLVE_MINRES_CASE(4)
          TCSOLVE_MINRES_CASE(5) TCSOLVE_MINRES_CASE(6) TCSOLVE_MINRES_CASE(7) TCSOLVE_MINRES_CASE(8)
              TCSOLVE_MINRES_CASE(9) TCSOLVE_MINRES_CASE(10) TCSOLVE_MINRES_CASE(11) TCSOLVE_MINRES_CASE(12)
                  TCSOLVE_MINRES_CASE(13) TCSOLVE_MINRES_CASE(14) TCSOLVE_MINRES_CASE(15)
#undef TCSOLVE_MINRES_CASE
    }
  }

  template <bool kLanczos, bool kGeneral, bool kR, bool kJacobi>
  static void sweep(const UpdateBlocks& b, std::int64_t j, double* c) {
    const std::int64_t n = b.q.rows;
    const double wv = c[kWv], we = c[kWe], wd = c[kWd], phi = c[kPhi], rs = c[kRs], ru = c[kRu];
    const double rc = c[kRc], a = c[kA], bb = c[kB];
    const double* q = b.q.col(j);
    const double* zc = b.zc.col(j);
    double* zp = b.zp.col(j);
    double* wp = b.wp.col(j);
    const double* w = b.w.col(j);
    double* x = b.x.col(j);
    double* r = kR ? b.r.col(j) : nullptr;
    const double* uc = kGeneral ? b.uc.col(j) : nullptr;
    double* up = kGeneral ? b.up.col(j) : nullptr;
    const double* d = b.d;
    const double* dinv = b.dinv;
    double rr = 0.0, nrm = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double zpi = zp[i], zci = zc[i];
      const double wn = wv * zpi - we * wp[i] - wd * w[i];
      wp[i] = wn;
      x[i] += phi * wn;
      if constexpr (kR) {
        const double u = kGeneral ? uc[i] : (kJacobi ? d[i] * zci : zci);
        const double ri = rs * r[i] + ru * u;
        r[i] = ri;
        rr += ri * ri;
      }
      if constexpr (kLanczos && kGeneral) {
        up[i] = rc * q[i] - a * uc[i] - bb * up[i];
      } else if constexpr (kLanczos) {
        const double zn = rc * (kJacobi ? dinv[i] * q[i] : q[i]) - a * zci - bb * zpi;
        zp[i] = zn;
        nrm += (kJacobi ? d[i] * zn : zn) * zn;
      }
    }
    if constexpr (kR) c[kRr] = rr;
    if constexpr (kLanczos && !kGeneral) c[kNrm] = nrm;
  }
};

}  // namespace

std::unique_ptr<MinresKernels> make_cpu_minres_kernels() { return std::make_unique<CpuMinresKernels>(); }

std::unique_ptr<MinresKernels> make_minres_kernels(DenseBlockOps& ops, std::int64_t n,
                                                   std::int64_t max_cols) {
  if (ops.space() == Space::host) return make_cpu_minres_kernels();
  return make_cuda_minres_kernels(ops.stream(), n, max_cols);
}

}  // namespace tcsolve::mr
