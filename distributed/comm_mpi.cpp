// MPI_COMM_WORLD as a Communicator (distributed/comm.hpp); device buffers through NCCL.
// MPI is initialized on first use and finalized at exit; MPI is never called on device memory.
// MPI_Init, MPI_Comm_rank and MPI_Finalize are called by their PMPI_ names: the sequential MUMPS
// the factor layer links (libmpiseq) exports dummy C symbols of those three names, and the one
// loaded first would answer.
#include <mpi.h>

#include <climits>
#include <cstdlib>

#include "core/error.hpp"
#include "distributed/affinity.hpp"
#include "distributed/comm.hpp"
#include "distributed/comm_timer.hpp"
#include "distributed/nccl_channel.hpp"

namespace tcsolve {
namespace {

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string("MPI: ") + what + " failed: " + std::string(msg, len));
}

int as_count(std::int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX)
    throw Error(std::string("MPI: ") + what + " of " + std::to_string(n) +
                " elements exceeds one message (2^31 - 1)");
  return static_cast<int>(n);
}

void finalize_at_exit() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) PMPI_Finalize();
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      mpi_check(PMPI_Init(nullptr, nullptr), "MPI_Init");
      std::atexit(finalize_at_exit);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    library_ = std::string(lib, len);
    if (auto p = library_.find(','); p != std::string::npos) library_.resize(p);
    while (!library_.empty() && (library_.back() == '\n' || library_.back() == ' ')) library_.pop_back();
    // Before the CUDA runtime, NCCL and the host loops start their threads: they inherit it.
    widen_launcher_binding(local_rank(*this), local_size(*this));
  }

  // The NCCL communicator goes first, then MPI (the command ends with _Exit, so no atexit handler
  // would run: finalizing here is what tells mpirun the rank ended normally).
  ~MpiCommunicator() override {
    nccl_.reset();
    finalize_at_exit();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "MPI (" + library_ + "), " + std::to_string(size_) + " ranks" +
           (nccl_ ? ", " + nccl_->describe() : std::string());
  }

  void allreduce_sum(double* data, std::int64_t count, Space space, void* stream) override {
    if (count <= 0) return;
    if (space == Space::device) {
      require_device();
      nccl_->allreduce_sum(data, count, stream);
      return;
    }
    CommTimer t(seconds_);
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, data, as_count(count, "allreduce"), MPI_DOUBLE, MPI_SUM,
                            MPI_COMM_WORLD),
              "MPI_Allreduce");
  }

  void exchange_start(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs,
                      Space space, void* stream) override {
    if (space == Space::device) {
      require_device();
      nccl_->exchange_start(sends, recvs, stream);
      device_exchange_ = true;
      return;
    }
    CommTimer t(seconds_);
    TCSOLVE_REQUIRE(requests_.empty(), "exchange_start: the previous exchange was not waited for");
    // The receives posted first, then the sends; tag 7, one request each.
    for (const bool send : {false, true}) {
      for (const Transfer& t : send ? sends : recvs) {
        MPI_Request q;
        const int count = as_count(t.count, send ? "halo send" : "halo receive");
        const MPI_Datatype type = t.fp32 ? MPI_FLOAT : MPI_DOUBLE;
        if (send)
          mpi_check(MPI_Isend(t.data, count, type, t.peer, 7, MPI_COMM_WORLD, &q), "MPI_Isend");
        else
          mpi_check(MPI_Irecv(t.data, count, type, t.peer, 7, MPI_COMM_WORLD, &q), "MPI_Irecv");
        requests_.push_back(q);
      }
    }
  }
  void exchange_wait(void* stream) override {
    if (device_exchange_) {  // joined on the stream; the host does not wait
      nccl_->exchange_wait(stream);
      device_exchange_ = false;
      return;
    }
    CommTimer t(seconds_);
    if (requests_.empty()) return;
    int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    mpi_check(rc, "MPI_Waitall");
  }

  void barrier() override {
    CommTimer t(seconds_);
    mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }
  double allreduce_max(double v) override {
    CommTimer t(seconds_);
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
              "MPI_Allreduce");
    return v;
  }
  std::int64_t allreduce_sum_int(std::int64_t v) override {
    CommTimer t(seconds_);
    long long x = v;
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    return x;
  }
  std::vector<std::vector<std::int64_t>> alltoall_lists(
      const std::vector<std::vector<std::int64_t>>& to_each) override {
    CommTimer t(seconds_);
    TCSOLVE_REQUIRE(static_cast<int>(to_each.size()) == size_, "alltoall_lists: one list per rank");
    std::vector<int> scount(size_), rcount(size_), sdisp(size_ + 1, 0), rdisp(size_ + 1, 0);
    for (int q = 0; q < size_; ++q) scount[q] = as_count(to_each[q].size(), "index list");
    mpi_check(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD),
              "MPI_Alltoall");
    std::int64_t stot = 0, rtot = 0;
    for (int q = 0; q < size_; ++q) {
      sdisp[q] = as_count(stot, "index lists"), stot += scount[q];
      rdisp[q] = as_count(rtot, "index lists"), rtot += rcount[q];
    }
    std::vector<long long> sbuf(stot), rbuf(rtot);
    for (int q = 0; q < size_; ++q)
      for (std::size_t i = 0; i < to_each[q].size(); ++i) sbuf[sdisp[q] + i] = to_each[q][i];
    mpi_check(MPI_Alltoallv(sbuf.data(), scount.data(), sdisp.data(), MPI_LONG_LONG, rbuf.data(),
                            rcount.data(), rdisp.data(), MPI_LONG_LONG, MPI_COMM_WORLD),
              "MPI_Alltoallv");
    std::vector<std::vector<std::int64_t>> out(size_);
    for (int q = 0; q < size_; ++q) out[q].assign(rbuf.begin() + rdisp[q], rbuf.begin() + rdisp[q] + rcount[q]);
    return out;
  }
  std::vector<double> gather_to_root(const std::vector<double>& local) override {
    CommTimer t(seconds_);
    // Point to point in pieces of at most 2^27 doubles: a gathered eigenvector block can hold
    // more than the 2^31 - 1 elements one MPI count reaches.
    const std::vector<std::int64_t> counts = allgather_raw(static_cast<std::int64_t>(local.size()));
    constexpr std::int64_t piece = std::int64_t(1) << 27;
    if (rank_ != 0) {
      for (std::int64_t o = 0; o < static_cast<std::int64_t>(local.size()); o += piece)
        mpi_check(MPI_Send(local.data() + o,
                           static_cast<int>(std::min<std::int64_t>(piece, local.size() - o)),
                           MPI_DOUBLE, 0, 11, MPI_COMM_WORLD),
                  "MPI_Send");
      return {};
    }
    std::int64_t total = 0;
    for (auto c : counts) total += c;
    std::vector<double> out(total);
    std::copy(local.begin(), local.end(), out.begin());
    std::int64_t at = counts[0];
    for (int q = 1; q < size_; ++q) {
      for (std::int64_t o = 0; o < counts[q]; o += piece)
        mpi_check(MPI_Recv(out.data() + at + o,
                           static_cast<int>(std::min<std::int64_t>(piece, counts[q] - o)),
                           MPI_DOUBLE, q, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
      at += counts[q];
    }
    return out;
  }
  std::vector<std::int64_t> allgather(std::int64_t v) override {
    CommTimer t(seconds_);
    return allgather_raw(v);
  }
  void send_bytes(int dest, const void* data, std::int64_t bytes) override {
    CommTimer t(seconds_);
    constexpr std::int64_t piece = std::int64_t(1) << 30;
    const char* p = static_cast<const char*>(data);
    for (std::int64_t o = 0; o < bytes; o += piece)
      mpi_check(MPI_Send(p + o, static_cast<int>(std::min(piece, bytes - o)), MPI_BYTE, dest, 13,
                         MPI_COMM_WORLD),
                "MPI_Send");
  }
  void recv_bytes(int src, void* data, std::int64_t bytes) override {
    CommTimer t(seconds_);
    constexpr std::int64_t piece = std::int64_t(1) << 30;
    char* p = static_cast<char*>(data);
    for (std::int64_t o = 0; o < bytes; o += piece)
      mpi_check(MPI_Recv(p + o, static_cast<int>(std::min(piece, bytes - o)), MPI_BYTE, src, 13,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv");
  }
  std::vector<std::string> gather_strings_to_root(const std::string& local) override {
    CommTimer t(seconds_);
    int len = as_count(static_cast<std::int64_t>(local.size()), "gathered text");
    std::vector<int> lens(rank_ == 0 ? size_ : 0), disp(rank_ == 0 ? size_ : 0);
    mpi_check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    std::int64_t total = 0;
    for (int q = 0; q < static_cast<int>(lens.size()); ++q) disp[q] = as_count(total, "gathered text"), total += lens[q];
    std::string all(static_cast<std::size_t>(total), '\0');
    mpi_check(MPI_Gatherv(local.data(), len, MPI_CHAR, all.data(), lens.data(), disp.data(), MPI_CHAR, 0,
                          MPI_COMM_WORLD),
              "MPI_Gatherv");
    std::vector<std::string> out;
    for (int q = 0; q < static_cast<int>(lens.size()); ++q) out.push_back(all.substr(disp[q], lens[q]));
    return out;
  }
  void broadcast(std::string& bytes, int root) override {
    CommTimer t(seconds_);
    long long n = static_cast<long long>(bytes.size());
    mpi_check(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
    bytes.resize(n);
    if (n) mpi_check(MPI_Bcast(bytes.data(), as_count(n, "broadcast"), MPI_CHAR, root, MPI_COMM_WORLD),
                     "MPI_Bcast");
  }

  void enable_device(int device) override {
    if (nccl_) return;
    std::string id;
    if (rank_ == 0) id = nccl_unique_id();
    broadcast(id, 0);
    barrier();  // NCCL's advice: every rank has the id before ncclCommInitRank
    nccl_ = make_nccl_channel(id, rank_, size_, device);
  }
  bool device_enabled() const override { return nccl_ != nullptr; }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }
  double host_comm_seconds() const override { return seconds_; }

 private:
  void require_device() const {
    if (!nccl_) throw Error("device collectives used before enable_device()");
  }
  std::vector<std::int64_t> allgather_raw(std::int64_t v) {
    long long x = v;
    std::vector<long long> all(size_);
    mpi_check(MPI_Allgather(&x, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD),
              "MPI_Allgather");
    return std::vector<std::int64_t>(all.begin(), all.end());
  }

  int rank_ = 0, size_ = 1;
  std::string library_;
  std::unique_ptr<NcclChannel> nccl_;
  std::vector<MPI_Request> requests_;
  bool device_exchange_ = false;
  double seconds_ = 0.0;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace tcsolve
