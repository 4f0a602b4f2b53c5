// MUMPS engine (sequential library): multifrontal LDLᵀ with threshold 1×1/2×2 pivoting of a
// symmetric indefinite S = A − σB, as SLEPc uses it for spectrum slicing.
//   analysis: ordering chosen by MUMPS (ICNTL(7) = 7: METIS/SCOTCH/PORD/AMD), memory estimate
//             INFOG(17) (MB) checked against the limit before the numeric factorization;
//   factor:   null-pivot detection on (ICNTL(24) = 1, |pivot| ≤ 1e-14·‖S‖ counts as zero), so an S
//             singular to working precision is reported, not factored into NaNs;
//   inertia:  INFOG(12) negative pivots (exact for the computed LDLᵀ; by Sylvester the number of
//             eigenvalues of (A, B) below σ), INFOG(28) null pivots;
//   solve:    centralized dense right-hand sides, all columns of a block in one call.
// Inertia-only factorizations discard the factors as they go (ICNTL(31) = 1).
#include <dmumps_c.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "factor/engines.hpp"

namespace tcsolve::detail {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int kUseCommWorld = -987654;

// 1-based Fortran indices into the 0-based arrays of the C interface.
inline int& icntl(DMUMPS_STRUC_C& id, int i) { return id.icntl[i - 1]; }
inline int infog(const DMUMPS_STRUC_C& id, int i) { return id.infog[i - 1]; }
inline int info(const DMUMPS_STRUC_C& id, int i) { return id.info[i - 1]; }

// Every MUMPS call, one at a time in the process. Sequential MUMPS (its MPI stubs, its orderings'
// Fortran state) is not safe for calls at once, even on separate instances: a batch running a
// job per worker crashed in mumps_sort_step_ with two analyses at once (test
// AppsBatch.ConcurrentWorkersRunEveryJobOnce). Instances stay separate; their calls take turns.
void call_mumps(DMUMPS_STRUC_C& id) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  dmumps_c(&id);
}

// One MUMPS instance; terminated (job = −2) by the destructor, also when a constructor throws.
struct MumpsInstance {
  DMUMPS_STRUC_C id{};
  bool initialized = false;
  MumpsInstance() {
    id.comm_fortran = kUseCommWorld;
    id.par = 1;
    id.sym = 2;  // general symmetric: LDLᵀ with pivoting
    id.job = -1;
    call_mumps(id);
    initialized = true;
  }
  ~MumpsInstance() {
    if (!initialized) return;
    id.job = -2;
    call_mumps(id);
  }
  MumpsInstance(const MumpsInstance&) = delete;
  MumpsInstance& operator=(const MumpsInstance&) = delete;
};

class MumpsFactor final : public SparseFactor {
 public:
  MumpsFactor(const LowerCsc& s, double sigma, const FactorOptions& opt, bool with_solve)
      : n_(s.n), sigma_(sigma), scale_(s.max_abs) {
    if (s.n > 2147483647) throw InvalidArgument("MUMPS: n exceeds 2^31 - 1");
    inst_ = std::make_unique<MumpsInstance>();
    DMUMPS_STRUC_C& id = inst_->id;
    icntl(id, 1) = -1;  // silence: errors, diagnostics, global info
    icntl(id, 2) = -1;
    icntl(id, 3) = -1;
    icntl(id, 4) = 0;
    icntl(id, 7) = 7;    // ordering: automatic choice
    icntl(id, 14) = 40;  // workspace increase (%) over the analysis estimate
    icntl(id, 24) = 1;   // null pivot detection
    id.cntl[2] = 1e-14;  // CNTL(3): |pivot| ≤ 1e-14·‖S_pre‖ is a null pivot
    if (!with_solve) icntl(id, 31) = 1;  // only the inertia: discard factors
    // Assembled lower triangle, 1-based.
    const std::int64_t nnz = s.col_ptr.back();
    irn_.resize(nnz);
    jcn_.resize(nnz);
    a_.assign(s.values.begin(), s.values.end());
    for (std::int64_t j = 0; j < s.n; ++j)
      for (std::int64_t p = s.col_ptr[j]; p < s.col_ptr[j + 1]; ++p) {
        irn_[p] = s.row_idx[p] + 1;
        jcn_[p] = static_cast<int>(j) + 1;
      }
    id.n = static_cast<int>(s.n);
    id.nnz = nnz;
    id.irn = irn_.data();
    id.jcn = jcn_.data();
    id.a = a_.data();
    double t0 = now();
    id.job = 1;
    call_mumps(id);
    analyze_s_ = now() - t0;
    check("analysis");
    // INFOG(17): estimated total MB for the in-core factorization.
    est_bytes_ = 1e6 * static_cast<double>(infog(id, 17)) + 20.0 * static_cast<double>(nnz);
    const double limit = factor_memory_limit(opt);
    if (est_bytes_ > limit)
      throw FactorTooLarge(est_bytes_, limit, "MUMPS LDL^T of A - sigma*B");
    t0 = now();
    for (int attempt = 0;; ++attempt) {
      id.job = 2;
      call_mumps(id);
      const int e = info(id, 1);
      if ((e == -8 || e == -9 || e == -14 || e == -15 || e == -17) && attempt < 3) {
        icntl(id, 14) *= 2;  // workspace estimate too small: more relaxation, try again
        continue;
      }
      break;
    }
    factor_s_ = now() - t0;
    if (info(id, 1) == -10) singular("MUMPS found the matrix numerically singular");
    check("factorization");
    inertia_.zero = infog(id, 28);
    inertia_.negative = infog(id, 12);
    inertia_.positive = n_ - inertia_.negative - inertia_.zero;
    // RINFOG(?) aside, INFOG(29) is the number of entries in the factors (negative: millions).
    const int e29 = infog(id, 29);
    entries_ = e29 >= 0 ? static_cast<double>(e29) : -1e6 * static_cast<double>(e29);
    if (inertia_.zero > 0)
      singular(std::to_string(inertia_.zero) + " null pivot(s) in MUMPS's LDL^T");
    if (with_solve) work_.resize(static_cast<std::size_t>(n_));
  }

