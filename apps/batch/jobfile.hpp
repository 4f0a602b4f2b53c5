// The batch job file: its structure (sections, keys and their lines) and the jobs it describes,
// checked as a whole before anything runs (errors name the line, exit 2).
//
//   # comment                     [defaults]          keys for every job (a job overrides them)
//   [defaults]                    [job.NAME]          one job; NAME names its output NAME.h5
//   device = cpu                  key = value         task = eigs|solve|svds, matrix, mass, rhs,
//   [job.lap]                                         out, plot and the long option names of
//   task = eigs                                       eigs/solve/svds
//   matrix = gen:lap2d:100
#pragma once
#include <map>
#include <string>
#include <vector>

#include "apps/job/spec.hpp"

namespace tcsolve::app {

struct Entry {
  std::string value;
  int line = 0;
};

struct JobSection {
  std::string name;
  int line = 0;
  std::map<std::string, Entry> keys;
};

struct JobFile {
  std::map<std::string, Entry> defaults;
  std::vector<JobSection> jobs;
};

// The structure of the file (sections, key = value, '#' comments, as Boost.Program_options'
// parse_config_file reads them), with the line of every key. InputError naming the line.
JobFile read_job_file(const std::string& path);

// Where the job files' results may go: --output-dir (or the current folder), unless
// --allow-outside-output-dir.
struct OutputPlace {
  std::string dir;  // --output-dir ("" : the current folder)
  bool allow_outside = false;
};

// The jobs of a file, each parsed through the options of its task (defaults first), checked
// (validate_job), its out/plot/checkpoint placed in the output folder; and the files the jobs
// write checked against one another (no result, plot or checkpoint of two jobs or roles is one
// file). InputError naming the line of the offending key.
std::vector<JobSpec> build_jobs(const std::string& path, const JobFile& jf, const OutputPlace& place);

}  // namespace tcsolve::app
