// Ranks as threads of one process (distributed/thread_ranks.hpp).
#include "distributed/thread_ranks.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "core/device.hpp"
#include "core/trace.hpp"
#include "distributed/comm_timer.hpp"
#include "distributed/nccl_channel.hpp"

namespace tcsolve {
namespace {

// One message of a rendezvous: the sender's buffer, read by the receiver in place.
struct Message {
  const void* data = nullptr;
  std::int64_t bytes = 0;
};

// The state the ranks share. One mutex and one condition variable for everything (a handful of
// ranks; a collective wakes them all anyway).
class Group {
 public:
  explicit Group(int n) : n_(n), table_(n, nullptr), queues_(2 * static_cast<std::size_t>(n) * n), unread_(n, 0) {}
  int size() const { return n_; }

  // Deposits `mine` as rank me's entry and waits for every rank's: then table() holds them all
  // until the next arrive().
  void arrive(int me, const void* mine) {
    std::unique_lock<std::mutex> lk(mu_);
    throw_if_poisoned();
    table_[me] = mine;
    wait_all(lk);
  }
  // A barrier (the table untouched: after arrive(), others may still read it).
  void wait_all() {
    std::unique_lock<std::mutex> lk(mu_);
    throw_if_poisoned();
    wait_all(lk);
  }
  const void* entry(int r) const { return table_[r]; }

  // Point to point: `channel` 0 send/receive bytes, 1 exchanges (kept apart like MPI tags).
  void post(int channel, int src, int dst, Message m) {
    std::lock_guard<std::mutex> lk(mu_);
    throw_if_poisoned();
    queue(channel, src, dst).push_back(m);
    ++unread_[src];
    cv_.notify_all();
  }
  // Waits for the oldest message src → dst and copies it to `out` (exactly `bytes` bytes).
  void take(int channel, int src, int dst, void* out, std::int64_t bytes) {
    std::unique_lock<std::mutex> lk(mu_);
    std::deque<Message>& q = queue(channel, src, dst);
    cv_.wait(lk, [&] { return !q.empty() || poisoned_; });
    throw_if_poisoned();
    const Message m = q.front();
    if (m.bytes != bytes) {
      lk.unlock();
      throw Error("rank " + std::to_string(dst) + " expected " + std::to_string(bytes) + " bytes from rank " +
                  std::to_string(src) + ", which sent " + std::to_string(m.bytes));
    }
    if (bytes > 0) std::memcpy(out, m.data, static_cast<std::size_t>(bytes));
    q.pop_front();
    --unread_[src];
    cv_.notify_all();
  }
  // Waits until every message rank `src` posted was copied (its buffers are free again).
  void wait_read(int src) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return unread_[src] == 0 || poisoned_; });
    if (unread_[src] != 0) throw_if_poisoned();
  }

  // The first call wins: its `why` goes into every waiting rank's RankAborted, its `origin` (the
  // failing rank's own exception) is what run_thread_ranks rethrows.
  void poison(const std::string& why, std::exception_ptr origin) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (poisoned_) return;
      poisoned_ = true;
      why_ = why;
      origin_ = std::move(origin);
    }
    cv_.notify_all();
  }
  std::exception_ptr origin() {
    std::lock_guard<std::mutex> lk(mu_);
    return origin_;
  }

 private:
  // The last rank to arrive opens the next generation. The others spin up to 20 µs before they
  // sleep (a device collective's fence is that short when the ranks are in step).
  void wait_all(std::unique_lock<std::mutex>& lk) {
    const std::uint64_t gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      generation_.store(gen + 1);
      cv_.notify_all();
      return;
    }
    lk.unlock();
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    for (int i = 1; generation_.load() == gen && !poisoned_.load(); ++i)
      if ((i & 63) == 0 && std::chrono::steady_clock::now() > until) break;
    lk.lock();
    cv_.wait(lk, [&] { return generation_ != gen || poisoned_; });
    if (generation_ == gen) throw_if_poisoned();
  }

  void throw_if_poisoned() const {
    if (poisoned_) throw RankAborted("another rank failed (" + why_ + ")", 1);
  }
  std::deque<Message>& queue(int channel, int src, int dst) {
    return queues_[(static_cast<std::size_t>(channel) * n_ + src) * n_ + dst];
  }

  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::atomic<std::uint64_t> generation_{0};  // (written under mu_; read without it while spinning)
  std::atomic<bool> poisoned_{false};
  std::string why_;
  std::exception_ptr origin_;
  std::vector<const void*> table_;
  std::vector<std::deque<Message>> queues_;
  std::vector<std::int64_t> unread_;  // per sender: messages posted and not yet copied
};

