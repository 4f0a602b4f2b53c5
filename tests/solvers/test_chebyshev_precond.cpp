// The Chebyshev polynomial preconditioner (solvers/chebyshev_precond.hpp) against the scalar
// polynomial applied through a dense eigendecomposition of A, and block CG with it.
#include <gtest/gtest.h>

#include "core/device_buffer.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/random.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

// p_m(λ) by the same three-term recurrence on scalars (independent of the block code's buffers).
double poly(double lam, double lower, double upper, int m) {
  const double th = 0.5 * (upper + lower), de = 0.5 * (upper - lower), sg = th / de;
  double z0 = 0.0, z1 = 1.0 / th, rp = 1.0 / sg;
  for (int j = 1; j <= m; ++j) {
    const double rho = 1.0 / (2.0 * sg - rp);
    const double zn = (2.0 * rho / de) * (th * z1 + 1.0 - lam * z1) - (j == 1 ? 0.0 : rho * rp) * z0;
    z0 = z1, z1 = zn, rp = rho;
  }
  return z1;
}

Mat apply_precond(const Csr<double>& a, const Mat& x, double lower, double upper, int m,
                  bool fused = false, Precision storage = Precision::fp64, bool vectors32 = false) {
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto op = make_sparse_operator(a, kBackend, oo);
  ChebyshevPreconditioner pc(*op, *ops, x.cols(), lower, upper, m,
                             fused ? make_chebyshev_step(a, kBackend, storage, ops->stream()) : nullptr,
                             nullptr, vectors32);
  auto xd = ops->allocate(a.nrows, x.cols()), yd = ops->allocate(a.nrows, x.cols());
  ops->from_host(x.data(), x.rows(), xd.view());
  std::vector<double> poison(static_cast<std::size_t>(a.nrows * x.cols()), std::nan(""));
  ops->from_host(poison.data(), a.nrows, yd.view());
  pc.apply(xd.view(), yd.view());
  Mat y(a.nrows, x.cols());
  ops->to_host(yd.view(), y.data(), y.rows());
  ops->synchronize();
  return y;
}

TEST(ChebyshevPrecond, MatchesThePolynomialOfTheSpectrum) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(7, 6, 5);  // 210 rows, λ in (0, 12)
  Mat ad = Mat::Zero(a.nrows, a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) ad(i, a.col_idx[p]) = a.values[p];
  Eigen::SelfAdjointEigenSolver<Mat> es(ad);
  Mat x = random_block(a.nrows, 5, 3);
  for (int m : {1, 2, 3, 4, 7, 16}) {
    const double lower = 0.3, upper = 12.5;
    Eigen::VectorXd pv(a.nrows);
    for (std::int64_t i = 0; i < a.nrows; ++i) pv(i) = poly(es.eigenvalues()(i), lower, upper, m);
    EXPECT_GT(pv.minCoeff(), 0.0) << "p_m must be positive on the spectrum, m = " << m;
    Mat ref = es.eigenvectors() * pv.asDiagonal() * es.eigenvectors().transpose() * x;
    Mat y = apply_precond(a, x, lower, upper, m);
    EXPECT_LT((y - ref).norm(), 1e-12 * ref.norm()) << "m = " << m;
    Mat yf = apply_precond(a, x, lower, upper, m, true);  // fused step, A in fp64
    EXPECT_LT((yf - ref).norm(), 1e-12 * ref.norm()) << "fused, m = " << m;
  }
}

// The fused step with A stored in fp32 (GPU; the host step keeps fp64): within fp32's rounding
// of A, amplified by the degree. Rows past a multiple of the 128-thread block and 8-column pass.
TEST(ChebyshevPrecond, FusedStepWithFp32StorageIsCloseToTheExactPolynomial) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(13, 11, 9);  // 1287 rows
  for (std::size_t p = 0; p < a.values.size(); ++p) a.values[p] *= 1.0 + 0.01 * std::sin(0.7 * p);
  // keep it symmetric: average with the transpose's value
  Csr<double> at = a;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int64_t j = a.col_idx[p];
      for (std::int64_t q = a.row_ptr[j]; q < a.row_ptr[j + 1]; ++q)
        if (a.col_idx[q] == i) at.values[p] = 0.5 * (a.values[p] + a.values[q]);
    }
  Mat x = random_block(at.nrows, 11, 5);  // 11 columns: one full pass of 8 and a partial one
  Mat exact = apply_precond(at, x, 0.2, 13.0, 9);
  Mat y32 = apply_precond(at, x, 0.2, 13.0, 9, true, Precision::fp32);
  const double tol = kBackend == Backend::cuda ? 1e-5 : 1e-12;
  EXPECT_LT((y32 - exact).norm(), tol * exact.norm());
}

