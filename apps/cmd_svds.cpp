// tcsolve svds MATRIX --k K: the k largest singular triplets of any sparse matrix (square or
// rectangular), optionally of the column-centered matrix (PCA): a job of the job pipeline
// (apps/job/: Task::svds) like eigs and solve, with a table (or --json) on stdout, U, s, Vᵀ in an
// HDF5 file written atomically (docs/hdf5-schema.md, section 6), checkpoints and --resume-from,
// and --plot (the spectrum).
#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "apps/job/spec.hpp"

namespace tcsolve::app {

namespace {

CommandSpec svds_command() {
  return CommandSpec{
      "svds", "svds MATRIX --k K [options]",
      "Computes the k largest singular triplets A v = s u, A^T u = s v of a sparse matrix, square or\n"
      "rectangular (thick-restart block Golub-Kahan-Lanczos on A and an explicit A^T, both on the\n"
      "SpMM kernels); --center subtracts the column means implicitly (PCA), --scale divides each\n"
      "column by its standard deviation. Every triplet is checked on its recomputed residuals\n"
      "|A v - s u| and |A^T u - s v| against tol * s_1, and, where it is cheap (or --certify),\n"
      "the count of singular values above s_k by Sylvester's inertia of [0 A; A^T 0] - tau I;\n"
      "where nothing counts and a found value has as many copies as the block, a re-check (a short\n"
      "Krylov run from fresh random vectors with the found vectors deflated). A set missing copies\n"
      "of a repeated value is run again with a wider block.",
      std::string(matrix_argument_help) +
          "\nExit status: 0 converged, 1 not converged (the best approximations are still written)\n"
          "or the result could not be written, 2 bad usage or input, 130/143 interrupted (the\n"
          "partial result is written with status interrupted).\n"
          "The result file holds U [m][k], s [k], Vt [k][n], the residuals and, with --center, the\n"
          "column means, the scores U*diag(s) and the explained variance (docs/hdf5-schema.md).\n"
          "A checkpoint holds the right basis kept at a thick restart: --resume-from continues that\n"
          "restart (same matrix, checked by checksum). In a batch job file: task = svds.\n",
      {"MATRIX"}};
}

}  // namespace

int run_svds(const Args& args) { return run_task_command(Task::svds, svds_command(), args); }

}  // namespace tcsolve::app
