// Whole-file input for the text readers: one read() of the file into memory, transparently
// gunzipped when the content starts with the gzip magic bytes (1f 8b). The buffer always ends
// with a '\0' one past size(), so parsers may look one byte ahead without a bounds check.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace tcsolve {

class TextBuffer {
 public:
  TextBuffer() = default;
  const char* data() const { return data_ ? data_.get() : ""; }
  std::size_t size() const { return size_; }
  // Releases the memory (readers drop the text before building the matrix).
  void clear() {
    data_.reset();
    size_ = capacity_ = 0;
  }

 private:
  friend TextBuffer read_text_file(const std::string& path);
  friend TextBuffer gunzip_text(const char* data, std::size_t size, const std::string& name);
  // Uninitialised storage (std::string/vector would zero-fill 1 GB first).
  void reserve(std::size_t n);
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // bytes usable before the terminating '\0'
};

// True when the bytes start with the gzip magic (1f 8b).
bool is_gzip(const char* data, std::size_t size);

// Inflates a gzip stream (concatenated members allowed) into memory. Truncated or corrupt data
// throws InputError naming `name` and the compressed byte offset.
TextBuffer gunzip_text(const char* data, std::size_t size, const std::string& name);

// For error messages: up to `max` characters from p to the end of its line, quoted, with
// non-printable bytes escaped ("'1.5x'", "end of line", "end of file").
std::string quote_text(const char* p, const char* end, std::size_t max = 24);

// Reads the file at `path` (gunzipping when it is gzip). Missing/unreadable files throw InputError.
TextBuffer read_text_file(const std::string& path);

}  // namespace tcsolve
