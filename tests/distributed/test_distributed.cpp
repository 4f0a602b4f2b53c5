// The distributed path against the single-process one, run as one process and under mpirun
// with 2 and 3 ranks (tests/distributed/CMakeLists.txt). Every rank builds the whole matrix for
// the reference; the distributed side sees only its rows. TCSOLVE_TEST_BACKEND_CUDA: the same
// tests on the GPU, one GPU per rank, NCCL between them (the device's two-GPU kind).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "core/device.hpp"
#include "core/parallel.hpp"
#include "distributed/affinity.hpp"
#include "distributed/comm.hpp"
#include "distributed/comm_thread.hpp"
#include "distributed/distributed_operator.hpp"
#include "distributed/distributed_ops.hpp"
#include "distributed/partition.hpp"
#include "distributed/row_copy.hpp"
#include "io/generators.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigensolvers.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/distributed/distributed_test_util.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve {
namespace {

Communicator* g_comm = nullptr;
using test::kBackend;
using test::random_spd;
using test::rows_of;
using test::Share;

// blockdiag(A, A): with the partition cut at the block border, a rank can have no halo at all.
Csr<double> block_diagonal(const Csr<double>& a) {
  std::vector<Triplet<double>> t;
  for (int b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < a.nrows; ++i)
      for (std::int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
        t.push_back({static_cast<std::int32_t>(i + b * a.nrows),
                     static_cast<std::int32_t>(a.col_idx[e] + b * a.nrows), a.values[e]});
  return csr_from_triplets<double>(2 * a.nrows, 2 * a.nrows, std::move(t), Symmetry::symmetric);
}

Share distribute(const Csr<double>& a, RowPartition part, std::int64_t max_cols) {
  return test::distribute(a, std::move(part), max_cols, *g_comm);
}

// Partitions to try for n rows: even, and an uneven one (the last rank 3 times the first).
std::vector<RowPartition> partitions(std::int64_t n) {
  const int np = g_comm->size();
  std::vector<RowPartition> out{RowPartition::even(n, np)};
  if (np > 1) {
    std::vector<std::int64_t> st(np + 1, 0);
    std::int64_t w = 0;
    for (int r = 0; r < np; ++r) w += r + 1;
    for (int r = 0; r < np; ++r) st[r + 1] = st[r] + n * (r + 1) / w;
    st[np] = n;
    out.push_back(RowPartition::from_starts(st));
  }
  return out;
}

// The row kernels against plain loops: random rows (not multiples of anything), more than 2^21
// rows (the launch limits), 3 columns with leading dimensions larger than the rows, a NaN-poisoned
// gather output, fp64 exact and fp32 to its rounding.
template <class T>
void check_row_kernels(double tol) {
  const std::int64_t n = (std::int64_t(1) << 21) + 1237, m = 400009, k = 3, ldx = n + 5, ldy = m + 3;
  const Space sp = kBackend == Backend::cuda ? Space::device : Space::host;
  std::vector<std::int32_t> rows(m), out_row(m);
  std::vector<T> x(ldx * k);
  for (std::int64_t i = 0; i < m; ++i)
    rows[i] = static_cast<std::int32_t>((random_entry(3, i, 0) * 0.5 + 0.5) * (n - 1));
  for (std::int64_t i = 0; i < m; ++i) out_row[i] = static_cast<std::int32_t>(i * 5);  // distinct (5·m < n)
  for (std::int64_t e = 0; e < ldx * k; ++e) x[e] = static_cast<T>(random_entry(4, e % ldx, e / ldx));
  // Sparse rows: row i has (i % 4) entries, columns spread over x's rows.
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int32_t> col;
  std::vector<double> val;
  for (std::int64_t i = 0; i < m; ++i) {
    for (int q = 0; q < i % 4; ++q) {
      col.push_back(static_cast<std::int32_t>((random_entry(5, i, q) * 0.5 + 0.5) * (n - 1)));
      val.push_back(random_entry(6, i, q));
    }
    ptr.push_back(static_cast<std::int64_t>(col.size()));
  }
  auto up = [&](const auto& v) {
    using E = typename std::decay_t<decltype(v)>::value_type;
    MultiVector<E> d(static_cast<std::int64_t>(v.size()), 1, sp);
    copy_bytes(d.data(), sp, v.data(), Space::host, v.size() * sizeof(E));
    return d;
  };
  auto dx = up(x), drows = up(rows), dout = up(out_row), dptr = up(ptr), dcol = up(col), dval = up(val);
  std::vector<T> y(ldy * k, std::numeric_limits<T>::quiet_NaN());
  auto dy = up(y);
  auto stream = make_dense_ops(kBackend);
  gather_rows<T>(drows.data(), MvView<const T>{dx.data(), n, k, ldx, sp}, MvView<T>{dy.data(), m, k, ldy, sp},
                 stream->stream());
  stream->synchronize();
  copy_bytes(y.data(), Space::host, dy.data(), sp, y.size() * sizeof(T));
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < m; ++i) ASSERT_EQ(y[i + j * ldy], x[rows[i] + j * ldx]) << i << "," << j;
  // Z(out_row[i], j) += 0.7·Σ val·X(col, j), Z random.
  std::vector<T> z(ldx * k), zref;
  for (std::int64_t e = 0; e < ldx * k; ++e) z[e] = static_cast<T>(random_entry(7, e % ldx, e / ldx));
  zref = z;
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      double acc = 0.0;
      for (std::int64_t e = ptr[i]; e < ptr[i + 1]; ++e) acc += val[e] * static_cast<double>(x[col[e] + j * ldx]);
      zref[out_row[i] + j * ldx] = static_cast<T>(static_cast<double>(zref[out_row[i] + j * ldx]) + 0.7 * acc);
    }
  auto dz = up(z);
  SparseRows sr{m, dptr.data(), dcol.data(), dval.data(), dout.data()};
  sparse_rows_add<T>(sr, 0.7, MvView<const T>{dx.data(), n, k, ldx, sp}, MvView<T>{dz.data(), n, k, ldx, sp},
                     stream->stream());
  stream->synchronize();
  copy_bytes(z.data(), Space::host, dz.data(), sp, z.size() * sizeof(T));
  double err = 0.0;
  for (std::int64_t e = 0; e < ldx * k; ++e)
    if (e % ldx < n) err = std::max(err, std::abs(static_cast<double>(z[e]) - static_cast<double>(zref[e])));
  EXPECT_LE(err, tol);
}

