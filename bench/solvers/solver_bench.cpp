// tcsolve side of the solver benchmark (bench/solvers/run_solver_bench.sh): times LOBPCG, block
// Lanczos, Chebyshev-filtered subspace iteration or block CG on one matrix and prints one CSV row
// with the answer's quality, measured the same way as the Python anchors (solver_anchors.py):
//   eigen: max_j ‖A·x_j − λ_j·x_j‖ / ((‖A‖∞ + |λ_j|)·‖x_j‖), the largest |λ_j − λ_exact_j| (closed
//          form for gen:lap2d/lap3d, also scrambled, else empty), max |XᵀX − I|;
//   cg:    max_j ‖b_j − A·x_j‖ / ‖b_j‖ (true residual, recomputed on the host).
// and, in the CSV's last field (detail, ';'-separated), the kernel, the copy bandwidth measured in
// the same process, and for Chebyshev / block CG the achieved time per iteration against the
// traffic budget stated in solvers/chebyshev.hpp / solvers/block_cg.hpp at that bandwidth.
// No Boost: positional arguments, then optional key=value ones.
//   solver_bench eig  SPEC lobpcg|lanczos|chebyshev K smallest|largest TOL cpu|cuda [BLOCK]
//                    [REPEAT] [BASIS] [KEEP] [key=value...]
//        BLOCK: LOBPCG k + guard, Lanczos block size, Chebyshev block width m (0 = default);
//        BASIS, KEEP: Lanczos basis columns and Ritz vectors kept (0 = default);
//        keys: maxdeg=N (Chebyshev degree cap), order=sync|events|stream (how applies are
//        ordered; default stream: the operator runs on the dense ops' stream),
//        permuted=1 (symmetric reordering, iterate in the permuted basis B = P·A·Pᵀ),
//        breakdown=1 (one more run with stream marks: apply vs dense time per iteration).
//   solver_bench cg   SPEC NRHS TOL cpu|cuda [jacobi|none] [REPEAT] [key=value...]
//        keys: order=..., breakdown=1, permuted=1.
//   solver_bench copy cpu|cuda   (just the copy bandwidth)
//   solver_bench analysis SPEC [factor=1]   the planner's analysis (CHOLMOD, AMD alone) against
//        the engine rates' guess, whether METIS follows, and with factor=1 the factorization's
//        own analysis (default strategy) of A − σI, σ below the spectrum (Gershgorin): the
//        evidence for kAmdMisguess / kMetisOverAmd (solvers/eigs/plan.hpp).
// Times exclude reading the matrix and building the operator (done once), include everything
// from the solver call to the host copy of the result; the best of REPEAT runs (default 2).
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "factor/engine_rates.hpp"
#include "factor/sparse_factor.hpp"
#include "io/matrix_io.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigensolvers.hpp"
#include "spmm/sparse_operator.hpp"

using namespace tcsolve;

