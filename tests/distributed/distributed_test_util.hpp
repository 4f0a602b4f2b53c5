// Shared by the distributed tests (test_distributed.cpp under mpirun, test_thread_ranks.cpp on rank
// threads): test matrices and one rank's share of a problem over a given communicator.
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "distributed/comm.hpp"
#include "distributed/distributed_operator.hpp"
#include "distributed/distributed_ops.hpp"
#include "distributed/partition.hpp"
#include "solvers/random.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {

// Rows [r0, r1) of a, global columns.
inline Csr<double> rows_of(const Csr<double>& a, std::int64_t r0, std::int64_t r1) {
  Csr<double> s;
  s.nrows = r1 - r0;
  s.ncols = a.ncols;
  s.row_ptr.assign(1, 0);
  for (std::int64_t i = r0; i < r1; ++i) {
    for (std::int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
      s.col_idx.push_back(a.col_idx[e]), s.values.push_back(a.values[e]);
    s.row_ptr.push_back(static_cast<std::int64_t>(s.col_idx.size()));
  }
  return s;
}

// Random symmetric matrix with a dominant diagonal (SPD), entries far from the diagonal too, so
// that every rank has halo rows from every other.
inline Csr<double> random_spd(std::int64_t n, int per_row, std::uint64_t seed) {
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i) {
    double off = 0.0;
    for (int q = 0; q < per_row; ++q) {
      const std::int64_t j = static_cast<std::int64_t>(
          (random_entry(seed, i, q) * 0.5 + 0.5) * static_cast<double>(n)) % n;
      if (j == i) continue;
      const double v = random_entry(seed + 1, i, q);
      t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), v});
      t.push_back({static_cast<std::int32_t>(j), static_cast<std::int32_t>(i), v});
      off += std::abs(v);
    }
  }
  // Diagonal: more than the largest possible off-diagonal row sum (2·per_row).
  for (std::int64_t i = 0; i < n; ++i)
    t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i),
                 2.0 * per_row + 1.0 + random_entry(seed + 2, i, 0)});
  Csr<double> a = csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
  return a;
}

// One rank's share of the problem, ready for the solvers.
struct Share {
  RowPartition part;
  std::unique_ptr<DistributedOperator> op;
  std::unique_ptr<DistributedDenseOps> ops;
  std::int64_t r0 = 0, nl = 0;
};

inline Share distribute(const Csr<double>& a, RowPartition part, std::int64_t max_cols, Communicator& comm) {
  Share s;
  s.part = std::move(part);
  const int me = comm.rank();
  s.r0 = s.part.starts[me], s.nl = s.part.rows(me);
  LocalParts lp = build_local_parts(rows_of(a, s.r0, s.r0 + s.nl), s.part, comm);
  auto local = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = local->stream();
  oo.expected_cols = static_cast<int>(max_cols);
  oo.plan_by_trial = false;
  s.op = std::make_unique<DistributedOperator>(std::move(lp), comm, kBackend, oo, max_cols);
  s.ops = std::make_unique<DistributedDenseOps>(std::move(local), comm, s.r0, s.nl, a.nrows);
  return s;
}

// The single-process reference on the backend under test: dense ops and A's operator on their
// stream (no plan trial).
struct Whole {
  std::unique_ptr<DenseBlockOps> ops;
  std::unique_ptr<LinearOperator<double>> op;
};
inline Whole whole(const Csr<double>& a) {
  Whole w;
  w.ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = w.ops->stream();
  oo.plan_by_trial = false;
  w.op = make_sparse_operator(a, kBackend, oo);
  return w;
}

// max |x − ref| over this rank's rows of s columns (x: nl × s, ref: the whole n × s), relative to
// max(max |ref| there, 1).
inline double rows_error(const std::vector<double>& x, const std::vector<double>& ref, const Share& d,
                         std::int64_t n, std::int64_t s) {
  double err = 0.0, xn = 0.0;
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t i = 0; i < d.nl; ++i) {
      err = std::max(err, std::abs(x[i + j * d.nl] - ref[d.r0 + i + j * n]));
      xn = std::max(xn, std::abs(ref[d.r0 + i + j * n]));
    }
  return err / std::max(xn, 1.0);
}

}  // namespace tcsolve::test
