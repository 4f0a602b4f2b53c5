// Dense symmetric eigenpairs by index range (solvers/dense/symmetric_eigen.hpp).
#include "solvers/dense/symmetric_eigen.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "solvers/dense/cpu_dense.hpp"

#ifdef TCSOLVE_HAVE_OPENBLAS
// LAPACK in OpenBLAS (LP64, gfortran's hidden lengths of the character arguments last).
extern "C" void dsyevr_(const char* jobz, const char* range, const char* uplo, const int* n, double* a,
                        const int* lda, const double* vl, const double* vu, const int* il, const int* iu,
                        const double* abstol, int* m, double* w, double* z, const int* ldz, int* isuppz,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info,
                        std::size_t, std::size_t, std::size_t);
extern "C" void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t);
extern "C" void dsygst_(const int* itype, const char* uplo, const int* n, double* a, const int* lda,
                        const double* b, const int* ldb, int* info, std::size_t);
extern "C" void dtrtrs_(const char* uplo, const char* trans, const char* diag, const int* n, const int* nrhs,
                        const double* a, const int* lda, double* b, const int* ldb, int* info, std::size_t,
                        std::size_t, std::size_t);
extern "C" void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda,
                        double* b, const int* ldb, int* info, std::size_t);
#endif

namespace tcsolve {

namespace {
// OpenBLAS's own threads on an n × n LAPACK call cost more than they save up to n ≈ 500 on the
// 16-core H200 host (dsyevr, 6 largest: n = 420 9.3–14.3 ms on one thread against 13.5–18.1 on
// 16; n = 485–494 even; n = 662 and 1138 1.35× and 2× slower on one) and up to n ≈ 1000 on the
// 2-core Xeon, where two threads also spiked to 40–97 ms in a third of the calls (n = 420–662:
// 11–18 ms on one thread against 13–97 on two; n = 1072 even). One thread there. Set at run time
// the H200 host's n = 420 gains less than OPENBLAS_NUM_THREADS=1 did (13–16 ms against 14–18;
// bench/results/cpu_2026-12-01n/dense_blas_threads.txt). Every LAPACK call of this file follows it.
[[maybe_unused]] bool one_blas_thread(std::int64_t n) { return n <= 512 || (n <= 1024 && host_threads() <= 4); }
}  // namespace

bool symmetric_eigen_uses_lapack() {
#ifdef TCSOLVE_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& a, std::int64_t il, std::int64_t iu) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n && 0 <= il && il <= iu && iu < n,
                  "symmetric_eigen: index range [" + std::to_string(il) + ", " + std::to_string(iu) +
                      "] outside a " + std::to_string(n) + "-row square matrix");
  SymmetricEigen out;
#ifdef TCSOLVE_HAVE_OPENBLAS
  TCSOLVE_REQUIRE(n <= 46340, "symmetric_eigen: n = " + std::to_string(n) + " past LAPACK's 32-bit sizes");
  const cpu_dense::OneBlasThread one(one_blas_thread(n));
  Eigen::MatrixXd work_a = a;  // dsyevr destroys its input
  const int ni = static_cast<int>(n), lo = static_cast<int>(il + 1), hi = static_cast<int>(iu + 1);
  const int cols = hi - lo + 1;
  const double zero = 0.0, abstol = 0.0;  // (abstol ≤ 0: LAPACK's default, eps·‖T‖₁)
  out.values.resize(n);  // dsyevr writes up to n values
  out.vectors.resize(n, cols);
  std::vector<int> isuppz(2 * static_cast<std::size_t>(cols));
  int m = 0, info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double work_query = 0.0;
  const char* range = lo == 1 && hi == ni ? "A" : "I";
  dsyevr_("V", range, "L", &ni, work_a.data(), &ni, &zero, &zero, &lo, &hi, &abstol, &m, out.values.data(),
          out.vectors.data(), &ni, isuppz.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1, 1, 1);
  if (info != 0) throw Error("LAPACK dsyevr workspace query failed (info " + std::to_string(info) + ")");
  lwork = static_cast<int>(work_query);
  liwork = iwork_query;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevr_("V", range, "L", &ni, work_a.data(), &ni, &zero, &zero, &lo, &hi, &abstol, &m, out.values.data(),
          out.vectors.data(), &ni, isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
  if (info != 0 || m != cols)
    throw Error("LAPACK dsyevr failed (info " + std::to_string(info) + ", " + std::to_string(m) + " of " +
                std::to_string(cols) + " eigenpairs)");
  out.values.conservativeResize(cols);
#else
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(a);
  if (es.info() != Eigen::Success) throw Error("dense eigensolver failed");
  out.values = es.eigenvalues().segment(il, iu - il + 1);
  out.vectors = es.eigenvectors().middleCols(il, iu - il + 1);
#endif
  return out;
}

namespace {
void lapack_check(int info, const char* routine) {
  if (info != 0) throw Error(std::string("LAPACK ") + routine + " failed (info " + std::to_string(info) + ")");
}
}  // namespace

bool DenseCholesky::factor(const Eigen::MatrixXd& a) {
#ifdef TCSOLVE_HAVE_OPENBLAS
  l_ = a;
  const int n = static_cast<int>(a.rows());
  int info = 0;
  const cpu_dense::OneBlasThread one(one_blas_thread(n));
  dpotrf_("L", &n, l_.data(), &n, &info, 1);
  if (info > 0) return false;
  lapack_check(info, "dpotrf");
  l_.triangularView<Eigen::StrictlyUpper>().setZero();
  return true;
#else
  Eigen::LLT<Eigen::MatrixXd> llt(a);
  if (llt.info() != Eigen::Success) return false;
  l_ = llt.matrixL();
  return true;
#endif
}

Eigen::MatrixXd DenseCholesky::congruence(const Eigen::MatrixXd* b) const {
  const std::int64_t n = l_.rows();
#ifdef TCSOLVE_HAVE_OPENBLAS
  const int ni = static_cast<int>(n);
  int info = 0;
  // L⁻¹·B·L⁻ᵀ (B = I: L⁻¹·L⁻ᵀ, similar to A⁻¹ = L⁻ᵀ·L⁻¹ but with the eigenvectors y that
  // x = L⁻ᵀ·y maps to A's, normalized in L·Lᵀ)
  Eigen::MatrixXd c = b ? *b : Eigen::MatrixXd::Identity(n, n);
  const int itype = 1;
  const cpu_dense::OneBlasThread one(one_blas_thread(n));
  dsygst_(&itype, "L", &ni, c.data(), &ni, l_.data(), &ni, &info, 1);
  lapack_check(info, "dsygst");
  for (std::int64_t j = 0; j < n; ++j)  // both wrote the lower triangle (no aliased transpose)
    for (std::int64_t i = 0; i < j; ++i) c(i, j) = c(j, i);
  return c;
#else
  const auto l = l_.triangularView<Eigen::Lower>();
  Eigen::MatrixXd t = b ? l.solve(*b) : l.solve(Eigen::MatrixXd::Identity(n, n));
  Eigen::MatrixXd c = l.solve(t.transpose());
  return 0.5 * (c + c.transpose());
#endif
}

Eigen::MatrixXd DenseCholesky::solve_lower_transposed(const Eigen::MatrixXd& y) const {
#ifdef TCSOLVE_HAVE_OPENBLAS
  Eigen::MatrixXd x = y;
  const int n = static_cast<int>(l_.rows()), k = static_cast<int>(y.cols());
  int info = 0;
  const cpu_dense::OneBlasThread one(one_blas_thread(n));
  if (k > 0) dtrtrs_("L", "T", "N", &n, &k, l_.data(), &n, x.data(), &n, &info, 1, 1, 1);
  lapack_check(info, "dtrtrs");
  return x;
#else
  return l_.triangularView<Eigen::Lower>().transpose().solve(y);
#endif
}

Eigen::MatrixXd DenseCholesky::solve(const Eigen::MatrixXd& r) const {
#ifdef TCSOLVE_HAVE_OPENBLAS
  Eigen::MatrixXd x = r;
  const int n = static_cast<int>(l_.rows()), k = static_cast<int>(r.cols());
  int info = 0;
  const cpu_dense::OneBlasThread one(one_blas_thread(n));
  if (k > 0) dpotrs_("L", &n, &k, l_.data(), &n, x.data(), &n, &info, 1);
  lapack_check(info, "dpotrs");
  return x;
#else
  const auto l = l_.triangularView<Eigen::Lower>();
  return l.transpose().solve(l.solve(r));
#endif
}

}  // namespace tcsolve
