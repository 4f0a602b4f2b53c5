// Creating and closing HDF5 files (io/hdf5_file.hpp: Hdf5File::create, close, take_image,
// write_file_image): files up to Hdf5File::kInMemoryBytes are built in memory on HDF5's core
// driver, whose buffer comes from the callbacks below, and put on disk with plain writes; larger
// ones are written by HDF5 after a free-space check. Groups, datasets, attributes and opening
// files: io/hdf5_file.cpp.
#include "io/hdf5_file.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_internal.hpp"

namespace tcsolve {

using detail::Hdf5Handle;
using hdf5_layer::hdf5_detail;
using hdf5_layer::Hid;
using hdf5_layer::quiet;

namespace {

// The name a user knows: an AtomicFile's "r.h5.tmp-PID-HOST-XXXXXX" is reported as "r.h5".
std::string shown_name(const std::string& path) {
  std::string target;
  return is_atomic_temporary(path, &target) ? target : path;
}

std::string write_error(int e, const std::string& path, double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, " (%.0f bytes)", bytes);
  if (e == ENOSPC) return "no space left on device writing " + shown_name(path) + b;
  if (e == EDQUOT) return "disk quota exceeded writing " + shown_name(path) + b;
  if (e == EFBIG) return "file size limit exceeded writing " + shown_name(path) + b;
  return std::string(std::strerror(e)) + " writing " + shown_name(path) + b;
}

}  // namespace

FileImage::~FileImage() { std::free(data_); }

FileImage& FileImage::operator=(FileImage&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_, size_ = o.size_;
    o.data_ = nullptr, o.size_ = 0;
  }
  return *this;
}

namespace detail {
// The core driver's buffer through HDF5's file image callbacks: malloc/realloc (the large
// interior advised onto huge pages: the driver zero-fills each extension, one fault per 2 MiB
// instead of per 4 KiB) and, at the close take_image makes, kept instead of freed.
struct CoreImage {
  bool keep = false;      // set by take_image just before its close
  void* kept = nullptr;   // the buffer the close handed over
  // A buffer of `ready_bytes` already touched (create(), before H5Fcreate and outside HDF5's
  // global lock, on the host threads), given to the driver at its first allocation: its zero-fill
  // then faults no page while it holds the lock (432 MB took 0.22 s there, stalling the other
  // GPU's job in a batch).
  void* ready = nullptr;
  std::size_t ready_bytes = 0;
  std::size_t held_bytes = 0;  // the driver's buffer's capacity when it is `ready`'s
  ~CoreImage() { std::free(ready); }
};
}  // namespace detail

namespace {


// The prepared buffer when it is large enough, once; else malloc.
void* take_ready(detail::CoreImage* st, std::size_t size) {
  if (!st || !st->ready || size > st->ready_bytes) return nullptr;
  void* p = st->ready;
  st->held_bytes = st->ready_bytes;
  st->ready = nullptr, st->ready_bytes = 0;
  return p;
}
void* image_malloc(std::size_t size, H5FD_file_image_op_t, void* udata) {
  if (void* p = take_ready(static_cast<detail::CoreImage*>(udata), size)) return p;
  void* p = std::malloc(size);
  if (p) advise_huge_pages(p, size);
  return p;
}
void* image_memcpy(void* dest, const void* src, std::size_t size, H5FD_file_image_op_t, void*) {
  return std::memcpy(dest, src, size);
}
void* image_realloc(void* ptr, std::size_t size, H5FD_file_image_op_t, void* udata) {
  auto* st = static_cast<detail::CoreImage*>(udata);
  if (!ptr)
    if (void* p = take_ready(st, size)) return p;
  if (ptr && st && st->held_bytes >= size) return ptr;  // within the prepared buffer
  if (st) st->held_bytes = 0;
  void* p = std::realloc(ptr, size);
  if (p) advise_huge_pages(p, size);
  return p;
}
herr_t image_free(void* ptr, H5FD_file_image_op_t op, void* udata) {
  auto* st = static_cast<detail::CoreImage*>(udata);
  if (st && st->keep && op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && !st->kept) {
    st->kept = ptr;
    return 0;
  }
  std::free(ptr);
  return 0;
}
void* udata_copy(void* udata) { return udata; }  // shared: the context owns the state
herr_t udata_free(void*) { return 0; }

}  // namespace

// Plain writes of a whole buffer (the in-memory file's image) to `path`, truncating it.
void write_file_image(const std::string& path, const FileImage& img) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw OutputError(write_error(errno, path, static_cast<double>(img.size())));
  std::size_t off = 0;
  while (off < img.size()) {
    const ssize_t w = ::write(fd, img.data() + off, img.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      throw OutputError(write_error(e, path, static_cast<double>(img.size())));
    }
    off += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) throw OutputError(write_error(errno, path, static_cast<double>(img.size())));
}