std::int64_t element_bytes(const Transfer& t) { return t.count * (t.fp32 ? 4 : 8); }

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Group> g, std::shared_ptr<Group> start, int rank)
      : g_(std::move(g)), start_(std::move(start)), me_(rank) {}
  ~ThreadCommunicator() override {
    if (pending_.valid()) pending_.wait();  // (its error, if any, was or is no longer anyone's)
    nccl_.reset();
  }

  int rank() const override { return me_; }
  int size() const override { return g_->size(); }
  bool ranks_are_threads() const override { return true; }
  std::string describe() const override {
    return std::to_string(size()) + " threads of one process" + (nccl_ ? ", " + nccl_->describe() : std::string());
  }

  void allreduce_sum(double* data, std::int64_t count, Space space, void* stream) override {
    if (space == Space::device) {
      require_device();
      if (count > 0) fenced([&] { nccl_->allreduce_sum(data, count, stream); });
      return;
    }
    CommTimer t(seconds_);
    std::vector<double>& sum = sum_;  // (the rank's scratch: grown once, no allocation per call)
    sum.assign(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)), 0.0);
    const std::pair<const double*, std::int64_t> mine{data, count};
    collect(&mine, [&] {
      for (int r = 0; r < size(); ++r) {  // in rank order on every rank: bitwise equal sums
        const auto* e = static_cast<const std::pair<const double*, std::int64_t>*>(g_->entry(r));
        if (e->second != count) throw Error("allreduce_sum: rank " + std::to_string(r) + " gave " +
                                            std::to_string(e->second) + " values, rank " + std::to_string(me_) +
                                            " " + std::to_string(count));
        for (std::int64_t i = 0; i < count; ++i) sum[i] += e->first[i];
      }
    });
    std::copy(sum.begin(), sum.end(), data);  // after the second barrier: nobody reads data now
  }

  void exchange_start(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs, Space space,
                      void* stream) override {
    if (space == Space::device) {
      require_device();
      fenced([&] { nccl_->exchange_start(sends, recvs, stream); });
      device_exchange_ = true;
      return;
    }
    CommTimer t(seconds_);
    TCSOLVE_REQUIRE(recvs_.empty() && !sending_, "exchange_start: the previous exchange was not waited for");
    for (const Transfer& s : sends) g_->post(1, me_, s.peer, Message{s.data, element_bytes(s)});
    sending_ = !sends.empty();
    recvs_ = recvs;
  }
  void exchange_wait(void* stream) override {
    if (device_exchange_) {
      nccl_->exchange_wait(stream);
      device_exchange_ = false;
      return;
    }
    CommTimer t(seconds_);
    for (const Transfer& r : recvs_) g_->take(1, r.peer, me_, r.data, element_bytes(r));
    recvs_.clear();  // (keeps its capacity: the next exchange copies into it without allocating)
    if (sending_) g_->wait_read(me_);  // channel 0 is idle between setup calls: only exchanges unread
    sending_ = false;
  }

  void barrier() override {
    CommTimer t(seconds_);
    g_->wait_all();
  }
  double allreduce_max(double v) override {
    CommTimer t(seconds_);
    double m = v;
    collect(&v, [&] {
      m = *static_cast<const double*>(g_->entry(0));
      for (int r = 1; r < size(); ++r) m = std::max(m, *static_cast<const double*>(g_->entry(r)));
    });
    return m;
  }
  std::int64_t allreduce_sum_int(std::int64_t v) override {
    CommTimer t(seconds_);
    std::int64_t s = 0;
    collect(&v, [&] {
      for (int r = 0; r < size(); ++r) s += *static_cast<const std::int64_t*>(g_->entry(r));
    });
    return s;
  }
  std::vector<std::vector<std::int64_t>> alltoall_lists(const std::vector<std::vector<std::int64_t>>& to_each) override {
    CommTimer t(seconds_);
    TCSOLVE_REQUIRE(static_cast<int>(to_each.size()) == size(), "alltoall_lists: one list per rank");
    std::vector<std::vector<std::int64_t>> out(size());
    collect(&to_each, [&] {
      for (int r = 0; r < size(); ++r)
        out[r] = (*static_cast<const std::vector<std::vector<std::int64_t>>*>(g_->entry(r)))[me_];
    });
    return out;
  }
  std::vector<double> gather_to_root(const std::vector<double>& local) override {
    CommTimer t(seconds_);
    std::vector<double> out;
    collect(&local, [&] {
      if (me_ != 0) return;
      std::size_t total = 0;
      for (int r = 0; r < size(); ++r) total += static_cast<const std::vector<double>*>(g_->entry(r))->size();
      out.reserve(total);
      for (int r = 0; r < size(); ++r) {
        const auto* e = static_cast<const std::vector<double>*>(g_->entry(r));
        out.insert(out.end(), e->begin(), e->end());
      }
    });
    return out;
  }
  std::vector<std::int64_t> allgather(std::int64_t v) override {
    CommTimer t(seconds_);
    std::vector<std::int64_t> out(size());
    collect(&v, [&] {
      for (int r = 0; r < size(); ++r) out[r] = *static_cast<const std::int64_t*>(g_->entry(r));
    });
    return out;
  }
  void send_bytes(int dest, const void* data, std::int64_t bytes) override {
    CommTimer t(seconds_);
    check_peer(dest);
    g_->post(0, me_, dest, Message{data, bytes});
    g_->wait_read(me_);  // blocking, as MPI_Send of a large message: the buffer is the caller's again
  }
  void recv_bytes(int src, void* data, std::int64_t bytes) override {
    CommTimer t(seconds_);
    check_peer(src);
    g_->take(0, src, me_, data, bytes);
  }
  std::vector<std::string> gather_strings_to_root(const std::string& local) override {
    CommTimer t(seconds_);
    std::vector<std::string> out;
    collect(&local, [&] {
      if (me_ == 0)
        for (int r = 0; r < size(); ++r) out.push_back(*static_cast<const std::string*>(g_->entry(r)));
    });
    return out;
  }
  void broadcast(std::string& bytes, int root) override {
    CommTimer t(seconds_);
    TCSOLVE_REQUIRE(root >= 0 && root < size(), "broadcast: no such root rank");
    std::string got;
    collect(&bytes, [&] {
      if (me_ != root) got = *static_cast<const std::string*>(g_->entry(root));
    });
    if (me_ != root) bytes.swap(got);
  }

  // The unique id from rank 0 through memory, then ncclCommInitRank on every rank's thread (it
  // returns when all ranks joined), a barrier, and the warm-up's first collectives. Its meetings
  // are the start-up group's, not the host collectives': a rank's GPU can start on a helper thread
  // while the rank's own thread runs host collectives (the halo lists) on the main group.
  void enable_device(int device) override {
    if (!nccl_) nccl_ = start_nccl(device);
  }
  bool device_enabled() const override { return nccl_ != nullptr || pending_.valid(); }
  // NCCL's start (ncclCommInitRank, ~0.4 s on two H200s, and the warm-up) on a thread of its own;
  // `device` is made current there.
  void start_device(int device) override {
    if (nccl_ || pending_.valid()) return;
    pending_ = std::async(std::launch::async, [this, device] {
      use_device(device);
      return start_nccl(device);
    });
  }
  double finish_device_start() override {
    if (!pending_.valid()) return 0.0;
    const auto t0 = std::chrono::steady_clock::now();
    std::future<std::unique_ptr<NcclChannel>> p = std::move(pending_);
    nccl_ = p.get();  // (rethrows the start's error)
    trace_mark("threads: NCCL ready");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  [[noreturn]] void abort(int code) override {
    const std::string why = "rank " + std::to_string(me_) + " ended the job (code " + std::to_string(code) + ")";
    const RankAborted e(why, code);
    poison(why, std::make_exception_ptr(e));
    throw e;
  }
  double host_comm_seconds() const override { return seconds_; }
  // Wakes every waiting rank with RankAborted (a rank of this group threw `why`).
  void poison(const std::string& why, std::exception_ptr origin) {
    g_->poison(why, origin);
    start_->poison(why, std::move(origin));
  }
  Group& group() { return *g_; }
  // The NCCL communicator left for the process's exit to free (never destroyed).
  void leave_device_to_exit() {
    if (pending_.valid()) try {
        nccl_ = pending_.get();
      } catch (...) {  // (the start's error was not anyone's: nothing to leave)
      }
    static_cast<void>(nccl_.release());
  }

 private:
  std::unique_ptr<NcclChannel> start_nccl(int device) {
    std::string id;
    if (me_ == 0) id = nccl_unique_id();
    start_->arrive(me_, &id);
    if (me_ != 0) id = *static_cast<const std::string*>(start_->entry(0));
    start_->wait_all();  // (rank 0's id is read by all before it may go out of scope)
    trace_mark("threads: NCCL unique id shared");
    std::unique_ptr<NcclChannel> c = make_nccl_channel(id, me_, size(), device, /*warm=*/false);
    trace_mark("threads: ncclCommInitRank");
    start_->wait_all();  // every rank out of ncclCommInitRank before any collective (nccl_channel.hpp)
    c->warm_up();
    trace_mark("threads: NCCL warmed up");
    return c;
  }
  // A device collective's kernels enqueued by every rank before any rank goes on: NCCL's kernels
  // wait for their peers', and a CUDA call that synchronizes a device (cudaFree, a pageable copy)
  // can hold a driver lock that keeps another thread from launching its part: with one thread
  // per GPU in one process that is a deadlock (NCCL's documentation: "Using multiple NCCL
  // communicators concurrently"). A host barrier after the launch rules it out: past it, every
  // kernel of this collective is enqueued, and so the kernels of the collectives before it (a
  // device synchronization then ends). Its cost: a barrier per device collective
  // (TCSOLVE_THREAD_FENCE=0 drops it, for A/B).
  template <class Launch>
  void fenced(Launch launch) {
    launch();
    if (fence_) g_->wait_all();
  }
  // Every rank deposits `mine`, reads the others' through g_->entry() in read(), and meets again
  // so that no buffer is released (or written) while another rank reads it.
  template <class Read>
  void collect(const void* mine, Read read) {
    g_->arrive(me_, mine);
    std::exception_ptr err;
    try {
      read();
    } catch (...) {
      err = std::current_exception();
    }
    g_->wait_all();
    if (err) std::rethrow_exception(err);
  }
  void check_peer(int peer) const {
    if (peer < 0 || peer >= size() || peer == me_)
      throw InvalidArgument("rank " + std::to_string(me_) + ": no peer rank " + std::to_string(peer));
  }
  void require_device() {
    if (pending_.valid()) finish_device_start();
    if (!nccl_) throw Error("device collectives used before enable_device()");
  }

  std::shared_ptr<Group> g_;
  std::shared_ptr<Group> start_;  // enable_device's meetings (see there)
  const int me_;
  std::unique_ptr<NcclChannel> nccl_;
  std::future<std::unique_ptr<NcclChannel>> pending_;  // start_device's NCCL start, until the first use
  std::vector<Transfer> recvs_;
  std::vector<double> sum_;  // allreduce_sum's host scratch
  bool sending_ = false, device_exchange_ = false;
  const bool fence_ = [] {
    const char* v = std::getenv("TCSOLVE_THREAD_FENCE");
    return !(v && std::string(v) == "0");
  }();
  double seconds_ = 0.0;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int ranks) {
  TCSOLVE_REQUIRE(ranks >= 1, "thread ranks: at least one");
  auto g = std::make_shared<Group>(ranks), start = std::make_shared<Group>(ranks);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < ranks; ++r) out.push_back(std::make_unique<ThreadCommunicator>(g, start, r));
  return out;
}

