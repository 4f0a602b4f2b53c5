#include "distributed/distributed_operator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/error.hpp"
#include "distributed/row_copy.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve {

struct DistributedOperator::PeerBuffers {
  int rank = 0;
  std::int64_t nsend = 0, halo = 0, nbnd = 0;
  MultiVector<std::int32_t> send_rows, boundary_rows;  // in the operator's space
  MultiVector<double> send, recv, prod;  // nsend × max_cols, halo × max_cols, nbnd × max_cols
  std::unique_ptr<SparseOperator> boundary;
};

bool comm_profiling() {
  const char* v = std::getenv("TCSOLVE_COMM_PROFILE");
  return v && *v && *v != '0';
}

namespace {
double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
MultiVector<std::int32_t> upload(const std::vector<std::int32_t>& v, Space space) {
  MultiVector<std::int32_t> out(static_cast<std::int64_t>(v.size()), 1, space);
  if (!v.empty()) copy_bytes(out.data(), space, v.data(), Space::host, v.size() * sizeof(std::int32_t));
  return out;
}
}  // namespace

DistributedOperator::DistributedOperator(LocalParts parts, Communicator& comm, Backend backend,
                                         const OperatorOptions& interior_options,
                                         std::int64_t max_cols)
    : parts_(std::move(parts)),
      comm_(comm),
      space_(backend == Backend::cuda ? Space::device : Space::host),
      stream_(interior_options.stream),
      max_cols_(std::max<std::int64_t>(max_cols, 1)),
      profile_(comm_profiling()) {
  if (parts_.interior.nrows == 0)
    throw InvalidArgument("rank " + std::to_string(comm_.rank()) +
                          " owns no rows: use fewer ranks than rows");
  if (space_ == Space::device && comm_.size() > 1 && !comm_.device_enabled())
    throw InvalidArgument("distributed operator on the GPU: the communicator has no NCCL channel");
  interior_ = make_sparse_operator(parts_.interior, backend, interior_options);
  OperatorOptions bopt;
  bopt.stream = stream_;
  bopt.expected_cols = interior_options.expected_cols;
  bopt.plan_by_trial = false;
  for (const HaloPeer& hp : parts_.peers) {
    PeerBuffers b;
    b.rank = hp.rank;
    b.nsend = static_cast<std::int64_t>(hp.send_rows.size());
    b.halo = hp.halo;
    b.nbnd = hp.boundary.nrows;
    b.send_rows = upload(hp.send_rows, space_);
    b.boundary_rows = upload(hp.boundary_rows, space_);
    b.send = MultiVector<double>(b.nsend, max_cols_, space_);
    b.recv = MultiVector<double>(b.halo, max_cols_, space_);
    b.prod = MultiVector<double>(b.nbnd, max_cols_, space_);
    if (b.halo > 0 && b.nbnd > 0) b.boundary = make_sparse_operator(hp.boundary, backend, bopt);
    peers_.push_back(std::move(b));
  }
}

DistributedOperator::~DistributedOperator() = default;

void DistributedOperator::run(MvView<const double> x, std::int64_t first_col, std::int64_t cols,
                              double scale, MvView<double> y,
                              const std::function<void(std::int64_t, std::int64_t)>& interior) const {
  std::vector<Transfer> sends, recvs;
  sends.reserve(peers_.size()), recvs.reserve(peers_.size());
  for (std::int64_t c0 = first_col; c0 < first_col + cols; c0 += max_cols_) {
    const std::int64_t kc = std::min(max_cols_, first_col + cols - c0);
    auto xc = x.columns(c0, kc);
    auto yc = y.columns(c0, kc);
    sends.clear(), recvs.clear();
    double t0 = 0.0;
    if (profile_) {
      if (space_ == Space::device) device_synchronize();
      t0 = wall();
    }
    // Packed buffers hold kc columns contiguously (ld = their row count).
    for (auto& p : peers_) {
      if (p.nsend > 0) {
        MvView<double> s{p.send.data(), p.nsend, kc, p.nsend, space_};
        gather_rows(p.send_rows.data(), xc, s, stream_);
        sends.push_back({p.rank, p.send.data(), p.nsend * kc});
      }
      if (p.halo > 0) recvs.push_back({p.rank, p.recv.data(), p.halo * kc});
    }
    comm_.exchange_start(sends, recvs, space_, stream_);
    if (profile_) {  // not overlapped: the exchange alone
      comm_.exchange_wait(stream_);
      if (space_ == Space::device) device_synchronize();
      stats_.exchange_seconds += wall() - t0;
    }
    interior(c0, kc);
    if (!profile_) comm_.exchange_wait(stream_);
    for (auto& p : peers_) {
      if (!p.boundary) continue;
      MvView<const double> h{p.recv.data(), p.halo, kc, p.halo, space_};
      MvView<double> t{p.prod.data(), p.nbnd, kc, p.nbnd, space_};
      p.boundary->apply(h, t);
      scatter_add_rows(p.boundary_rows.data(), scale, t, yc, stream_);
      stats_.halo_doubles_received += p.halo * kc;
    }
  }
  ++stats_.applies;
}