TEST(RowKernels, GatherAndSparseRowsAddMatchPlainLoops) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  check_row_kernels<double>(1e-14);
  check_row_kernels<float>(2e-6);
}

TEST(Partition, EvenAndOwner) {
  RowPartition p = RowPartition::even(10, 3);
  EXPECT_EQ(p.starts, (std::vector<std::int64_t>{0, 4, 7, 10}));
  EXPECT_EQ(p.owner(0), 0);
  EXPECT_EQ(p.owner(3), 0);
  EXPECT_EQ(p.owner(4), 1);
  EXPECT_EQ(p.owner(9), 2);
  EXPECT_THROW(RowPartition::from_starts({0, 5, 3}), InvalidArgument);
}

// Open MPI binds each of ≤ 2 ranks to one core: the rank widens to its slice of the node; a
// binding to a slice or more is kept (bench/distributed/results/h200x2_2026-11-24_binding.txt).
TEST(Affinity, OneCpuBindingWidensToTheRanksSlice) {
  std::vector<int> node(32);
  for (int c = 0; c < 32; ++c) node[c] = c;
  const std::vector<int> upper(node.begin() + 16, node.end()), lower(node.begin(), node.begin() + 16);
  EXPECT_EQ(binding_share({1}, node, 1, 2), upper);
  EXPECT_EQ(binding_share({0}, node, 0, 2), lower);
  EXPECT_TRUE(binding_share(node, node, 0, 2).empty());     // --bind-to none: kept
  EXPECT_TRUE(binding_share(lower, node, 1, 2).empty());    // a slice already: kept
  EXPECT_EQ(binding_share({5}, node, 2, 3).size(), 11u);    // 32 / 3: slices of 10 or 11
  EXPECT_EQ(binding_share({5}, node, 2, 3).front(), 21);
  EXPECT_TRUE(binding_share({0}, {0, 1}, 2, 3).empty());    // more ranks than CPUs: one each
  EXPECT_TRUE(binding_share({0}, node, 2, 2).empty());      // inconsistent launcher data
  // A cgroup's CPUs need not start at 0 or be contiguous.
  EXPECT_EQ(binding_share({9}, {8, 9, 10, 11, 20, 21, 22, 23}, 1, 2), (std::vector<int>{20, 21, 22, 23}));
}

