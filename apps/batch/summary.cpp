#include "apps/batch/summary.hpp"

#include <cstdlib>
#include <iostream>

#include "apps/cli.hpp"

namespace tcsolve::app {

Row job_row(const JobSpec& s, std::size_t index, int rank) {
  Row r{s.name, to_string(s.task), "", "", s.out};
  r.index = index, r.rank = rank;
  return r;
}

Row not_run_row(const JobSpec& s, std::size_t index, int rank) {
  Row r = job_row(s, index, rank);
  r.status = "not run", r.message = "interrupted before it started";
  return r;
}

std::string pack_rows(const std::vector<Row>& rows) {
  std::string s;
  for (const Row& r : rows)
    s += r.job + '\x1f' + r.task + '\x1f' + r.status + '\x1f' + r.message + '\x1f' + r.out + '\x1f' +
         format("%.17g\x1f%.17g\x1f%lld\x1f%zu\x1f%d", r.seconds, r.residual, (long long)r.iterations,
                r.index, r.rank) +
         '\x1e';
  return s;
}
std::vector<Row> unpack_rows(const std::string& s) {
  std::vector<Row> rows;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t end = s.find('\x1e', at);
    std::vector<std::string> f;
    std::size_t p = at;
    while (true) {
      const std::size_t q = s.find('\x1f', p);
      if (q == std::string::npos || q > end) {
        f.push_back(s.substr(p, end - p));
        break;
      }
      f.push_back(s.substr(p, q - p));
      p = q + 1;
    }
    if (f.size() == 10) {
      Row r{f[0], f[1], f[2], f[3], f[4]};
      r.seconds = std::strtod(f[5].c_str(), nullptr);
      r.residual = std::strtod(f[6].c_str(), nullptr);
      r.iterations = std::strtoll(f[7].c_str(), nullptr, 10);
      r.index = std::strtoull(f[8].c_str(), nullptr, 10);
      r.rank = std::atoi(f[9].c_str());
      rows.push_back(std::move(r));
    }
    at = end + 1;
  }
  return rows;
}

void print_summary(const std::vector<Row>& rows, bool all_ok, bool json, bool quiet, bool distributed) {
  if (json) {
    std::cout << "{\"jobs\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::cout << (i ? ", " : "") << "{\"job\": " << json_string(r.job) << ", \"task\": "
                << json_string(r.task) << ", \"status\": " << json_string(r.status)
                << ", \"seconds\": " << json_number(r.seconds) << ", \"iterations\": "
                << r.iterations << ", \"max_residual\": " << json_number(r.residual)
                << ", \"out\": " << json_string(r.out) << ", \"message\": " << json_string(r.message)
                << (distributed ? ", \"rank\": " + std::to_string(r.rank) : std::string())
                << (r.gpu >= 0 ? ", \"gpu\": " + std::to_string(r.gpu) : std::string()) << "}";
    }
    std::cout << "], \"ok\": " << (all_ok ? "true" : "false") << "}\n";
  } else if (!quiet) {
    std::cout << format("%-16s %-6s %-14s %10s %10s %12s  %s\n", "job", "task", "status", "time",
                        "iterations", "residual", "output / error");
    for (const Row& r : rows)
      std::cout << format("%-16s %-6s %-14s %10s %10lld %12.3e  %s\n", r.job.c_str(),
                          r.task.c_str(), r.status.c_str(), format_seconds(r.seconds).c_str(),
                          (long long)r.iterations, r.residual,
                          r.status == "failed" ? r.message.c_str() : r.out.c_str());
  }
}

}  // namespace tcsolve::app
