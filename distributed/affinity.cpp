// Host CPUs of a rank under mpirun (distributed/affinity.hpp).
#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <unistd.h>
#endif

#include "distributed/affinity.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace tcsolve {

std::vector<int> binding_share(const std::vector<int>& allowed, const std::vector<int>& node,
                               int local_rank, int local_size) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size || node.empty()) return {};
  const std::size_t n = node.size(), ls = static_cast<std::size_t>(local_size),
                    lr = static_cast<std::size_t>(local_rank);
  std::size_t b = lr * n / ls, e = (lr + 1) * n / ls;
  if (e <= b) b = lr % n, e = b + 1;  // more ranks than CPUs: one CPU each, round robin
  if (allowed.size() >= e - b) return {};  // already a share or more: the launcher's (or user's)
  return std::vector<int>(node.begin() + static_cast<std::ptrdiff_t>(b),
                          node.begin() + static_cast<std::ptrdiff_t>(e));
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  auto bad = [&](const std::string& why) {
    return InvalidArgument("CPU list '" + text + "': " + why + " in '" + part + "'");
  };
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("not a CPU number");
    return std::atoi(s.c_str());
  };
  while (std::getline(ss, part, ',')) {
    while (!part.empty() && (part.back() == '\n' || part.back() == ' ')) part.pop_back();
    if (part.empty()) continue;
    const auto dash = part.find('-');
    const int lo = number(part.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo) throw bad("a descending range");
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(cpus[i]) +
         (j > i ? "-" + std::to_string(cpus[j]) : std::string());
    i = j + 1;
  }
  return s;
}

namespace {
std::string g_note;
}

const std::string& launcher_binding_note() { return g_note; }

std::string widen_launcher_binding(int local_rank, int local_size) {
#ifdef __linux__
  const char* keep = std::getenv("TCSOLVE_KEEP_BINDING");
  if (keep && *keep && *keep != '0') return {};
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return {};
  std::vector<int> allowed;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) allowed.push_back(c);
  std::vector<int> node;
  for (const char* f : {"/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"}) {
    std::ifstream in(f);
    std::string line;
    if (in && std::getline(in, line)) {
      try {
        node = parse_cpu_list(line);
      } catch (const std::exception&) {
        node.clear();
      }
      if (!node.empty()) break;
    }
  }
  if (node.empty()) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < online && c < CPU_SETSIZE; ++c) node.push_back(static_cast<int>(c));
  }
  node.erase(std::remove_if(node.begin(), node.end(), [](int c) { return c < 0 || c >= CPU_SETSIZE; }),
             node.end());
  const std::vector<int> share = binding_share(allowed, node, local_rank, local_size);
  if (share.empty()) return {};
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : share) CPU_SET(c, &want);
  const std::string was = std::string(allowed.size() == 1 ? "CPU " : "CPUs ") + format_cpu_list(allowed);
  if (sched_setaffinity(0, sizeof want, &want) != 0) {
    const int err = errno;
    g_note = "the launcher bound this rank to " + was + "; widening to CPUs " +
             format_cpu_list(share) + " was refused (" + std::strerror(err) +
             "): start with mpirun --bind-to none for full speed";
    return g_note;
  }
  g_note = "the launcher bound each rank to few CPUs (rank " + std::to_string(local_rank) +
           ": " + was + "); widened to " + std::to_string(share.size()) + " CPUs (" +
           format_cpu_list(share) + "; TCSOLVE_KEEP_BINDING=1 keeps the launcher's binding)";
  return g_note;
#else
  (void)local_rank, (void)local_size;
  return {};
#endif
}

}  // namespace tcsolve
