// Whole-file input for the text readers, and the CSR build they share.
//
// read_text_file maps a regular file (mmap, MAP_POPULATE: no copy, no fresh pages to zero) or
// reads a pipe into memory; content starting with the gzip magic bytes (1f 8b) is inflated into
// one growing buffer instead.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.hpp"

namespace tcsolve {

// Gzip bombs: deflate reaches 1032:1, so a 19 MB .mtx.gz can hold 4 GiB of comment lines (26 s
// and 4.9 GB of memory to inflate them all before the reader saw a line). A reader bounds what it
// accepts by what its header declares: `InflateLimit` is called with the text inflated so far (a
// prefix, at sizes doubling from 64 KiB) and answers bytes = 0 while the prefix does not decide
// (the header is not complete), else the most bytes the whole text may have and why (for the
// message). It may throw the reader's own header error. While undecided at most
// kInflateHeaderBytes are inflated; beyond the bound nothing is: InputError either way, before
// the memory is touched. Memory then stays within the bound and time proportional to it.
struct InflateBound {
  std::size_t bytes = 0;  // 0: not decided yet
  std::string why;        // "the size line's 1000 entries at 256 bytes each, plus 16 MiB"
};
using InflateLimit = std::function<InflateBound(const char* prefix, std::size_t size)>;
constexpr std::size_t kInflateHeaderBytes = std::size_t(64) << 20;
// What the readers allow beyond their declared contents (trailing blank lines, comments).
constexpr std::size_t kInflateSlackBytes = std::size_t(16) << 20;

// The bytes of one input (mapped or owned). Move-only.
class TextBuffer {
 public:
  TextBuffer() = default;
  TextBuffer(TextBuffer&& o) noexcept { swap(o); }
  TextBuffer& operator=(TextBuffer&& o) noexcept {
    TextBuffer t(std::move(o));
    swap(t);
    return *this;
  }
  TextBuffer(const TextBuffer&) = delete;
  TextBuffer& operator=(const TextBuffer&) = delete;
  ~TextBuffer() { clear(); }

  const char* data() const { return map_ ? static_cast<const char*>(map_) : (owned_ ? owned_.get() : ""); }
  std::size_t size() const { return size_; }
  // Releases the memory (readers drop the text before building the matrix).
  void clear();

 private:
  friend TextBuffer read_text_file(const std::string& path, const InflateLimit& limit);
  friend TextBuffer gunzip_text(const char* data, std::size_t size, const std::string& name,
                                const InflateLimit& limit);
  void swap(TextBuffer& o) noexcept;
  // Owned storage, uninitialised (std::string/vector would zero-fill a gigabyte first).
  void reserve(std::size_t n);
  std::unique_ptr<char[]> owned_;
  std::size_t capacity_ = 0;  // of owned_
  void* map_ = nullptr;       // mmap'ed file, size_ bytes
  std::size_t size_ = 0;
};

// True when the bytes start with the gzip magic (1f 8b).
bool is_gzip(const char* data, std::size_t size);

// Bytes + the slack, saturating (a header may declare 2^62 entries).
std::size_t inflate_bound_bytes(std::size_t header_bytes, double items, double bytes_per_item);

// Inflates a gzip stream (concatenated members allowed) into memory. Truncated or corrupt data
// throws InputError naming `name` and the compressed byte offset; so does text beyond `limit`
// (none: no bound).
TextBuffer gunzip_text(const char* data, std::size_t size, const std::string& name,
                       const InflateLimit& limit = {});

// Reads the file at `path` (gunzipping when it is gzip, within `limit`). Missing/unreadable files
// throw InputError.
TextBuffer read_text_file(const std::string& path, const InflateLimit& limit = {});

// Up to `max_bytes` of the text at the start of a regular file (inflated when it is gzip), for a
// cheap look at a header; "" for anything else (a pipe must not be consumed) or on any error.
std::string read_text_prefix(const std::string& path, std::size_t max_bytes);

// For error messages: up to `max` characters from p to the end of its line, quoted, with
// non-printable bytes escaped ("'1.5x'", "end of line", "end of file").
std::string quote_text(const char* p, const char* end, std::size_t max = 24);

// Declared dimensions against what the text can hold, checked before anything proportional to
// them is allocated. The Csr needs 8 bytes of row offsets per declared row, but an empty row
// costs no byte of text: without this check a 3-line file declaring 2^31 - 1 rows would allocate
// 16 GiB. `entries_cap` is the number of entries the file can hold (min(declared, bytes left /
// bytes per entry), doubled when each stored entry is mirrored); a dimension is accepted when
//   dim <= kDeclaredDimSlack + kDeclaredDimsPerEntry · entries_cap,
// i.e. up to 2^20 rows/columns in any case, beyond that at most 8 per entry (a matrix with more
// than 7 empty rows out of 8 is refused). Memory for row offsets then stays within
// 8 MiB + 64 B per entry the file can hold. Throws InputError(name, line, ...) naming the sizes,
// the entries and bytes behind them, and the allocation refused.
constexpr std::int64_t kDeclaredDimSlack = std::int64_t(1) << 20;
constexpr std::int64_t kDeclaredDimsPerEntry = 8;
void check_declared_dims(const std::string& name, std::int64_t line, std::int64_t nrows,
                         std::int64_t ncols, std::int64_t entries_cap, std::size_t bytes_left,
                         const char* where);

// Entries as the readers collect them: three arrays (0-based indices already range-checked).
struct CooEntries {
  std::vector<std::int32_t> row, col;
  std::vector<double> val;
  void reserve(std::size_t n) {
    row.reserve(n);
    col.reserve(n);
    val.reserve(n);
  }
  void push(std::int32_t i, std::int32_t j, double v) {
    row.push_back(i);
    col.push_back(j);
    val.push_back(v);
  }
  std::size_t size() const { return row.size(); }
};

// Same contract as csr_from_triplets (rows sorted, duplicates summed in input order, explicit
// zeros kept), cheaper for the readers: when the entries already come row by row with increasing
// columns (files written by rows), col/val become the Csr arrays as they are (one counting pass,
// no copy); otherwise one counting-sort scatter by row, then each row is sorted/merged in place.
// Memory: the input arrays (16 B per entry) plus, unsorted, 12 B per entry for the scatter (and
// 4 B per entry of row indices for large inputs, sorted in two cache-friendly passes).
Csr<double> csr_from_coo(std::int64_t nrows, std::int64_t ncols, CooEntries&& e, Symmetry symmetry);

}  // namespace tcsolve
