// Atomic output: write everything to a temporary file in the target's folder, then commit()
// (fsync the temporary, rename it over the target, fsync the folder). Without commit() — an
// exception while writing — the destructor removes the temporary, so a reader never sees a
// partial file and an existing target is left untouched.
//
// The temporary is named "TARGET.tmp-PID-HOST-XXXXXX": the writer's process id, 8 hex digits of
// its host's name (FNV-1a) and 6 random characters [a-z0-9]. A writer killed outright (SIGKILL,
// power loss) leaves it behind; the name proves whose it was, so remove_stale_temporaries (and
// every commit() to the same target) removes it once that process is gone — never a temporary
// of a live writer (its pid exists), of another host (a shared folder), or of another pattern.
//
//   AtomicFile out(path);
//   write_something(out.temp_path());   // any writer that creates/truncates a file by name
//   out.commit();
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"

namespace tcsolve {

namespace atomic_file_detail {

// 8 hex digits of FNV-1a over this host's name (the same in every process of the host).
inline const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
    std::uint32_t h = 2166136261u;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", h);
    return std::string(hex);
  }();
  return tag;
}

// Whether `name` (a file name, no folder) is "PREFIX.tmp-PID-HOST-XXXXXX" for `prefix` = the
// target's file name; *pid and *host receive the writer's process id and host tag.
inline bool parse_temp_name(const std::string& name, const std::string& prefix, long* pid, std::string* host) {
  const std::string head = prefix + ".tmp-";
  if (name.size() <= head.size() || name.compare(0, head.size(), head) != 0) return false;
  const std::string rest = name.substr(head.size());
  std::size_t i = 0;
  while (i < rest.size() && i < 10 && rest[i] >= '0' && rest[i] <= '9') ++i;
  if (i == 0 || rest.size() != i + 1 + 8 + 1 + 6 || rest[i] != '-' || rest[i + 9] != '-') return false;
  for (std::size_t k = i + 1; k < i + 9; ++k)
    if (!std::isxdigit(static_cast<unsigned char>(rest[k])) || std::isupper(static_cast<unsigned char>(rest[k])))
      return false;
  for (std::size_t k = i + 10; k < rest.size(); ++k)
    if (!std::islower(static_cast<unsigned char>(rest[k])) && !std::isdigit(static_cast<unsigned char>(rest[k])))
      return false;
  *pid = std::strtol(rest.substr(0, i).c_str(), nullptr, 10);
  *host = rest.substr(i + 1, 8);
  return true;
}

