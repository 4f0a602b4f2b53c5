// The four steps of tcsolve's C++ API (include/tcsolve/tcsolve.hpp): read a matrix, build the
// operator, call a solver, read the result. Eigenpairs and a block CG solve of a 2D Laplacian,
// checked against the closed form of its eigenvalues; exit 0 only when everything converged
// and matches (so the CTest that builds this program also checks that it works).
//
//   modes [MATRIX] [K]      MATRIX: a file (.mtx, .rsa, .h5) or gen: spec (default gen:lap2d:30)
#include <tcsolve/tcsolve.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string spec = argc > 1 ? argv[1] : "gen:lap2d:30";
  const int k = argc > 2 ? std::stoi(argv[2]) : 4;
  try {
    // 1. read a matrix (any supported file, or a generator spec)
    tcsolve::ReadOptions ro;
    ro.require_square = true;
    const tcsolve::Csr<double> a = tcsolve::read_matrix(spec, ro);
    std::printf("%s: %lld x %lld, %lld non-zeros\n", spec.c_str(), (long long)a.nrows,
                (long long)a.ncols, (long long)a.nnz());

    // 2. build the operator (the dense block ops own the stream the operator runs on)
    auto ops = tcsolve::make_dense_ops(tcsolve::Backend::cpu);
    tcsolve::OperatorOptions oo;
    oo.stream = ops->stream();
    auto op = tcsolve::make_sparse_operator(a, tcsolve::Backend::cpu, oo);

    // 3. call a solver: the k smallest eigenpairs, by the driver (it picks the method and the
    //    spectral transformation, recomputes the true residuals and certifies the count) ...
    tcsolve::EigsOptions eo;
    eo.k = k;
    eo.which = tcsolve::Which::smallest;
    eo.tol = 1e-10;
    eo.backend = tcsolve::Backend::cpu;
    const tcsolve::EigsResult er = tcsolve::eigs(a, nullptr, eo);

    // ... and A·X = B for 3 right-hand sides at once
    const std::int64_t n = a.nrows, s = 3;
    std::vector<double> rhs(static_cast<std::size_t>(n * s));
    for (std::int64_t j = 0; j < s; ++j)
      for (std::int64_t i = 0; i < n; ++i) rhs[j * n + i] = std::sin(0.1 * (i + 1) * (j + 1));
    tcsolve::CgOptions co;
    co.tol = 1e-10;
    const tcsolve::SolveResult sr = tcsolve::block_cg(*op, rhs.data(), n, s, *ops, co);

    // 4. read the results
    std::printf("eigs (%s, transform %s): %s after %lld iterations; certified: %s\n",
                er.method.c_str(), er.transform.c_str(), tcsolve::to_string(er.status),
                (long long)er.iterations, tcsolve::to_string(er.certified));
    bool ok = er.status == tcsolve::SolverStatus::converged &&
              sr.status == tcsolve::SolverStatus::converged;
    // gen:lap2d:NX: eigenvalues 4 sin²(iπ/2(NX+1)) + 4 sin²(jπ/2(NX+1)); the smallest is i=j=1.
    if (spec.rfind("gen:lap2d:", 0) == 0 && spec.find('x') == std::string::npos) {
      const double nx = std::stod(spec.substr(10));
      const double s1 = std::sin(M_PI / (2 * (nx + 1)));
      const double exact = 8 * s1 * s1;
      std::printf("smallest eigenvalue %.15g, closed form %.15g\n", er.values[0], exact);
      ok = ok && std::abs(er.values[0] - exact) <= 1e-10 * exact;
    }
    for (int j = 0; j < k && j < static_cast<int>(er.values.size()); ++j)
      std::printf("  lambda_%d = %.15g   |A x - lambda x| = %.2e\n", j, er.values[j],
                  er.residual_norms[j]);
    std::printf("block_cg: %s after %lld iterations, relative residuals", tcsolve::to_string(sr.status),
                (long long)sr.iterations);
    for (double r : sr.residual_norms) {
      std::printf(" %.2e", r);
      ok = ok && r <= 1e-10;
    }
    std::printf("\n%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const tcsolve::Error& e) {  // bad input, missing feature, GPU error
    std::fprintf(stderr, "modes: error: %s\n", e.what());
    return 2;
  }
}
