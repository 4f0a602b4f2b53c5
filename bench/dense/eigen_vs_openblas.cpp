// The CPU dense ops' products (solvers/dense_ops.cpp, Eigen as built: no -march, so SSE2)
// against OpenBLAS (runtime-dispatched kernels: AVX2/AVX-512 where the CPU has them), at the
// shapes block Lanczos and the re-checks use: Gram and update against a 23-column basis
// (GEMV for one column, GEMM for 2 and 23), and the restart's n × 23 · 23 × 17 rewrite.
// Best of R runs each. Not used by the product; a measurement for docs/performance.md.
//   g++ -O3 -DNDEBUG -I/usr/include/eigen3 bench/dense/eigen_vs_openblas.cpp -o /tmp/evb -lopenblas
//   OPENBLAS_NUM_THREADS=1 /tmp/evb; OPENBLAS_NUM_THREADS=2 /tmp/evb
#include <cblas.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>

using Mat = Eigen::MatrixXd;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
template <class F>
double best(F f, int reps) {
  double b = 1e9;
  for (int r = 0; r < reps; ++r) {
    const double t = now();
    f();
    b = std::min(b, now() - t);
  }
  return b;
}

int main() {
  for (long n : {1138L, 10000L, 200000L}) {
    const int reps = n > 100000 ? 20 : 300;
    Mat V = Mat::Random(n, 24), W = Mat::Random(n, 24), G(24, 24);
    Eigen::VectorXd w = Eigen::VectorXd::Random(n), g(24);
    // One column: GEMV both ways (Eigen takes its GEMV path itself).
    const double e1 = best([&] { g.head(23).noalias() = V.leftCols(23).transpose() * w; }, reps);
    const double b1 = best([&] { cblas_dgemv(CblasColMajor, CblasTrans, n, 23, 1.0, V.data(), n, w.data(), 1, 0.0, g.data(), 1); }, reps);
    const double e2 = best([&] { w.noalias() -= V.leftCols(23) * g.head(23); }, reps);
    const double b2 = best([&] { cblas_dgemv(CblasColMajor, CblasNoTrans, n, 23, -1.0, V.data(), n, g.data(), 1, 1.0, w.data(), 1); }, reps);
    std::printf("n %7ld  1 col   Gram: Eigen %9.1f us  OpenBLAS %9.1f us (%.2fx)   update: Eigen %9.1f  OpenBLAS %9.1f (%.2fx)\n",
                n, e1 * 1e6, b1 * 1e6, e1 / b1, e2 * 1e6, b2 * 1e6, e2 / b2);
    for (long c : {2L, 23L}) {
      const double te = best([&] { G.topLeftCorner(23, c).noalias() = V.leftCols(23).transpose() * W.leftCols(c); }, reps);
      const double tb = best([&] { cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, 23, c, n, 1.0, V.data(), n, W.data(), n, 0.0, G.data(), 24); }, reps);
      const double te2 = best([&] { W.leftCols(c).noalias() -= V.leftCols(23) * G.topLeftCorner(23, c); }, reps);
      const double tb2 = best([&] { cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, c, 23, -1.0, V.data(), n, G.data(), 24, 1.0, W.data(), n); }, reps);
      std::printf("n %7ld %2ld cols  Gram: Eigen %9.1f us  OpenBLAS %9.1f us (%.2fx)   update: Eigen %9.1f  OpenBLAS %9.1f (%.2fx)\n",
                  n, c, te * 1e6, tb * 1e6, te / tb, te2 * 1e6, tb2 * 1e6, te2 / tb2);
    }
    Mat Y = Mat::Random(23, 17), T(n, 17);
    const double te = best([&] { T.noalias() = V.leftCols(23) * Y; }, reps);
    const double tb = best([&] { cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, 17, 23, 1.0, V.data(), n, Y.data(), 23, 0.0, T.data(), n); }, reps);
    std::printf("n %7ld  restart n x 23 * 23 x 17: Eigen %9.1f us  OpenBLAS %9.1f us (%.2fx)\n", n, te * 1e6, tb * 1e6, te / tb);
  }
}
