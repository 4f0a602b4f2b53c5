// CPU backend of CgKernels (solvers/cg/cg_kernels.hpp): Eigen on host memory, and the fp32 passes
// on fp64 copies of their blocks (a reference for the CUDA kernels, cg_kernels.cu). Also the
// defaults of the fp32 passes for a backend without them.
#include <string>

#include "solvers/dense/cpu_dense.hpp"

namespace tcsolve {

namespace cpu_dense {

namespace {

class CpuCgKernels final : public CgKernels {
 public:
  CpuCgKernels(DenseBlockOps& ops, std::vector<double>& scratch) : ops_(ops), scratch_(scratch) {}

  // R −= Q·α, G = [Q R]ᵀR: per row part (cpu_dense::for_row_parts) the update and its rows' share
  // of G while the part is in cache; the shares added in part order.
  void cg_residual_update(MvView<const double> q, MvView<const double> alpha, MvView<double> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    const std::int64_t rk = q.cols, na = r.cols, gr = rk + na;
    double* pp = partials(r.rows, gr * na);
    cpu_dense::for_row_parts(r.rows, [&](std::int64_t p, std::int64_t b, std::int64_t e) {
      double* gp = pp + p * gr * na;
      if (rk > 0) {
        cpu_dense::gemm_here(false, e - b, na, rk, -1.0, q.data + b, q.ld, alpha.data, alpha.ld, 1.0, r.data + b, r.ld);
        cpu_dense::gemm_here(true, rk, na, e - b, 1.0, q.data + b, q.ld, r.data + b, r.ld, 0.0, gp, gr);
      }
      cpu_dense::gemm_here(true, na, na, e - b, 1.0, r.data + b, r.ld, r.data + b, r.ld, 0.0, gp + rk, gr);
    });
    cpu_dense::sum_parts(pp, cpu_dense::row_part_count(r.rows), gr, na, 1.0, 0.0, g.data, g.ld);
  }

  // R −= Q·α, Z = D⁻¹R, G = [Q R]ᵀZ with ‖r_j‖² as its last row, per row part as above.
  void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                 const double* d, MvView<double> r, MvView<double> z,
                                 MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    const std::int64_t rk = q.cols, na = r.cols, gr = rk + na + 1;
    double* pp = partials(r.rows, gr * na);
    cpu_dense::for_row_parts(r.rows, [&](std::int64_t p, std::int64_t b, std::int64_t e) {
      double* gp = pp + p * gr * na;
      if (rk > 0)
        cpu_dense::gemm_here(false, e - b, na, rk, -1.0, q.data + b, q.ld, alpha.data, alpha.ld, 1.0, r.data + b, r.ld);
      for (std::int64_t j = 0; j < na; ++j) {
        const double* rj = r.col(j);
        double* zj = z.col(j);
        double nrm = 0.0;
        for (std::int64_t i = b; i < e; ++i) zj[i] = d[i] * rj[i], nrm += rj[i] * rj[i];
        gp[(rk + na) + j * gr] = nrm;
      }
      if (rk > 0) cpu_dense::gemm_here(true, rk, na, e - b, 1.0, q.data + b, q.ld, z.data + b, z.ld, 0.0, gp, gr);
      cpu_dense::gemm_here(true, na, na, e - b, 1.0, r.data + b, r.ld, z.data + b, z.ld, 0.0, gp + rk, gr);
    });
    cpu_dense::sum_parts(pp, cpu_dense::row_part_count(r.rows), gr, na, 1.0, 0.0, g.data, g.ld);
  }

  // X += P(:, 0:qn)·α; P(:, 0:rn) = Z + P(:, 0:qn)·β, per row part (P·β into the scratch's rows).
  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const double> z, MvView<double> p, MvView<double> x) override {
    const std::int64_t qn = alpha.rows, rn = z.cols, n = p.rows;
    detail::check_cg_direction(alpha, beta, z, p, x);
    if (static_cast<std::int64_t>(scratch_.size()) < n * rn) scratch_.resize(n * rn);
    double* t = scratch_.data();
    cpu_dense::for_row_parts(n, [&](std::int64_t, std::int64_t b, std::int64_t e) {
      cpu_dense::gemm_here(false, e - b, rn, qn, 1.0, p.data + b, p.ld, beta.data, beta.ld, 0.0, t + b, n);
      cpu_dense::gemm_here(false, e - b, x.cols, qn, 1.0, p.data + b, p.ld, alpha.data, alpha.ld, 1.0, x.data + b, x.ld);
      for (std::int64_t j = 0; j < rn; ++j) {
        const double* zj = z.col(j);
        const double* tj = t + j * n;
        double* pj = p.col(j);
        for (std::int64_t i = b; i < e; ++i) pj[i] = zj[i] + tj[i];
      }
    });
  }

