// The single-process communicator and the choice between it and MPI (distributed/comm.hpp).
#include "distributed/comm.hpp"

#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace tcsolve {
namespace {

class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "single process"; }
  void allreduce_sum(double*, std::int64_t, Space, void*) override {}
  void exchange_start(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs, Space,
                      void*) override {
    TCSOLVE_REQUIRE(sends.empty() && recvs.empty(), "single process: nothing to exchange");
  }
  void exchange_wait(void*) override {}
  void barrier() override {}
  double allreduce_max(double v) override { return v; }
  std::int64_t allreduce_sum_int(std::int64_t v) override { return v; }
  std::vector<std::vector<std::int64_t>> alltoall_lists(
      const std::vector<std::vector<std::int64_t>>& to_each) override {
    TCSOLVE_REQUIRE(to_each.size() == 1, "alltoall_lists: one list per rank");
    return to_each;
  }
  std::vector<double> gather_to_root(const std::vector<double>& local) override { return local; }
  std::vector<std::int64_t> allgather(std::int64_t v) override { return {v}; }
  void send_bytes(int, const void*, std::int64_t) override {
    throw InvalidArgument("single process: nothing to send");
  }
  void recv_bytes(int, void*, std::int64_t) override {
    throw InvalidArgument("single process: nothing to receive");
  }
  std::vector<std::string> gather_strings_to_root(const std::string& local) override { return {local}; }
  void broadcast(std::string&, int) override {}
  void enable_device(int) override { device_ = true; }
  bool device_enabled() const override { return device_; }
  [[noreturn]] void abort(int code) override { std::exit(code); }
  double host_comm_seconds() const override { return 0.0; }

 private:
  bool device_ = false;
};

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

}  // namespace

namespace {
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
}  // namespace

int local_rank(const Communicator& comm) {
  if (comm.ranks_are_threads()) return comm.rank();
  return env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("MPI_LOCALRANKID", env_int("SLURM_LOCALID", comm.rank())));
}

int local_size(const Communicator& comm) {
  if (comm.ranks_are_threads()) return comm.size();
  return env_int("OMPI_COMM_WORLD_LOCAL_SIZE",
                 env_int("MPI_LOCALNRANKS", env_int("SLURM_NTASKS_PER_NODE", comm.size())));
}

LaunchPlace launch_place_from_env() {
  struct Names {
    const char *rank, *size, *local_rank, *local_size;
  };
  for (const Names& v : {Names{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                               "OMPI_COMM_WORLD_LOCAL_SIZE"},
                         Names{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
                         Names{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}}) {
    if (!env_set(v.rank) || !env_set(v.size) || !env_set(v.local_rank) || !env_set(v.local_size)) continue;
    LaunchPlace p;
    p.rank = env_int(v.rank, -1), p.size = env_int(v.size, 0);
    p.local_rank = env_int(v.local_rank, -1), p.local_size = env_int(v.local_size, 0);
    p.known = p.rank >= 0 && p.rank < p.size && p.local_rank >= 0 && p.local_rank < p.local_size &&
              p.local_size <= p.size;
    return p.known ? p : LaunchPlace{};
  }
  return {};
}

bool launched_by_mpi() {
  // Open MPI (mpirun), MPICH/Hydra and PMI-2, PMIx (Slurm srun --mpi=pmix). A launch of one
  // process (size 1) is a plain run: it needs no MPI (and works in a build without it).
  for (const char* size : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (env_set(size)) return std::atoi(std::getenv(size)) != 1;
  return env_set("PMIX_RANK") || env_set("PMI_RANK");
}

std::unique_ptr<Communicator> make_self_communicator() {
  return std::make_unique<SelfCommunicator>();
}

std::unique_ptr<Communicator> make_communicator() {
  return launched_by_mpi() ? make_mpi_communicator() : make_self_communicator();
}

}  // namespace tcsolve