  std::int64_t n() const override { return n_; }
  double sigma() const override { return sigma_; }
  FactorEngine engine() const override { return FactorEngine::mumps; }
  bool positive_definite() const override { return inertia_.negative == 0 && inertia_.zero == 0; }
  Inertia inertia() const override { return inertia_; }
  double factor_entries() const override { return entries_; }
  double factor_bytes() const override { return est_bytes_; }
  double analyze_seconds() const override { return analyze_s_; }
  double factor_seconds() const override { return factor_s_; }
  std::string describe() const override {
    char b[200];
    std::snprintf(b, sizeof b, "mumps LDL^T (pivoting), %.1f M entries, inertia (%lld, %lld, %lld), "
                  "analyze %.3f s, factor %.3f s", entries_ / 1e6, (long long)inertia_.negative,
                  (long long)inertia_.zero, (long long)inertia_.positive, analyze_s_, factor_s_);
    return b;
  }

  void solve(MvView<const double> rhs, MvView<double> x) const override {
    TCSOLVE_REQUIRE(rhs.space == Space::host && x.space == Space::host, "mumps solve: host blocks");
    TCSOLVE_REQUIRE(rhs.rows == n_ && x.rows == n_ && rhs.cols == x.cols, "mumps solve: shapes");
    TCSOLVE_REQUIRE(!work_.empty() || n_ == 0, "mumps factor was made for the inertia only");
    if (rhs.cols == 0) return;
    const std::size_t need = static_cast<std::size_t>(n_) * static_cast<std::size_t>(rhs.cols);
    if (work_.size() < need) work_.resize(need);  // grows to the widest block once
    for (std::int64_t j = 0; j < rhs.cols; ++j)
      std::copy(rhs.col(j), rhs.col(j) + n_, work_.data() + j * n_);
    DMUMPS_STRUC_C& id = inst_->id;
    icntl(id, 20) = 0;  // dense centralized right-hand sides
    icntl(id, 21) = 0;  // centralized solution (overwrites rhs)
    id.rhs = work_.data();
    id.nrhs = static_cast<int>(rhs.cols);
    id.lrhs = static_cast<int>(n_);
    id.job = 3;
    call_mumps(id);
    if (info(id, 1) < 0)
      throw Error("MUMPS solve failed (INFO(1) = " + std::to_string(info(id, 1)) + ", INFO(2) = " +
                  std::to_string(info(id, 2)) + ")");
    for (std::int64_t j = 0; j < rhs.cols; ++j)
      std::copy(work_.data() + j * n_, work_.data() + (j + 1) * n_, x.col(j));
  }

  const ExportedFactor& export_lower() const override {
    throw InvalidArgument("a MUMPS factorization cannot be exported for GPU solves");
  }

 private:
  void check(const char* phase) {
    const int e = info(inst_->id, 1);
    if (e >= 0) return;
    if (e == -13) throw Error(std::string("MUMPS ") + phase + ": out of memory allocating " +
                              std::to_string(info(inst_->id, 2)) + " (INFO(2); negative: millions) entries");
    throw Error(std::string("MUMPS ") + phase + " failed (INFO(1) = " + std::to_string(e) +
                ", INFO(2) = " + std::to_string(info(inst_->id, 2)) + ")");
  }
  [[noreturn]] void singular(const std::string& detail) {
    const double scale = std::max(std::abs(sigma_), 1e-8 * std::max(scale_, 1.0));
    throw SingularShift(sigma_, sigma_ + 1e-6 * scale, detail);
  }

  std::int64_t n_;
  double sigma_;
  double scale_ = 1.0;
  std::unique_ptr<MumpsInstance> inst_;
  std::vector<int> irn_, jcn_;
  std::vector<double> a_;
  mutable std::vector<double> work_;
  Inertia inertia_;
  double entries_ = 0, est_bytes_ = 0, analyze_s_ = 0, factor_s_ = 0;
};

}  // namespace

std::unique_ptr<SparseFactor> mumps_factor(const LowerCsc& s, double sigma, const FactorOptions& opt,
                                           bool with_solve) {
  return std::make_unique<MumpsFactor>(s, sigma, opt, with_solve);
}

}  // namespace tcsolve::detail