TEST(Affinity, CpuListsParseAndFormat) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list(parse_cpu_list("7")), "7");
  EXPECT_THROW(parse_cpu_list("3-1"), InvalidArgument);
  EXPECT_THROW(parse_cpu_list("0-x"), InvalidArgument);
  // What this rank did: when it widened, its loops use the whole slice.
  if (!launcher_binding_note().empty() &&
      launcher_binding_note().find("refused") == std::string::npos)
    EXPECT_GT(host_threads(), 1) << launcher_binding_note();
}

// The rank's place before MPI_Init: under mpirun it is MPI's own; without a launcher, Slurm's
// variables alone place it, and inconsistent values place nothing.
TEST(Launch, PlaceFromTheEnvironment) {
  const LaunchPlace p = launch_place_from_env();
  if (launched_by_mpi()) {
    ASSERT_TRUE(p.known) << "mpirun's environment should place the rank";
    EXPECT_EQ(p.rank, g_comm->rank());
    EXPECT_EQ(p.size, g_comm->size());
    EXPECT_EQ(p.local_rank, local_rank(*g_comm));
    EXPECT_EQ(p.local_size, local_size(*g_comm));
    return;
  }
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(v)) GTEST_SKIP() << v << " is set by this run's launcher";
  auto set_slurm = [](const char* rank, const char* size, const char* local, const char* nlocal) {
    setenv("SLURM_PROCID", rank, 1), setenv("SLURM_NTASKS", size, 1);
    setenv("SLURM_LOCALID", local, 1), setenv("SLURM_NTASKS_PER_NODE", nlocal, 1);
  };
  set_slurm("5", "8", "1", "4");
  const LaunchPlace q = launch_place_from_env();
  EXPECT_TRUE(q.known);
  EXPECT_EQ(q.rank, 5);
  EXPECT_EQ(q.size, 8);
  EXPECT_EQ(q.local_rank, 1);
  EXPECT_EQ(q.local_size, 4);
  set_slurm("8", "8", "1", "4");  // rank past the size
  EXPECT_FALSE(launch_place_from_env().known);
  set_slurm("5", "8", "4", "4");  // local rank past the local size
  EXPECT_FALSE(launch_place_from_env().known);
  set_slurm("5", "8", "1", "9");  // more ranks on the node than in the job
  EXPECT_FALSE(launch_place_from_env().known);
  set_slurm("5", "8", "1", "");   // one missing
  EXPECT_FALSE(launch_place_from_env().known);
  for (const char* v : {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}) unsetenv(v);
  EXPECT_FALSE(launch_place_from_env().known);
}

// batch's communicator lives on its own thread: made there, every call there, the maker's error
// and a call's error come back to the caller, destroyed there.
TEST(CommunicatorThread, CallsRunOnItsThreadAndErrorsComeBack) {
  struct Probe final : public Communicator {
    explicit Probe(std::thread::id* gone) : gone_(gone) {}
    ~Probe() override { *gone_ = std::this_thread::get_id(); }
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string describe() const override { return "probe"; }
    void allreduce_sum(double*, std::int64_t, Space, void*) override {}
    void exchange_start(const std::vector<Transfer>&, const std::vector<Transfer>&, Space, void*) override {}
    void exchange_wait(void*) override {}
    void barrier() override {}
    double allreduce_max(double v) override { return v; }
    std::int64_t allreduce_sum_int(std::int64_t v) override { return v; }
    std::vector<std::vector<std::int64_t>> alltoall_lists(const std::vector<std::vector<std::int64_t>>& l) override {
      return l;
    }
    std::vector<double> gather_to_root(const std::vector<double>& l) override { return l; }
    std::vector<std::int64_t> allgather(std::int64_t v) override { return {v}; }
    void send_bytes(int, const void*, std::int64_t) override {}
    void recv_bytes(int, void*, std::int64_t) override {}
    std::vector<std::string> gather_strings_to_root(const std::string& l) override { return {l}; }
    void broadcast(std::string&, int) override {}
    void enable_device(int) override {}
    bool device_enabled() const override { return false; }
    [[noreturn]] void abort(int code) override { std::exit(code); }
    double host_comm_seconds() const override { return 0; }
    std::thread::id* gone_;
  };
  std::thread::id made, gone;
  {
    CommunicatorThread t([&] {
      made = std::this_thread::get_id();
      return std::make_unique<Probe>(&gone);
    });
    const std::thread::id ran = t.run([](Communicator& c) {
      EXPECT_EQ(c.describe(), "probe");
      return std::this_thread::get_id();
    });
    EXPECT_EQ(ran, made);
    EXPECT_NE(ran, std::this_thread::get_id());
    for (int i = 0; i < 50; ++i) EXPECT_EQ(t.run([i](Communicator& c) { return c.allreduce_max(i); }), i);
    EXPECT_THROW(t.run([](Communicator&) -> int { throw InvalidArgument("from the call"); }), InvalidArgument);
    EXPECT_EQ(t.run([](Communicator& c) { return c.size(); }), 1);  // still serving
  }
  EXPECT_EQ(gone, made);
  CommunicatorThread broken([]() -> std::unique_ptr<Communicator> { throw NotCompiled("no MPI here"); });
  EXPECT_THROW(broken.run([](Communicator& c) { return c.size(); }), NotCompiled);
  EXPECT_THROW(broken.run([](Communicator& c) { return c.rank(); }), NotCompiled);
}