// A temporary of `prefix` whose writer provably is gone: this host's, and no process has its
// pid (kill(pid, 0) fails with ESRCH; EPERM means it exists under another user).
inline bool is_dead_writers_temp(const std::string& name, const std::string& prefix) {
  long pid = 0;
  std::string host;
  if (!parse_temp_name(name, prefix, &pid, &host) || host != host_tag() || pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// The dead writers' temporaries of every target in `dir`, listed once per process and folder
// (each commit() then costs no folder scan; a writer that dies later is found by the next
// process, or by remove_stale_temporaries). Returns the names of `prefix`'s and forgets them.
inline std::vector<std::string> take_dead_temps(const std::string& dir, const std::string& prefix) {
  static std::mutex mu;
  static std::map<std::string, std::vector<std::string>> listed;  // folder -> file names
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = listed.try_emplace(dir);
  if (fresh) {
    std::error_code ec;
    for (std::filesystem::directory_iterator d(dir, ec), end; !ec && d != end; d.increment(ec)) {
      const std::string name = d->path().filename().string();
      const auto cut = name.rfind(".tmp-");
      if (cut != std::string::npos && is_dead_writers_temp(name, name.substr(0, cut))) it->second.push_back(name);
    }
  }
  std::vector<std::string> mine;
  auto& names = it->second;
  for (auto n = names.begin(); n != names.end();) {
    long pid = 0;
    std::string host;
    if (parse_temp_name(*n, prefix, &pid, &host)) {
      mine.push_back(*n);
      n = names.erase(n);
    } else {
      ++n;
    }
  }
  return mine;
}

inline std::string folder_of(const std::string& target) {
  const std::string dir = std::filesystem::path(target).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace atomic_file_detail

// Removes the temporaries that writers of `target` left when they died (the pattern above, this
// host, no such process any more); a live writer's are kept. Returns how many were removed.
inline int remove_stale_temporaries(const std::string& target) {
  namespace fs = std::filesystem;
  const std::string dir = atomic_file_detail::folder_of(target);
  const std::string prefix = fs::path(target).filename().string();
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code rm;
    if (atomic_file_detail::is_dead_writers_temp(name, prefix) && it->is_regular_file(rm) && fs::remove(it->path(), rm))
      ++removed;
  }
  return removed;
}

// Whether `path` is an AtomicFile's temporary (of any process): "T.tmp-PID-HOST-XXXXXX"; *target
// (optional) receives T (the name a user knows).
inline bool is_atomic_temporary(const std::string& path, std::string* target = nullptr) {
  const auto cut = path.rfind(".tmp-");
  const auto slash = path.rfind('/');
  if (cut == std::string::npos || (slash != std::string::npos && slash > cut)) return false;
  const std::size_t start = slash == std::string::npos ? 0 : slash + 1;
  long pid = 0;
  std::string host;
  if (!atomic_file_detail::parse_temp_name(path.substr(start), path.substr(start, cut - start), &pid, &host))
    return false;
  if (target) *target = path.substr(0, cut);
  return true;
}

class AtomicFile {
 public:
  // Creates the (empty) temporary file next to `target`, with the permissions a new file gets
  // (0666 minus umask). Throws OutputError when the folder is missing or not writable.
  explicit AtomicFile(std::string target) : target_(std::move(target)) {
    if (target_.empty()) throw InvalidArgument("output path is empty");
    std::error_code ec;
    if (std::filesystem::is_directory(target_, ec)) throw Error(target_ + ": is a directory");
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::random_device rd;
    std::mt19937_64 rng((static_cast<unsigned long long>(rd()) << 32) ^ rd() ^
                        static_cast<unsigned long long>(::getpid()) ^
                        static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
    const std::string head = target_ + ".tmp-" + std::to_string(::getpid()) + "-" + atomic_file_detail::host_tag() + "-";
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = head;
      for (int k = 0; k < 6; ++k) name += digits[rng() % 36];
      int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        ::close(fd);
        temp_ = name;
        guard_ = std::make_unique<TempFileGuard>(temp_);  // a second SIGINT/SIGTERM removes it
        return;
      }
      if (errno != EEXIST) throw OutputError(target_ + ": cannot create temporary file " + name + ": " + std::strerror(errno));
    }
    throw OutputError(target_ + ": cannot create a unique temporary file");
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (!committed_ && !temp_.empty()) std::remove(temp_.c_str());
  }

  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }
  bool committed() const { return committed_; }

  // Makes the written temporary durable and moves it over the target (atomic on POSIX); then
  // removes what writers of the same target left when they died (see the top of the file).
  void commit() {
    if (committed_) return;
    int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw OutputError(target_ + ": temporary file " + temp_ + " vanished: " + std::strerror(errno));
    const bool synced = ::fsync(fd) == 0;
    const int sync_errno = errno;
    ::close(fd);
    if (!synced) throw OutputError(target_ + ": fsync failed: " + std::strerror(sync_errno));
    if (std::rename(temp_.c_str(), target_.c_str()) != 0)
      throw OutputError(target_ + ": cannot rename " + temp_ + " over it: " + std::strerror(errno));
    committed_ = true;
    // Persist the rename itself (best effort: some filesystems refuse fsync on folders).
    std::string dir = std::filesystem::path(target_).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    const std::string folder = atomic_file_detail::folder_of(target_);
    for (const std::string& name : atomic_file_detail::take_dead_temps(folder, std::filesystem::path(target_).filename().string())) {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path(folder) / name, ec);
    }
  }

 private:
  std::string target_;
  std::string temp_;
  std::unique_ptr<TempFileGuard> guard_;
  bool committed_ = false;
};

}  // namespace tcsolve
