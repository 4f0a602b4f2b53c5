// N ranks that are N threads of one process (`tcsolve eigs|solve --gpus N`): the Communicator of
// distributed/comm.hpp without mpirun. No launch, no MPI_Init, one CUDA runtime: the GPUs'
// contexts and the NCCL communicators come up in one process, in parallel.
//
// Host data moves through shared memory: every collective deposits a pointer per rank in a shared
// table and meets at a barrier; each rank then reads the others' data directly (reductions summed
// in rank order by every rank: bitwise equal results on all ranks, as the solvers need) and a
// second barrier releases the buffers. Point to point (send_bytes/recv_bytes, host exchanges) is
// a rendezvous per (sender, receiver) pair: the receiver copies from the sender's buffer. Device
// data goes through NCCL as under MPI (distributed/nccl_channel.hpp: the unique id shared in
// memory, ncclCommInitRank on every rank's thread at once); a build without NCCL throws
// NotCompiled there.
//
// Failure: a rank that throws poisons the group: every rank waiting in (or later entering) a
// collective throws RankAborted instead of waiting forever. run_thread_ranks rethrows the first
// rank's own error once every thread has ended; a rank that does not come back (stuck in a device
// wait on a peer that is gone) is the caller's `stuck` decision after `grace_seconds`.
#pragma once
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {

// What a collective of a poisoned group throws (and abort() throws after poisoning it).
class RankAborted : public Error {
 public:
  RankAborted(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// `ranks` communicators (rank r at index r) over one shared state; each is used by one thread.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int ranks);

// Runs body(communicator of rank r) on `ranks` threads (rank 0 on a thread of its own too) and
// joins them. The first exception a rank throws poisons the group and is rethrown here after
// every thread ended; RankAborted of the other ranks is dropped. When a rank failed and the
// others have not ended `grace_seconds` later, stuck(first error) is called on this thread (it
// should end the process: those threads cannot be stopped; if it returns, the wait goes on).
// leave_to_exit: the caller ends the process next; the NCCL communicators are left to the exit
// instead of destroyed (ncclCommDestroy of two took 0.52 s on two H200s, after the answer).
void run_thread_ranks(int ranks, const std::function<void(Communicator&)>& body, double grace_seconds = 10.0,
                      const std::function<void(std::exception_ptr)>& stuck = {}, bool leave_to_exit = false);

}  // namespace tcsolve
