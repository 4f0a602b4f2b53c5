// A job's dense inputs: right-hand sides, start blocks, columns of HDF5 datasets.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tcsolve::app {

// Columns of length n stored in FILE.h5's DATASET as [s][n] (one row per column) or [n], as an
// n × s column-major block, checked finite; `what` names them in errors ("right-hand sides",
// "start vectors"). InputError naming the file, dataset and what is wrong.
std::vector<double> read_columns(const std::string& file, const std::string& dataset, std::int64_t n,
                                 const char* what, std::int64_t* s_out);

// A dense n × p block given as "FILE.mtx" (Matrix Market, array or coordinate, n rows) or
// "FILE.h5[:DATASET]" (read_columns; `dataset` by default), checked finite: eigs --constraints.
// InputError naming the file and what is wrong.
std::vector<double> read_block(const std::string& spec, const char* dataset, std::int64_t n, const char* what,
                               std::int64_t* p_out);

// Right-hand sides, n × s column-major on the host: "random:S" or "FILE.h5:DATASET" (parse_rhs,
// apps/job/spec.hpp). random:S with `materialize` false: only the count (the solve generates
// them where it runs: block_cg_random, the same values).
std::vector<double> load_rhs(const std::string& rhs, std::int64_t n, std::int64_t* s_out, std::uint64_t seed,
                             bool materialize = true);

}  // namespace tcsolve::app