namespace {

// Closed-form spectrum of gen:lap2d:N / gen:lap3d:N (scrambled or not: a symmetric permutation
// keeps the spectrum), the k wanted ones; empty otherwise.
std::vector<double> exact_spectrum(std::string spec, std::int64_t k, bool smallest) {
  for (char c : {'+', '@'}) {
    auto p = spec.find(c);
    if (p != std::string::npos) spec = spec.substr(0, p);
  }
  int dim = 0, nn = 0;
  if (spec.rfind("gen:lap2d:", 0) == 0 && spec.find('x') == std::string::npos) dim = 2, nn = std::atoi(spec.c_str() + 10);
  if (spec.rfind("gen:lap3d:", 0) == 0) dim = 3, nn = std::atoi(spec.c_str() + 10);
  if (dim == 0) return {};
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


double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Device-to-device copy bandwidth through the dense ops (bytes read + written per second):
// 2 × 512 MiB blocks on the GPU (64 MiB on the CPU), one warm-up, median of 7.
double copy_bandwidth(DenseBlockOps& ops) {
  const std::int64_t rows = ops.space() == Space::device ? (1 << 23) : (1 << 20), cols = 8;
  MultiVector<double> a = ops.allocate(rows, cols), b = ops.allocate(rows, cols);
  ops.fill_random(a.view(), 3);
  ops.copy(a.view(), b.view());
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    int m0 = ops.queue().mark();
    ops.copy(a.view(), b.view());
    int m1 = ops.queue().mark();
    ops.synchronize();
    t.push_back(ops.queue().elapsed_seconds(m0, m1));
  }
  std::sort(t.begin(), t.end());
  return 2.0 * 8.0 * rows * cols / t[t.size() / 2];
}

ApplyOrder parse_order(const std::string& s) {
  if (s == "sync") return ApplyOrder::synchronize;
  if (s == "events") return ApplyOrder::events;
  return ApplyOrder::same_stream;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: see the header of bench/solvers/solver_bench.cpp\n");
    return 2;
  }
  try {
    std::string mode = argv[1];
    if (mode == "copy") {
      auto ops = make_dense_ops(std::string(argv[2]) == "cuda" ? Backend::cuda : Backend::cpu);
      std::printf("copy bandwidth %.1f GB/s\n", copy_bandwidth(*ops) * 1e-9);
      return 0;
    }
    if (mode == "analysis") {
      const std::string spec = argv[2];
      const bool with_factor = argc > 3 && std::string(argv[3]) == "factor=1";
      Csr<double> a = read_matrix(spec, {false, true});
      const double lower = 0.5 * static_cast<double>(a.nnz() + a.nrows);
      const EngineRates& r = engine_rates();
      const SymbolicAnalysis sym = analyze_factor(a, nullptr);
      const double guess = r.analyze_seconds(lower);
      std::printf("%s n=%lld lower=%.4g guess=%.4g amd=%.4g ratio=%.3g metis_follows=%d lnz=%.4g fl=%.4g",
                  spec.c_str(), static_cast<long long>(a.nrows), lower, guess, sym.seconds,
                  sym.seconds / guess, sym.metis_follows ? 1 : 0, sym.factor_entries, sym.flops);
      if (with_factor) {
        const double sigma = -1e-3 * csr_inf_norm(a);
        auto f = factor_shifted(a, nullptr, sigma);
        std::printf(" factor_analysis=%.4g ratio=%.3g (%s)", f->analyze_seconds(),
                    f->analyze_seconds() / guess, f->describe().c_str());
        if (!sym.metis_follows) {  // the factorization reusing the analysis' ordering (eigs does)
          FactorOptions fo;
          fo.analysis = std::make_shared<const SymbolicAnalysis>(sym);
          auto fg = factor_shifted(a, nullptr, sigma, fo);
          std::printf(" given_ordering_analysis=%.4g (%.3g of amd)", fg->analyze_seconds(),
                      fg->analyze_seconds() / sym.seconds);
        }
        // Block solves of 1, 4 and 16 columns: the fastest of 5 against the rates' model.
        const std::int64_t n = a.nrows;
        std::vector<double> x(static_cast<std::size_t>(n * 16)), y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * static_cast<double>(i) + 1.0);
        for (std::int64_t cols : {1, 4, 16}) {
          MvView<const double> xv{x.data(), n, cols, n, Space::host};
          MvView<double> yv{y.data(), n, cols, n, Space::host};
          double best = 1e300;
          for (int rep = 0; rep < 6; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            f->solve(xv, yv);
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (rep > 0) best = std::min(best, t);
          }
          std::printf(" solve%lld=%.3g (model %.3g)", static_cast<long long>(cols), best,
                      r.solve_seconds(f->factor_entries(), static_cast<double>(cols), f->factor_flops(),
                                    static_cast<double>(n)));
        }
      }
      std::printf("\n");
      return 0;
    }
    if (argc < 6) {
      std::fprintf(stderr, "usage: see the header of bench/solvers/solver_bench.cpp\n");
      return 2;
    }
    // Positional arguments up to the first key=value.
    std::vector<std::string> pos;
    std::map<std::string, std::string> kv;
    for (int i = 1; i < argc; ++i) {
      std::string s = argv[i];
      auto eq = s.find('=');
      if (eq != std::string::npos && i > 2) kv[s.substr(0, eq)] = s.substr(eq + 1);
      else pos.push_back(s);
    }
    auto arg = [&](std::size_t i, const char* def) { return i < pos.size() ? pos[i] : std::string(def); };
    auto key = [&](const char* k, const char* def) { return kv.count(k) ? kv[k] : std::string(def); };
    std::string spec = pos[1];
    Csr<double> a = read_matrix(spec, {false, true});
    const std::int64_t n = a.nrows, nnz = a.row_ptr[n];
    const double anorm = csr_inf_norm(a);
    const bool permuted = key("permuted", "0") == "1";
    const ApplyOrder order = parse_order(key("order", "stream"));
    const bool breakdown = key("breakdown", "0") == "1";
    const double a_bytes = 12.0 * nnz + 8.0 * (n + 1);  // CSR values, indices, row pointers
    char det[768];
    if (mode == "eig") {
      std::string method = arg(2, "lanczos");
      std::int64_t k = std::atoll(arg(3, "6").c_str());
      bool smallest = arg(4, "smallest") == "smallest";
      double tol = std::atof(arg(5, "1e-8").c_str());
      Backend be = arg(6, "cpu") == "cuda" ? Backend::cuda : Backend::cpu;
      std::int64_t block = std::atoll(arg(7, "0").c_str());
      int repeat = std::atoi(arg(8, "2").c_str());
      std::int64_t basis = std::atoll(arg(9, "0").c_str());
      std::int64_t keep = std::atoll(arg(10, "0").c_str());
      auto ops = make_dense_ops(be);
      const double bw = copy_bandwidth(*ops);
      OperatorOptions oo;
      oo.stream = ops->stream();
      oo.expected_cols = 16;
      if (permuted) oo.reorder = Reorder::symmetric, oo.basis = OperatorBasis::permuted;
      double t0 = now();
      auto op = make_sparse_operator(a, be, oo);
      const double setup = now() - t0;
      const bool is_perm = op->permutation() != nullptr;
      EigenOptions o;
      o.k = k;
      o.which = smallest ? Which::smallest : Which::largest;
      o.tol = tol;
      o.a_norm = anorm;
      o.max_iterations = method == "lobpcg" ? 20000 : 5000;
      o.keep_history = false;
      if (method == "lobpcg") o.guard = block > 0 ? block - k : -1;
      else if (method == "lanczos") o.block_size = block, o.max_basis = basis, o.restart_keep = keep;
      ChebyshevOptions co;
      co.block = block;
      co.apply_order = order;
      if (kv.count("maxdeg")) co.max_degree = std::atoi(kv["maxdeg"].c_str());
      if (kv.count("maxlong")) co.max_degree_long = std::atoi(kv["maxlong"].c_str());
      if (kv.count("margin")) co.degree_margin = std::atof(kv["margin"].c_str());
      if (kv.count("overshoot")) co.overshoot = std::atof(kv["overshoot"].c_str());
      if (kv.count("guardmax")) co.guard_max_degree = kv["guardmax"] == "1";
      ChebyshevStats cst;
      co.stats = &cst;
      // Jacobi for the smallest pairs of the real matrices (the Laplacians' diagonal is
      // constant); for the largest pairs T = diag(A)⁻¹ works against convergence.
      if (spec.find("lap") == std::string::npos && smallest && method == "lobpcg") {
        auto d = csr_diagonal(a);
        if (is_perm) {
          auto& p = *op->permutation();
          std::vector<double> dp(n);
          for (std::int64_t i = 0; i < n; ++i) dp[i] = d[p[i]];
          d.swap(dp);
        }
        o.jacobi_diagonal = d;
      }
      auto run = [&]() {
        if (method == "lobpcg") return lobpcg(*op, nullptr, *ops, o);
        if (method == "chebyshev") return chebyshev_subspace(*op, *ops, o, co);
        return block_lanczos(*op, nullptr, *ops, o);
      };
      EigenResult best;
      ChebyshevStats best_st;
      double tbest = 1e300;
      for (int r = 0; r < repeat; ++r) {
        auto res = run();
        if (res.seconds < tbest) tbest = res.seconds, best = std::move(res), best_st = cst;
      }
      // Apply vs dense split per iteration from one more run with stream marks.
      double dense_s = 0, apply_s = 0;
      std::int64_t hist_it = 0;
      if (breakdown) {
        o.keep_history = true;
        auto res = run();
        for (auto& h : res.history) dense_s += h.dense_seconds, apply_s += h.apply_seconds;
        hist_it = static_cast<std::int64_t>(res.history.size());
        if (method == "chebyshev") dense_s = cst.dense_seconds, apply_s = cst.apply_seconds;
      }
      // Back to the original basis for the quality check.
      if (is_perm) {
        auto& p = *op->permutation();
        std::vector<double> v(best.vectors.size());
        for (std::int64_t j = 0; j < k; ++j)
          for (std::int64_t i = 0; i < n; ++i) v[p[i] + j * n] = best.vectors[i + j * n];
        best.vectors.swap(v);
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
      int len = std::snprintf(det, sizeof det, "kernel=%s%s;setup_s=%.3f;copy_GBps=%.0f",
                              to_string(op->plan().kernel), is_perm ? " permuted" : "", setup,
                              bw * 1e-9);
      if (method == "chebyshev") {
        const auto& s = best_st;
        // Budget of one run: SpMM minimal bytes (A once per apply + X, Y) and the dense words.
        const double spmm_bytes = s.applies * a_bytes + 16.0 * n * best.operator_applies;
        const double dense_bytes = 8.0 * s.dense_budget_words;
        len += std::snprintf(det + len, sizeof det - len,
                             ";block=%lld;outer=%lld;filter_applies=%lld;filter_cols=%lld;"
                             "budget_spmm_s=%.4f;budget_dense_s=%.4f;budget_total_s=%.4f;"
                             "phases_s=%.3f/%.3f/%.3f/%.3f/%.3f",
                             (long long)s.block, (long long)s.outer_iterations,
                             (long long)s.filter_applies, (long long)s.filter_columns,
                             spmm_bytes / bw, dense_bytes / bw, (spmm_bytes + dense_bytes) / bw,
                             s.seconds_setup, s.seconds_bounds, s.seconds_init, s.seconds_loop,
                             s.seconds_finish);
        if (breakdown)
          len += std::snprintf(det + len, sizeof det - len,
                               ";apply_s=%.4f;dense_s=%.4f;dense_vs_budget=%.2f", apply_s,
                               dense_s, dense_s / std::max(dense_bytes / bw, 1e-12));
      } else if (breakdown) {
        len += std::snprintf(det + len, sizeof det - len, ";apply_s=%.4f;dense_s=%.4f;history=%lld",
                             apply_s, dense_s, (long long)hist_it);
      }
      std::printf("tcsolve-%s,%s,%s,%lld,%.4f,%s,%lld,%lld,%.2e,%s,%.1e,%s\n", method.c_str(),
                  to_string(be), spec.c_str(), (long long)k, tbest, to_string(best.status),
                  (long long)best.iterations, (long long)best.operator_applies, relres,
                  everr.c_str(), orth, det);
    } else if (mode == "cg") {
      std::int64_t s = std::atoll(arg(2, "8").c_str());
      double tol = std::atof(arg(3, "1e-8").c_str());
      Backend be = arg(4, "cpu") == "cuda" ? Backend::cuda : Backend::cpu;
      bool jacobi = arg(5, "jacobi") == "jacobi";
      int repeat = std::atoi(arg(6, "2").c_str());
      auto ops = make_dense_ops(be);
      const double bw = copy_bandwidth(*ops);
      OperatorOptions oo;
      oo.stream = ops->stream();
      oo.expected_cols = static_cast<int>(s);
      if (permuted) oo.reorder = Reorder::symmetric, oo.basis = OperatorBasis::permuted;
      auto op = make_sparse_operator(a, be, oo);
      const bool is_perm = op->permutation() != nullptr;
      std::vector<double> b(n * s);
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < n; ++i) b[i + j * n] = random_entry(2024, i, j);
      std::vector<double> bp = b;
      if (is_perm) {
        auto& p = *op->permutation();
        for (std::int64_t j = 0; j < s; ++j)
          for (std::int64_t i = 0; i < n; ++i) bp[i + j * n] = b[p[i] + j * n];
      }
      CgOptions o;
      o.tol = tol;
      o.keep_history = false;
      o.max_iterations = 20000;
      o.apply_order = order;
      if (jacobi) {
        auto d = csr_diagonal(a);
        if (is_perm) {
          auto& p = *op->permutation();
          std::vector<double> dp(n);
          for (std::int64_t i = 0; i < n; ++i) dp[i] = d[p[i]];
          d.swap(dp);
        }
        o.jacobi_diagonal = d;
      }
      CgStats cst;
      o.stats = &cst;
      SolveResult best;
      CgStats best_st;
      double tbest = 1e300;
      for (int r = 0; r < repeat; ++r) {
        double t0 = now();
        auto res = block_cg(*op, bp.data(), n, s, *ops, o);
        double t = now() - t0;
        if (t < tbest) tbest = t, best = std::move(res), best_st = cst;
      }
      double dense_s = 0, apply_s = 0;
      if (breakdown) {
        o.keep_history = true;
        auto res = block_cg(*op, bp.data(), n, s, *ops, o);
        dense_s = cst.dense_seconds, apply_s = cst.apply_seconds;
      }
      if (is_perm) {
        auto& p = *op->permutation();
        std::vector<double> v(best.solutions.size());
        for (std::int64_t j = 0; j < s; ++j)
          for (std::int64_t i = 0; i < n; ++i) v[p[i] + j * n] = best.solutions[i + j * n];
        best.solutions.swap(v);
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
      const double spmm_bytes = best_st.applies * a_bytes + 16.0 * n * best.operator_applies;
      const double dense_bytes = 8.0 * best_st.dense_budget_words;
      // solve_s: inside BlockCg::solve (without the host ↔ device copies of B and X).
      int len = std::snprintf(det, sizeof det,
                              "kernel=%s%s;solve_s=%.4f;copy_GBps=%.0f;fused=%lld;robust=%lld;"
                              "budget_spmm_s=%.4f;budget_dense_s=%.4f;budget_total_s=%.4f",
                              to_string(op->plan().kernel), is_perm ? " permuted" : "",
                              best.seconds, bw * 1e-9,
                              (long long)best_st.fused_iterations,
                              (long long)best_st.robust_steps, spmm_bytes / bw, dense_bytes / bw,
                              (spmm_bytes + dense_bytes) / bw);
      if (breakdown)
        len += std::snprintf(det + len, sizeof det - len,
                             ";apply_s=%.4f;dense_s=%.4f;dense_vs_budget=%.2f", apply_s, dense_s,
                             dense_s / std::max(dense_bytes / bw, 1e-12));
      std::printf("tcsolve-blockcg,%s,%s,%lld,%.4f,%s,%lld,%lld,%.2e,,,%s\n", to_string(be),
                  spec.c_str(), (long long)s, tbest, to_string(best.status),
                  (long long)best.iterations, (long long)best.operator_applies, relres, det);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "solver_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
