// Built without MPI: one process only.
#include "core/error.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {

std::unique_ptr<Communicator> make_mpi_communicator() {
  throw NotCompiled("tcsolve was built without MPI: start it without mpirun (one process)");
}

}  // namespace tcsolve
