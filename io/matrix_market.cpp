// Matrix Market reader and writer.
//
// Reader: one pass over the in-memory text (io/text_input) with a pointer and a line counter;
// integers by hand, values by std::from_chars (GCC 12: Eisel-Lemire fast path), no allocation per
// line. Entries go to pre-reserved row/col/value arrays (symmetric: stored entry + mirror), the
// text is released, then csr_from_coo builds the Csr: files written row by row need no sort
// (the arrays become the Csr), others take one counting-sort pass (io/text_input.hpp).
// Memory peak: mapped text + 16 B per expanded entry (+ 12 B per entry when a sort is needed).
#include "io/matrix_market.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "io/text_input.hpp"

namespace tcsolve {
namespace {

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();  // 2^31 - 1

enum class Field { real, integer, pattern };

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

// Position in the text plus the current 1-based line; fail() throws InputError at that line.
struct Cursor {
  const char* p;
  const char* end;
  std::int64_t line;
  const std::string& name;

  [[noreturn]] void fail(const std::string& msg) const { throw InputError(name, line, msg); }
  // End of the current line (the '\n' or end).
  const char* eol() const {
    const void* q = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    return q ? static_cast<const char*>(q) : end;
  }
  // Moves past the current line's '\n'.
  void next_line() {
    p = eol();
    if (p < end) {
      ++p;
      ++line;
    }
  }
  void skip_blanks() {
    while (p < end && is_blank(*p)) ++p;
  }
  // Skips spaces, tabs, CR and whole empty lines (counting them).
  void skip_space_and_newlines() {
    while (p < end) {
      const char c = *p;
      if (c == '\n') {
        ++line;
      } else if (!(c == ' ' || c == '\t' || c == '\r')) {
        return;
      }
      ++p;
    }
  }
  // After the last field of a line: only blanks/CR may follow before '\n' or the end.
  void finish_line(const char* what) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    if (p < end) {
      if (*p != '\n') trailing_text(what);
      ++p;
      ++line;
    }
  }
  // Between two fields of one line: at least one blank.
  void separator(const char* after, const char* next) {
    if (p < end && is_blank(*p)) {
      ++p;
      skip_blanks();
      if (p < end && *p != '\n' && *p != '\r') return;
    }
    separator_error(after, next);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void trailing_text(const char* what) const {
    fail(std::string("unexpected text ") + quote_text(p, end) + " after " + what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void separator_error(const char* after, const char* next) const {
    if (p < end && *p != '\n' && *p != '\r')
      fail(std::string("unexpected text ") + quote_text(p, end) + " after " + after);
    fail(std::string("line ends before the ") + next);
  }
};

bool iequals(const char* a, std::size_t n, const char* b) {
  if (std::strlen(b) != n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

// Unsigned decimal of at most 18 digits (larger is reported as too large). Returns false when no
// digit is at p (p unchanged).
inline bool parse_u64(const char*& p, const char* end, std::uint64_t& v, bool& too_large) {
  const char* s = p;
  std::uint64_t x = 0;
  while (p < end) {
    const unsigned d = static_cast<unsigned char>(*p) - '0';
    if (d > 9) break;
    if (p - s < 18) x = x * 10 + d;
    ++p;
  }
  too_large = p - s > 18;
  v = x;
  return p != s;
}

[[noreturn, gnu::cold, gnu::noinline]] void index_error(const Cursor& c, const char* s, std::int64_t limit,
                                                      const char* what) {
  std::uint64_t v;
  bool too_large;
  const char* q = s;
  if (!parse_u64(q, c.end, v, too_large)) {
    if (s < c.end && *s == '-') c.fail(std::string("negative ") + what + " index " + quote_text(s, c.end));
    c.fail(std::string("expected a ") + what + " index, found " + quote_text(s, c.end));
  }
  if (v == 0 && !too_large) c.fail(std::string(what) + " index 0: indices are 1-based");
  if (!too_large && v <= static_cast<std::uint64_t>(limit))
    c.fail(std::string(what) + " index " + std::string(s, q) + " has more than 10 digits");
  c.fail(std::string(what) + " index " + std::string(s, q) + " out of range 1.." + std::to_string(limit));
}

// 1-based index in [1, limit] -> 0-based. At most 10 digits are taken; more, or a value outside
// [1, limit], goes to index_error.
inline std::int32_t parse_index(Cursor& c, std::int64_t limit, const char* what) {
  const char* s = c.p;
  const char* p = s;
  std::uint64_t v = 0;
  while (p < c.end) {
    const unsigned d = static_cast<unsigned>(static_cast<unsigned char>(*p)) - '0';
    if (d > 9) break;
    v = v * 10 + d;
    ++p;
  }
  if (p == s || p - s > 10 || v - 1 >= static_cast<std::uint64_t>(limit)) index_error(c, s, limit, what);
  c.p = p;
  return static_cast<std::int32_t>(v - 1);
}

// Signed integer value (integer field). Magnitude must fit int64.
inline double parse_integer_value(Cursor& c) {
  const char* s = c.p;
  bool neg = false;
  if (c.p < c.end && (*c.p == '-' || *c.p == '+')) {
    neg = *c.p == '-';
    ++c.p;
  }
  if (c.p == c.end || static_cast<unsigned>(static_cast<unsigned char>(*c.p) - '0') > 9)
    c.fail("expected an integer value, found " + quote_text(s, c.end));
  std::int64_t v = 0;
  auto r = std::from_chars(c.p, c.end, v);
  if (r.ec == std::errc::result_out_of_range)
    c.fail("integer value " + quote_text(s, c.end) + " does not fit 64 bits");
  if (r.ptr < c.end && (*r.ptr == '.' || *r.ptr == 'e' || *r.ptr == 'E'))
    c.fail("expected an integer value (field 'integer'), found " + quote_text(s, c.end));
  c.p = r.ptr;
  return neg ? -static_cast<double>(v) : static_cast<double>(v);
}

// Real value: std::from_chars (general format), a leading '+' allowed. Out-of-range values take the
// strtod path: underflow gives the denormal/zero, overflow gives ±inf (then refused as non-finite
// unless allowed).
[[noreturn, gnu::cold, gnu::noinline]] void value_error(const Cursor& c, const char* s) {
  c.fail("expected a real value, found " + quote_text(s, c.end));
}
[[noreturn, gnu::cold, gnu::noinline]] void nonfinite_error(const Cursor& c, const char* s, const char* e) {
  c.fail("value " + std::string(s, e) + " is not finite (NaN/Inf are refused unless allow_nonfinite is set)");
}
[[gnu::cold, gnu::noinline]] double out_of_range_value(const char* b, const char* e) {
  std::string tok(b, e);
  return std::strtod(tok.c_str(), nullptr);
}

inline double parse_real_value(Cursor& c, bool allow_nonfinite) {
  const char* s = c.p;
  if (c.p + 1 < c.end && *c.p == '+' && *(c.p + 1) != '-' && *(c.p + 1) != '+') ++c.p;
  double v;
  auto r = std::from_chars(c.p, c.end, v);
  if (r.ec != std::errc()) {
    if (r.ec != std::errc::result_out_of_range) value_error(c, s);
    v = out_of_range_value(c.p, r.ptr);
  }
  c.p = r.ptr;
  if (!allow_nonfinite && !std::isfinite(v)) nonfinite_error(c, s, c.p);
  return v;
}

template <Field F>
inline double parse_value(Cursor& c, bool allow_nonfinite) {
  if constexpr (F == Field::real) {
    return parse_real_value(c, allow_nonfinite);
  } else if constexpr (F == Field::integer) {
    return parse_integer_value(c);
  } else {
    return 1.0;
  }
}

struct Parsed {
  MatrixMarketHeader h;
  Field field = Field::real;
  CooEntries entries;  // expanded (both triangles)
};

// Banner, comments and size line; leaves c at the first data line.
MatrixMarketHeader parse_header(Cursor& c, Field& field) {
  MatrixMarketHeader h;
  if (c.p == c.end) c.fail("empty file: missing the '%%MatrixMarket' banner");
  {
    const char* e = c.eol();
    const char* lim = (e > c.p && e[-1] == '\r') ? e - 1 : e;
    // Tokens of the banner line.
    std::vector<std::pair<const char*, std::size_t>> tok;
    for (const char* q = c.p; q < lim;) {
      while (q < lim && (is_blank(*q))) ++q;
      const char* s = q;
      while (q < lim && !is_blank(*q)) ++q;
      if (q > s) tok.emplace_back(s, static_cast<std::size_t>(q - s));
    }
    const std::string usage =
        "expected '%%MatrixMarket matrix coordinate|array real|integer|pattern "
        "general|symmetric|skew-symmetric'";
    if (tok.empty() || !iequals(tok[0].first, tok[0].second, "%%matrixmarket"))
      c.fail("missing or bad banner: " + usage + ", found " + quote_text(c.p, c.end, 60));
    if (tok.size() < 5) c.fail("incomplete banner: " + usage);
    if (tok.size() > 5)
      c.fail("unexpected text " + quote_text(tok[5].first, c.end) + " after the banner's symmetry");
    auto word = [&](int i) { return std::string(tok[i].first, tok[i].second); };
    if (!iequals(tok[1].first, tok[1].second, "matrix"))
      c.fail("unsupported object '" + word(1) + "' (only 'matrix' is supported)");
    if (iequals(tok[2].first, tok[2].second, "coordinate")) {
      h.coordinate = true;
    } else if (iequals(tok[2].first, tok[2].second, "array")) {
      h.coordinate = false;
    } else {
      c.fail("unknown format '" + word(2) + "' (expected 'coordinate' or 'array')");
    }
    if (iequals(tok[3].first, tok[3].second, "real") || iequals(tok[3].first, tok[3].second, "double")) {
      field = Field::real;
      h.field = "real";
    } else if (iequals(tok[3].first, tok[3].second, "integer")) {
      field = Field::integer;
      h.field = "integer";
    } else if (iequals(tok[3].first, tok[3].second, "pattern")) {
      field = Field::pattern;
      h.field = "pattern";
    } else if (iequals(tok[3].first, tok[3].second, "complex")) {
      c.fail("complex matrices are not supported (field 'complex'); tcsolve reads real, integer or pattern");
    } else {
      c.fail("unknown field '" + word(3) + "' (expected real, integer or pattern)");
    }
    if (field == Field::pattern && !h.coordinate)
      c.fail("field 'pattern' is not allowed with format 'array'");
    if (iequals(tok[4].first, tok[4].second, "general")) {
      h.symmetry = Symmetry::general;
    } else if (iequals(tok[4].first, tok[4].second, "symmetric")) {
      h.symmetry = Symmetry::symmetric;
    } else if (iequals(tok[4].first, tok[4].second, "skew-symmetric")) {
      h.symmetry = Symmetry::skew_symmetric;
    } else if (iequals(tok[4].first, tok[4].second, "hermitian")) {
      c.fail("hermitian matrices are not supported (complex); tcsolve reads real matrices");
    } else {
      c.fail("unknown symmetry '" + word(4) + "' (expected general, symmetric or skew-symmetric)");
    }
    c.next_line();
  }
  // Comment lines ('%') and blank lines until the size line.
  for (;;) {
    c.skip_space_and_newlines();
    if (c.p == c.end) c.fail("missing size line (file ends after the header comments)");
    if (*c.p != '%') break;
    c.next_line();
  }
  h.data_line = c.line;
  const int want = h.coordinate ? 3 : 2;
  std::int64_t v[3] = {0, 0, 0};
  const char* names[3] = {"number of rows", "number of columns", "number of entries"};
  const std::string usage = h.coordinate ? "'ROWS COLUMNS ENTRIES'" : "'ROWS COLUMNS'";
  for (int k = 0; k < want; ++k) {
    if (k > 0) {
      if (c.p < c.end && is_blank(*c.p)) {
        c.skip_blanks();
      } else if (c.p < c.end && *c.p != '\n' && *c.p != '\r') {
        c.fail("bad size line: unexpected text " + quote_text(c.p, c.end) + ", expected " + usage);
      }
      if (c.p == c.end || *c.p == '\n' || *c.p == '\r')
        c.fail("bad size line: missing the " + std::string(names[k]) + ", expected " + usage);
    }
    const char* s = c.p;
    if (*c.p == '-') c.fail(std::string("bad size line: negative ") + names[k] + " " + quote_text(s, c.end));
    std::uint64_t x;
    bool too_large;
    if (*c.p == '+') ++c.p;
    if (!parse_u64(c.p, c.end, x, too_large))
      c.fail("bad size line: expected " + usage + ", found " + quote_text(s, c.end));
    const std::uint64_t limit = k < 2 ? static_cast<std::uint64_t>(kMaxIndex)
                                      : static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (too_large || x > limit)
      c.fail(std::string("bad size line: ") + names[k] + " " + std::string(s, c.p) +
             (k < 2 ? " exceeds the 32-bit index limit 2147483647" : " is too large"));
    v[k] = static_cast<std::int64_t>(x);
  }
  c.finish_line("the size line");
  h.nrows = v[0];
  h.ncols = v[1];
  if (h.symmetry != Symmetry::general && h.nrows != h.ncols)
    throw InputError(c.name, h.data_line,
                     std::string(to_string(h.symmetry)) + " matrix must be square, the size line says " +
                         std::to_string(h.nrows) + " x " + std::to_string(h.ncols));
  if (h.coordinate) {
    h.stored = v[2];
  } else if (h.symmetry == Symmetry::general) {
    h.stored = h.nrows * h.ncols;
  } else if (h.symmetry == Symmetry::symmetric) {
    h.stored = h.nrows * (h.nrows + 1) / 2;
  } else {
    h.stored = h.nrows * (h.nrows - 1) / 2;
    if (h.nrows == 0) h.stored = 0;
  }
  return h;
}

// Entries the triplet array may need: declared count (doubled for symmetric) but never more than
// the text can hold, so a lying header cannot make us allocate beyond O(file size).
std::size_t reserve_bound(std::int64_t declared, bool mirrored, std::size_t bytes, std::size_t min_bytes) {
  std::uint64_t cap = bytes / min_bytes + 1;
  std::uint64_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(declared), cap);
  return static_cast<std::size_t>(mirrored ? 2 * n : n);
}

// Coordinate data: nnz lines "i j [value]". Symmetric/skew: one triangle stored (lower, or all
// upper), the mirror appended right after each off-diagonal entry (negated for skew).
template <Field F>
void parse_coordinate(Cursor& c, const MatrixMarketHeader& h, const ReadOptions& opt,
                      CooEntries& out) {
  const bool mirrored = h.symmetry != Symmetry::general;
  const bool skew = h.symmetry == Symmetry::skew_symmetric;
  out.reserve(reserve_bound(h.stored, mirrored, static_cast<std::size_t>(c.end - c.p), F == Field::pattern ? 4 : 6));
  int triangle = 0;  // symmetric files: +1 lower seen, -1 upper seen
  std::int64_t triangle_line = 0;
  const bool allow_nonfinite = opt.allow_nonfinite;
  for (std::int64_t k = 0; k < h.stored; ++k) {
    c.skip_space_and_newlines();
    if (c.p == c.end)
      c.fail("truncated data: the size line declares " + std::to_string(h.stored) +
             " entries, the file ends after " + std::to_string(k));
    const std::int32_t i = parse_index(c, h.nrows, "row");
    c.separator("the row index", "column index");
    const std::int32_t j = parse_index(c, h.ncols, "column");
    double v = 1.0;
    if constexpr (F != Field::pattern) {
      c.separator("the column index", "value");
      v = parse_value<F>(c, allow_nonfinite);
    }
    const std::int64_t line = c.line;
    c.finish_line(F == Field::pattern ? "the column index (pattern entries have no value)" : "the value");
    out.push(i, j, v);
    if (mirrored && i != j) {
      const int t = i > j ? 1 : -1;
      if (triangle != t) {
        if (triangle != 0)
          throw InputError(c.name, line,
                           "entry (" + std::to_string(i + 1) + ", " + std::to_string(j + 1) + ") is in the " +
                               (t > 0 ? "lower" : "upper") + " triangle but line " +
                               std::to_string(triangle_line) + " has one in the " +
                               (t > 0 ? "upper" : "lower") + " triangle: a " + to_string(h.symmetry) +
                               " file stores one triangle only");
        triangle = t;
        triangle_line = line;
      }
      out.push(j, i, skew ? -v : v);
    } else if (skew && i == j) {
      throw InputError(c.name, line,
                       "diagonal entry (" + std::to_string(i + 1) + ", " + std::to_string(j + 1) +
                           ") in a skew-symmetric file (its diagonal is zero and not stored)");
    }
  }
}

// Array data: values in column-major order of the stored part (general: all; symmetric: lower
// triangle with diagonal; skew: strictly lower), separated by any white space.
template <Field F>
void parse_array(Cursor& c, const MatrixMarketHeader& h, const ReadOptions& opt,
                 CooEntries& out) {
  const bool mirrored = h.symmetry != Symmetry::general;
  const bool skew = h.symmetry == Symmetry::skew_symmetric;
  out.reserve(reserve_bound(h.stored, mirrored, static_cast<std::size_t>(c.end - c.p), 2));
  std::int64_t k = 0;
  for (std::int64_t j = 0; j < h.ncols; ++j) {
    const std::int64_t i0 = h.symmetry == Symmetry::general ? 0 : (skew ? j + 1 : j);
    for (std::int64_t i = i0; i < h.nrows; ++i, ++k) {
      c.skip_space_and_newlines();
      if (c.p == c.end)
        c.fail("truncated data: the array needs " + std::to_string(h.stored) +
               " values, the file ends after " + std::to_string(k));
      const double v = parse_value<F>(c, opt.allow_nonfinite);
      if (c.p < c.end && !(is_blank(*c.p) || *c.p == '\r' || *c.p == '\n'))
        c.fail("unexpected text " + quote_text(c.p, c.end) + " after the value");
      out.push(static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), v);
      if (mirrored && i != j) out.push(static_cast<std::int32_t>(j), static_cast<std::int32_t>(i), skew ? -v : v);
    }
  }
}

Parsed parse_text(const char* data, std::size_t size, const std::string& name, const ReadOptions& opt) {
  Cursor c{data, data + size, 1, name};
  Parsed r;
  r.h = parse_header(c, r.field);
  if (opt.require_square && r.h.nrows != r.h.ncols)
    throw InputError(name, r.h.data_line,
                     "matrix is " + std::to_string(r.h.nrows) + " x " + std::to_string(r.h.ncols) +
                         " but a square matrix is required");
  {
    // Before anything proportional to the declared sizes is allocated: the rows (8-byte offsets
    // each) must be backed by entries the rest of the text can hold (an entry takes at least
    // "i j v\n", 6 bytes, "i j\n" for pattern, "v\n" in an array).
    const std::size_t left = static_cast<std::size_t>(c.end - c.p);
    const std::size_t per = !r.h.coordinate ? 2 : r.field == Field::pattern ? 4 : 6;
    std::int64_t cap = std::min<std::int64_t>(r.h.stored, static_cast<std::int64_t>((left + 1) / per));
    if (r.h.symmetry != Symmetry::general) cap *= 2;
    check_declared_dims(name, r.h.data_line, r.h.nrows, r.h.ncols, cap, left, "after the size line");
  }
  if (r.h.coordinate) {
    switch (r.field) {
      case Field::real: parse_coordinate<Field::real>(c, r.h, opt, r.entries); break;
      case Field::integer: parse_coordinate<Field::integer>(c, r.h, opt, r.entries); break;
      case Field::pattern: parse_coordinate<Field::pattern>(c, r.h, opt, r.entries); break;
    }
  } else {
    switch (r.field) {
      case Field::real: parse_array<Field::real>(c, r.h, opt, r.entries); break;
      case Field::integer: parse_array<Field::integer>(c, r.h, opt, r.entries); break;
      case Field::pattern: break;  // refused by parse_header
    }
  }
  c.skip_space_and_newlines();
  if (c.p != c.end)
    c.fail("extra data after the " + std::to_string(r.h.stored) + " " +
           (r.h.coordinate ? "entries declared by the size line: " : "values of the array: ") +
           quote_text(c.p, c.end));
  return r;
}

Csr<double> build(Parsed&& r) {
  return csr_from_coo(r.h.nrows, r.h.ncols, std::move(r.entries), r.h.symmetry);
}

// .mtx.gz (io/text_input.hpp, InflateLimit): the text may hold the lines through the size line
// plus kInflateBytesPerEntry per declared entry (an entry line "i j v" takes 6-60 bytes as
// written by any tool seen; 256 leaves room for padding and long mantissas) plus the slack.
// Undecided until the size line is complete in the prefix; a malformed header throws its own error
// (the same as the full parse's: the header is parsed from the same lines).
constexpr double kInflateBytesPerEntry = 256.0;

InflateBound inflate_bound(const char* text, std::size_t size, const std::string& name) {
  const char* end = text + size;
  const char* p = static_cast<const char*>(std::memchr(text, '\n', size));  // past the banner
  if (!p) return {};
  ++p;
  for (;;) {  // comment and blank lines, as parse_header skips them
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
    if (p == end) return {};
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!nl) return {};  // the line is not complete yet
    if (*p != '%') {
      const std::size_t header = static_cast<std::size_t>(nl + 1 - text);
      const MatrixMarketHeader h = parse_matrix_market_header(text, header, name);
      InflateBound b;
      b.bytes = inflate_bound_bytes(header, static_cast<double>(h.stored), kInflateBytesPerEntry);
      b.why = "the header (" + std::to_string(header) + " bytes) with the " + std::to_string(h.stored) +
              (h.coordinate ? " entries" : " values") + " its size line declares (at most 256 bytes each, plus "
              "16 MiB)";
      return b;
    }
    p = nl + 1;
  }
}

}  // namespace

MatrixMarketHeader parse_matrix_market_header(const char* data, std::size_t size, const std::string& name) {
  Cursor c{data, data + size, 1, name};
  Field f;
  return parse_header(c, f);
}

Csr<double> parse_matrix_market(const char* data, std::size_t size, const std::string& name,
                                const ReadOptions& opt) {
  if (is_gzip(data, size)) {
    TextBuffer t = gunzip_text(data, size, name, [&](const char* p, std::size_t n) { return inflate_bound(p, n, name); });
    return build(parse_text(t.data(), t.size(), name, opt));
  }
  return build(parse_text(data, size, name, opt));
}

Csr<double> read_matrix_market(const std::string& path, const ReadOptions& opt) {
  TextBuffer t = read_text_file(path, [&](const char* p, std::size_t n) { return inflate_bound(p, n, path); });
  Parsed r = parse_text(t.data(), t.size(), path, opt);
  t.clear();  // drop the text before the CSR build doubles the entry memory
  return build(std::move(r));
}

// ---- writer

namespace {

// Exact symmetry of structure and values (bitwise equal values; NaN makes it non-symmetric), so
// that writing the lower triangle loses nothing.
bool exactly_symmetric(const Csr<double>& a) {
  if (!a.square()) return false;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int32_t j = a.col_idx[p];
      if (j == i) continue;
      auto b = a.col_idx.begin() + a.row_ptr[j], e = a.col_idx.begin() + a.row_ptr[j + 1];
      auto it = std::lower_bound(b, e, static_cast<std::int32_t>(i));
      if (it == e || *it != i || !(a.values[it - a.col_idx.begin()] == a.values[p])) return false;
    }
  }
  return true;
}

struct OutFile {
  std::FILE* f = nullptr;
  std::string path;
  ~OutFile() {
    if (f) std::fclose(f);
  }
  void write(const char* s, std::size_t n) {
    if (std::fwrite(s, 1, n, f) != n)
      throw OutputError(path + ": cannot write: " + std::strerror(errno));
  }
};

}  // namespace

