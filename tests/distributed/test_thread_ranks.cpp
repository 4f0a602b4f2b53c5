// Ranks that are threads of one process (distributed/thread_ranks.hpp): every collective on 1, 2
// and 3 rank threads (bitwise equal reductions on every rank), point to point and exchanges, a
// failing rank that must end the others' waits (each test under a watchdog: a hang fails, it does
// not block CI), and the distributed solvers on rank threads against one process.
// TCSOLVE_TEST_BACKEND_CUDA: the solvers on 2 GPUs, one per rank thread, NCCL between them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/device.hpp"
#include "core/parallel.hpp"
#include "distributed/thread_ranks.hpp"
#include "io/generators.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev.hpp"
#include "tests/distributed/distributed_test_util.hpp"

namespace tcsolve {
namespace {

using test::kBackend;

// Ends the process when a test runs past `seconds` (a hang is a failure, never a stuck CI job).
class Watchdog {
 public:
  explicit Watchdog(double seconds) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lk(mu_);
      if (!cv_.wait_for(lk, std::chrono::duration<double>(seconds), [this] { return done_; })) {
        std::fprintf(stderr, "FAIL: %s hung (watchdog)\n",
                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::fflush(stderr);
        std::_Exit(3);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// The GPU of this rank thread and NCCL between the ranks (GPU tests), nothing on the CPU. async:
// NCCL started on a thread of its own (Communicator::start_device), the first device collective
// waiting for it, as `--gpus N` does.
void start_device(Communicator& comm, bool async = false) {
  if (kBackend == Backend::cuda && comm.size() > 1) {
    if (async) comm.start_device(select_local_gpu(comm));
    else comm.enable_device(select_local_gpu(comm));
  } else if (kBackend == Backend::cuda) {
    use_gpu(select_local_gpu(comm));
  }
}

class ThreadRanks : public ::testing::TestWithParam<int> {};

TEST_P(ThreadRanks, HostCollectives) {
  Watchdog dog(60);
  const int np = GetParam();
  std::vector<std::vector<double>> sums(np);
  run_thread_ranks(np, [&](Communicator& c) {
    const int me = c.rank();
    EXPECT_EQ(c.size(), np);
    EXPECT_TRUE(c.ranks_are_threads());
    EXPECT_EQ(local_rank(c), me);
    EXPECT_EQ(local_size(c), np);
    EXPECT_NE(c.describe().find(std::to_string(np) + " threads of one process"), std::string::npos);
    // Sums of values that round differently in other orders: every rank the same bits.
    std::vector<double> x(1000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = random_entry(me + 1, static_cast<std::int64_t>(i), 0) * 1e3;
    c.allreduce_sum(x.data(), static_cast<std::int64_t>(x.size()), Space::host, nullptr);
    sums[me] = x;
    double ref = 0;
    for (int r = 0; r < np; ++r) ref += random_entry(r + 1, 17, 0) * 1e3;
    EXPECT_DOUBLE_EQ(x[17], ref);
    EXPECT_EQ(c.allreduce_max(me == np - 1 ? 5.5 : -1.0 * me), 5.5);
    EXPECT_EQ(c.allreduce_sum_int(me + 1), np * (np + 1) / 2);
    const std::vector<std::int64_t> all = c.allgather(10 * me);
    ASSERT_EQ(static_cast<int>(all.size()), np);
    for (int r = 0; r < np; ++r) EXPECT_EQ(all[r], 10 * r);
    std::vector<std::vector<std::int64_t>> to(np);
    for (int q = 0; q < np; ++q)
      for (int i = 0; i <= q; ++i) to[q].push_back(100 * me + 10 * q + i);
    const auto got = c.alltoall_lists(to);
    for (int r = 0; r < np; ++r) {
      ASSERT_EQ(static_cast<int>(got[r].size()), me + 1);
      for (int i = 0; i <= me; ++i) EXPECT_EQ(got[r][i], 100 * r + 10 * me + i);
    }
    const std::vector<double> g = c.gather_to_root(std::vector<double>(me + 1, me));
    EXPECT_EQ(g.size(), me == 0 ? static_cast<std::size_t>(np * (np + 1) / 2) : 0u);
    if (me == 0 && np > 1) {
      EXPECT_EQ(g.back(), np - 1);
    }
    const std::vector<std::string> s = c.gather_strings_to_root(std::string(me, 'x') + "|");
    for (int r = 0; me == 0 && r < np; ++r) EXPECT_EQ(s[r], std::string(r, 'x') + "|");
    std::string b = me == np - 1 ? std::string("from the last rank\0 with a zero", 31) : "stale";
    c.broadcast(b, np - 1);
    EXPECT_EQ(b, std::string("from the last rank\0 with a zero", 31));
    c.barrier();
    EXPECT_GE(c.host_comm_seconds(), 0.0);
  });
  for (int r = 1; r < np; ++r) EXPECT_EQ(std::memcmp(sums[r].data(), sums[0].data(), 8 * sums[0].size()), 0);
}

// Rank 0 scatters (as a job's rank 0 sends rows), the others answer; then a host exchange with
// every peer: two messages per pair (fp64 and fp32), kept in order, overlapped with other work.
TEST_P(ThreadRanks, PointToPointAndExchanges) {
  Watchdog dog(60);
  const int np = GetParam();
  run_thread_ranks(np, [&](Communicator& c) {
    const int me = c.rank();
    const std::int64_t big = 3 << 20;  // bytes
    if (me == 0) {
      for (int q = 1; q < np; ++q) {
        std::vector<char> out(big, static_cast<char>(q));
        c.send_bytes(q, out.data(), big);
      }
      for (int q = 1; q < np; ++q) {
        std::int64_t back = 0;
        c.recv_bytes(q, &back, 8);
        EXPECT_EQ(back, big * q);
      }
    } else {
      std::vector<char> in(big, 0);
      c.recv_bytes(0, in.data(), big);
      std::int64_t sum = 0;
      for (char v : in) sum += v;
      c.send_bytes(0, &sum, 8);
    }
    EXPECT_THROW(c.send_bytes(me, &me, 4), InvalidArgument);
    for (int round = 0; round < 3; ++round) {
      std::vector<std::vector<double>> sd(np), rd(np);
      std::vector<std::vector<float>> sf(np), rf(np);
      std::vector<Transfer> sends, recvs;
      for (int q = 0; q < np; ++q) {
        if (q == me) continue;
        sd[q].assign(5 + q, 1000.0 * me + q + round), rd[q].assign(5 + me, -1.0);
        sf[q].assign(3, 0.5f * me + round), rf[q].assign(3, -1.0f);
        sends.push_back({q, sd[q].data(), static_cast<std::int64_t>(sd[q].size()), false});
        sends.push_back({q, sf[q].data(), 3, true});
        recvs.push_back({q, rd[q].data(), static_cast<std::int64_t>(rd[q].size()), false});
        recvs.push_back({q, rf[q].data(), 3, true});
      }
      c.exchange_start(sends, recvs, Space::host, nullptr);
      c.exchange_wait(nullptr);
      for (int q = 0; q < np; ++q) {
        if (q == me) continue;
        for (double v : rd[q]) EXPECT_EQ(v, 1000.0 * q + me + round);
        for (float v : rf[q]) EXPECT_EQ(v, 0.5f * q + round);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadRanks, ::testing::Values(1, 2, 3));

// A rank that throws ends the others' waits in every kind of call; its own error comes back.
TEST(ThreadRanksFailure, TheFirstErrorEndsEveryWait) {
  Watchdog dog(60);
  for (int where = 0; where < 5; ++where) {
    try {
      run_thread_ranks(3, [&](Communicator& c) {
        if (c.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          throw InvalidArgument("rank 1's rows are bad");
        }
        if (where == 0) c.barrier();
        if (where == 1) {
          double v = 1;
          c.allreduce_sum(&v, 1, Space::host, nullptr);
        }
        if (where == 2) {  // waits for a message rank 1 never sends
          char b[4];
          c.recv_bytes(1, b, 4);
        }
        if (where == 3) {  // waits for rank 1 to read
          const char b[4] = {};
          c.send_bytes(1, b, 4);
        }
        if (where == 4) {
          double x = 1, y = 0;
          c.exchange_start({{1, &x, 1, false}}, {{1, &y, 1, false}}, Space::host, nullptr);
          c.exchange_wait(nullptr);
        }
        c.barrier();  // never passed
        ADD_FAILURE() << "rank " << c.rank() << " passed a collective of a failed group";
      });
      ADD_FAILURE() << "no error came back";
    } catch (const InvalidArgument& e) {
      EXPECT_STREQ(e.what(), "rank 1's rows are bad");
    }
  }
}

TEST(ThreadRanksFailure, AbortAndMismatchedSizes) {
  Watchdog dog(60);
  try {
    run_thread_ranks(2, [](Communicator& c) {
      if (c.rank() == 0) c.abort(7);
      c.barrier();
    });
    ADD_FAILURE() << "abort came back";
  } catch (const RankAborted& e) {
    EXPECT_EQ(e.code(), 7);
  }
  try {
    run_thread_ranks(2, [](Communicator& c) {
      std::int64_t v[2] = {1, 2};
      if (c.rank() == 0) c.send_bytes(1, v, 8);
      else c.recv_bytes(0, v, 16);
    });
    ADD_FAILURE() << "the size mismatch went unnoticed";
  } catch (const RankAborted&) {
    ADD_FAILURE() << "the poisoned rank's error came back instead of the receiver's";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 16 bytes"), std::string::npos) << e.what();
  }
}

// A rank that does not come back (a device wait on a peer that is gone): the caller's decision
// after the grace period, then the wait goes on and the first error still comes back.
TEST(ThreadRanksFailure, StuckRankIsTheCallersDecision) {
  Watchdog dog(60);
  std::atomic<int> told{0};
  try {
    run_thread_ranks(
        2,
        [](Communicator& c) {
          if (c.rank() == 1) throw InvalidArgument("gone");
          std::this_thread::sleep_for(std::chrono::milliseconds(800));  // not in a collective
        },
        0.2, [&](std::exception_ptr e) {
          ++told;
          EXPECT_THROW(std::rethrow_exception(e), InvalidArgument);
        });
    ADD_FAILURE() << "no error came back";
  } catch (const InvalidArgument&) {
  }
  EXPECT_EQ(told.load(), 1);
}

// The distributed solvers on rank threads: block CG and Chebyshev give one process's answers
// (solutions to the tolerance, eigenvalues to 1e-12 relative). GPU build: two GPUs, NCCL.
// body(rank's share of A, its communicator) on np rank threads (skipped without np GPUs in the
// GPU build), each with its share of the host's CPUs and its GPU.
template <class Body>
void on_rank_threads(int np, const Csr<double>& a, std::int64_t max_cols, Body body, bool async_start = false) {
  if (kBackend == Backend::cuda && device_count() < np) return;
  run_thread_ranks(np, [&](Communicator& c) {
    HostShare pool(std::max(1, host_threads() / np));
    start_device(c, async_start);
    test::Share d = test::distribute(a, RowPartition::even(a.nrows, np), max_cols, c);
    body(d, c);
  });
}

TEST(ThreadRanksSolvers, BlockCgEqualsOneProcess) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Watchdog dog(240);
  const Csr<double> a = test::random_spd(1500, 4, 9);
  const std::int64_t n = a.nrows, s = 5;
  const test::Whole w = test::whole(a);
  CgOptions co;
  co.tol = 1e-10;
  co.apply_order = ApplyOrder::same_stream;
  const SolveResult ref = block_cg_random(*w.op, 21, s, *w.ops, co, true);
  ASSERT_EQ(ref.status, SolverStatus::converged);
  for (int np : {2, 3}) {
    on_rank_threads(np, a, s, [&](test::Share& d, Communicator& c) {
      const SolveResult r = block_cg_random(*d.op, 21, s, *d.ops, co, true);
      EXPECT_EQ(r.status, SolverStatus::converged);
      EXPECT_NEAR(static_cast<double>(r.iterations), static_cast<double>(ref.iterations), 1.0);
      EXPECT_LT(test::rows_error(r.solutions, ref.solutions, d, n, s), 1e-8) << np << " ranks, rank " << c.rank();
    });
  }
}

TEST(ThreadRanksSolvers, ChebyshevEqualsOneProcess) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Watchdog dog(240);
  const Csr<double> a = test::laplacian(37, 29);
  const std::int64_t k = 6;
  const test::Whole whole = test::whole(a);
  for (Which w : {Which::largest, Which::smallest}) {
    EigenOptions eo;
    eo.k = k, eo.which = w, eo.tol = 1e-10;
    ChebyshevOptions co;
    co.apply_order = ApplyOrder::same_stream;
    const EigenResult ref = chebyshev_subspace(*whole.op, *whole.ops, eo, co);
    ASSERT_EQ(ref.status, SolverStatus::converged);
    for (int np : {2, 3}) {
      on_rank_threads(np, a, 16, [&](test::Share& d, Communicator& c) {
        auto step = d.op->make_fused_step();
        ChebyshevOptions cf = co;
        cf.fused_step = step.get();
        const EigenResult r = chebyshev_subspace(*d.op, *d.ops, eo, cf);
        ASSERT_EQ(r.status, SolverStatus::converged);
        ASSERT_EQ(r.values.size(), static_cast<std::size_t>(k));
        for (std::int64_t j = 0; j < k; ++j)
          EXPECT_NEAR(r.values[j], ref.values[j], 1e-12 * std::abs(ref.values[j])) << np << " ranks, rank " << c.rank();
      }, /*async_start=*/true);
    }
  }
}

}  // namespace
}  // namespace tcsolve
