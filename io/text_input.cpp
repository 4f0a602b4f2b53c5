// Whole-file input: read() into one uninitialised buffer; gzip inflated into a growing buffer.
#include "io/text_input.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace tcsolve {

void TextBuffer::reserve(std::size_t n) {
  if (n <= capacity_ && owned_) return;
  std::unique_ptr<char[]> p(new char[n + 1]);
  if (size_ > 0) std::memcpy(p.get(), owned_.get(), size_);
  owned_ = std::move(p);
  capacity_ = n;
}

void TextBuffer::clear() {
  if (map_) ::munmap(map_, size_);
  map_ = nullptr;
  owned_.reset();
  size_ = capacity_ = 0;
}

void TextBuffer::swap(TextBuffer& o) noexcept {
  std::swap(owned_, o.owned_);
  std::swap(capacity_, o.capacity_);
  std::swap(map_, o.map_);
  std::swap(size_, o.size_);
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

std::size_t inflate_bound_bytes(std::size_t header_bytes, double items, double bytes_per_item) {
  const double b = static_cast<double>(header_bytes) + items * bytes_per_item + static_cast<double>(kInflateSlackBytes);
  return b < 9e18 ? static_cast<std::size_t>(b) : std::size_t(9e18);
}

namespace {
std::string mib(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return b;
}
}  // namespace

TextBuffer gunzip_text(const char* data, std::size_t size, const std::string& name, const InflateLimit& limit) {
  TextBuffer out;
  // Text matrices typically compress 3-5x; start there and double when full (uninitialised: the
  // pages are touched only as the text fills them).
  out.reserve(std::max<std::size_t>(std::size_t(1) << 16, size < (SIZE_MAX / 8) ? size * 4 : size));
  Inflater inf;
  // 16 + MAX_WBITS: gzip wrapper only (header and CRC-32/ISIZE trailer are checked by zlib).
  if (inflateInit2(&inf.zs, 16 + MAX_WBITS) != Z_OK)
    throw InputError(name, 0, "gzip: cannot initialise zlib");
  inf.open = true;
  // The bound (InflateLimit): asked at 64 KiB, 128 KiB, ... of text until it decides.
  InflateBound bound;
  if (!limit) bound.bytes = SIZE_MAX;
  std::size_t ask_at = std::size_t(1) << 16;
  const auto* in = reinterpret_cast<const Bytef*>(data);
  std::size_t in_pos = 0;
  bool member_done = false;
  for (;;) {
    // Inflate no further than one byte past the bound (which proves it exceeded), or than the next
    // size the limit is asked at. out.size_ <= that byte count here (checked below).
    const std::size_t stop = bound.bytes ? bound.bytes : ask_at;
    const std::size_t stop1 = stop < SIZE_MAX ? stop + 1 : SIZE_MAX;
    if (out.size_ == out.capacity_) out.reserve(std::min(out.capacity_ * 2, stop1));
    // zlib counts in uInt (32 bit): feed and drain at most 1 GiB per call.
    const std::size_t in_chunk = std::min<std::size_t>(size - in_pos, std::size_t(1) << 30);
    const std::size_t out_chunk = std::min({out.capacity_ - out.size_, std::size_t(1) << 30, stop1 - out.size_});
    inf.zs.next_in = const_cast<Bytef*>(in + in_pos);
    inf.zs.avail_in = static_cast<uInt>(in_chunk);
    inf.zs.next_out = reinterpret_cast<Bytef*>(out.owned_.get() + out.size_);
    inf.zs.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&inf.zs, Z_NO_FLUSH);
    in_pos += in_chunk - inf.zs.avail_in;
    out.size_ += out_chunk - inf.zs.avail_out;
    if (rc != Z_STREAM_END && rc != Z_OK && rc != Z_BUF_ERROR) {
      const char* msg = inf.zs.msg ? inf.zs.msg : "corrupt data";
      throw InputError(name, 0, "gzip: byte " + std::to_string(in_pos) + ": " + msg);
    }
    while (bound.bytes == 0 && out.size_ >= ask_at) {
      bound = limit(out.owned_.get(), out.size_);
      if (bound.bytes == 0 && out.size_ >= kInflateHeaderBytes)
        throw InputError(name, 0, "gzip: " + mib(out.size_) + " inflated (from " + std::to_string(in_pos) +
                                      " of " + std::to_string(size) + " compressed bytes) and the header is "
                                      "still incomplete: refused before inflating more (no matrix file's "
                                      "header with its comments comes near this; a gzip bomb?)");
      ask_at = std::min(ask_at * 2, kInflateHeaderBytes);
    }
    if (bound.bytes && out.size_ > bound.bytes)
      throw InputError(name, 0, "gzip: the text inflates to more than " + std::to_string(bound.bytes) + " bytes (" +
                                    mib(bound.bytes) + "), the most that " + bound.why + " can take: refused at " +
                                    "compressed byte " + std::to_string(in_pos) + " of " + std::to_string(size) +
                                    " before inflating more (a gzip bomb, or text the header does not declare)");
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
    // Z_BUF_ERROR/Z_OK with input left means the output is full; with no input left, truncation.
    if (in_pos == size && inf.zs.avail_out != 0) break;
  }
  if (!member_done)
    throw InputError(name, 0, "gzip: truncated compressed data (stream ends at byte " +
                                  std::to_string(size) + " before the end marker)");
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

std::string read_text_prefix(const std::string& path, std::size_t max_bytes) {
  // Regular files only, checked before opening: opening a FIFO for reading blocks until a writer
  // comes (O_NONBLOCK as well, should it become one in between).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  std::string raw(max_bytes, '\0');
  ssize_t got = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) got = ::pread(fd, raw.data(), max_bytes, 0);
  ::close(fd);
  if (got <= 0) return "";
  raw.resize(static_cast<std::size_t>(got));
  if (!is_gzip(raw.data(), raw.size())) return raw;
  Inflater inf;
  if (inflateInit2(&inf.zs, 16 + MAX_WBITS) != Z_OK) return "";
  inf.open = true;
  std::string out(max_bytes, '\0');
  inf.zs.next_in = reinterpret_cast<Bytef*>(raw.data());
  inf.zs.avail_in = static_cast<uInt>(raw.size());
  inf.zs.next_out = reinterpret_cast<Bytef*>(out.data());
  inf.zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&inf.zs, Z_SYNC_FLUSH);  // a prefix: the input may end mid-stream
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return "";
  out.resize(out.size() - inf.zs.avail_out);
  return out;
}