TEST(Generators, RowsEqualTheWholeMatrixSlice) {
  for (const char* spec : {"gen:lap3d:7", "gen:lap2d:9x5", "gen:band:50:3"}) {
    const Csr<double> a = generate(spec);
    const Csr<double> s = generate_rows(spec, 13, 31);
    const Csr<double> ref = rows_of(a, 13, 31);
    EXPECT_EQ(s.nrows, 18);
    EXPECT_EQ(s.ncols, a.ncols);
    EXPECT_EQ(s.row_ptr, ref.row_ptr) << spec;
    EXPECT_EQ(s.col_idx, ref.col_idx) << spec;
    EXPECT_EQ(s.values, ref.values) << spec;
  }
  EXPECT_EQ(generator_rows("gen:lap3d:7"), 343);
  EXPECT_EQ(generator_rows("gen:band:50:3"), -1);
  EXPECT_THROW(generate_rows("gen:lap3d:7", 10, 400), InvalidArgument);
}

// Y = A·X on the distributed operator equals the whole-matrix product on this rank's rows, for
// column counts below, at and above the operator's buffer width (chunked), with Y poisoned.
TEST(DistributedOperator, MatchesTheWholeProduct) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 1001;
  const Csr<double> a = random_spd(n, 5, 3);
  for (const RowPartition& part : partitions(n)) {
    Share s = distribute(a, part, 4);
    for (std::int64_t k : {1, 4, 11}) {
      std::vector<double> xg(n * k), yref(n * k);
      for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t i = 0; i < n; ++i) xg[i + j * n] = random_entry(77, i, j);
      csr_spmm_reference(a, xg.data(), n, yref.data(), n, static_cast<int>(k));
      MultiVector<double> x = s.ops->allocate(s.nl, k), y = s.ops->allocate(s.nl, k);
      s.ops->fill_random_rows(x.view(), 77, 0);  // global row numbering: equals xg's rows
      std::vector<double> nan(s.nl * k, std::numeric_limits<double>::quiet_NaN());
      s.ops->from_host(nan.data(), s.nl, y.view());
      s.op->apply(x.view(), y.view());
      s.ops->synchronize();
      std::vector<double> yl(s.nl * k);
      s.ops->to_host(y.view(), yl.data(), s.nl);
      double err = 0.0;
      for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t i = 0; i < s.nl; ++i)
          err = std::max(err, std::abs(yl[i + j * s.nl] - yref[s.r0 + i + j * n]));
      EXPECT_LT(err, 1e-12) << "k = " << k << ", rank " << g_comm->rank();
    }
    EXPECT_GT(s.op->stats().applies, 0);
  }
}

