// Shared by the CPU and GPU apps tests: the eigenvector residual of a result file, and the
// --reorder symmetric check (the solvers iterate on B = P·A·Pᵀ; answers come back in the input's
// order).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {

inline // ‖A·x_j − λ_j·x_j‖ for the eigenvectors stored [k][n].
double max_eig_residual(const Csr<double>& a, const std::vector<double>& vals,
                        const std::vector<double>& vecs) {
  const std::int64_t n = a.nrows, k = static_cast<std::int64_t>(vals.size());
  std::vector<double> ax(n * k);
  csr_spmm_reference(a, vecs.data(), n, ax.data(), n, static_cast<int>(k));
  double worst = 0;
  for (std::int64_t j = 0; j < k; ++j) {
    double r = 0, xn = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double d = ax[j * n + i] - vals[j] * vecs[j * n + i];
      r += d * d;
      xn += vecs[j * n + i] * vecs[j * n + i];
    }
    EXPECT_NEAR(xn, 1.0, 1e-8) << "eigenvector " << j << " not normalized";
    worst = std::max(worst, std::sqrt(r));
  }
  return worst;
}

// --reorder symmetric on a scrambled matrix: the solvers iterate on B = P·A·Pᵀ and the results
// come back in the input's order (checked against the scrambled A itself, and against the run
// without reordering).
inline void expect_reorder_answers_in_input_order(const std::string& device) {
  ScratchDir d;
  const std::string spec = "gen:elast3d:6+scramble";
  const Csr<double> a = generate(spec);
  const std::int64_t n = a.nrows;
  for (std::string method : {"chebyshev", "lanczos"}) {
    SCOPED_TRACE(method);
    auto plain = run_tcsolve({"eigs", spec, "--k", "4", "--which", "largest", "--method", method,
                              "--device", device, "--out", d.file("p.h5"), "-q"});
    auto perm = run_tcsolve({"eigs", spec, "--k", "4", "--which", "largest", "--method", method,
                             "--reorder", "symmetric", "--device", device, "--out", d.file("r.h5"),
                             "-q"});
    ASSERT_EQ(plain.status, 0) << plain.err;
    ASSERT_EQ(perm.status, 0) << perm.err;
    Hdf5File fp = Hdf5File::open(d.file("p.h5")), fr = Hdf5File::open(d.file("r.h5"));
    EXPECT_EQ(fr.attr_string("reorder"), "symmetric");
    EXPECT_NE(fr.attr_string("reorder_plan").find("permuted basis B = P"), std::string::npos)
        << fr.attr_string("reorder_plan");
    const auto vp = fp.read_doubles("eigenvalues"), vr = fr.read_doubles("eigenvalues");
    ASSERT_EQ(vr.size(), 4u);
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(vr[j], vp[j], 1e-9 * std::abs(vp[j])) << j;
    const auto x = fr.read_doubles("eigenvectors");
    ASSERT_EQ(x.size(), std::size_t(4 * n));
    EXPECT_LT(max_eig_residual(a, vr, x), 1e-7 * vr[0]);
  }
  const std::string nat = "gen:elast3d:6";
  auto r = run_tcsolve({"eigs", nat, "--k", "4", "--which", "largest", "--method", "chebyshev",
                        "--reorder", "symmetric", "--device", device, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"reorder\": \"symmetric\""), std::string::npos) << r.out;

  // block CG: x̃ solved on B, scattered back; true residuals against the scrambled A.
  auto s = run_tcsolve({"solve", spec, "--rhs", "random:3", "--reorder", "symmetric", "--device",
                        device, "--out", d.file("x.h5"), "-q"});
  ASSERT_EQ(s.status, 0) << s.err;
  auto s0 = run_tcsolve({"solve", spec, "--rhs", "random:3", "--device", device, "--out",
                         d.file("x0.h5"), "-q"});
  ASSERT_EQ(s0.status, 0) << s0.err;
  std::vector<std::int64_t> dims;
  const auto x = Hdf5File::open(d.file("x.h5")).read_doubles("solution", &dims);
  const auto x0 = Hdf5File::open(d.file("x0.h5")).read_doubles("solution");
  ASSERT_EQ(dims, (std::vector<std::int64_t>{3, n}));
  std::vector<double> ax(n * 3), ax0(n * 3);
  csr_spmm_reference(a, x.data(), n, ax.data(), n, 3);
  csr_spmm_reference(a, x0.data(), n, ax0.data(), n, 3);
  for (int j = 0; j < 3; ++j) {
    // both runs solve A x = b for the same b: A·x − A·x0 = r0 − r, relative to ‖A·x0‖
    double dd = 0, bb = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      dd += std::pow(ax[j * n + i] - ax0[j * n + i], 2);
      bb += ax0[j * n + i] * ax0[j * n + i];
    }
    EXPECT_LT(std::sqrt(dd / bb), 2.1e-8) << "column " << j;
  }
  const RunResult bad = run_tcsolve({"solve", spec, "--rhs", "random:1", "--reorder", "rows",
                                     "--device", device});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--reorder 'rows': expected auto, none or symmetric"), std::string::npos) << bad.err;
}

}  // namespace tcsolve::test
