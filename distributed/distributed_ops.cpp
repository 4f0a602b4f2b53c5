#include "distributed/distributed_ops.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "distributed/distributed_operator.hpp"

namespace tcsolve {

namespace {
const DenseBlockOps& checked(const std::unique_ptr<DenseBlockOps>& local) {
  TCSOLVE_REQUIRE(local != nullptr, "distributed ops: no local ops");
  return *local;
}
}  // namespace

// ---- the parts: the local part's work plus the all-reduce of whatever sums over rows
class DistributedDenseOps::Queue final : public DenseQueue {
 public:
  explicit Queue(DistributedDenseOps& d) : d_(d), local_(d.local_->queue()) {}
  void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                     std::int64_t ldg) override;
  void column_dots_deferred(MvView<const double> x, MvView<const double> y, double* out) override;
  void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) override {
    local_.download_deferred(src, host, ldh);
  }
  void fetch() override;
  std::uint64_t fetch_async() override;
  void fetch_wait(std::uint64_t ticket) override { local_.fetch_wait(ticket); }
  void external_begin() override { local_.external_begin(); }
  void external_end() override { local_.external_end(); }
  bool pin_host(void* p, std::size_t bytes) override { return local_.pin_host(p, bytes); }
  void unpin_host(void* p) override { local_.unpin_host(p); }
  int mark() override { return local_.mark(); }
  double elapsed_seconds(int from, int to) override { return local_.elapsed_seconds(from, to); }

 private:
  DistributedDenseOps& d_;
  DenseQueue& local_;
};

class DistributedDenseOps::Small final : public SmallDense {
 public:
  explicit Small(DistributedDenseOps& d) : d_(d), local_(d.local_->small()) {}
  void reserve_small(std::int64_t max_dim) override;
  void eigh_small(MvView<double> a, MvView<double> w) override { local_.eigh_small(a, w); }
  void pip_factor(MvView<const double> g, std::int64_t l, MvView<double> m,
                  MvView<double> status) override {
    local_.pip_factor(g, l, m, status);
  }
  void spd_factor(MvView<const double> g, MvView<double> f, MvView<double> status,
                  double piv_tol) override {
    local_.spd_factor(g, f, status, piv_tol);
  }
  void spd_solve(MvView<const double> f, MvView<const double> b, double sign,
                 MvView<const double> status, MvView<double> out) override {
    local_.spd_solve(f, b, sign, status, out);
  }

 private:
  DistributedDenseOps& d_;
  SmallDense& local_;
};

// (fp32 blocks: not offered, CgKernels' defaults.)
class DistributedDenseOps::Cg final : public CgKernels {
 public:
  explicit Cg(DistributedDenseOps& d) : d_(d), local_(d.local_->cg()) {}
  void cg_residual_update(MvView<const double> q, MvView<const double> alpha, MvView<double> r,
                          MvView<double> g) override;
  void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                 const double* d, MvView<double> r, MvView<double> z,
                                 MvView<double> g) override;
  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const double> z, MvView<double> p, MvView<double> x) override {
    local_.cg_direction_update(alpha, beta, z, p, x);
  }

 private:
  DistributedDenseOps& d_;
  CgKernels& local_;
};

class DistributedDenseOps::Chebyshev final : public ChebyshevKernels {
 public:
  explicit Chebyshev(DistributedDenseOps& d) : d_(d), local_(d.local_->chebyshev()) {}
  void axpbypcz(double a, MvView<const double> x, double b, MvView<const double> y, double c,
                MvView<double> z) override {
    local_.axpbypcz(a, x, b, y, c, z);
  }
  void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                              MvView<const double> theta, double s, MvView<double> out) override;

 private:
  void sqrt_elements(MvView<double> v) override { d_.local_->sqrt_elements(v); }
  DistributedDenseOps& d_;
  ChebyshevKernels& local_;
};

DistributedDenseOps::DistributedDenseOps(std::unique_ptr<DenseBlockOps> local, Communicator& comm,
                                         std::int64_t row0, std::int64_t local_rows,
                                         std::int64_t global_rows)
    : DenseBlockOps(checked(local).backend(), checked(local).stream()),
      local_(std::move(local)),
      comm_(comm),
      row0_(row0),
      local_rows_(local_rows),
      global_rows_(global_rows),
      profile_(comm_profiling()),
      queue_impl_(std::make_unique<Queue>(*this)),
      small_impl_(std::make_unique<Small>(*this)),
      cg_impl_(std::make_unique<Cg>(*this)),
      chebyshev_impl_(std::make_unique<Chebyshev>(*this)) {
  set_parts(*queue_impl_, *small_impl_, *cg_impl_, *chebyshev_impl_);
}

DistributedDenseOps::~DistributedDenseOps() = default;

MvView<double> DistributedDenseOps::scratch(std::int64_t p, std::int64_t q) {
  const std::int64_t need = std::max<std::int64_t>(p * q, 1);
  if (arena_.empty() || arena_used_ + need > arena_.back().rows()) {
    // Outgrown: a larger chunk; the old one stays alive until the deferred copies are fetched.
    const std::int64_t size =
        std::max<std::int64_t>({need, 2 * (arena_.empty() ? 0 : arena_.back().rows()), 4096});
    if (!arena_.empty()) retired_.push_back(std::move(arena_.back())), arena_.pop_back();
    arena_.push_back(MultiVector<double>(size, 1, local_->space()));
    arena_used_ = 0;
  }
  MvView<double> v{arena_.back().data() + arena_used_, p, q, p, local_->space()};
  arena_used_ += need;
  return v;
}

void DistributedDenseOps::release_scratch() {
  arena_used_ = 0;
  retired_.clear();
}