// Past one block of rows (build_local_parts scans blocks of 16384 rows in parallel): every entry
// of the slice lands once (interior or one peer's boundary), boundary rows ascend, and the
// operator's product equals the whole matrix's; a column outside the matrix in the last block is
// named by its row on every rank.
TEST(DistributedOperator, LocalPartsOverManyRowBlocks) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 150001;
  const Csr<double> a = random_spd(n, 3, 9);
  const RowPartition part = RowPartition::even(n, g_comm->size());
  const std::int64_t r0 = part.starts[g_comm->rank()], nl = part.rows(g_comm->rank());
  Csr<double> mine = rows_of(a, r0, r0 + nl);
  const LocalParts lp = build_local_parts(mine, part, *g_comm);
  std::int64_t placed = lp.interior.nnz();
  for (const HaloPeer& p : lp.peers) {
    placed += p.boundary.nnz();
    for (std::size_t i = 1; i < p.boundary_rows.size(); ++i) ASSERT_LT(p.boundary_rows[i - 1], p.boundary_rows[i]);
  }
  EXPECT_EQ(placed, mine.nnz());
  Share s = distribute(a, part, 2);
  std::vector<double> xg(n * 2), yref(n * 2);
  for (std::int64_t j = 0; j < 2; ++j)
    for (std::int64_t i = 0; i < n; ++i) xg[i + j * n] = random_entry(78, i, j);
  csr_spmm_reference(a, xg.data(), n, yref.data(), n, 2);
  MultiVector<double> x = s.ops->allocate(s.nl, 2), y = s.ops->allocate(s.nl, 2);
  s.ops->fill_random_rows(x.view(), 78, 0);
  s.op->apply(x.view(), y.view());
  s.ops->synchronize();
  std::vector<double> yl(s.nl * 2);
  s.ops->to_host(y.view(), yl.data(), s.nl);
  double err = 0.0;
  for (std::int64_t j = 0; j < 2; ++j)
    for (std::int64_t i = 0; i < s.nl; ++i) err = std::max(err, std::abs(yl[i + j * s.nl] - yref[s.r0 + i + j * n]));
  EXPECT_LT(err, 1e-12);
  const std::int64_t bad = nl - 3;  // (in the last block of every rank: all ranks throw before the exchange)
  mine.col_idx[mine.row_ptr[bad]] = static_cast<std::int32_t>(n + 5);
  try {
    build_local_parts(mine, part, *g_comm);
    ADD_FAILURE() << "no error for a column outside the matrix";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("row " + std::to_string(r0 + bad) + ": column " + std::to_string(n + 5)),
              std::string::npos)
        << e.what();
  }
}

// The fused filter step over the distributed operator: Y' = a·A·Y + b·Y + c·Y' equals the whole
// matrix's on this rank's rows (chunked: 11 columns through buffers of 4).
TEST(DistributedOperator, FusedStepMatchesTheWholeRecurrence) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 777, k = 11;
  const Csr<double> a = random_spd(n, 4, 5);
  const double ca = 0.37, cb = -1.25, cc = 0.5;
  std::vector<double> xg(n * k), zg(n * k), ref(n * k);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      xg[i + j * n] = random_entry(8, i, j), zg[i + j * n] = random_entry(9, i, j);
  csr_spmm_reference(a, xg.data(), n, ref.data(), n, static_cast<int>(k));
  for (std::int64_t e = 0; e < n * k; ++e) ref[e] = ca * ref[e] + cb * xg[e] + cc * zg[e];
  for (const RowPartition& part : partitions(n)) {
    Share s = distribute(a, part, 4);
    auto step = s.op->make_fused_step();
    MultiVector<double> x = s.ops->allocate(s.nl, k), z = s.ops->allocate(s.nl, k);
    s.ops->fill_random(x.view(), 8);
    s.ops->fill_random(z.view(), 9);
    step->step(ca, x.view(), cb, cc, z.view(), 0.0, x.view());  // e = 0: r unused (as the filter passes it)
    s.ops->synchronize();
    std::vector<double> zl(s.nl * k);
    s.ops->to_host(z.view(), zl.data(), s.nl);
    double err = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < s.nl; ++i)
        err = std::max(err, std::abs(zl[i + j * s.nl] - ref[s.r0 + i + j * n]));
    EXPECT_LT(err, 1e-12) << "rank " << g_comm->rank();
  }
}

