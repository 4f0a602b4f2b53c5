// Atomic output: write everything to "TARGET.tmp-XXXXXX" in the target's folder, then commit()
// (fsync the temporary, rename it over the target, fsync the folder). Without commit() — an
// exception while writing — the destructor removes the temporary, so a reader never sees a
// partial file and an existing target is left untouched.
//
//   AtomicFile out(path);
//   write_something(out.temp_path());   // any writer that creates/truncates a file by name
//   out.commit();
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/interrupt.hpp"

namespace tcsolve {

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
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = target_ + ".tmp-";
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

  // Makes the written temporary durable and moves it over the target (atomic on POSIX).
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
  }

 private:
  std::string target_;
  std::string temp_;
  std::unique_ptr<TempFileGuard> guard_;
  bool committed_ = false;
};

}  // namespace tcsolve