TextBuffer read_text_file(const std::string& path, const InflateLimit& limit) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(path, 0, "is a directory, not a file");
  TextBuffer buf;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    // Map the page cache directly: no copy and no fresh (zeroed) pages for the text.
    void* m = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE,
                     f.fd, 0);
    if (m != MAP_FAILED) {
      buf.map_ = m;
      buf.size_ = static_cast<std::size_t>(st.st_size);
      if (is_gzip(buf.data(), buf.size())) return gunzip_text(buf.data(), buf.size(), path, limit);
      return buf;
    }
  }
  // Pipes, empty or unmappable files: read() into a buffer that doubles when full.
  buf.reserve(std::size_t(1) << 16);
  for (;;) {
    if (buf.size_ == buf.capacity_) buf.reserve(buf.capacity_ * 2);
    const std::size_t want = std::min<std::size_t>(buf.capacity_ - buf.size_, std::size_t(1) << 30);
    ssize_t r = ::read(f.fd, buf.owned_.get() + buf.size_, want);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      throw InputError(path, 0, std::string("read failed: ") + std::strerror(errno));
    }
    buf.size_ += static_cast<std::size_t>(r);
  }
  if (is_gzip(buf.data(), buf.size())) return gunzip_text(buf.data(), buf.size(), path, limit);
  return buf;
}

