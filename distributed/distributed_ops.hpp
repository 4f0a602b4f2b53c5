// DenseBlockOps over a row-distributed block (after Anasazi's distributed MultiVecTraits): every
// tall block is this rank's rows, every small matrix is replicated. The wrapped ops of the
// rank's backend do all the arithmetic; this class adds one all-reduce wherever a result sums
// over rows:
//   gram_into, column_dots_into, cg().cg_residual_update's (and its Jacobi twin's) G, the squared
//   norms under chebyshev().residual_norms_into / normalize_columns / column_norms, the deferred
//   host products (queue().gram_deferred, column_dots_deferred: formed in a backend scratch,
//   all-reduced, then downloaded, so a fetch still costs one host round trip).
// Each part of the interface (queue(), small(), cg(), chebyshev()) is wrapped by a class of its
// own here that forwards to the local part and adds the reductions.
// On the GPU the all-reduce is NCCL on the ops' stream, in stream order: an iteration still
// queues without host synchronization. On the CPU it is MPI_Allreduce. The small dense problems
// (small(): eigh_small, pip_factor, spd_factor/solve) run redundantly on every rank on identical reduced
// inputs, so every rank takes the same decisions and no rank waits for another.
// Everything else (gemm, copies, fused passes) is local; block CG's fp32 passes are not offered. fill_random numbers rows globally, so the
// random blocks equal the single-process ones row for row.
// Bytes over the network per reduction: 8·p·q per rank (NCCL ring: 2·(P−1)/P of that each way).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/comm.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve {

class DistributedDenseOps final : public DenseBlockOps {
 public:
  // local: this rank's backend ops; rows [row0, row0 + local_rows) of global_rows.
  DistributedDenseOps(std::unique_ptr<DenseBlockOps> local, Communicator& comm, std::int64_t row0,
                      std::int64_t local_rows, std::int64_t global_rows);
  ~DistributedDenseOps() override;

  void reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef) override {
    local_->reserve(rows, cols, coef);
  }
  void gram(MvView<const double> x, MvView<const double> y, double* g, std::int64_t ldg) override;
  void gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc, double beta,
            MvView<double> y) override {
    local_->gemm(alpha, x, c, ldc, beta, y);
  }
  void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm, std::int64_t r) override {
    local_->multiply_inplace(x, m, ldm, r);
  }
  void copy(MvView<const double> x, MvView<double> y) override { local_->copy(x, y); }
  void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                      MvView<double> y) override {
    local_->gather_columns(x, idx, count, y);
  }
  void axpby_columns(const double* a, MvView<const double> x, const double* b,
                     MvView<double> y) override {
    local_->axpby_columns(a, x, b, y);
  }
  void scale_rows(const double* d, MvView<const double> x, MvView<double> y) override {
    local_->scale_rows(d, x, y);
  }
  void column_norms(MvView<const double> x, double* out) override;
  void column_dots(MvView<const double> x, MvView<const double> y, double* out) override;
  void fill_random_rows(MvView<double> x, std::uint64_t seed, std::int64_t row0) override {
    local_->fill_random_rows(x, seed, row0 + row0_);
  }
  void fill_zero(MvView<double> x) override { local_->fill_zero(x); }
  void to_host(MvView<const double> x, double* host, std::int64_t ldh) override {
    local_->to_host(x, host, ldh);
  }
  void from_host(const double* host, std::int64_t ldh, MvView<double> x) override {
    local_->from_host(host, ldh, x);
  }
  void synchronize() override { local_->synchronize(); }

  void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                 MvView<double> g) override;
  void gemm_into(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                 MvView<double> y) override {
    local_->gemm_into(alpha, x, c, beta, y);
  }
  void sqrt_elements(MvView<double> v) override { local_->sqrt_elements(v); }
  void scale_columns_inverse(MvView<const double> d, MvView<double> x) override {
    local_->scale_columns_inverse(d, x);
  }
  void column_dots_into(MvView<const double> x, MvView<const double> y,
                        MvView<double> out) override;
  void normalize_columns(MvView<double> x, MvView<double> norms) override;
  std::int64_t global_rows(std::int64_t local_rows) const override {
    return local_rows == local_rows_ ? global_rows_ : local_rows;
  }
  double global_min(double v) override { return -comm_.allreduce_max(-v); }

  std::int64_t reductions() const { return reductions_; }
  std::int64_t reduced_doubles() const { return reduced_doubles_; }
  // TCSOLVE_COMM_PROFILE=1 (distributed_operator.hpp): seconds in the all-reduces, each timed
  // between two synchronizations of the stream.
  double reduce_seconds() const { return reduce_seconds_; }

 private:
  // Sum of a small backend block over the ranks, in place (any leading dimension).
  void reduce(MvView<double> g);
  // A p × q backend block (ld = p) valid until the next fetch()/fetch_async().
  MvView<double> scratch(std::int64_t p, std::int64_t q);
  void release_scratch();

  // The wrapped parts (distributed_ops.cpp).
  class Queue;
  class Small;
  class Cg;
  class Chebyshev;

  std::unique_ptr<DenseBlockOps> local_;
  Communicator& comm_;
  std::int64_t row0_, local_rows_, global_rows_;
  std::vector<MultiVector<double>> arena_;  // arena_.back() is the current chunk
  std::int64_t arena_used_ = 0;
  std::vector<MultiVector<double>> retired_;  // outgrown chunks, freed at the next fetch
  std::int64_t reductions_ = 0, reduced_doubles_ = 0;
  bool profile_ = false;
  double reduce_seconds_ = 0.0;
  std::unique_ptr<Queue> queue_impl_;
  std::unique_ptr<Small> small_impl_;
  std::unique_ptr<Cg> cg_impl_;
  std::unique_ptr<Chebyshev> chebyshev_impl_;
};

}  // namespace tcsolve
