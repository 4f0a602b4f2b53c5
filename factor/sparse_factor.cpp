// factor_shifted / inertia_at: build S = A − σB once, pick the engine (factor/sparse_factor.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "factor/engines.hpp"

namespace tcsolve {

namespace detail {

LowerCsc shifted_lower(const Csr<double>& a, const Csr<double>* b, double sigma) {
  const std::int64_t n = a.nrows;
  if (!a.square()) throw InvalidArgument("factor: A must be square");
  if (b && (b->nrows != n || b->ncols != n))
    throw InvalidArgument("factor: B is " + std::to_string(b->nrows) + " x " +
                          std::to_string(b->ncols) + ", A is " + std::to_string(n) + " x " +
                          std::to_string(n));
  LowerCsc s;
  s.n = n;
  s.col_ptr.assign(n + 1, 0);
  // Upper part of CSR row j (columns ≥ j) == lower part of CSC column j (S symmetric).
  // Merge A's and B's sorted rows; without B put −σ on the diagonal (adding it when missing).
  std::int64_t reserve = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    auto ua = std::lower_bound(a.col_idx.begin() + a.row_ptr[j], a.col_idx.begin() + a.row_ptr[j + 1],
                               static_cast<std::int32_t>(j));
    reserve += (a.col_idx.begin() + a.row_ptr[j + 1]) - ua + 1;
  }
  s.row_idx.reserve(reserve);
  s.values.reserve(reserve);
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t pa = std::lower_bound(a.col_idx.begin() + a.row_ptr[j],
                                       a.col_idx.begin() + a.row_ptr[j + 1],
                                       static_cast<std::int32_t>(j)) - a.col_idx.begin();
    const std::int64_t ea = a.row_ptr[j + 1];
    std::int64_t pb = 0, eb = 0;
    if (b) {
      pb = std::lower_bound(b->col_idx.begin() + b->row_ptr[j], b->col_idx.begin() + b->row_ptr[j + 1],
                            static_cast<std::int32_t>(j)) - b->col_idx.begin();
      eb = b->row_ptr[j + 1];
    }
    bool diag_done = false;
    auto push = [&](std::int64_t row, double v) {
      s.row_idx.push_back(static_cast<std::int32_t>(row));
      s.values.push_back(v);
    };
    while (pa < ea || pb < eb) {
      const std::int64_t ca = pa < ea ? a.col_idx[pa] : INT64_MAX;
      const std::int64_t cb = pb < eb ? b->col_idx[pb] : INT64_MAX;
      const std::int64_t c = std::min(ca, cb);
      if (!b && !diag_done && c > j) push(j, -sigma), diag_done = true;  // A lacks a_jj
      double v = 0.0;
      if (ca == c) v += a.values[pa++];
      if (cb == c) v -= sigma * b->values[pb++];
      if (!b && c == j) v -= sigma, diag_done = true;
      push(c, v);
    }
    if (!b && !diag_done) push(j, -sigma);
    s.col_ptr[j + 1] = static_cast<std::int64_t>(s.row_idx.size());
  }
  for (double v : s.values) {
    if (!std::isfinite(v)) throw InvalidArgument("factor: A - sigma*B has a non-finite entry");
    s.max_abs = std::max(s.max_abs, std::abs(v));
  }
  return s;
}

// Thread pools of the engines. CHOLMOD and MUMPS run OpenMP regions and call OpenBLAS, whose own
// pthread pool defaults to every core: on the 16-vCPU H200 machine the CHOLMOD factorization of
// gen:elast3d:24 took 8.1 s with those defaults, 8.8 s with OpenMP at 1 and OpenBLAS at 16, and
// 1.4 s with both at 4 (docs/performance.md, Shift-invert). Unless the user set
// OPENBLAS_NUM_THREADS / OMP_NUM_THREADS (or TCSOLVE_FACTOR_THREADS), both are capped at
// min(4, cores) before the engines run, through the libraries' own setters when they are loaded
// (an EngineThreadsScope puts the caller's counts back afterwards).
namespace {
using SetFn = void (*)(int);
using GetFn = int (*)();
struct ThreadSetters {
  int threads = 0;  // 0: the user set the counts (environment): leave them
  SetFn openblas_set = nullptr, omp_set = nullptr;
  GetFn openblas_get = nullptr, omp_get = nullptr;
};
const ThreadSetters& thread_setters() {
  static const ThreadSetters t = [] {
    ThreadSetters r;
    r.threads = static_cast<int>(std::min<unsigned>(4u, std::max(1u, std::thread::hardware_concurrency())));
    if (const char* e = std::getenv("TCSOLVE_FACTOR_THREADS")) r.threads = std::max(1, std::atoi(e));
    else if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) r.threads = 0;
    r.openblas_set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    r.omp_set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    r.openblas_get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    r.omp_get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    return r;
  }();
  return t;
}
}  // namespace

// Applied at each use (two library calls), not once: an EngineThreadsScope may have put the
// caller's counts back since.
void configure_engine_threads() {
  const ThreadSetters& t = thread_setters();
  if (t.threads == 0) return;
  if (t.openblas_set) t.openblas_set(t.threads);
  if (t.omp_set) t.omp_set(t.threads);
}

}  // namespace detail