// The steps on fp32 blocks (iterates, r and accumulation in fp32): within fp32's rounding of each
// iterate, amplified by the degree, of the exact polynomial; the output buffer was poisoned (NaN)
// and the 0·r term of the conversion back must not carry it. 11 columns (a full and a partial
// 8-column pass), rows past a multiple of the 128-thread block.
TEST(ChebyshevPrecond, Fp32BlocksAreCloseToTheExactPolynomial) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(13, 11, 9);  // 1287 rows
  Mat x = random_block(a.nrows, 11, 6);
  for (int m : {1, 2, 7, 16}) {
    Mat exact = apply_precond(a, x, 0.2, 12.5, m);
    Mat y32 = apply_precond(a, x, 0.2, 12.5, m, true, Precision::fp32, true);
    ASSERT_TRUE(y32.allFinite()) << "m = " << m;
    const double err = (y32 - exact).norm() / exact.norm();
    EXPECT_LT(err, 2e-6 * m) << "m = " << m;
    EXPECT_GT(err, 0.0) << "m = " << m << ": the fp32 path must not be the fp64 one";
  }
}

// Past the launch limits' scale (more than 2^21 rows): fused and unfused agree.
TEST(ChebyshevPrecond, FusedAndUnfusedAgreeOnTwoMillionRows) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(131, 130, 129);  // 2,196,870 rows
  ASSERT_GT(a.nrows, std::int64_t(1) << 21);
  Mat x = random_block(a.nrows, 3, 8);
  Mat y0 = apply_precond(a, x, 0.01, 12.0, 3);
  Mat y1 = apply_precond(a, x, 0.01, 12.0, 3, true);
  EXPECT_LT((y1 - y0).norm(), 1e-13 * y0.norm());
  Mat y2 = apply_precond(a, x, 0.01, 12.0, 3, true, Precision::fp32, true);
  EXPECT_LT((y2 - y0).norm(), 1e-5 * y0.norm());
}

#ifdef TCSOLVE_TEST_BACKEND_CUDA
// The step on caller-owned device arrays (CuPy's, from Python) equals the step on its own copy.
TEST(ChebyshevPrecond, StepOnCallerArraysEqualsStepOnItsCopy) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(29, 23, 17);  // 11339 rows
  DeviceArray<std::int64_t> rp(a.row_ptr);
  DeviceArray<std::int32_t> ci(a.col_idx);
  DeviceArray<double> v(a.values);
  auto ops = make_dense_ops(kBackend);
  auto own = make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream());
  auto view = make_chebyshev_step_view(a.nrows, rp.get(), ci.get(), v.get(), ops->stream());
  Mat x = random_block(a.nrows, 9, 21), z = random_block(a.nrows, 9, 22), r = random_block(a.nrows, 9, 23);
  auto xd = ops->allocate(a.nrows, 9), rd = ops->allocate(a.nrows, 9);
  auto y1 = ops->allocate(a.nrows, 9), y2 = ops->allocate(a.nrows, 9);
  ops->from_host(x.data(), a.nrows, xd.view());
  ops->from_host(r.data(), a.nrows, rd.view());
  ops->from_host(z.data(), a.nrows, y1.view());
  ops->from_host(z.data(), a.nrows, y2.view());
  own->step(-0.3, xd.view(), 1.7, -0.9, y1.view(), 0.4, rd.view());
  view->step(-0.3, xd.view(), 1.7, -0.9, y2.view(), 0.4, rd.view());
  Mat h1(a.nrows, 9), h2(a.nrows, 9);
  ops->to_host(y1.view(), h1.data(), a.nrows);
  ops->to_host(y2.view(), h2.data(), a.nrows);
  ops->synchronize();
  EXPECT_EQ((h1 - h2).norm(), 0.0);
  // and against the formula on the host
  Mat ad = Mat::Zero(a.nrows, a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) ad(i, a.col_idx[p]) = a.values[p];
  Mat ref = -0.3 * ad * x + 1.7 * x - 0.9 * z + 0.4 * r;
  EXPECT_LT((h1 - ref).norm(), 1e-13 * ref.norm());
}