namespace {
std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", bytes / 1073741824.0);
  return b;
}
}  // namespace

void check_declared_dims(const std::string& name, std::int64_t line, std::int64_t nrows,
                         std::int64_t ncols, std::int64_t entries_cap, std::size_t bytes_left,
                         const char* where) {
  const std::int64_t limit = kDeclaredDimSlack + kDeclaredDimsPerEntry * std::max<std::int64_t>(0, entries_cap);
  if (nrows <= limit && ncols <= limit) return;
  const bool rows = nrows >= ncols;
  const std::int64_t dim = rows ? nrows : ncols;
  // Row offsets (int64, nrows + 1) for rows; for columns the solvers' vectors (8 bytes each).
  const double bytes = 8.0 * static_cast<double>(dim + (rows ? 1 : 0));
  throw InputError(
      name, line,
      "declared size " + std::to_string(nrows) + " x " + std::to_string(ncols) +
          " is not backed by the data: the " + std::to_string(bytes_left) + " bytes " + where +
          " hold at most " + std::to_string(entries_cap) + " entries, so at least " +
          std::to_string(dim - std::min(dim, entries_cap)) + " " + (rows ? "rows" : "columns") +
          " would be empty; refused before allocating " + gib(bytes) + " of " +
          (rows ? "row offsets" : "column vectors") + " (accepted: up to " +
          std::to_string(kDeclaredDimSlack) + " + " + std::to_string(kDeclaredDimsPerEntry) +
          " per entry)");
}

// Buckets of rows for the two-pass sort in csr_from_coo (see there).
constexpr std::int64_t kMaxBuckets = 256;