// The engines' analyses and factorizations have no progress callback (cholmod_common and
// DMUMPS_STRUC_C hold none): each runs through run_interruptible (core/interrupt.hpp), on a
// worker that owns S (shared_ptr) and a copy of the options, so that an interrupt returns control
// within kInterruptPoll while the abandoned call finishes on its own. The worker sets the engines'
// thread counts itself: OpenMP's count is a per-thread setting.
namespace {
std::string of_s(std::int64_t n, double sigma) {
  char b[96];
  std::snprintf(b, sizeof b, "A - sigma*B (n = %lld, sigma = %.6g)", static_cast<long long>(n), sigma);
  return b;
}
}  // namespace

namespace {
// A − σB small enough for its engine call to run on the caller's thread (core/interrupt.hpp).
bool small_shifted(const Csr<double>& a, const Csr<double>* b) {
  return run_inline_small(a.nrows, a.nnz() + (b ? b->nnz() : 0));
}
}  // namespace

std::unique_ptr<SparseFactor> factor_shifted(const Csr<double>& a, const Csr<double>* b,
                                             double sigma, const FactorOptions& opt) {
  if (!std::isfinite(sigma)) throw InvalidArgument("factor: sigma must be finite");
  const std::string phase = "the factorization of " + of_s(a.nrows, sigma);
  throw_if_interrupted(phase);
  detail::configure_engine_threads();
  auto s = std::make_shared<const detail::LowerCsc>(detail::shifted_lower(a, b, sigma));
  return run_interruptible(phase, small_shifted(a, b), [s, sigma, opt]() -> std::unique_ptr<SparseFactor> {
    detail::configure_engine_threads();
    if (opt.engine != FactorEngine::mumps) {
      std::int64_t minor = -1;
      auto f = detail::cholmod_factor(*s, sigma, opt, &minor);
      if (f) return f;
      if (opt.engine == FactorEngine::cholmod)
        throw InvalidArgument("A - sigma*B is not positive definite (Cholesky failed at column " +
                              std::to_string(minor + 1) + "): CHOLMOD needs sigma below the spectrum");
    }
    if (detail::use_lu_solves(opt, s->n)) return detail::lu_shifted(s, sigma, opt);
    return detail::mumps_factor(*s, sigma, opt, /*with_solve=*/true);
  });
}

Inertia inertia_at(const Csr<double>& a, const Csr<double>* b, double tau,
                   const FactorOptions& opt) {
  if (!std::isfinite(tau)) throw InvalidArgument("inertia: shift must be finite");
  const std::string phase = "the LDL^T (MUMPS) of " + of_s(a.nrows, tau) + " for its inertia";
  throw_if_interrupted(phase);
  detail::configure_engine_threads();
  auto s = std::make_shared<const detail::LowerCsc>(detail::shifted_lower(a, b, tau));
  return run_interruptible(phase, small_shifted(a, b), [s, tau, opt] {
    detail::configure_engine_threads();
    return detail::mumps_factor(*s, tau, opt, /*with_solve=*/false)->inertia();
  });
}

SymbolicAnalysis analyze_factor(const Csr<double>& a, const Csr<double>* b) {
  const std::string phase = "the symbolic analysis (AMD ordering) of " + of_s(a.nrows, 0.0);
  throw_if_interrupted(phase);
  detail::configure_engine_threads();
  auto s = std::make_shared<const detail::LowerCsc>(detail::shifted_lower(a, b, 0.0));
  return run_interruptible(phase, small_shifted(a, b), [s] {
    detail::configure_engine_threads();
    return detail::cholmod_symbolic(*s);
  });
}

bool built_with_factor() { return true; }

EngineThreadsScope::EngineThreadsScope() {
  const detail::ThreadSetters& t = detail::thread_setters();
  if (t.openblas_get) openblas_ = t.openblas_get();
  if (t.omp_get) omp_ = t.omp_get();
}

EngineThreadsScope::~EngineThreadsScope() {
  const detail::ThreadSetters& t = detail::thread_setters();
  if (openblas_ > 0 && t.openblas_get && t.openblas_set && t.openblas_get() != openblas_) t.openblas_set(openblas_);
  if (omp_ > 0 && t.omp_get && t.omp_set && t.omp_get() != omp_) t.omp_set(omp_);
}

void require_positive_definite(const Csr<double>& b, const std::string& what) {
  const std::string phase = "the Cholesky factorization of " + what + " (n = " + std::to_string(b.nrows) + ")";
  throw_if_interrupted(phase);
  detail::configure_engine_threads();
  auto s = std::make_shared<const detail::LowerCsc>(detail::shifted_lower(b, nullptr, 0.0));
  const std::int64_t minor = run_interruptible(phase, [s] {
    detail::configure_engine_threads();
    FactorOptions o;
    std::int64_t m = -1;
    return detail::cholmod_factor(*s, 0.0, o, &m) ? std::int64_t(-1) : m;
  });
  if (minor >= 0)
    throw InvalidArgument(what + " is not positive definite (its Cholesky factorization fails at "
                          "column " + std::to_string(minor + 1) + ")");
}

}  // namespace tcsolve