// The step on caller-owned arrays with the values rounded to fp32 on the device (the block CG
// preconditioner's step on the operator's own CSR) equals the step on its own fp32 copy of A,
// bit for bit, on fp64 and on fp32 blocks. 2.55M rows, 17.8M entries: the rounding kernel's grid
// (65535 blocks of 256) strides past its first pass.
TEST(ChebyshevPrecond, StepOnCallerArraysInFp32EqualsItsFp32Copy) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(140, 140, 130);
  ASSERT_GT(a.nnz(), std::int64_t(65535) * 256);
  std::uint64_t state = 12345;  // values that fp32 must round (6 and -1 are exact)
  for (auto& v : a.values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v *= 1.0 + 1e-3 * (static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5);
  }
  const std::int64_t n = a.nrows, s = 3;
  DeviceArray<std::int64_t> rp(a.row_ptr);
  DeviceArray<std::int32_t> ci(a.col_idx);
  DeviceArray<double> v(a.values);
  auto ops = make_dense_ops(kBackend);
  auto own = make_chebyshev_step(a, kBackend, Precision::fp32, ops->stream());
  auto view = make_chebyshev_step_view32(n, a.nnz(), rp.get(), ci.get(), v.get(), ops->stream());
  auto view64 = make_chebyshev_step_view(n, rp.get(), ci.get(), v.get(), ops->stream());
  Mat x = random_block(n, s, 31), z = random_block(n, s, 32);
  auto xd = ops->allocate(n, s), y1 = ops->allocate(n, s), y2 = ops->allocate(n, s), y3 = ops->allocate(n, s);
  ops->from_host(x.data(), n, xd.view());
  for (auto* y : {&y1, &y2, &y3}) ops->from_host(z.data(), n, y->view());
  own->step(-0.3, xd.view(), 1.7, -0.9, y1.view(), 0.0, {});
  view->step(-0.3, xd.view(), 1.7, -0.9, y2.view(), 0.0, {});
  view64->step(-0.3, xd.view(), 1.7, -0.9, y3.view(), 0.0, {});
  Mat h1(n, s), h2(n, s), h3(n, s);
  ops->to_host(y1.view(), h1.data(), n);
  ops->to_host(y2.view(), h2.data(), n);
  ops->to_host(y3.view(), h3.data(), n);
  ops->synchronize();
  EXPECT_EQ((h1 - h2).norm(), 0.0);
  EXPECT_GT((h2 - h3).norm(), 0.0) << "the values must have been rounded";
  EXPECT_LT((h2 - h3).norm(), 1e-6 * h3.norm());
  // fp32 blocks (the rung's step32), the output poisoned with NaN where c = 0 must not read it.
  std::vector<float> xf(x.data(), x.data() + n * s), nanf(static_cast<std::size_t>(n * s), std::nanf(""));
  DeviceArray<float> xf_d(xf), o1(nanf), o2(nanf);
  const MvView<const float> xv{xf_d.get(), n, s, n, Space::device};
  own->step32(0.7, xv, -0.2, 0.0, MvView<float>{o1.get(), n, s, n, Space::device}, {}, nullptr);
  view->step32(0.7, xv, -0.2, 0.0, MvView<float>{o2.get(), n, s, n, Space::device}, {}, nullptr);
  ops->synchronize();
  std::vector<float> g1(xf.size()), g2(xf.size());
  copy_bytes(g1.data(), Space::host, o1.get(), Space::device, g1.size() * sizeof(float));
  copy_bytes(g2.data(), Space::host, o2.get(), Space::device, g2.size() * sizeof(float));
  std::size_t differ = 0, nonfinite = 0;
  for (std::size_t i = 0; i < g1.size(); ++i) {
    differ += g1[i] != g2[i];
    nonfinite += !std::isfinite(g2[i]);
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(nonfinite, 0u);
}
#endif