void DistributedOperator::apply(MvView<const double> x, MvView<double> y) const {
  TCSOLVE_REQUIRE(x.rows == rows() && y.rows == rows() && x.cols == y.cols,
                  "distributed apply: shapes");
  run(x, 0, x.cols, 1.0, y, [&](std::int64_t c0, std::int64_t kc) {
    interior_->apply(x.columns(c0, kc), y.columns(c0, kc));
  });
}

namespace {

// The filter step Y' = a·A·Y + b·Y + c·Y' with A distributed: the interior's fused step (one pass
// over the rank's rows) while the halo moves, then a·(boundary product) added into the boundary
// rows. fp64 only: the fp32 rung needs fp32 halo products (not built).
class DistributedChebyshevStep final : public ChebyshevStep {
 public:
  DistributedChebyshevStep(const DistributedOperator& op, std::unique_ptr<ChebyshevStep> inner)
      : op_(op), inner_(std::move(inner)) {}
  Space space() const override { return op_.space(); }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    if (d) throw InvalidArgument("distributed Chebyshev step: row scales are not supported");
    TCSOLVE_REQUIRE(cur.rows == op_.rows() && next.rows == op_.rows() && cur.cols == next.cols,
                    "distributed Chebyshev step: shapes");
    op_.run(cur, 0, cur.cols, a, next, [&](std::int64_t c0, std::int64_t kc) {
      inner_->step(a, cur.columns(c0, kc), b, c, next.columns(c0, kc), e, r.columns(c0, kc), nullptr);
    });
  }
  std::string describe() const override { return "distributed (interior: " + inner_->describe() + ")"; }
  void residual32(double, MvView<const double>, MvView<const double>, const double*, double,
                  MvView<float>, MvView<float>) const override {
    throw InvalidArgument("distributed Chebyshev step: no fp32 rung");
  }
  void step32(double, MvView<const float>, double, double, MvView<float>, MvView<const float>,
              const double*) const override {
    throw InvalidArgument("distributed Chebyshev step: no fp32 rung");
  }
  void combine32(MvView<const double>, const double*, MvView<const float>,
                 MvView<double>) const override {
    throw InvalidArgument("distributed Chebyshev step: no fp32 rung");
  }

 private:
  const DistributedOperator& op_;
  std::unique_ptr<ChebyshevStep> inner_;
};

}  // namespace

std::unique_ptr<ChebyshevStep> DistributedOperator::make_fused_step() const {
  const Backend backend = space_ == Space::device ? Backend::cuda : Backend::cpu;
  return std::make_unique<DistributedChebyshevStep>(
      *this, make_chebyshev_step(parts_.interior, backend, Precision::fp64, stream_));
}

std::string DistributedOperator::describe(int rank) const {
  const std::int64_t r0 = parts_.row0, nl = rows();
  return "rank " + std::to_string(rank) + ": rows " + std::to_string(r0) + ".." +
         std::to_string(r0 + nl - 1) + " (" + std::to_string(nl) + "), halo " +
         std::to_string(parts_.halo_rows()) + " rows from " + std::to_string(peers_.size()) +
         (peers_.size() == 1 ? " peer" : " peers") + ", sends " +
         std::to_string(parts_.send_rows());
}

}  // namespace tcsolve
