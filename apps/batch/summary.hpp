// A batch's summary: one row per job (its status, time, iterations, residual, output or error),
// carried between MPI ranks as text, printed as a table or JSON.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/job/spec.hpp"

namespace tcsolve::app {

struct Row {
  std::string job, task, status, message, out;
  double seconds = 0, residual = NAN;
  std::int64_t iterations = 0;
  std::size_t index = 0;  // the job's place in the file
  int rank = 0;           // the MPI rank that ran it
  int gpu = -1;           // the GPU of the worker that ran it (one worker per GPU; -1: one worker)
};

// The row of a job not run yet (status and message filled by the caller), and of one that an
// interrupt kept from starting.
Row job_row(const JobSpec& s, std::size_t index, int rank);
Row not_run_row(const JobSpec& s, std::size_t index, int rank);

// Rows as text for the gather to rank 0, and back (unit and record separators: no field holds
// them).
std::string pack_rows(const std::vector<Row>& rows);
std::vector<Row> unpack_rows(const std::string& s);

// The summary on stdout: JSON ({"jobs": [...], "ok": ...}; rank under mpirun, gpu with a worker
// per GPU) or the table (nothing when quiet).
void print_summary(const std::vector<Row>& rows, bool all_ok, bool json, bool quiet, bool distributed);

}  // namespace tcsolve::app