TEST(ChebyshevPrecond, DegreeFromTheBounds) {
  EXPECT_EQ(ChebyshevPreconditioner::degree_for(1.0, 1.0), 1);
  EXPECT_EQ(ChebyshevPreconditioner::degree_for(1.0, 1.5), 2);
  EXPECT_EQ(ChebyshevPreconditioner::degree_for(1.0, 100.0), 10);
  EXPECT_EQ(ChebyshevPreconditioner::degree_for(1e-9, 1.0), 32);
}

TEST(ChebyshevPrecond, BlockCgConvergesInFewerIterationsToTheSameAnswer) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(23, 21, 19);  // 9177 rows: not a multiple of anything
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto op = make_sparse_operator(a, kBackend, oo);
  Mat b = random_block(a.nrows, 6, 11);
  CgOptions plain;
  plain.tol = 1e-10;
  auto r0 = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, plain);
  ASSERT_EQ(r0.status, SolverStatus::converged) << r0.reason;
  // lower above λmin on purpose (only λmax must be bounded): still SPD, still converges.
  std::int64_t iterations_fp64_blocks = 0;
  for (int variant = 0; variant < 4; ++variant) {
    // plain, fused fp64, fused fp32 (the rounded A only inside M), fused on fp32 blocks
    std::unique_ptr<ChebyshevStep> step;
    if (variant > 0)
      step = make_chebyshev_step(a, kBackend, variant == 1 ? Precision::fp64 : Precision::fp32, ops->stream());
    ChebyshevPreconditioner pc(*op, *ops, b.cols(), 0.05, 12.0 * (1 + 1e-6), 8, std::move(step),
                               nullptr, variant == 3);
    CgOptions o = plain;
    o.preconditioner = &pc;
    auto r1 = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
    ASSERT_EQ(r1.status, SolverStatus::converged) << r1.reason << " variant " << variant;
    EXPECT_LT(r1.iterations * 3, r0.iterations) << r1.iterations << " vs " << r0.iterations;
    for (std::size_t j = 0; j < r1.residual_norms.size(); ++j) EXPECT_LE(r1.residual_norms[j], 1e-10);
    const Eigen::Map<const Mat> x0(r0.solutions.data(), a.nrows, 6), x1(r1.solutions.data(), a.nrows, 6);
    EXPECT_LT((x1 - x0).norm(), 1e-7 * x0.norm()) << "variant " << variant;
    // m products per column per apply; columns that converge leave the block
    EXPECT_LE(pc.columns_applied(), 8 * 6 * (r1.iterations + 1));
    EXPECT_GE(pc.columns_applied(), 8 * (r1.iterations + 1));
    // fp32 blocks change M by its rounding: at most a couple more iterations, the same answer
    if (variant == 2) iterations_fp64_blocks = r1.iterations;
    if (variant == 3) EXPECT_LE(r1.iterations, iterations_fp64_blocks + 2);
  }
}

// The factory's choice: fp32 blocks where the step is fused, unscaled and A is rounded anyway;
// not with Jacobi scaling, nor with TCSOLVE_PRECOND_VECTORS=fp64. Refused without a fused step.
TEST(ChebyshevPrecond, Fp32BlocksChosenWhereTheyMayBe) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(12, 11, 10);
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto op = make_sparse_operator(a, kBackend, oo);
  auto p32 = make_chebyshev_preconditioner(*op, *ops, 3, 12.0, 5, nullptr, 0, &a, Precision::fp32, false);
  EXPECT_TRUE(p32->vectors32()) << p32->describe();
  EXPECT_NE(p32->describe().find("fp32 blocks"), std::string::npos) << p32->describe();
  auto p64 = make_chebyshev_preconditioner(*op, *ops, 3, 12.0, 5, nullptr, 0, &a, Precision::fp64, false);
  EXPECT_FALSE(p64->vectors32());
  setenv("TCSOLVE_PRECOND_VECTORS", "fp64", 1);
  auto pe = make_chebyshev_preconditioner(*op, *ops, 3, 12.0, 5, nullptr, 0, &a, Precision::fp32, false);
  unsetenv("TCSOLVE_PRECOND_VECTORS");
  EXPECT_FALSE(pe->vectors32());
  auto pj = make_chebyshev_preconditioner(*op, *ops, 3, 12.0, 5, nullptr, 0, &a, Precision::fp32, true);
  EXPECT_FALSE(pj->vectors32());
  EXPECT_THROW(ChebyshevPreconditioner(*op, *ops, 2, 1.0, 4.0, 4, nullptr, nullptr, true), InvalidArgument);
  const std::vector<double> d(static_cast<std::size_t>(a.nrows), 6.0);
  EXPECT_THROW(ChebyshevPreconditioner(*op, *ops, 2, 1.0, 4.0, 4,
                                       make_chebyshev_step(a, kBackend, Precision::fp32, ops->stream()), &d, true),
               InvalidArgument);
}

