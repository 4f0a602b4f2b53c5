#include "apps/batch/scheduler.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <thread>
#include <tuple>

#include "apps/batch/worker.hpp"
#include "apps/cli.hpp"
#include "core/device.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "distributed/comm.hpp"

namespace tcsolve::app {

namespace fs = std::filesystem;

std::vector<std::vector<std::size_t>> job_groups(const std::vector<JobSpec>& jobs) {
  const std::size_t n = jobs.size();
  std::vector<std::size_t> parent(n);
  for (std::size_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  auto key = [](const std::string& f) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(f, ec);
    return ec ? fs::absolute(f).lexically_normal().string() : p.string();
  };
  std::map<std::string, std::size_t> writer;  // output file -> its job
  for (std::size_t i = 0; i < n; ++i)
    if (!jobs[i].out.empty()) writer[key(jobs[i].out)] = i;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> in = job_input_files(jobs[i]);
    if (!jobs[i].resume_from.empty()) in.push_back(jobs[i].resume_from);
    for (const std::string& f : in) {
      const auto it = writer.find(key(f));
      if (it != writer.end()) parent[find(i)] = find(it->second);
    }
  }
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::size_t, std::size_t> at;  // a group's root -> its place in groups
  for (std::size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = at.try_emplace(find(i), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

int gpus_wanted(const std::vector<JobSpec>& jobs, const std::string& gpus, bool distributed) {
  const int want = parse_gpus_option(gpus);  // 0: all
  bool gpu_jobs = false;
  for (const JobSpec& s : jobs) gpu_jobs = gpu_jobs || s.device != DeviceChoice::cpu;
  if (distributed || !gpu_jobs || device_memory_limit() > 0) return 1;
  return want;
}

RankPlace place_ranks(const std::vector<JobSpec>& jobs) {
  RankPlace p;
  if (!launched_by_mpi()) return p;
  bool gpu = false;
  for (const JobSpec& s : jobs) gpu = gpu || s.device != DeviceChoice::cpu;
  const LaunchPlace place = launch_place_from_env();
  if (place.known && gpu) start_local_gpu_selection(place);
  p.mpi = std::make_unique<CommunicatorThread>([] { return make_communicator(); });
  if (place.known) {
    p.np = place.size, p.me = place.rank;
  } else {  // the rank from MPI itself: wait for it (and choose the GPU after it, as before)
    std::tie(p.np, p.me) = p.mpi->run([gpu](Communicator& c) {
      if (c.size() > 1 && gpu && device_count() > 0) select_local_gpu(c);
      return std::make_pair(c.size(), c.rank());
    });
  }
  if (p.np == 1) p.mpi.reset();
  trace_mark("batch: jobs may start");
  return p;
}

void deal_groups(BatchShared& b, int np) {
  const std::vector<std::vector<std::size_t>> all = job_groups(b.jobs);
  for (std::size_t g = 0; g < all.size(); ++g)
    if (static_cast<int>(g % static_cast<std::size_t>(np)) == b.me) b.groups.push_back(all[g]);
  for (std::size_t g = 0; g < b.groups.size(); ++g)
    for (std::size_t i : b.groups[g]) {
      b.last_group[b.jobs[i].matrix] = g;
      if (!b.jobs[i].mass.empty()) b.last_group[b.jobs[i].mass] = g;
    }
}

namespace {

// The workers beyond the first: one per further GPU (or test worker), each on its own thread with
// its share of the host threads, started once the GPUs are counted (cuInit, 0.1–0.25 s, not
// waited for by worker 0). The threads are joined here.
class MoreWorkers {
 public:
  MoreWorkers(BatchShared& b, int wanted_gpus) : b_(b), wanted_(wanted_gpus) {}
  void run();
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::exception_ptr> errors;

 private:
  BatchShared& b_;
  const int wanted_;
};

void MoreWorkers::run() {
  try {
    const bool test = b_.cpu_workers > 1;
    const int visible = test ? b_.cpu_workers : device_count();
    const int n = static_cast<int>(std::min<std::size_t>(
        b_.groups.size(), static_cast<std::size_t>(wanted_ == 0 || test ? visible : std::min(wanted_, visible))));
    if (n <= 1) return;
    b_.workers = n;
    trace_mark("batch: a worker per GPU");
    errors.resize(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    struct JoinAll {  // the workers started are joined also when starting another fails
      std::vector<std::thread>& t;
      ~JoinAll() {
        for (std::thread& x : t)
          if (x.joinable()) x.join();
      }
    } join_all{threads};
    for (int wi = 1; wi < n; ++wi) {
      workers.push_back(std::make_unique<Worker>(b_, wi, test ? -1 : wi));
      threads.emplace_back([this, wi, n, &w = *workers.back()] {
        try {
          // (No cudaSetDevice here: it would make the GPU's context before the first matrix is
          // read; run_job makes it on a helper meanwhile and then sets this thread's GPU.)
          HostShare share(std::max(1, host_threads() / n));
          w.run();
        } catch (...) {
          errors[static_cast<std::size_t>(wi)] = std::current_exception();
        }
      });
    }
  } catch (...) {
    if (errors.empty()) errors.resize(1);
    errors[0] = std::current_exception();  // (worker 0 is not here: its slot is this thread's)
  }
}

}  // namespace

std::vector<Row> run_workers(BatchShared& b, int wanted_gpus, bool* all_ok) {
  Worker first(b, 0, -1);
  MoreWorkers more(b, wanted_gpus);
  std::thread spawner;
  if ((wanted_gpus != 1 || b.cpu_workers > 1) && b.groups.size() > 1) spawner = std::thread([&more] { more.run(); });
  std::exception_ptr error;
  try {
    first.run();
  } catch (...) {
    error = std::current_exception();
  }
  if (spawner.joinable()) spawner.join();
  if (error) std::rethrow_exception(error);
  for (const std::exception_ptr& e : more.errors)
    if (e) std::rethrow_exception(e);
  std::vector<Worker*> workers = {&first};
  for (auto& w : more.workers) workers.push_back(w.get());
  std::vector<Row> rows;
  *all_ok = true;
  for (Worker* w : workers) {
    // With a worker per GPU, each row names its worker's GPU (worker i runs on GPU i).
    for (Row& r : w->rows) {
      if (b.workers.load() > 1 && b.cpu_workers <= 1) r.gpu = w->index();
      rows.push_back(std::move(r));
    }
    *all_ok = *all_ok && w->all_ok;
  }
  // Groups no worker took (an interrupt): not run.
  for (std::size_t g = b.next_group.load(); g < b.groups.size(); ++g)
    for (std::size_t i : b.groups[g]) rows.push_back(not_run_row(b.jobs[i], i, b.me));
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.index < y.index; });
  trace_mark("batch: jobs done");
  return rows;
}

bool gather_rows(RankPlace& place, std::vector<Row>& rows, bool* all_ok) {
  if (!place.mpi) return true;
  // The place the jobs were dealt by must be MPI's.
  const std::string mine = pack_rows(rows);
  std::vector<std::string> parts;
  bool ok_everywhere = false;
  place.mpi->run([&](Communicator& c) {
    if (c.rank() != place.me || c.size() != place.np) {  // every rank ends: none waits in the gather
      std::cerr << format("tcsolve batch: the launcher's environment placed this process as rank "
                          "%d of %d, MPI as rank %d of %d: the jobs were dealt by the wrong place\n",
                          place.me, place.np, c.rank(), c.size());
      c.abort(exit_failed);
    }
    parts = c.gather_strings_to_root(mine);
    ok_everywhere = c.allreduce_max(*all_ok ? 0.0 : 1.0) == 0.0;
    return 0;
  });
  trace_mark("batch: rows gathered");
  *all_ok = ok_everywhere;
  if (place.me != 0) return false;
  rows.clear();
  for (const std::string& p : parts)
    for (Row& r : unpack_rows(p)) rows.push_back(std::move(r));
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.index < b.index; });
  return true;
}

}  // namespace tcsolve::app