void run_thread_ranks(int ranks, const std::function<void(Communicator&)>& body, double grace_seconds,
                      const std::function<void(std::exception_ptr)>& stuck, bool leave_to_exit) {
  std::vector<std::unique_ptr<Communicator>> comms = make_thread_communicators(ranks);
  Group& group = static_cast<ThreadCommunicator&>(*comms[0]).group();
  std::mutex mu;
  std::condition_variable cv;
  int running = ranks;
  double failed_at = -1.0;  // when the first rank failed
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      auto& comm = static_cast<ThreadCommunicator&>(*comms[r]);
      try {
        body(comm);
      } catch (const std::exception& e) {  // (the group's own RankAborted echoes change nothing)
        comm.poison("rank " + std::to_string(r) + ": " + e.what(), std::current_exception());
      } catch (...) {
        comm.poison("rank " + std::to_string(r) + ": unknown error", std::current_exception());
      }
      std::lock_guard<std::mutex> lk(mu);
      if (failed_at < 0 && group.origin()) failed_at = comm_clock_seconds();
      --running;
      cv.notify_all();
    });
  {
    std::unique_lock<std::mutex> lk(mu);
    bool told = !stuck;
    while (running > 0) {
      cv.wait_for(lk, std::chrono::milliseconds(50));
      if (told || failed_at < 0 || comm_clock_seconds() - failed_at < grace_seconds) continue;
      told = true;
      lk.unlock();
      stuck(group.origin());  // normally ends the process
      lk.lock();
    }
  }
  for (std::thread& t : threads) t.join();
  trace_mark("threads: joined");
  const std::exception_ptr origin = group.origin();
  if (leave_to_exit)
    for (auto& c : comms) static_cast<ThreadCommunicator&>(*c).leave_device_to_exit();
  comms.clear();
  trace_mark("threads: communicators destroyed");  // (NCCL communicators destroyed here, after every rank stopped using them)
  if (origin) std::rethrow_exception(origin);
}

}  // namespace tcsolve