// Jacobi-scaled: M = D^{-1/2}·p(D^{-1/2}AD^{-1/2})·D^{-1/2}, checked against the dense spectrum of the
// scaled matrix; fused and unfused; and block CG on a matrix whose diagonal varies 100-fold.
TEST(ChebyshevPrecond, JacobiScaledMatchesTheScaledPolynomial) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(8, 7, 6);  // 336 rows
  for (std::int64_t i = 0; i < a.nrows; ++i)  // a_ii ← a_ii·(1 + 99·t_i): SPD, diagonal varies
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) a.values[p] *= 1.0 + 99.0 * (0.5 + 0.5 * std::sin(1.3 * i));
  ASSERT_TRUE(chebyshev_wants_jacobi(a));
  EXPECT_FALSE(chebyshev_wants_jacobi(laplacian(8, 7, 6)));  // constant diagonal: no scaling
  const auto d = csr_diagonal(a);
  Mat ad = Mat::Zero(a.nrows, a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) ad(i, a.col_idx[p]) = a.values[p];
  Eigen::VectorXd h(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) h(i) = 1.0 / std::sqrt(d[i]);
  Mat scaled = h.asDiagonal() * ad * h.asDiagonal();
  Eigen::SelfAdjointEigenSolver<Mat> es(scaled);
  const double upper = chebyshev_upper_bound(a, true);
  EXPECT_GE(upper, es.eigenvalues().maxCoeff());
  const double lower = 0.05;
  const int m = 7;
  Eigen::VectorXd pv(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) pv(i) = poly(es.eigenvalues()(i), lower, upper, m);
  Mat x = random_block(a.nrows, 3, 9);
  Mat ref = h.asDiagonal() * (es.eigenvectors() * pv.asDiagonal() * es.eigenvectors().transpose()) *
            h.asDiagonal() * x;
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto op = make_sparse_operator(a, kBackend, oo);
  for (bool fused : {false, true}) {
    ChebyshevPreconditioner pc(*op, *ops, 3, lower, upper, m,
                               fused ? make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream()) : nullptr, &d);
    auto xd = ops->allocate(a.nrows, 3), yd = ops->allocate(a.nrows, 3);
    ops->from_host(x.data(), x.rows(), xd.view());
    pc.apply(xd.view(), yd.view());
    Mat y(a.nrows, 3);
    ops->to_host(yd.view(), y.data(), y.rows());
    ops->synchronize();
    EXPECT_LT((y - ref).norm(), 1e-11 * ref.norm()) << (fused ? "fused" : "unfused");
  }
  // block CG with the factory's choices (bounds by the probe, degree from them)
  Mat b = random_block(a.nrows, 4, 10);
  auto pc = make_chebyshev_preconditioner(*op, *ops, 4, upper, 3, nullptr, 0, &a, Precision::fp64, true);
  EXPECT_NE(pc->describe().find("Jacobi-scaled"), std::string::npos) << pc->describe();
  CgOptions o;
  o.tol = 1e-10;
  o.preconditioner = pc.get();
  auto r = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  Mat xs = Eigen::Map<const Mat>(r.solutions.data(), a.nrows, 4);
  EXPECT_LT((ad * xs - b).norm(), 1e-9 * b.norm());
}

TEST(ChebyshevPrecond, BadArgumentsThrow) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(10);
  auto ops = make_dense_ops(kBackend);
  auto op = make_sparse_operator(a, kBackend, OperatorOptions{});
  EXPECT_THROW(ChebyshevPreconditioner(*op, *ops, 2, 0.0, 4.0, 4), InvalidArgument);
  EXPECT_THROW(ChebyshevPreconditioner(*op, *ops, 2, 5.0, 4.0, 4), InvalidArgument);
  EXPECT_THROW(ChebyshevPreconditioner(*op, *ops, 2, 1.0, 4.0, 0), InvalidArgument);
}

}  // namespace
}  // namespace tcsolve::test