void write_matrix_market(const std::string& path, const Csr<double>& a) {
  validate(a);
  const bool sym = a.symmetry == Symmetry::symmetric && exactly_symmetric(a);
  std::int64_t count = 0;
  if (sym) {
    for (std::int64_t i = 0; i < a.nrows; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) count += a.col_idx[p] <= i;
  } else {
    count = a.nnz();
  }
  OutFile out;
  out.path = path;
  out.f = std::fopen(path.c_str(), "wb");
  if (!out.f) throw OutputError(path + ": cannot open for writing: " + std::strerror(errno));
  std::string head = std::string("%%MatrixMarket matrix coordinate real ") + (sym ? "symmetric" : "general") +
                     "\n%% written by tcsolve\n" + std::to_string(a.nrows) + " " +
                     std::to_string(a.ncols) + " " + std::to_string(count) + "\n";
  out.write(head.data(), head.size());
  // Rows in order: for symmetric, row i's columns j <= i are the lower triangle (i >= j).
  constexpr std::size_t kChunk = 1 << 20;
  std::unique_ptr<char[]> buf(new char[kChunk + 128]);
  char* q = buf.get();
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      if (sym && a.col_idx[p] > i) break;  // columns sorted: the rest is the upper triangle
      char* e = buf.get() + kChunk + 128;
      q = std::to_chars(q, e, i + 1).ptr;
      *q++ = ' ';
      q = std::to_chars(q, e, static_cast<std::int64_t>(a.col_idx[p]) + 1).ptr;
      *q++ = ' ';
      q = std::to_chars(q, e, a.values[p]).ptr;  // shortest round-trip form
      *q++ = '\n';
      if (static_cast<std::size_t>(q - buf.get()) >= kChunk) {
        out.write(buf.get(), static_cast<std::size_t>(q - buf.get()));
        q = buf.get();
      }
    }
  }
  out.write(buf.get(), static_cast<std::size_t>(q - buf.get()));
  if (std::fclose(out.f) != 0) {
    out.f = nullptr;
    throw OutputError(path + ": cannot write: " + std::strerror(errno));
  }
  out.f = nullptr;
}

}  // namespace tcsolve
