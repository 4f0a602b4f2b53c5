// Processes and their collectives: one rank per GPU (or per CPU process), MPI between
// processes, NCCL between GPUs (after SLEPc/Trilinos/ChASE: MPI launches and talks host data;
// device buffers move only through NCCL, since the MPI we meet is not CUDA-aware).
//
// Contract: a Communicator is created once per process (make_communicator), or once per rank
// thread (distributed/thread_ranks.hpp), and used from one thread at a time. Every call below is collective: all ranks make the same calls in the same order with
// the same counts (the solvers guarantee it by taking every decision from reduced values, which
// are bitwise equal on all ranks). Errors throw tcsolve::Error with the MPI/NCCL message.
//
// Memory spaces: Space::host data goes through MPI, synchronously. Space::device data goes
// through NCCL on the given cudaStream_t, asynchronously in stream order (needs
// enable_device() first; a CPU-only build or a build without NCCL throws NotCompiled there).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace tcsolve {

// One message of a point-to-point exchange: `count` doubles (floats when fp32) at `data`, to or
// from `peer`.
struct Transfer {
  int peer = 0;
  void* data = nullptr;
  std::int64_t count = 0;
  bool fp32 = false;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // What carries the data: "single process", "MPI (Open MPI 4.1.6), NCCL 2.28 on GPU 1", ...
  virtual std::string describe() const = 0;
  // True when the ranks are threads of this process (distributed/thread_ranks.hpp): the local
  // rank is the rank (no launcher's environment), each thread selects its own GPU.
  virtual bool ranks_are_threads() const { return false; }

  // In-place sum over the ranks of `count` doubles (host: MPI_Allreduce; device: ncclAllReduce
  // on `stream`, asynchronous).
  virtual void allreduce_sum(double* data, std::int64_t count, Space space, void* stream) = 0;
  // Starts every send and receive of one exchange (one halo update) at once; exchange_wait()
  // completes them (host: MPI_Waitall; device: makes `stream` wait for the NCCL stream, the host
  // never waits). Between the two the caller may compute on data it does not exchange: that is
  // the overlap of the interior SpMM with the halo. Buffers stay untouched until the wait.
  virtual void exchange_start(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs,
                              Space space, void* stream) = 0;
  virtual void exchange_wait(void* stream) = 0;

  // Host-only collectives for setup and results.
  virtual void barrier() = 0;
  virtual double allreduce_max(double v) = 0;
  virtual std::int64_t allreduce_sum_int(std::int64_t v) = 0;
  // Rank r's list to_each[q] arrives as result[r] on rank q (setup: which rows each rank needs).
  virtual std::vector<std::vector<std::int64_t>> alltoall_lists(
      const std::vector<std::vector<std::int64_t>>& to_each) = 0;
  // Concatenation of every rank's `local` in rank order, on rank 0 only (empty elsewhere).
  virtual std::vector<double> gather_to_root(const std::vector<double>& local) = 0;
  // Every rank's value, in rank order, on every rank.
  virtual std::vector<std::int64_t> allgather(std::int64_t v) = 0;
  // Host point to point (setup: rank 0 sends each rank its rows of a file only it read). Any
  // size (split into messages of at most 2^30 bytes); the receiver knows the size.
  virtual void send_bytes(int dest, const void* data, std::int64_t bytes) = 0;
  virtual void recv_bytes(int src, void* data, std::int64_t bytes) = 0;
  // Every rank's bytes, in rank order, on rank 0 only (empty elsewhere).
  virtual std::vector<std::string> gather_strings_to_root(const std::string& local) = 0;
  // Rank `root`'s bytes to everyone (resized on the receivers).
  virtual void broadcast(std::string& bytes, int root) = 0;

