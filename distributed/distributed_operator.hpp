// A = the sum over ranks of their row blocks, applied to a row-distributed block: this rank's
// Y_r = A(rows_r, :)·X with X distributed like Y (distributed/partition.hpp).
//
// apply(X_r, Y_r), k columns (in chunks of at most max_cols, the width the buffers were sized for):
//   pack      S_p = X_r(send_rows_p, :) for each peer p        reads/writes 8·k·Σ send rows
//   exchange  S_p → p, H_p ← p (NCCL on the GPU, MPI on the CPU), started, not waited for
//   interior  Y_r = A_int·X_r                                  the bulk: A_int and X_r, Y_r once
//   wait      (GPU: the stream waits for the exchange's event; the host does not)
//   boundary  Y_r(boundary_rows_p, :) += B_p·H_p              small: the halo rows only
// so the interior product overlaps the exchange. Every rank must call apply with the same k.
// Traffic per apply: the single-GPU SpMM on the local rows, plus 16·k bytes per halo row
// (packed and sent, received and read) and 16·k per boundary row (Y read and written).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/multivector.hpp"
#include "core/operator.hpp"
#include "distributed/comm.hpp"
#include "distributed/partition.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve {

struct DistributedOperatorStats {
  std::int64_t applies = 0;
  std::int64_t halo_doubles_received = 0;  // summed over applies (this rank)
  // Profiling (TCSOLVE_COMM_PROFILE=1): the device is synchronized around each exchange, which is
  // then not overlapped; seconds of pack + exchange, measured on the host.
  double exchange_seconds = 0.0;
};

// TCSOLVE_COMM_PROFILE=1 in the environment: time communication with host synchronizations
// around it (distributed_operator and distributed_ops); slows the run, for the benchmark only.
bool comm_profiling();

class DistributedOperator final : public LinearOperator<double> {
 public:
  // `interior_options` builds the interior SpMM (kernel choice, stream, expected columns); the
  // boundary rows are added by distributed/row_copy's kernels on the same stream. Buffers for
  // max_cols columns.
  DistributedOperator(LocalParts parts, Communicator& comm, Backend backend,
                      const OperatorOptions& interior_options, std::int64_t max_cols);
  ~DistributedOperator() override;

  std::int64_t rows() const override { return parts_.interior.nrows; }
  std::int64_t cols() const override { return parts_.interior.nrows; }
  Space space() const override { return space_; }
  void apply(MvView<const double> x, MvView<double> y) const override;

  const LocalParts& parts() const { return parts_; }
  const SparseOperator& interior() const { return *interior_; }
  const DistributedOperatorStats& stats() const { return stats_; }
  // The Chebyshev filter's fused step (spmm/chebyshev_step.hpp) over this operator, fp64 and the
  // fp32 rung: the interior rows through the fused kernel on the rank's own copy of the interior
  // (12·nnz bytes more on the device), the boundary products added as in apply(). Valid while
  // this lives.
  std::unique_ptr<ChebyshevStep> make_fused_step() const;
  // The exchange loop shared by apply() and the fused steps (T = double, or float for the fp32
  // rung): for column chunks [c0, c0 + kc) of X: pack and start the exchange of X's chunk,
  // interior(c0, kc), wait, then Y(boundary rows, chunk) += scale·(B_p·halo_p) for every peer.
  // A non-owning reference to the caller's interior step (no allocation per apply, as a
  // std::function holding a capturing lambda would make).
  struct InteriorStep {
    template <class F>
    InteriorStep(const F& f)  // NOLINT: implicit from any callable (c0, kc)
        : ctx(&f), call([](const void* c, std::int64_t c0, std::int64_t kc) {
            (*static_cast<const F*>(c))(c0, kc);
          }) {}
    void operator()(std::int64_t c0, std::int64_t kc) const { call(ctx, c0, kc); }
    const void* ctx;
    void (*call)(const void*, std::int64_t, std::int64_t);
  };
  template <class T>
  void run(MvView<const T> x, double scale, MvView<T> y, InteriorStep interior) const;
  // "rank 1 of 2: rows 4000000..7999999 (4000000), halo 40000 rows from 1 peer, sends 40000"
  std::string describe(int rank) const;

 private:
  struct PeerBuffers;
  LocalParts parts_;
  Communicator& comm_;
  Space space_;
  void* stream_;
  std::int64_t max_cols_;
  std::unique_ptr<SparseOperator> interior_;
  mutable std::vector<PeerBuffers> peers_;  // buffers written by apply()
  mutable std::vector<Transfer> sends_, recvs_;  // one exchange's messages (sized once)
  mutable DistributedOperatorStats stats_;
  bool profile_ = false;
};

}  // namespace tcsolve