Hdf5File Hdf5File::create(const std::string& path, double expected_bytes) {
  quiet();
  const bool in_memory = !(expected_bytes > kInMemoryBytes);
  hid_t f = -1;
  std::shared_ptr<detail::CoreImage> image;
  if (in_memory) {
    // Core driver without a backing store: nothing touches the disk until close(). A folder that
    // is missing or not writable is refused now, as H5Fcreate would, not after the work is done.
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw OutputError("HDF5: " + shown_name(path) + ": cannot create file: no such folder " + dir);
    if (::access(dir.c_str(), W_OK) != 0)
      throw OutputError("HDF5: " + shown_name(path) + ": cannot create file: folder " + dir + " is not writable");
    Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // The core driver allocates and clears its image in steps of `increment`: the expected size
    // (rounded up to 1 MiB) rather than a fixed 16 MiB, whose clearing cost a small result more
    // than its writing (batch jobs of a few MB).
    const std::size_t mib = std::size_t(1) << 20;
    const std::size_t increment = std::max<std::size_t>(
        mib, (static_cast<std::size_t>(std::max(expected_bytes, 0.0)) + mib - 1) / mib * mib);
    image = std::make_shared<detail::CoreImage>();
    if (increment >= (std::size_t(64) << 20)) {  // large: touched here, on the host threads
      image->ready = std::malloc(increment);
      if (image->ready) {
        image->ready_bytes = increment;
        advise_huge_pages(image->ready, increment);
        char* b = static_cast<char*>(image->ready);
        const std::int64_t pages = static_cast<std::int64_t>((increment + (1 << 21) - 1) >> 21);
        parallel_for(pages, [&](std::int64_t i) {
          const std::size_t at = static_cast<std::size_t>(i) << 21;
          std::memset(b + at, 0, std::min<std::size_t>(std::size_t(1) << 21, increment - at));
        }, 8);
      }
    }
    H5FD_file_image_callbacks_t cb{image_malloc, image_memcpy, image_realloc, image_free,
                                   udata_copy,   udata_free,   image.get()};
    if (fapl.id < 0 || H5Pset_fapl_core(fapl.id, increment, 0) < 0 ||
        H5Pset_file_image_callbacks(fapl.id, &cb) < 0)
      throw Error("HDF5: " + path + ": cannot set up the in-memory file" + hdf5_detail());
    f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id);
  } else {
    // Written by HDF5 itself: refuse at once when the folder's filesystem cannot hold it.
    const std::string dir = std::filesystem::path(path).parent_path().string();
    struct statvfs sv {};
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &sv) == 0) {
      const double free_bytes = static_cast<double>(sv.f_bavail) * static_cast<double>(sv.f_frsize);
      if (free_bytes < 1.05 * expected_bytes) {
        char b[160];
        std::snprintf(b, sizeof b, ": needs about %.3g GB, %.3g GB free", expected_bytes / 1e9, free_bytes / 1e9);
        throw OutputError("no space left on device for " + shown_name(path) + b);
      }
    }
    f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  }
  if (f < 0) throw OutputError("HDF5: " + path + ": cannot create file" + hdf5_detail());
  detail::Hdf5Context c{path, false};
  c.in_memory = in_memory;
  c.image = image;
  auto ctx = std::make_shared<const detail::Hdf5Context>(c);
  return Hdf5File(ctx, std::make_shared<Hdf5Handle>(f, H5Fclose), "/");
}

bool Hdf5File::in_memory() const { return ctx_ && ctx_->in_memory; }

FileImage Hdf5File::take_image() {
  if (!in_memory()) throw Error("HDF5: " + file_name() + ": not an in-memory file (no image to take)");
  if (!h_ || h_->id < 0) throw Error("HDF5: " + shown_name(file_name()) + ": already closed");
  quiet();
  const hid_t f = h_->id;
  h_->id = -1;
  // The image's size, then a close that touches no disk and hands over the driver's buffer;
  // where other objects of the file are open (the close would wait for them), a copy.
  bool got = H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0;
  const ssize_t size = got ? H5Fget_file_image(f, nullptr, 0) : -1;
  got = size > 0;
  FileImage img;
  detail::CoreImage* st = ctx_->image.get();
  const bool alone = got && H5Fget_obj_count(f, H5F_OBJ_ALL | H5F_OBJ_LOCAL) == 1;
  if (got && !(alone && st)) {
    char* copy = static_cast<char*>(std::malloc(static_cast<std::size_t>(size)));
    got = copy && H5Fget_file_image(f, copy, static_cast<std::size_t>(size)) == size;
    img = FileImage(copy, got ? static_cast<std::size_t>(size) : 0);
  }
  const std::string detail = got ? "" : hdf5_detail();
  if (got && alone && st) st->keep = true;
  H5Fclose(f);
  h_.reset();
  if (got && alone && st) {
    st->keep = false;
    if (!st->kept) throw Error("HDF5: " + shown_name(file_name()) + ": the closed file gave back no image");
    img = FileImage(static_cast<char*>(st->kept), static_cast<std::size_t>(size));
    st->kept = nullptr;
  }
  if (!got) throw Error("HDF5: " + shown_name(file_name()) + ": cannot build the file image" + detail);
  return img;
}

void Hdf5File::close() {
  if (!h_ || h_->id < 0) return;
  if (ctx_->in_memory) {
    const std::string path = file_name();
    write_file_image(path, take_image());  // then our own writes
    return;
  }
  quiet();
  const hid_t f = h_->id;
  h_->id = -1;
  const bool flushed = ctx_->read_only || H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0;
  const std::string flush_detail = flushed ? "" : hdf5_detail();
  const bool closed = H5Fclose(f) >= 0;
  h_.reset();
  if (!flushed) throw OutputError("HDF5: " + file_name() + ": cannot flush file" + flush_detail);
  if (!closed) throw OutputError("HDF5: " + file_name() + ": cannot close file" + hdf5_detail());
}

}  // namespace tcsolve
