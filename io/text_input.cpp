// Whole-file input: read() into one uninitialised buffer; gzip inflated into a growing buffer.
#include "io/text_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "core/error.hpp"

namespace tcsolve {

void TextBuffer::reserve(std::size_t n) {
  if (n <= capacity_ && data_) return;
  std::unique_ptr<char[]> p(new char[n + 1]);
  if (size_ > 0) std::memcpy(p.get(), data_.get(), size_);
  data_ = std::move(p);
  capacity_ = n;
  data_[size_] = '\0';
}

bool is_gzip(const char* data, std::size_t size) {
  return size >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

namespace {

struct Inflater {
  z_stream zs{};
  bool open = false;
  ~Inflater() {
    if (open) inflateEnd(&zs);
  }
};

}  // namespace

TextBuffer gunzip_text(const char* data, std::size_t size, const std::string& name) {
  TextBuffer out;
  // Text matrices typically compress 3-5x; start there and double when full.
  out.reserve(std::max<std::size_t>(std::size_t(1) << 16, size < (SIZE_MAX / 8) ? size * 4 : size));
  Inflater inf;
  // 16 + MAX_WBITS: gzip wrapper only (header and CRC-32/ISIZE trailer are checked by zlib).
  if (inflateInit2(&inf.zs, 16 + MAX_WBITS) != Z_OK)
    throw InputError(name, 0, "gzip: cannot initialise zlib");
  inf.open = true;
  const auto* in = reinterpret_cast<const Bytef*>(data);
  std::size_t in_pos = 0;
  bool member_done = false;
  for (;;) {
    if (out.size_ == out.capacity_) out.reserve(out.capacity_ * 2);
    // zlib counts in uInt (32 bit): feed and drain at most 1 GiB per call.
    const std::size_t in_chunk = std::min<std::size_t>(size - in_pos, std::size_t(1) << 30);
    const std::size_t out_chunk = std::min<std::size_t>(out.capacity_ - out.size_, std::size_t(1) << 30);
    inf.zs.next_in = const_cast<Bytef*>(in + in_pos);
    inf.zs.avail_in = static_cast<uInt>(in_chunk);
    inf.zs.next_out = reinterpret_cast<Bytef*>(out.data_.get() + out.size_);
    inf.zs.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&inf.zs, Z_NO_FLUSH);
    in_pos += in_chunk - inf.zs.avail_in;
    out.size_ += out_chunk - inf.zs.avail_out;
    if (rc == Z_STREAM_END) {
      member_done = true;
      // Concatenated members (gzip -c a >> f) continue; trailing zero padding is ignored.
      std::size_t rest = in_pos;
      while (rest < size && data[rest] == '\0') ++rest;
      if (rest == size) break;
      if (!is_gzip(data + in_pos, size - in_pos))
        throw InputError(name, 0, "gzip: byte " + std::to_string(in_pos) +
                                      ": trailing garbage after the compressed data");
      inflateReset(&inf.zs);
      member_done = false;
      continue;
    }
    if (rc == Z_BUF_ERROR || rc == Z_OK) {
      // Z_BUF_ERROR with input left means the output is full; with no input left, truncation.
      if (in_pos == size && inf.zs.avail_out != 0) break;
      continue;
    }
    const char* msg = inf.zs.msg ? inf.zs.msg : "corrupt data";
    throw InputError(name, 0, "gzip: byte " + std::to_string(in_pos) + ": " + msg);
  }
  if (!member_done)
    throw InputError(name, 0, "gzip: truncated compressed data (stream ends at byte " +
                                  std::to_string(size) + " before the end marker)");
  out.data_[out.size_] = '\0';
  return out;
}

std::string quote_text(const char* p, const char* end, std::size_t max) {
  if (p >= end) return "end of file";
  if (*p == '\n' || *p == '\r') return "end of line";
  std::string s = "'";
  std::size_t n = 0;
  for (; p < end && *p != '\n' && *p != '\r' && n < max; ++p, ++n) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c >= 32 && c < 127) {
      s += static_cast<char>(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    }
  }
  if (p < end && *p != '\n' && *p != '\r') s += "...";
  return s + "'";
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TextBuffer read_text_file(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(path, 0, "is a directory, not a file");
  TextBuffer buf;
  // Regular files: one buffer of the exact size; pipes and the like grow by doubling.
  buf.reserve(S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<std::size_t>(st.st_size)
                                                     : std::size_t(1) << 16);
  for (;;) {
    if (buf.size_ == buf.capacity_) {
      // Probe for growth (a file that grew since fstat, or a pipe) with a small read first.
      char probe;
      ssize_t r = ::read(f.fd, &probe, 1);
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        throw InputError(path, 0, std::string("read failed: ") + std::strerror(errno));
      }
      buf.reserve(buf.capacity_ * 2);
      buf.data_[buf.size_++] = probe;
      continue;
    }
    const std::size_t want = std::min<std::size_t>(buf.capacity_ - buf.size_, std::size_t(1) << 30);
    ssize_t r = ::read(f.fd, buf.data_.get() + buf.size_, want);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      throw InputError(path, 0, std::string("read failed: ") + std::strerror(errno));
    }
    buf.size_ += static_cast<std::size_t>(r);
  }
  buf.data_[buf.size_] = '\0';
  if (is_gzip(buf.data(), buf.size())) return gunzip_text(buf.data(), buf.size(), path);
  return buf;
}

}  // namespace tcsolve