void DistributedDenseOps::reduce(MvView<double> g) {
  if (g.rows == 0 || g.cols == 0) return;
  ++reductions_;
  reduced_doubles_ += g.rows * g.cols;
  if (comm_.size() == 1) return;
  struct Clock {  // profiling only: the reduction between two stream synchronizations
    DistributedDenseOps& o;
    double t0 = 0.0;
    static double now() {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }
    explicit Clock(DistributedDenseOps& d) : o(d) {
      if (o.profile_) o.local_->synchronize(), t0 = now();
    }
    ~Clock() {
      if (o.profile_) o.local_->synchronize(), o.reduce_seconds_ += now() - t0;
    }
  } clock(*this);
  if (g.ld == g.rows || g.cols == 1) {
    comm_.allreduce_sum(g.data, g.rows * g.cols, local_->space(), local_->stream());
    return;
  }
  // Strided: pack, reduce, unpack (the rows between would otherwise be summed too).
  MvView<double> s = scratch(g.rows, g.cols);
  local_->copy(g, s);
  comm_.allreduce_sum(s.data, g.rows * g.cols, local_->space(), local_->stream());
  local_->copy(s, g);
}

void DistributedDenseOps::Small::reserve_small(std::int64_t max_dim) {
  local_.reserve_small(max_dim);
  // Room for a fetch's worth of deferred products (Gram blocks and column vectors) in one chunk.
  if (d_.arena_.empty() || d_.arena_.back().rows() < 4 * max_dim * max_dim + 64 * max_dim) {
    d_.release_scratch();
    d_.arena_.clear();
    d_.arena_.push_back(MultiVector<double>(std::max<std::int64_t>(4 * max_dim * max_dim + 64 * max_dim, 4096), 1,
                                            d_.local_->space()));
  }
}

void DistributedDenseOps::gram_into(double alpha, MvView<const double> x, MvView<const double> y,
                                    double beta, MvView<double> g) {
  // G = α·Σ_r X_rᵀY_r + β·G: the old G is added on rank 0 only.
  local_->gram_into(alpha, x, y, comm_.rank() == 0 ? beta : 0.0, g);
  reduce({g.data, x.cols, y.cols, g.ld, g.space});
}

void DistributedDenseOps::column_dots_into(MvView<const double> x, MvView<const double> y,
                                           MvView<double> out) {
  local_->column_dots_into(x, y, out);
  reduce({out.data, x.cols, 1, x.cols, out.space});
}

void DistributedDenseOps::Chebyshev::residual_sq_norms_into(MvView<const double> ax,
                                                            MvView<const double> x,
                                                            MvView<const double> theta, double s,
                                                            MvView<double> out) {
  local_.residual_sq_norms_into(ax, x, theta, s, out);
  d_.reduce({out.data, x.cols, 1, x.cols, out.space});
}

void DistributedDenseOps::normalize_columns(MvView<double> x, MvView<double> norms) {
  column_dots_into(x, x, norms);
  local_->sqrt_elements({norms.data, x.cols, 1, x.cols, norms.space});
  local_->scale_columns_inverse(norms, x);
}

void DistributedDenseOps::Cg::cg_residual_update(MvView<const double> q, MvView<const double> alpha,
                                                 MvView<double> r, MvView<double> g) {
  local_.cg_residual_update(q, alpha, r, g);
  d_.reduce({g.data, q.cols + r.cols, r.cols, g.ld, g.space});
}

void DistributedDenseOps::Cg::cg_residual_update_jacobi(MvView<const double> q,
                                                        MvView<const double> alpha,
                                                        const double* d, MvView<double> r,
                                                        MvView<double> z, MvView<double> g) {
  local_.cg_residual_update_jacobi(q, alpha, d, r, z, g);
  d_.reduce({g.data, q.cols + r.cols + 1, r.cols, g.ld, g.space});
}

void DistributedDenseOps::Queue::gram_deferred(MvView<const double> x, MvView<const double> y,
                                               double* g, std::int64_t ldg) {
  MvView<double> s = d_.scratch(x.cols, y.cols);
  d_.local_->gram_into(1.0, x, y, 0.0, s);
  d_.reduce(s);
  local_.download_deferred(s, g, ldg);
}

void DistributedDenseOps::Queue::column_dots_deferred(MvView<const double> x,
                                                      MvView<const double> y, double* out) {
  TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "column_dots: shapes differ");
  if (x.cols == 0) return;
  MvView<double> s = d_.scratch(x.cols, 1);
  d_.local_->column_dots_into(x, y, s);
  d_.reduce(s);
  local_.download_deferred(s, out, x.cols);
}

void DistributedDenseOps::gram(MvView<const double> x, MvView<const double> y, double* g,
                               std::int64_t ldg) {
  queue().gram_deferred(x, y, g, ldg);
  queue().fetch();
}

void DistributedDenseOps::column_dots(MvView<const double> x, MvView<const double> y,
                                      double* out) {
  queue().column_dots_deferred(x, y, out);
  queue().fetch();
}

void DistributedDenseOps::column_norms(MvView<const double> x, double* out) {
  column_dots(x, x, out);
  for (std::int64_t j = 0; j < x.cols; ++j) out[j] = std::sqrt(std::max(out[j], 0.0));
}

void DistributedDenseOps::Queue::fetch() {
  local_.fetch();
  d_.release_scratch();
}

std::uint64_t DistributedDenseOps::Queue::fetch_async() {
  const std::uint64_t t = local_.fetch_async();
  // The queued copies read the scratch in stream order, before anything queued after them
  // writes it again; outgrown chunks are kept until then.
  d_.arena_used_ = 0;
  return t;
}

}  // namespace tcsolve
