// CPU backend of SmallDense (solvers/dense/small_dense.hpp): Eigen on host memory. The CUDA twin
// is small_dense.cu.
#include <cmath>

#include "solvers/dense/cpu_dense.hpp"

namespace tcsolve::cpu_dense {

namespace {

class CpuSmallDense final : public SmallDense {
 public:
  void reserve_small(std::int64_t) override {}

  void eigh_small(MvView<double> a, MvView<double> w) override {
    TCSOLVE_REQUIRE(a.rows == a.cols && w.rows >= a.rows, "eigh_small: shapes");
    if (a.rows == 0) return;
    Eigen::MatrixXd h = map(a);
    es_.compute(h);  // lower triangle
    if (es_.info() != Eigen::Success) throw Error("eigh_small: eigensolver did not converge");
    map(a) = es_.eigenvectors();
    Eigen::Map<Eigen::VectorXd>(w.data, a.rows) = es_.eigenvalues();
  }

  void pip_factor(MvView<const double> g, std::int64_t l, MvView<double> m,
                  MvView<double> status) override {
    const std::int64_t w = g.cols;
    TCSOLVE_REQUIRE(g.rows == l + w && m.rows == l + w && m.cols == w && status.rows >= 2,
                    "pip_factor: shapes");
    auto gm = map(g);
    Eigen::MatrixXd gyy = gm.bottomRows(w);
    Eigen::MatrixXd sm = gyy;
    if (l > 0) sm.noalias() -= gm.topRows(l).transpose() * gm.topRows(l);
    sm = 0.5 * (sm + sm.transpose()).eval();
    bool ok = true;
    Eigen::VectorXd d(w);
    for (std::int64_t i = 0; i < w; ++i) {
      const double di = sm(i, i);
      if (!(di > kPipCancel * gyy(i, i)) || !(di > 1e-300) || !std::isfinite(di)) ok = false;
      d(i) = ok ? 1.0 / std::sqrt(di) : 1.0;
    }
    double piv = 0.0;
    Eigen::MatrixXd t;
    if (ok) {
      Eigen::LLT<Eigen::MatrixXd> llt(d.asDiagonal() * sm * d.asDiagonal());
      ok = llt.info() == Eigen::Success;
      if (ok) {
        piv = llt.matrixLLT().diagonal().minCoeff();
        piv *= piv;
        ok = piv >= kPipMinPivot2 && std::isfinite(piv);
      }
      if (ok) {
        // T = D·Lc⁻ᵀ.
        t = llt.matrixU().solve(Eigen::MatrixXd::Identity(w, w));
        t = d.asDiagonal() * t;
      }
    }
    auto mm = map(m);
    if (ok) {
      if (l > 0) mm.topRows(l).noalias() = -(gm.topRows(l) * t);
      mm.bottomRows(w) = t;
    } else {
      if (l > 0) mm.topRows(l) = -gm.topRows(l);
      mm.bottomRows(w).setIdentity();
    }
    status.data[0] = ok ? 0.0 : 1.0;
    status.data[1] = ok ? piv : 0.0;
  }

  void spd_factor(MvView<const double> g, MvView<double> f, MvView<double> status,
                  double piv_tol) override {
    const std::int64_t r = g.rows;
    TCSOLVE_REQUIRE(g.cols == r && f.rows == r && f.cols == r + 1 && status.rows >= 1,
                    "spd_factor: shapes");
    auto gm = map(g);
    Eigen::MatrixXd p = 0.5 * (gm + gm.transpose());
    int st = 0;
    Eigen::VectorXd d(r);
    for (std::int64_t i = 0; i < r; ++i) {
      if (!(p(i, i) > 0.0) || !std::isfinite(p(i, i))) st = 2;
      d(i) = st == 0 ? 1.0 / std::sqrt(p(i, i)) : 1.0;
    }
    auto fm = map(f);
    fm.setZero();
    if (st == 0) {
      Eigen::LLT<Eigen::MatrixXd> llt(d.asDiagonal() * p * d.asDiagonal());
      if (llt.info() != Eigen::Success) st = 2;
      else {
        double piv = llt.matrixLLT().diagonal().minCoeff();
        if (!(piv > 0.0) || !std::isfinite(piv)) st = 2;
        else if (piv * piv < piv_tol) st = 1;
        fm.leftCols(r).triangularView<Eigen::Lower>() = llt.matrixL();
      }
    }
    fm.col(r) = d;
    status.data[0] = st;
  }

  void spd_solve(MvView<const double> f, MvView<const double> b, double sign,
                 MvView<const double> status, MvView<double> out) override {
    const std::int64_t r = f.rows;
    TCSOLVE_REQUIRE(f.cols == r + 1 && b.rows == r && out.rows == r && out.cols == b.cols,
                    "spd_solve: shapes");
    auto om = map(out);
    if (status.data[0] == 2.0) {
      om.setZero();
      return;
    }
    auto fm = map(f);
    Eigen::VectorXd d = fm.col(r);
    Eigen::MatrixXd lc = fm.leftCols(r);
    Eigen::MatrixXd v = sign * (d.asDiagonal() * map(b));
    lc.triangularView<Eigen::Lower>().solveInPlace(v);
    lc.triangularView<Eigen::Lower>().transpose().solveInPlace(v);
    om = d.asDiagonal() * v;
  }

 private:
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es_;
};

}  // namespace

std::unique_ptr<SmallDense> make_small_dense() { return std::make_unique<CpuSmallDense>(); }

}  // namespace tcsolve::cpu_dense