// The fp32 rung's step over the distributed operator equals the whole matrix's step32 (the host
// reference or the CUDA kernel: fp32 accumulation, so to fp32 rounding), with the r·diag(f) term.
TEST(DistributedOperator, Fp32StepMatchesTheWholeStep) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 777, k = 11;
  const Csr<double> a = random_spd(n, 4, 6);
  auto whole_ops = make_dense_ops(kBackend);
  auto whole = make_chebyshev_step(a, kBackend, Precision::fp64, whole_ops->stream());
  const Space sp = whole_ops->space();
  auto upload_f = [&](std::uint64_t seed, std::int64_t rows, std::int64_t r0) {
    std::vector<float> h(rows * k);
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < rows; ++i) h[i + j * rows] = static_cast<float>(random_entry(seed, r0 + i, j));
    MultiVector<float> d(rows, k, sp);
    copy_bytes(d.data(), sp, h.data(), Space::host, h.size() * sizeof(float));
    return d;
  };
  std::vector<double> fh(k);
  for (std::int64_t j = 0; j < k; ++j) fh[j] = 0.25 + 0.1 * j;
  MultiVector<double> fd(k, 1, sp);
  copy_bytes(fd.data(), sp, fh.data(), Space::host, k * sizeof(double));
  MultiVector<float> xw = upload_f(31, n, 0), zw = upload_f(32, n, 0), rw = upload_f(33, n, 0);
  whole->step32(0.37, xw.view(), -1.25, 0.5, zw.view(), rw.view(), fd.data());
  whole_ops->synchronize();
  std::vector<float> ref(n * k);
  copy_bytes(ref.data(), Space::host, zw.data(), sp, ref.size() * sizeof(float));
  for (const RowPartition& part : partitions(n)) {
    Share s = distribute(a, part, 4);
    auto step = s.op->make_fused_step();
    MultiVector<float> x = upload_f(31, s.nl, s.r0), z = upload_f(32, s.nl, s.r0), r = upload_f(33, s.nl, s.r0);
    MultiVector<double> fl(k, 1, sp);
    copy_bytes(fl.data(), sp, fh.data(), Space::host, k * sizeof(double));
    step->step32(0.37, x.view(), -1.25, 0.5, z.view(), r.view(), fl.data());
    s.ops->synchronize();
    std::vector<float> zl(s.nl * k);
    copy_bytes(zl.data(), Space::host, z.data(), sp, zl.size() * sizeof(float));
    double err = 0.0, mx = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < s.nl; ++i) {
        err = std::max(err, static_cast<double>(std::abs(zl[i + j * s.nl] - ref[s.r0 + i + j * n])));
        mx = std::max(mx, static_cast<double>(std::abs(ref[s.r0 + i + j * n])));
      }
    EXPECT_LT(err, 1e-5 * mx) << "rank " << g_comm->rank();
    EXPECT_GT(mx, 0.0);
  }
}

// The eigensolver's precision ladder on the distributed operator: fp32 filters in residual form,
// fp64 checks; the closed form to 1e-9·λmax (the tolerance is below fp32's unit roundoff).
TEST(DistributedSolvers, ChebyshevLadderOnTheFp32Rung) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 41, ny = 33;
  const Csr<double> a = test::laplacian(nx, ny);
  const std::vector<double> spec = test::laplacian_spectrum(nx, ny);
  const std::int64_t n = a.nrows, k = 6;
  EigenOptions eo;
  eo.k = k;
  eo.which = Which::largest;
  eo.tol = 1e-10;
  for (const RowPartition& part : partitions(n)) {
    Share d = distribute(a, part, 16);
    auto step = d.op->make_fused_step();
    ChebyshevStats st;
    ChebyshevOptions co;
    co.apply_order = ApplyOrder::same_stream;
    co.fused_step = step.get();
    co.filter_precision = Precision::fp32;
    co.stats = &st;
    const EigenResult r = chebyshev_subspace(*d.op, *d.ops, eo, co);
    ASSERT_EQ(r.status, SolverStatus::converged);
    EXPECT_GT(st.filters_fp32, 0);
    for (std::int64_t j = 0; j < k; ++j) EXPECT_NEAR(r.values[j], spec[n - 1 - j], 1e-9 * spec.back());
  }
}