Csr<double> csr_from_coo(std::int64_t nrows, std::int64_t ncols, CooEntries&& e, Symmetry symmetry) {
  TCSOLVE_REQUIRE(nrows >= 0 && ncols >= 0 && nrows <= INT32_MAX && ncols <= INT32_MAX,
                  "matrix dimensions must fit 32-bit indices");
  const std::size_t n = e.size();
  Csr<double> a;
  a.nrows = nrows;
  a.ncols = ncols;
  a.symmetry = symmetry;
  a.row_ptr.assign(static_cast<std::size_t>(nrows) + 1, 0);
  // Rows are grouped in buckets of 2^shift rows, at most kMaxBuckets: a histogram or a set of
  // write streams over the buckets stays in L1/L2 and the TLB, whereas one over all rows (a 16 MB
  // row_ptr for 2M rows) misses cache on every entry.
  int shift = 0;
  while ((nrows >> shift) > kMaxBuckets) ++shift;
  const std::int64_t nb = nrows == 0 ? 0 : ((nrows - 1) >> shift) + 1;
  std::vector<std::int64_t> bpos(static_cast<std::size_t>(nb) + 1, 0);
  // Pass 0 (sequential): bucket sizes, and whether the input is already in CSR order.
  bool in_order = true;
  {
    const std::int32_t* r = e.row.data();
    const std::int32_t* c = e.col.data();
    std::int64_t* bc = bpos.data() + 1;
    std::int32_t pr = -1, pc = -1;
    for (std::size_t k = 0; k < n; ++k) {
      ++bc[r[k] >> shift];
      in_order &= (r[k] > pr) | ((r[k] == pr) & (c[k] > pc));
      pr = r[k];
      pc = c[k];
    }
  }
  if (in_order) {
    // Rows non-decreasing: row lengths by one sequential scan; col/val are the Csr arrays.
    for (std::size_t k = 0; k < n; ++k) ++a.row_ptr[static_cast<std::size_t>(e.row[k]) + 1];
    for (std::int64_t i = 0; i < nrows; ++i) a.row_ptr[i + 1] += a.row_ptr[i];
    std::vector<std::int32_t>().swap(e.row);
    a.col_idx = std::move(e.col);
    a.values = std::move(e.val);
    a.col_idx.shrink_to_fit();
    a.values.shrink_to_fit();
    return a;
  }
  for (std::int64_t b = 0; b < nb; ++b) bpos[b + 1] += bpos[b];
  // Pass 1: stable scatter to the buckets (3 sequential write streams per bucket), keeping the row.
  a.col_idx.resize(n);
  a.values.resize(n);
  std::vector<std::int32_t> rows(n);
  {
    std::vector<std::int64_t> fill(bpos.begin(), bpos.end() - 1);
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t p = fill[e.row[k] >> shift]++;
      rows[p] = e.row[k];
      a.col_idx[p] = e.col[k];
      a.values[p] = e.val[k];
    }
  }
  e = CooEntries();
  // Pass 2, per bucket: row lengths of its 2^shift rows, then a stable scatter of its slice
  // (copied to a small buffer) to those rows, inside the same slice: all in cache.
  {
    std::vector<std::int32_t> brow, bcol;
    std::vector<double> bval;
    std::vector<std::int64_t> pos;
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t lo = bpos[b], hi = bpos[b + 1];
      const std::int64_t r0 = b << shift, r1 = std::min<std::int64_t>((b + 1) << shift, nrows);
      for (std::int64_t p = lo; p < hi; ++p) ++a.row_ptr[static_cast<std::size_t>(rows[p]) + 1];
      a.row_ptr[r0] = lo;
      for (std::int64_t i = r0; i < r1; ++i) a.row_ptr[i + 1] += a.row_ptr[i];
      brow.assign(rows.begin() + lo, rows.begin() + hi);
      bcol.assign(a.col_idx.begin() + lo, a.col_idx.begin() + hi);
      bval.assign(a.values.begin() + lo, a.values.begin() + hi);
      pos.assign(a.row_ptr.begin() + r0, a.row_ptr.begin() + r1);
      for (std::int64_t k = 0; k < hi - lo; ++k) {
        const std::int64_t p = pos[brow[k] - r0]++;
        a.col_idx[p] = bcol[k];
        a.values[p] = bval[k];
      }
    }
  }
  std::vector<std::int32_t>().swap(rows);
  // Each row: already increasing -> moved left over removed duplicates (if any); otherwise a
  // stable sort by column, duplicates summed in input order. out <= the row's start, always.
  std::int64_t out = 0;
  std::vector<std::pair<std::int32_t, double>> tmp;
  std::int64_t b = 0;
  for (std::int64_t i = 0; i < nrows; ++i) {
    const std::int64_t en = a.row_ptr[i + 1];
    a.row_ptr[i] = out;
    bool increasing = true;
    for (std::int64_t p = b + 1; p < en && increasing; ++p) increasing = a.col_idx[p] > a.col_idx[p - 1];
    if (increasing) {
      if (out != b) {
        std::copy(a.col_idx.begin() + b, a.col_idx.begin() + en, a.col_idx.begin() + out);
        std::copy(a.values.begin() + b, a.values.begin() + en, a.values.begin() + out);
      }
      out += en - b;
    } else {
      tmp.clear();
      for (std::int64_t p = b; p < en; ++p) tmp.emplace_back(a.col_idx[p], a.values[p]);
      std::stable_sort(tmp.begin(), tmp.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      const std::int64_t row_start = out;
      for (const auto& t : tmp) {
        if (out > row_start && a.col_idx[out - 1] == t.first) {
          a.values[out - 1] += t.second;
        } else {
          a.col_idx[out] = t.first;
          a.values[out++] = t.second;
        }
      }
    }
    b = en;
  }
  a.row_ptr[nrows] = out;
  a.col_idx.resize(out);
  a.values.resize(out);
  a.col_idx.shrink_to_fit();
  a.values.shrink_to_fit();
  return a;
}

}  // namespace tcsolve