  // ---- fp32 blocks: each pass on fp64 copies of its fp32 blocks (exact), through the fp64 pass
  // above, the written blocks rounded back once. The reference for the CUDA kernels (which keep
  // the copies in registers); its workspace (up to three n × s fp64 blocks) grows once.
  bool fp32_blocks() const override { return true; }
  void gram_into(double alpha, MvView<const float> x, MvView<const float> y, double beta,
                 MvView<double> g) override {
    auto xd = widen(0, x), yd = widen(1, y);
    ops_.gram_into(alpha, xd, yd, beta, g);
  }
  // R −= Q·α is rounded to fp32 once; Z, G and the norms are those of R as stored (as in the
  // CUDA kernel).
  void cg_residual_update(MvView<const float> q, MvView<const double> alpha, MvView<float> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    auto qd = widen(0, q), rd = widen(1, r);
    if (q.cols > 0) map(rd).noalias() -= map(qd) * map(alpha);
    narrow(rd, r);
    rd = widen(1, r);
    auto gm = map(g);
    if (q.cols > 0) gm.topRows(q.cols).noalias() = map(qd).transpose() * map(rd);
    gm.bottomRows(r.cols).noalias() = map(rd).transpose() * map(rd);
  }
  void cg_residual_update_jacobi(MvView<const float> q, MvView<const double> alpha, const double* d,
                                 MvView<float> r, MvView<float> z, MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    auto qd = widen(0, q), rd = widen(1, r);
    if (q.cols > 0) map(rd).noalias() -= map(qd) * map(alpha);
    narrow(rd, r);
    rd = widen(1, r);
    auto zd = widen(2, z);
    map(zd) = Eigen::Map<const Eigen::VectorXd>(d, r.rows).asDiagonal() * map(rd);
    auto gm = map(g);
    if (q.cols > 0) gm.topRows(q.cols).noalias() = map(qd).transpose() * map(zd);
    gm.middleRows(q.cols, r.cols).noalias() = map(rd).transpose() * map(zd);
    gm.row(q.cols + r.cols) = map(rd).colwise().squaredNorm();
    narrow(zd, z);
  }
  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const float> z, MvView<float> p, MvView<float> x) override {
    auto zd = widen(0, z), pd = widen(1, p), xd = widen(2, x);
    cg_direction_update(alpha, beta, zd, pd, xd);
    narrow(pd, p);
    narrow(xd, x);
  }
  void copy(MvView<const float> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j) std::copy(x.col(j), x.col(j) + x.rows, y.col(j));
  }
  void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                      MvView<float> y) override {
    gather_host(x, idx, count, y);
  }
  void fill_zero(MvView<float> x) override {
    for (std::int64_t j = 0; j < x.cols; ++j) std::fill(x.col(j), x.col(j) + x.rows, 0.0f);
  }
  void convert(MvView<const double> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "convert: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) y.col(j)[i] = static_cast<float>(x.col(j)[i]);
  }
  void add_converted(MvView<const float> x, MvView<double> y, double alpha) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "add_converted: shapes differ");
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) y.col(j)[i] += alpha * static_cast<double>(x.col(j)[i]);
  }

 private:
  // fp64 copy k (0..2) of an fp32 block (ld = rows), and the rounding back.
  MvView<double> widen(int k, MvView<const float> v) {
    auto& w = wide_[k];
    const std::size_t need = static_cast<std::size_t>(v.rows) * static_cast<std::size_t>(v.cols);
    if (w.size() < need) w.resize(need);
    MvView<double> out{w.data(), v.rows, v.cols, v.rows, Space::host};
    for (std::int64_t j = 0; j < v.cols; ++j)
      for (std::int64_t i = 0; i < v.rows; ++i) out.col(j)[i] = v.col(j)[i];
    return out;
  }
  static void narrow(MvView<const double> x, MvView<float> y) {
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t i = 0; i < x.rows; ++i) y.col(j)[i] = static_cast<float>(x.col(j)[i]);
  }
  // The row parts' shares of a Gram (parts × rows·cols), grown once.
  double* partials(std::int64_t n, std::int64_t per_part) {
    const std::size_t need = static_cast<std::size_t>(cpu_dense::row_part_count(n) * per_part);
    if (partial_.size() < need) partial_.resize(need);
    return partial_.data();
  }
  std::vector<double> wide_[3];
  std::vector<double> partial_;
  DenseBlockOps& ops_;
  std::vector<double>& scratch_;  // the generic ops' (multiply_inplace)
};

}  // namespace

std::unique_ptr<CgKernels> make_cg_kernels(DenseBlockOps& ops, std::vector<double>& scratch) {
  return std::make_unique<CpuCgKernels>(ops, scratch);
}

}  // namespace cpu_dense

// ---- fp32 blocks: not supported unless a backend says so.
namespace {
[[noreturn]] void no_fp32_blocks(const char* what) {
  throw InvalidArgument(std::string("dense ops: ") + what + " on fp32 blocks is not supported by this backend");
}
}  // namespace
void CgKernels::gram_into(double, MvView<const float>, MvView<const float>, double, MvView<double>) {
  no_fp32_blocks("gram_into");
}
void CgKernels::cg_residual_update(MvView<const float>, MvView<const double>, MvView<float>,
                                   MvView<double>) {
  no_fp32_blocks("cg_residual_update");
}
void CgKernels::cg_residual_update_jacobi(MvView<const float>, MvView<const double>, const double*,
                                          MvView<float>, MvView<float>, MvView<double>) {
  no_fp32_blocks("cg_residual_update_jacobi");
}
void CgKernels::cg_direction_update(MvView<const double>, MvView<const double>, MvView<const float>,
                                    MvView<float>, MvView<float>) {
  no_fp32_blocks("cg_direction_update");
}
void CgKernels::copy(MvView<const float>, MvView<float>) { no_fp32_blocks("copy"); }
void CgKernels::gather_columns(MvView<const float>, const std::int64_t*, std::int64_t, MvView<float>) {
  no_fp32_blocks("gather_columns");
}
void CgKernels::fill_zero(MvView<float>) { no_fp32_blocks("fill_zero"); }
void CgKernels::convert(MvView<const double>, MvView<float>) { no_fp32_blocks("convert"); }
void CgKernels::add_converted(MvView<const float>, MvView<double>, double) {
  no_fp32_blocks("add_converted");
}

}  // namespace tcsolve