// Reductions: G = XᵀY and β-accumulation, column norms and dots, normalization, against the
// whole block's values (computed on this rank from the whole block).
TEST(DistributedDenseOps, ReductionsEqualTheWholeBlock) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 517, p = 5, q = 3;
  for (const RowPartition& part : partitions(n)) {
    Share s = distribute(random_spd(n, 2, 1), part, 4);
    DenseBlockOps& ops = *s.ops;
    ops.small().reserve_small(8);
    MultiVector<double> x = ops.allocate(s.nl, p), y = ops.allocate(s.nl, q);
    ops.fill_random(x.view(), 5);
    ops.fill_random(y.view(), 6);
    auto xe = [&](std::int64_t i, std::int64_t j) { return random_entry(5, i, j); };
    auto ye = [&](std::int64_t i, std::int64_t j) { return random_entry(6, i, j); };
    std::vector<double> gref(p * q, 0.0), nref(p, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t a = 0; a < p; ++a) {
        nref[a] += xe(i, a) * xe(i, a);
        for (std::int64_t b = 0; b < q; ++b) gref[a + b * p] += xe(i, a) * ye(i, b);
      }
    }
    // Host Gram (deferred + fetch inside) with a leading dimension larger than p.
    std::vector<double> g(7 * q, -1.0);
    ops.gram(x.view(), y.view(), g.data(), 7);
    for (std::int64_t a = 0; a < p; ++a)
      for (std::int64_t b = 0; b < q; ++b) EXPECT_NEAR(g[a + b * 7], gref[a + b * p], 1e-12);
    // Backend Gram into a strided block, then G = 2·XᵀY − 1·G (= XᵀY).
    MultiVector<double> gd = ops.allocate(8, q);
    ops.gram_into(1.0, x.view(), y.view(), 0.0, MvView<double>{gd.data(), p, q, 8, ops.space()});
    ops.gram_into(2.0, x.view(), y.view(), -1.0, MvView<double>{gd.data(), p, q, 8, ops.space()});
    std::vector<double> gh(8 * q);
    ops.queue().download_deferred(gd.view(), gh.data(), 8);
    ops.queue().fetch();
    for (std::int64_t a = 0; a < p; ++a)
      for (std::int64_t b = 0; b < q; ++b) EXPECT_NEAR(gh[a + b * 8], gref[a + b * p], 1e-12);
    // Norms (host), then normalize on the backend: the norms again and unit columns after.
    std::vector<double> nh(p);
    ops.column_norms(x.view(), nh.data());
    for (std::int64_t a = 0; a < p; ++a) EXPECT_NEAR(nh[a], std::sqrt(nref[a]), 1e-12);
    MultiVector<double> nd = ops.allocate(p, 1);
    ops.normalize_columns(x.view(), nd.view());
    ops.column_norms(x.view(), nh.data());
    for (std::int64_t a = 0; a < p; ++a) EXPECT_NEAR(nh[a], 1.0, 1e-14);
  }
}

// Block CG on the distributed operator gives the single-process solutions and iterations; also
// Jacobi-preconditioned ("random+jacobi": a varying diagonal, each rank its rows of D, the fused
// residual pass's Gram and norms summed over the ranks).
TEST(DistributedSolvers, BlockCgEqualsOneProcess) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (const std::string spec : {"gen:lap3d:13", "random", "random+jacobi"}) {
    const bool jacobi = spec == "random+jacobi";
    const Csr<double> a = spec != "gen:lap3d:13" ? random_spd(1500, 4, 9) : generate(spec);
    const std::int64_t n = a.nrows, s = 5;
    const std::vector<double> diag = jacobi ? csr_diagonal(a) : std::vector<double>{};
    const test::Whole w = test::whole(a);
    CgOptions co;
    co.tol = 1e-10;
    co.apply_order = ApplyOrder::same_stream;
    co.jacobi_diagonal = diag;
    const SolveResult ref = block_cg_random(*w.op, 21, s, *w.ops, co, true);
    ASSERT_EQ(ref.status, SolverStatus::converged);
    for (const RowPartition& part : partitions(n)) {
      Share d = distribute(a, part, s);
      if (jacobi) co.jacobi_diagonal.assign(diag.begin() + d.r0, diag.begin() + d.r0 + d.nl);
      const SolveResult r = block_cg_random(*d.op, 21, s, *d.ops, co, true);
      EXPECT_EQ(r.status, SolverStatus::converged) << spec;
      EXPECT_NEAR(static_cast<double>(r.iterations), static_cast<double>(ref.iterations), 1.0) << spec;
      EXPECT_LT(test::rows_error(r.solutions, ref.solutions, d, n, s), 1e-8) << spec << " rank " << g_comm->rank();
      for (double rn : r.residual_norms) EXPECT_LE(rn, 1e-10);
    }
  }
}

