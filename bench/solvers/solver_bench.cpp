// tcsolve side of the solver benchmark (bench/solvers/run_solver_bench.sh): times LOBPCG, block
// Lanczos or block CG on one matrix and prints one CSV row with the answer's quality, measured
// the same way as the Python anchors (solver_anchors.py):
//   eigen: max_j ‖A·x_j − λ_j·x_j‖ / ((‖A‖∞ + |λ_j|)·‖x_j‖), the largest |λ_j − λ_exact_j| (closed
//          form for gen:lap2d/lap3d, else empty), max |XᵀX − I|;
//   cg:    max_j ‖b_j − A·x_j‖ / ‖b_j‖ (true residual, recomputed on the host).
// No Boost: positional arguments.
//   solver_bench eig  SPEC lobpcg|lanczos K smallest|largest TOL cpu|cuda [BLOCK] [REPEAT]
//                    [BASIS] [KEEP]   (Lanczos basis columns and Ritz vectors kept; 0 = default)
//   solver_bench cg   SPEC NRHS TOL cpu|cuda [jacobi|none] [REPEAT]
// Times exclude reading the matrix and building the operator (done once), include everything
// from the solver call to the host copy of the result; the best of REPEAT runs (default 2).
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "io/matrix_io.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigensolvers.hpp"
#include "spmm/sparse_operator.hpp"

using namespace tcsolve;

namespace {

// Closed-form spectrum of gen:lap2d:N / gen:lap3d:N (all eigenvalues, ascending); empty otherwise.
std::vector<double> exact_spectrum(const std::string& spec, std::int64_t k, bool smallest) {
  int dim = 0, nn = 0;
  if (spec.rfind("gen:lap2d:", 0) == 0 && spec.find('x') == std::string::npos) dim = 2, nn = std::atoi(spec.c_str() + 10);
  if (spec.rfind("gen:lap3d:", 0) == 0) dim = 3, nn = std::atoi(spec.c_str() + 10);
  if (dim == 0 || spec.find('+') != std::string::npos) return {};
  const double pi = 3.14159265358979323846;
  std::vector<double> e1(nn);
  for (int i = 1; i <= nn; ++i) e1[i - 1] = 2.0 - 2.0 * std::cos(pi * i / (nn + 1));
  // The k extreme sums: enumerate the first/last m per axis with m = min(nn, k).
  int m = std::min<int>(nn, static_cast<int>(k));
  std::vector<double> all;
  auto at = [&](int i) { return smallest ? e1[i] : e1[nn - 1 - i]; };
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      if (dim == 2) all.push_back(at(i) + at(j));
      else
        for (int l = 0; l < m; ++l) all.push_back(at(i) + at(j) + at(l));
    }
  std::sort(all.begin(), all.end());
  if (!smallest) std::reverse(all.begin(), all.end());
  all.resize(k);
  return all;
}

double norm_inf(const Csr<double>& a) {
  double m = 0;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double s = 0;
    for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) s += std::abs(a.values[p]);
    m = std::max(m, s);
  }
  return m;
}