  // Device collectives through NCCL on `device` (a CUDA ordinal): the unique id goes from rank 0
  // over MPI, then a barrier, then ncclCommInitRank (NCCL's advice). Call after cudaSetDevice.
  virtual void enable_device(int device) = 0;
  virtual bool device_enabled() const = 0;
  // enable_device begun, possibly finished later: device_enabled() is true at once, and the first
  // device collective (or finish_device_start) waits for it. Ranks that are threads start NCCL on
  // a thread of their own so that the operator's upload overlaps it; others: enable_device.
  virtual void start_device(int device) { enable_device(device); }
  // Waits for start_device's work (rethrowing its error); the seconds waited.
  virtual double finish_device_start() { return 0.0; }
  // Ends every rank of the job with `code` (MPI_Abort): a rank that failed must not leave the
  // others waiting in a collective. One process: std::exit(code). Ranks that are threads: the
  // others' collectives throw, and this one throws RankAborted (distributed/thread_ranks.hpp).
  [[noreturn]] virtual void abort(int code) = 0;
  // Seconds the host spent inside host collectives and exchanges (device exchanges are timed by
  // their callers with stream marks).
  virtual double host_comm_seconds() const = 0;
};

// This rank's index among the ranks of its node, and their count, from the launcher
// (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS, SLURM_LOCALID/
// SLURM_NTASKS_PER_NODE; else the global rank and size). Ranks that are threads: rank and size.
int local_rank(const Communicator& comm);
int local_size(const Communicator& comm);

// This rank's place as the launcher's environment gives it, readable before MPI_Init: Open MPI
// (OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE), MPICH/Hydra (PMI_RANK, PMI_SIZE,
// MPI_LOCALRANKID, MPI_LOCALNRANKS), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE). `known` is false unless one launcher's four values are all present and
// consistent (0 <= rank < size, 0 <= local rank < local size <= size).
struct LaunchPlace {
  bool known = false;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
};
LaunchPlace launch_place_from_env();

// The GPU of this rank: (local rank) mod (visible GPUs), selected with cudaSetDevice (not with a
// per-rank CUDA_VISIBLE_DEVICES, which breaks CUDA IPC); the local rank comes from the launcher
// (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID; else the rank). Refuses (throws
// InvalidArgument) when this node has more ranks than GPUs: two ranks never share a GPU in one
// NCCL communicator. Returns the ordinal. Throws NotCompiled without CUDA, DeviceError with none.
int select_local_gpu(const Communicator& comm);

// Starts select_local_gpu's work for `place` (known) on a helper thread: cuInit, the device count
// and the rank's CUDA context (0.2–0.3 s on an H200 host), so that it overlaps MPI_Init (0.25 s)
// or a batch's first matrix. Widens the launcher's binding first (widen_launcher_binding: the
// helper's and the CUDA runtime's threads inherit the mask). select_local_gpu and selected_gpu()
// then wait for it and rethrow its error (more ranks on the node than GPUs). No GPU visible: the
// selection is -1 (nothing selected). Call at most once, before any other CUDA call. Without
// CUDA: only the widening.
void start_local_gpu_selection(const LaunchPlace& place);

// Ranks that are threads (comm.ranks_are_threads()): GPU `rank`, remembered for the calling thread
// only (selected_gpu() on that thread); more ranks than GPUs is refused the same way.
//
// The GPU select_local_gpu chose in this process (-1 when it was not called; no CUDA call; waits
// for a selection started by start_local_gpu_selection and rethrows its error), and
// making `device` the calling thread's (a helper thread starts on device 0: threads that create
// CUDA objects for a rank's GPU call use_gpu(selected_gpu()) first; -1: nothing). Without CUDA:
// -1, and a no-op.
int selected_gpu();
void use_gpu(int device);

// True when this process was started by mpirun/mpiexec or a PMI launcher (Open MPI's, MPICH's or
// Slurm's environment) with more than one process; a plain start, or a launch of one, is one
// process without MPI at all.
bool launched_by_mpi();

// A single process: size 1, every collective a no-op.
std::unique_ptr<Communicator> make_self_communicator();
// MPI_COMM_WORLD (MPI_Init on first use, MPI_Finalize at exit). Throws NotCompiled without MPI.
std::unique_ptr<Communicator> make_mpi_communicator();
// launched_by_mpi() ? make_mpi_communicator() : make_self_communicator().
std::unique_ptr<Communicator> make_communicator();

}  // namespace tcsolve