// Chebyshev on the distributed operator: the closed form of a 2D Laplacian (both ends), and the
// single-process eigenvalues to 1e-12 relative.
TEST(DistributedSolvers, ChebyshevEqualsOneProcessAndTheClosedForm) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 37, ny = 29;
  const Csr<double> a = test::laplacian(nx, ny);
  const std::vector<double> spec = test::laplacian_spectrum(nx, ny);
  const std::int64_t n = a.nrows, k = 6;
  for (Which w : {Which::largest, Which::smallest}) {
    EigenOptions eo;
    eo.k = k;
    eo.which = w;
    eo.tol = 1e-10;
    ChebyshevOptions co;
    co.apply_order = ApplyOrder::same_stream;
    const test::Whole whole = test::whole(a);
    const EigenResult ref = chebyshev_subspace(*whole.op, *whole.ops, eo, co);
    ASSERT_EQ(ref.status, SolverStatus::converged);
    for (const RowPartition& part : partitions(n))
    for (bool fused : {false, true}) {
      Share d = distribute(a, part, 16);
      auto step = d.op->make_fused_step();
      ChebyshevOptions cf = co;
      if (fused) cf.fused_step = step.get();
      const EigenResult r = chebyshev_subspace(*d.op, *d.ops, eo, cf);
      ASSERT_EQ(r.status, SolverStatus::converged);
      ASSERT_EQ(r.values.size(), static_cast<std::size_t>(k));
      EXPECT_EQ(r.n, d.nl);
      EXPECT_EQ(r.vectors.size(), static_cast<std::size_t>(d.nl * k));
      for (std::int64_t j = 0; j < k; ++j) {
        const double exact = w == Which::largest ? spec[n - 1 - j] : spec[j];
        EXPECT_NEAR(r.values[j], ref.values[j], 1e-12 * std::abs(ref.values[j]));
        EXPECT_NEAR(r.values[j], exact, 1e-9 * spec.back());
        EXPECT_LE(r.residual_norms[j], r.residual_bounds[j]);
      }
    }
  }
}

// A rank without any halo (blockdiag(A, A) cut at the border): nothing to exchange, same answer.
TEST(DistributedSolvers, RankWithoutBoundary) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const Csr<double> b = test::laplacian(20, 20);
  const Csr<double> a = block_diagonal(b);  // 800 rows, eigenvalues of b twice
  const int np = g_comm->size();
  std::vector<std::int64_t> st{0};
  if (np == 1) st.push_back(800);
  else {
    st.push_back(400);  // rank 0: exactly the first block, no boundary
    for (int r = 1; r < np; ++r) st.push_back(400 + 400 * r / (np - 1));
  }
  Share d = distribute(a, RowPartition::from_starts(st), 8);
  if (np > 1 && g_comm->rank() == 0) EXPECT_EQ(d.op->parts().halo_rows(), 0);
  EigenOptions eo;
  eo.k = 4;
  eo.which = Which::largest;
  eo.tol = 1e-10;
  ChebyshevOptions co;
  co.apply_order = ApplyOrder::same_stream;
  const EigenResult r = chebyshev_subspace(*d.op, *d.ops, eo, co);
  const std::vector<double> spec = test::laplacian_spectrum(20, 20);
  ASSERT_EQ(r.status, SolverStatus::converged);
  // Each eigenvalue of b twice: λmax, λmax, λ2, λ2.
  EXPECT_NEAR(r.values[0], spec[399], 1e-9 * spec[399]);
  EXPECT_NEAR(r.values[1], spec[399], 1e-9 * spec[399]);
  EXPECT_NEAR(r.values[2], spec[398], 1e-9 * spec[399]);
  EXPECT_NEAR(r.values[3], spec[398], 1e-9 * spec[399]);
  const SolveResult c = block_cg_random(*d.op, 3, 3, *d.ops, CgOptions{}, false);
  EXPECT_EQ(c.status, SolverStatus::converged);
}

}  // namespace
}  // namespace tcsolve

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
#ifdef TCSOLVE_TEST_BACKEND_CUDA
  // The rank's GPU comes up while MPI_Init runs, as the command's ranks do (select_local_gpu waits).
  tcsolve::start_local_gpu_selection(tcsolve::launch_place_from_env());
#endif
  auto comm = tcsolve::make_communicator();
  tcsolve::g_comm = comm.get();
#ifdef TCSOLVE_TEST_BACKEND_CUDA
  if (tcsolve::device_count() > 0) {
    const int dev = tcsolve::select_local_gpu(*comm);
    if (comm->size() > 1) comm->enable_device(dev);
  }
#endif
  // One rank prints; every rank runs the same tests in the same order (they are collective).
  if (comm->rank() != 0) {
    auto& l = ::testing::UnitTest::GetInstance()->listeners();
    delete l.Release(l.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  rc = static_cast<int>(comm->allreduce_max(rc));
  if (tcsolve::launched_by_mpi()) {
    // Under mpirun: finalize, then leave without the exit-time leak check. Open MPI's components
    // (dlopened, some unloaded at MPI_Finalize) keep ~120 KB that LeakSanitizer reports under
    // scripts/sanitize.sh; tcsolve's own allocations are leak-checked by the one-process run of
    // these same tests (distributed_np1: self communicator, no MPI).
    comm.reset();
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return rc;
}
