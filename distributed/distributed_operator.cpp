#include "distributed/distributed_operator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <type_traits>

#include "core/error.hpp"
#include "distributed/row_copy.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve {

struct DistributedOperator::PeerBuffers {
  int rank = 0;
  std::int64_t nsend = 0, halo = 0, nbnd = 0;
  // In the operator's space: the rows to send, and the boundary rows B_p (halo numbering) with
  // the rows of Y they are added to.
  MultiVector<std::int32_t> send_rows, boundary_rows, b_col;
  MultiVector<std::int64_t> b_ptr;
  MultiVector<double> b_val;
  // nsend × max_cols and halo × max_cols doubles (an fp32 exchange uses the first half).
  MultiVector<double> send, recv;
  SparseRows boundary() const {
    return {nbnd, b_ptr.data(), b_col.data(), b_val.data(), boundary_rows.data()};
  }
};

bool comm_profiling() {
  const char* v = std::getenv("TCSOLVE_COMM_PROFILE");
  return v && *v && *v != '0';
}

namespace {
double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
template <class T>
MultiVector<T> upload(const std::vector<T>& v, Space space) {
  MultiVector<T> out(static_cast<std::int64_t>(v.size()), 1, space);
  if (!v.empty()) copy_bytes(out.data(), space, v.data(), Space::host, v.size() * sizeof(T));
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
  for (const HaloPeer& hp : parts_.peers) {
    PeerBuffers b;
    b.rank = hp.rank;
    b.nsend = static_cast<std::int64_t>(hp.send_rows.size());
    b.halo = hp.halo;
    b.nbnd = hp.boundary.nrows;
    b.send_rows = upload(hp.send_rows, space_);
    b.boundary_rows = upload(hp.boundary_rows, space_);
    b.b_ptr = upload(hp.boundary.row_ptr, space_);
    b.b_col = upload(hp.boundary.col_idx, space_);
    b.b_val = upload(hp.boundary.values, space_);
    b.send = MultiVector<double>(b.nsend, max_cols_, space_);
    b.recv = MultiVector<double>(b.halo, max_cols_, space_);
    peers_.push_back(std::move(b));
  }
  sends_.reserve(peers_.size());
  recvs_.reserve(peers_.size());
}

DistributedOperator::~DistributedOperator() = default;

template <class T>
void DistributedOperator::run(MvView<const T> x, double scale, MvView<T> y,
                              InteriorStep interior) const {
  constexpr bool fp32 = std::is_same_v<T, float>;
  std::vector<Transfer>& sends = sends_;
  std::vector<Transfer>& recvs = recvs_;
  for (std::int64_t c0 = 0; c0 < x.cols; c0 += max_cols_) {
    const std::int64_t kc = std::min(max_cols_, x.cols - c0);
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
      T* sb = reinterpret_cast<T*>(p.send.data());
      if (p.nsend > 0) {
        gather_rows<T>(p.send_rows.data(), xc, MvView<T>{sb, p.nsend, kc, p.nsend, space_}, stream_);
        sends.push_back({p.rank, sb, p.nsend * kc, fp32});
      }
      if (p.halo > 0) recvs.push_back({p.rank, p.recv.data(), p.halo * kc, fp32});
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
      if (p.halo == 0 || p.nbnd == 0) continue;
      MvView<const T> h{reinterpret_cast<const T*>(p.recv.data()), p.halo, kc, p.halo, space_};
      sparse_rows_add<T>(p.boundary(), scale, h, yc, stream_);
      stats_.halo_doubles_received += p.halo * kc;
    }
  }
  ++stats_.applies;
}

template void DistributedOperator::run<double>(MvView<const double>, double, MvView<double>,
                                               InteriorStep) const;
template void DistributedOperator::run<float>(MvView<const float>, double, MvView<float>,
                                              InteriorStep) const;

void DistributedOperator::apply(MvView<const double> x, MvView<double> y) const {
  TCSOLVE_REQUIRE(x.rows == rows() && y.rows == rows() && x.cols == y.cols,
                  "distributed apply: shapes");
  run<double>(x, 1.0, y, [&](std::int64_t c0, std::int64_t kc) {
    interior_->apply(x.columns(c0, kc), y.columns(c0, kc));
  });
}

namespace {

// The filter step Y' = a·A·Y + b·Y + c·Y' with A distributed: the interior's fused step (one pass
// over the rank's rows) while the halo moves, then a·(boundary product) added into the boundary
// rows. The fp32 rung's step32 alike, with an fp32 halo (half the bytes); residual32 and
// combine32 are row by row, the interior step's own.
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
    op_.run<double>(cur, a, next, [&](std::int64_t c0, std::int64_t kc) {
      inner_->step(a, cur.columns(c0, kc), b, c, next.columns(c0, kc), e, r.columns(c0, kc), nullptr);
    });
  }
  std::string describe() const override { return "distributed (interior: " + inner_->describe() + ")"; }
  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    inner_->residual32(s, ax, x, theta, g, r, z);
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    TCSOLVE_REQUIRE(cur.rows == op_.rows() && next.rows == op_.rows() && cur.cols == next.cols,
                    "distributed Chebyshev step: shapes");
    op_.run<float>(cur, a, next, [&](std::int64_t c0, std::int64_t kc) {
      inner_->step32(a, cur.columns(c0, kc), b, c, next.columns(c0, kc),
                     f ? r.columns(c0, kc) : r, f ? f + c0 : nullptr);
    });
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    inner_->combine32(x, q, z, y);
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
