// Host CPUs of a rank under mpirun. Open MPI binds each rank to ONE core by default when it
// starts two or fewer processes (--bind-to core). A tcsolve rank then runs its main thread, the
// CUDA runtime's and NCCL's helper threads, and every host loop (parallel_for) on that core:
// measured on 2 × H200 (bench/distributed/results/h200x2_2026-11-24_binding.txt) the two-rank
// eigs of lap3d:200 took 5.0 s of solve bound that way and 3.1 s with --bind-to none, because a
// thread spinning in a stream synchronization holds the core that NCCL's thread needs.
//
// widen_launcher_binding() undoes a binding that small: when this process may run on fewer CPUs
// than its fair share of the node (the node's CPUs split in contiguous slices over the ranks of
// this node, by local rank), it widens its own mask to that slice. A binding to a share or more
// (Open MPI's default --bind-to socket/numa for more ranks, or the user's own) is kept, and
// TCSOLVE_KEEP_BINDING=1 keeps any. Threads created before the call keep their old mask.
#pragma once
#include <string>
#include <vector>

namespace tcsolve {

// The plan, from plain data (testable without a launcher): `allowed` this process's CPUs,
// `node` the node's CPUs (ascending), this rank's local index and the local rank count. Empty
// when nothing is to change; else the CPUs to run on (contiguous slice local·|node|/size ..
// (local+1)·|node|/size, never smaller than one CPU).
std::vector<int> binding_share(const std::vector<int>& allowed, const std::vector<int>& node,
                               int local_rank, int local_size);

// "0-3,8,10-11" ⇄ CPU lists (Linux cpuset syntax). parse_cpu_list throws InvalidArgument on
// malformed text.
std::vector<int> parse_cpu_list(const std::string& text);
std::string format_cpu_list(const std::vector<int>& cpus);

// Applies binding_share to this process (Linux; elsewhere a no-op) and says what it did, e.g.
// "the launcher bound this rank to CPU 1; widened to CPUs 16-31 (TCSOLVE_KEEP_BINDING=1 keeps
// the launcher's binding)", or "" when nothing changed. The node's CPUs are the cgroup's
// cpuset.cpus.effective when readable, else every online CPU. Never throws: a refused
// sched_setaffinity leaves the binding and says so.
std::string widen_launcher_binding(int local_rank, int local_size);

// What the last widen_launcher_binding() said ("" before or when nothing changed).
const std::string& launcher_binding_note();

}  // namespace tcsolve