std::vector<double> diag(const Csr<double>& a) {
  std::vector<double> d(a.nrows, 0.0);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) d[i] = a.values[p];
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: see the header of bench/solvers/solver_bench.cpp\n");
    return 2;
  }
  try {
    std::string mode = argv[1], spec = argv[2];
    Csr<double> a = read_matrix(spec, {false, true});
    const std::int64_t n = a.nrows;
    const double anorm = norm_inf(a);
    if (mode == "eig") {
      std::string method = argv[3];
      std::int64_t k = std::atoll(argv[4]);
      bool smallest = std::string(argv[5]) == "smallest";
      double tol = std::atof(argv[6]);
      Backend be = std::string(argv[7]) == "cuda" ? Backend::cuda : Backend::cpu;
      std::int64_t block = argc > 8 ? std::atoll(argv[8]) : 0;
      int repeat = argc > 9 ? std::atoi(argv[9]) : 2;
      std::int64_t basis = argc > 10 ? std::atoll(argv[10]) : 0;
      std::int64_t keep = argc > 11 ? std::atoll(argv[11]) : 0;
      auto ops = make_dense_ops(be);
      OperatorOptions oo;
      oo.stream = ops->stream();
      oo.expected_cols = 16;
      auto op = make_sparse_operator(a, be, oo);
      EigenOptions o;
      o.k = k;
      o.which = smallest ? Which::smallest : Which::largest;
      o.tol = tol;
      o.a_norm = anorm;
      o.max_iterations = method == "lobpcg" ? 20000 : 5000;
      o.keep_history = false;
      if (method == "lobpcg") o.guard = block > 0 ? block - k : -1;
      else o.block_size = block, o.max_basis = basis, o.restart_keep = keep;
      // Jacobi for the smallest pairs of the real matrices (the Laplacians' diagonal is
      // constant); for the largest pairs T = diag(A)⁻¹ works against convergence.
      if (spec.find("lap") == std::string::npos && smallest) o.jacobi_diagonal = diag(a);
      EigenResult best;
      double tbest = 1e300;
      for (int r = 0; r < repeat; ++r) {
        auto res = method == "lobpcg" ? lobpcg(*op, nullptr, *ops, o) : block_lanczos(*op, nullptr, *ops, o);
        if (res.seconds < tbest) tbest = res.seconds, best = std::move(res);
      }
      // Quality on the host.
      std::vector<double> ax(n * k);
      csr_spmm_reference(a, best.vectors.data(), n, ax.data(), n, static_cast<int>(k));
      double relres = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        double s = 0, xs = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          double d = ax[i + j * n] - best.values[j] * best.vectors[i + j * n];
          s += d * d, xs += best.vectors[i + j * n] * best.vectors[i + j * n];
        }
        relres = std::max(relres, std::sqrt(s) / ((anorm + std::abs(best.values[j])) * std::sqrt(xs)));
      }
      Eigen::Map<const Eigen::MatrixXd> X(best.vectors.data(), n, k);
      double orth = (X.transpose() * X - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff();
      auto ex = exact_spectrum(spec, k, smallest);
      std::string everr = "";
      if (!ex.empty()) {
        double e = 0;
        for (std::int64_t j = 0; j < k; ++j) e = std::max(e, std::abs(best.values[j] - ex[j]));
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2e", e);
        everr = buf;
      }
      std::printf("tcsolve-%s,%s,%s,%lld,%.4f,%s,%lld,%lld,%.2e,%s,%.1e,%s\n", method.c_str(),
                  to_string(be), spec.c_str(), (long long)k, tbest, to_string(best.status),
                  (long long)best.iterations, (long long)best.operator_applies, relres,
                  everr.c_str(), orth, to_string(op->plan().kernel));
    } else if (mode == "cg") {
      std::int64_t s = std::atoll(argv[3]);
      double tol = std::atof(argv[4]);
      Backend be = std::string(argv[5]) == "cuda" ? Backend::cuda : Backend::cpu;
      bool jacobi = argc > 6 ? std::string(argv[6]) == "jacobi" : true;
      int repeat = argc > 7 ? std::atoi(argv[7]) : 2;
      auto ops = make_dense_ops(be);
      OperatorOptions oo;
      oo.stream = ops->stream();
      oo.expected_cols = static_cast<int>(s);
      auto op = make_sparse_operator(a, be, oo);
      std::vector<double> b(n * s);
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < n; ++i) b[i + j * n] = random_entry(2024, i, j);
      CgOptions o;
      o.tol = tol;
      o.keep_history = false;
      o.max_iterations = 20000;
      if (jacobi) o.jacobi_diagonal = diag(a);
      SolveResult best;
      double tbest = 1e300;
      for (int r = 0; r < repeat; ++r) {
        double t0 = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        auto res = block_cg(*op, b.data(), n, s, *ops, o);
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() - t0;
        if (t < tbest) tbest = t, best = std::move(res);
      }
      std::vector<double> ax(n * s);
      csr_spmm_reference(a, best.solutions.data(), n, ax.data(), n, static_cast<int>(s));
      double relres = 0;
      for (std::int64_t j = 0; j < s; ++j) {
        double r2 = 0, b2 = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          double d = b[i + j * n] - ax[i + j * n];
          r2 += d * d, b2 += b[i + j * n] * b[i + j * n];
        }
        relres = std::max(relres, std::sqrt(r2 / b2));
      }
      std::printf("tcsolve-blockcg,%s,%s,%lld,%.4f,%s,%lld,%lld,%.2e,,,\n", to_string(be),
                  spec.c_str(), (long long)s, tbest, to_string(best.status),
                  (long long)best.iterations, (long long)best.operator_applies, relres);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "solver_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
