// Rutherford-Boeing / Harwell-Boeing reader (assembled real and pattern matrices).
//
// The data are Fortran records: each line holds up to n fields of width w (the header's format
// "(nIw)" etc.), read by position, so adjacent numbers need no separator. The matrix is stored
// by columns (CSC: column pointers, row indices, values); we turn it into triplets (mirrored for
// symmetric/skew types) and let csr_from_coo transpose it into rows by counting sort.
#include "io/rutherford_boeing.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "io/text_input.hpp"

namespace tcsolve {
namespace {

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();

// One line (record) at a time with its 1-based number.
struct Lines {
  const char* p;
  const char* end;
  std::int64_t line = 0;  // number of the line last returned by next()
  const std::string& name;

  [[noreturn]] void fail(const std::string& msg) const { throw InputError(name, line, msg); }
  [[noreturn]] void fail_at(std::int64_t l, const std::string& msg) const { throw InputError(name, l, msg); }
  bool at_end() const { return p >= end; }
  // Returns the next line without its '\n' (and '\r'); false at the end of the text.
  bool next(const char*& b, const char*& e) {
    if (p >= end) return false;
    b = p;
    const void* q = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    e = q ? static_cast<const char*>(q) : end;
    p = q ? e + 1 : end;
    if (e > b && e[-1] == '\r') --e;
    ++line;
    return true;
  }
};

inline bool blank(char c) { return c == ' ' || c == '\t'; }

void trim(const char*& b, const char*& e) {
  while (b < e && blank(*b)) ++b;
  while (e > b && blank(e[-1])) --e;
}

std::string quoted(const char* b, const char* e) {
  return quote_text(b, e, 40);
}

// Fortran edit descriptor of a data section: n fields per line of width w (I, or E/D/F/G with d
// decimals), k = P scale factor (only affects real fields without an exponent).
struct Format {
  char kind = 'I';
  int per_line = 1;
  int width = 0;
  int decimals = 0;
  int scale = 0;
  std::string text;
};

// Parses "(16I5)", "(4E20.12)", "(1P,5D16.8)", "(1P4E20.12E3)", "(10F8.1)" (blanks ignored).
Format parse_format(const std::string& text, const Lines& in, std::int64_t line, const char* what) {
  Format f;
  f.text = text;
  std::string s;
  for (char ch : text)
    if (!blank(ch)) s += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto bad = [&](const std::string& why) {
    in.fail_at(line, std::string("bad ") + what + " format '" + text + "': " + why);
  };
  if (s.size() < 3 || s.front() != '(' || s.back() != ')') bad("expected a Fortran format like (16I5) or (4E20.12)");
  s = s.substr(1, s.size() - 2);
  std::size_t i = 0;
  auto number = [&](int& out) -> bool {
    std::size_t st = i;
    long v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - st < 6) v = v * 10 + (s[i++] - '0');
    if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) bad("number too large");
    out = static_cast<int>(v);
    return i > st;
  };
  int n = 0;
  bool have_n = number(n);
  if (i < s.size() && s[i] == 'P') {  // scale factor kP (possibly negative is not supported)
    if (!have_n) bad("scale factor P without a count");
    f.scale = n;
    ++i;
    if (i < s.size() && s[i] == ',') ++i;
    have_n = number(n);
  }
  if (i < s.size() && s[i] == '(') bad("nested groups are not supported");
  f.per_line = have_n ? n : 1;
  if (i >= s.size()) bad("missing edit descriptor");
  const char k = s[i++];
  if (k != 'I' && k != 'E' && k != 'D' && k != 'F' && k != 'G') bad(std::string("unsupported edit descriptor '") + k + "'");
  f.kind = k;
  if (!number(f.width)) bad("missing field width");
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!number(f.decimals)) bad("missing number of decimals after '.'");
  } else if (k != 'I') {
    bad("real edit descriptor needs w.d");
  }
  if (k != 'I' && i < s.size() && s[i] == 'E') {  // exponent width Ee: no effect on input
    ++i;
    int ew;
    if (!number(ew)) bad("missing exponent width after 'E'");
  }
  if (i != s.size()) bad("unexpected '" + s.substr(i) + "'");
  if (f.per_line < 1 || f.per_line > 1000) bad("fields per line must be in 1..1000");
  if (f.width < 1 || f.width > 100) bad("field width must be in 1..100");
  if (f.decimals > f.width) bad("more decimals than the field width");
  return f;
}

// Integer field: blanks around, optional sign, digits. Returns false if malformed.
bool parse_int_field(const char* b, const char* e, std::int64_t& v) {
  trim(b, e);
  if (b == e) return false;
  bool neg = false;
  if (*b == '+' || *b == '-') {
    neg = *b == '-';
    ++b;
  }
  if (b == e || e - b > 18) return false;
  std::int64_t x = 0;
  for (; b < e; ++b) {
    const unsigned d = static_cast<unsigned char>(*b) - '0';
    if (d > 9) return false;
    x = x * 10 + d;
  }
  v = neg ? -x : x;
  return true;
}

// Real field by Fortran input rules: [sign] digits [. digits] [exponent], where the exponent is
// E/D/Q followed by [sign] digits, or a bare sign followed by digits. Without '.', the last
// `decimals` digits are the fraction; without an exponent, a kP scale divides by 10^k.
// Also accepts NaN/Inf spellings. Returns false if malformed.
bool parse_real_field(const char* b, const char* e, const Format& f, double& v) {
  trim(b, e);
  if (b == e) return false;
  char buf[160];
  std::size_t n = 0;
  const char* q = b;
  if (*q == '+' || *q == '-') {
    if (*q == '-') buf[n++] = '-';
    ++q;
  }
  {  // NaN / Inf spellings
    std::size_t len = static_cast<std::size_t>(e - q);
    char low[16];
    if (len < sizeof low) {
      for (std::size_t t = 0; t < len; ++t) low[t] = static_cast<char>(std::tolower(static_cast<unsigned char>(q[t])));
      low[len] = '\0';
      if (!std::strcmp(low, "nan") || !std::strcmp(low, "inf") || !std::strcmp(low, "infinity")) {
        v = !std::strcmp(low, "nan") ? std::numeric_limits<double>::quiet_NaN()
                                     : std::numeric_limits<double>::infinity();
        if (*b == '-') v = -v;
        return true;
      }
    }
  }
  bool dot = false, digits = false;
  for (; q < e; ++q) {
    if (std::isdigit(static_cast<unsigned char>(*q))) {
      digits = true;
      buf[n++] = *q;
    } else if (*q == '.' && !dot) {
      dot = true;
      buf[n++] = '.';
    } else {
      break;
    }
  }
  if (!digits) return false;
  long exp = 0;
  bool have_exp = false;
  if (q < e) {
    if (*q == 'E' || *q == 'e' || *q == 'D' || *q == 'd' || *q == 'Q' || *q == 'q') ++q;
    else if (*q != '+' && *q != '-') return false;
    bool eneg = false;
    if (q < e && (*q == '+' || *q == '-')) {
      eneg = *q == '-';
      ++q;
    }
    if (q == e || e - q > 6) return false;
    for (; q < e; ++q) {
      if (!std::isdigit(static_cast<unsigned char>(*q))) return false;
      exp = exp * 10 + (*q - '0');
    }
    if (eneg) exp = -exp;
    have_exp = true;
  }
  if (!dot) exp -= f.decimals;
  if (!have_exp) exp -= f.scale;
  buf[n++] = 'e';
  auto r = std::to_chars(buf + n, buf + sizeof buf, exp);
  n = static_cast<std::size_t>(r.ptr - buf);
  auto fr = std::from_chars(buf, buf + n, v);
  if (fr.ec == std::errc::result_out_of_range) {
    buf[n] = '\0';
    v = std::strtod(buf, nullptr);  // underflow -> 0/denormal, overflow -> ±inf
  } else if (fr.ec != std::errc() || fr.ptr != buf + n) {
    return false;
  }
  return true;
}

// Fixed-width header integer in columns [b0, b0+w) of a line (0-based), blank -> `blank_value`
// (or an error when blank_value < 0).
std::int64_t header_int(const Lines& in, const char* lb, const char* le, std::size_t b0, std::size_t w,
                        const char* what, std::int64_t blank_value) {
  const std::size_t len = static_cast<std::size_t>(le - lb);
  const char* b = lb + std::min(b0, len);
  const char* e = lb + std::min(b0 + w, len);
  const char* tb = b;
  const char* te = e;
  trim(tb, te);
  if (tb == te) {
    if (blank_value < 0) in.fail(std::string("missing ") + what + " (columns " + std::to_string(b0 + 1) + "-" +
                                 std::to_string(b0 + w) + ")");
    return blank_value;
  }
  std::int64_t v;
  if (!parse_int_field(b, e, v))
    in.fail(std::string("bad ") + what + " " + quoted(tb, te) + " (an integer in columns " +
            std::to_string(b0 + 1) + "-" + std::to_string(b0 + w) + ")");
  if (v < 0) in.fail(std::string("negative ") + what + " " + std::to_string(v));
  return v;
}

struct Header {
  RutherfordBoeingHeader pub;
  std::int64_t totcrd = 0, ptrcrd = 0, indcrd = 0, valcrd = 0, rhscrd = 0;
  std::int64_t counts_line = 2, formats_line = 4;
  char value_kind = 'R';  // R real, I integer, P pattern
  Format ptr, ind, val;
};

// Text after column `col` of a header line must be blank ("unexpected text ... after `what`").
void check_blank_after(const Lines& in, const char* b, const char* e, std::size_t col, const char* what) {
  if (static_cast<std::size_t>(e - b) <= col) return;
  const char *xb = b + col, *xe = e;
  trim(xb, xe);
  if (xb != xe) in.fail("unexpected text " + quoted(xb, xe) + " after " + what);
}

// Line 1: the title (columns 1-72) and the key (73-80).
void read_title_line(Lines& in, Header& h) {
  const char *b, *e;
  if (!in.next(b, e)) {
    in.line = 1;
    in.fail("empty file: missing the Rutherford-Boeing title line");
  }
  const std::size_t len = static_cast<std::size_t>(e - b);
  const char *tb = b, *te = b + std::min<std::size_t>(72, len);
  trim(tb, te);
  h.pub.title.assign(tb, te);
  if (len > 72) {
    const char *kb = b + 72, *ke = e;
    trim(kb, ke);
    h.pub.key.assign(kb, ke);
  }
}

// Line 2: the card (line) counts of each data section, which must add up to TOTCRD.
void read_counts_line(Lines& in, Header& h) {
  const char *b, *e;
  if (!in.next(b, e)) in.fail("truncated header: missing line 2 (card counts)");
  h.totcrd = header_int(in, b, e, 0, 14, "TOTCRD (total data lines)", -1);
  h.ptrcrd = header_int(in, b, e, 14, 14, "PTRCRD (pointer lines)", -1);
  h.indcrd = header_int(in, b, e, 28, 14, "INDCRD (row index lines)", -1);
  h.valcrd = header_int(in, b, e, 42, 14, "VALCRD (value lines)", 0);
  h.rhscrd = header_int(in, b, e, 56, 14, "RHSCRD (right-hand-side lines)", 0);
  check_blank_after(in, b, e, 70, "the card counts");
  if (h.totcrd != h.ptrcrd + h.indcrd + h.valcrd + h.rhscrd)
    in.fail("card counts disagree: TOTCRD = " + std::to_string(h.totcrd) + " but PTRCRD + INDCRD + VALCRD + RHSCRD = " +
            std::to_string(h.ptrcrd + h.indcrd + h.valcrd + h.rhscrd));
}

// Line 3, columns 1-14: the matrix type, three letters (value kind R/I/P, symmetry S/U/R/Z,
// assembled A), then blanks.
void read_matrix_type(const Lines& in, const char* b, const char* e, Header& h) {
  if (e - b < 3) in.fail("missing matrix type (3 letters such as RSA in columns 1-3)");
  std::string t(b, b + 3);
  for (char& ch : t) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  h.pub.type = t;
  const std::string q = "'" + std::string(b, b + 3) + "'";
  switch (t[0]) {
    case 'R': case 'I': case 'P': h.value_kind = t[0]; break;
    case 'C': in.fail("complex matrix (type " + q + ") is not supported: tcsolve reads real matrices");
    case 'Q': in.fail("type " + q + " (pattern with values supplied separately) is not supported");
    default: in.fail("bad matrix type " + q + ": the first letter must be R (real), I (integer), P (pattern) or C (complex)");
  }
  switch (t[1]) {
    case 'S': h.pub.symmetry = Symmetry::symmetric; break;
    case 'U': case 'R': h.pub.symmetry = Symmetry::general; break;
    case 'Z': h.pub.symmetry = Symmetry::skew_symmetric; break;
    case 'H': in.fail("hermitian matrix (type " + q + ") is not supported: tcsolve reads real matrices");
    default: in.fail("bad matrix type " + q + ": the second letter must be S, U, R, Z or H");
  }
  if (t[2] == 'E') in.fail("elemental (unassembled) matrix (type " + q + ") is not supported");
  if (t[2] != 'A') in.fail("bad matrix type " + q + ": the third letter must be A (assembled) or E (elemental)");
  const char *gb = b + 3, *ge = b + std::min<std::ptrdiff_t>(14, e - b);
  trim(gb, ge);
  if (gb != ge) in.fail("unexpected text " + quoted(gb, ge) + " after the matrix type (columns 4-14 are blank)");
}

// Line 3: the type, then NROW, NCOL, NNZERO and NELTVL (0: assembled) within the index limits.
void read_type_line(Lines& in, Header& h) {
  const char *b, *e;
  if (!in.next(b, e)) in.fail("truncated header: missing line 3 (type and sizes)");
  read_matrix_type(in, b, e, h);
  h.pub.nrows = header_int(in, b, e, 14, 14, "NROW (number of rows)", -1);
  h.pub.ncols = header_int(in, b, e, 28, 14, "NCOL (number of columns)", -1);
  h.pub.stored = header_int(in, b, e, 42, 14, "NNZERO (number of stored entries)", -1);
  const std::int64_t neltvl = header_int(in, b, e, 56, 14, "NELTVL", 0);
  if (neltvl != 0) in.fail("NELTVL = " + std::to_string(neltvl) + " must be 0 for an assembled matrix");
  check_blank_after(in, b, e, 70, "the sizes");
  if (h.pub.nrows > kMaxIndex || h.pub.ncols > kMaxIndex)
    in.fail("matrix size " + std::to_string(h.pub.nrows) + " x " + std::to_string(h.pub.ncols) +
            " exceeds the 32-bit index limit 2147483647");
  if (h.pub.symmetry != Symmetry::general && h.pub.nrows != h.pub.ncols)
    in.fail(std::string(to_string(h.pub.symmetry)) + " matrix must be square, the header says " +
            std::to_string(h.pub.nrows) + " x " + std::to_string(h.pub.ncols));
  if (h.pub.stored > (std::int64_t(1) << 50)) in.fail("NNZERO " + std::to_string(h.pub.stored) + " is too large");
}

// Line 4: the pointer, row index and (unless pattern) value formats, parenthesised groups
// (nominally in columns 1-16, 17-32, 33-52, 53-72).
void read_formats_line(Lines& in, Header& h) {
  const char *b, *e;
  if (!in.next(b, e)) in.fail("truncated header: missing line 4 (formats)");
  h.formats_line = in.line;
  std::vector<std::string> groups;
  const char* q = b;
  while (q < e) {
    while (q < e && blank(*q)) ++q;
    if (q == e) break;
    if (*q != '(') in.fail("bad formats line: expected '(' at " + quoted(q, e));
    const char* s = q;
    while (q < e && *q != ')') ++q;
    if (q == e) in.fail("bad formats line: unclosed '(' in " + quoted(s, e));
    ++q;
    groups.emplace_back(s, q);
  }
  const bool need_values = h.value_kind != 'P';
  if (groups.size() < 2 || (need_values && groups.size() < 3))
    in.fail(std::string("bad formats line: expected the pointer, index") + (need_values ? " and value" : "") +
            " formats, found " + std::to_string(groups.size()));
  h.ptr = parse_format(groups[0], in, in.line, "pointer");
  h.ind = parse_format(groups[1], in, in.line, "row index");
  if (h.ptr.kind != 'I') in.fail("pointer format '" + groups[0] + "' must be an integer (I) format");
  if (h.ind.kind != 'I') in.fail("row index format '" + groups[1] + "' must be an integer (I) format");
  if (need_values) {
    h.val = parse_format(groups[2], in, in.line, "value");
    if (h.value_kind == 'R' && h.val.kind == 'I')
      in.fail("value format '" + groups[2] + "' is an integer format but the type is real");
  }
}

// The card counts of line 2 must be the lines the formats need for the declared counts.
void check_card_counts(const Lines& in, const Header& h) {
  auto lines_for = [](std::int64_t count, const Format& f) { return (count + f.per_line - 1) / f.per_line; };
  auto check = [&](std::int64_t declared, std::int64_t need, const char* what, const std::string& fmt,
                   std::int64_t count, const char* items) {
    if (declared != need)
      in.fail_at(h.counts_line, std::string(what) + " = " + std::to_string(declared) + " lines, but " +
                                    std::to_string(count) + " " + items + " in format " + fmt + " take " +
                                    std::to_string(need));
  };
  check(h.ptrcrd, lines_for(h.pub.ncols + 1, h.ptr), "PTRCRD", h.ptr.text, h.pub.ncols + 1, "column pointers");
  check(h.indcrd, lines_for(h.pub.stored, h.ind), "INDCRD", h.ind.text, h.pub.stored, "row indices");
  if (h.value_kind != 'P')
    check(h.valcrd, lines_for(h.pub.stored, h.val), "VALCRD", h.val.text, h.pub.stored, "values");
}

// The header: lines 1-4, line 5 (right-hand-side type, skipped) when RHSCRD > 0, then the card
// counts checked against the formats.
Header parse_header(Lines& in) {
  Header h;
  read_title_line(in, h);
  read_counts_line(in, h);
  read_type_line(in, h);
  read_formats_line(in, h);
  const char *b, *e;
  if (h.rhscrd > 0 && !in.next(b, e)) in.fail("truncated header: RHSCRD > 0 but line 5 (right-hand-side type) is missing");
  check_card_counts(in, h);
  return h;
}

// Calls fn(field_begin, field_end) for `count` fields of format f on consecutive lines; text after
// the last field of a line must be blank.
template <class Fn>
void read_fields(Lines& in, const Format& f, std::int64_t count, const char* what, Fn&& fn) {
  std::int64_t done = 0;
  const char *b, *e;
  while (done < count) {
    if (!in.next(b, e)) {
      ++in.line;
      in.fail(std::string("truncated data: expected ") + std::to_string(count) + " " + what +
              ", the file ends after " + std::to_string(done));
    }
    const std::int64_t n = std::min<std::int64_t>(f.per_line, count - done);
    const std::size_t len = static_cast<std::size_t>(e - b);
    for (std::int64_t k = 0; k < n; ++k) {
      const std::size_t o = static_cast<std::size_t>(k) * static_cast<std::size_t>(f.width);
      const char* fb = b + std::min(o, len);
      const char* fe = b + std::min(o + static_cast<std::size_t>(f.width), len);
      fn(fb, fe, done + k);
    }
    done += n;
    const char* rb = b + std::min(static_cast<std::size_t>(n) * static_cast<std::size_t>(f.width), len);
    const char* re = e;
    trim(rb, re);
    if (rb != re)
      in.fail("unexpected text " + quoted(rb, re) + " after the " + std::to_string(n) + " " + what +
              " of this line (format " + f.text + ")");
  }
}

struct Parsed {
  Header h;
  CooEntries entries;
};

// Column pointers: 1-based, colptr[0] = 1, non-decreasing, colptr[ncol] = nnz + 1; returned
// 0-based. `text_left` (the text after the header) bounds the reservation: every pointer needs
// its field in the text.
std::vector<std::int64_t> read_column_pointers(Lines& in, const Header& h, std::size_t text_left) {
  const std::int64_t ncol = h.pub.ncols, nnz = h.pub.stored;
  std::vector<std::int64_t> colptr;
  colptr.reserve(static_cast<std::size_t>(std::min<std::int64_t>(ncol + 1, static_cast<std::int64_t>(text_left) + 1)));
  read_fields(in, h.ptr, ncol + 1, "column pointers", [&](const char* b, const char* e, std::int64_t k) {
    std::int64_t v;
    if (!parse_int_field(b, e, v)) {
      trim(b, e);
      in.fail("bad column pointer " + (b == e ? std::string("(blank field)") : quoted(b, e)) + " (pointer " +
              std::to_string(k + 1) + ", format " + h.ptr.text + ")");
    }
    if (k == 0 && v != 1) in.fail("the first column pointer must be 1, found " + std::to_string(v));
    if (k > 0 && v - 1 < colptr.back())
      in.fail("column pointers decrease: pointer " + std::to_string(k + 1) + " = " + std::to_string(v) +
              " < previous " + std::to_string(colptr.back() + 1));
    if (v > nnz + 1)
      in.fail("column pointer " + std::to_string(k + 1) + " = " + std::to_string(v) + " exceeds NNZERO + 1 = " +
              std::to_string(nnz + 1));
    if (k == ncol && v != nnz + 1)
      in.fail("the last column pointer must be NNZERO + 1 = " + std::to_string(nnz + 1) + ", found " +
              std::to_string(v));
    colptr.push_back(v - 1);  // 0-based
  });
  return colptr;
}

// Row indices (0-based on return), checked against the row count and, for symmetric types,
// against the stored triangle (one only; skew: no diagonal).
std::vector<std::int32_t> read_row_indices(Lines& in, const Header& h, const std::vector<std::int64_t>& colptr,
                                           std::size_t text_left) {
  const std::int64_t nrow = h.pub.nrows, nnz = h.pub.stored;
  const bool mirrored = h.pub.symmetry != Symmetry::general;
  const bool skew = h.pub.symmetry == Symmetry::skew_symmetric;
  std::vector<std::int32_t> rowind;
  rowind.reserve(static_cast<std::size_t>(std::min<std::int64_t>(nnz, static_cast<std::int64_t>(text_left) + 1)));
  std::int64_t col = 0;
  int triangle = 0;
  std::int64_t triangle_line = 0;
  read_fields(in, h.ind, nnz, "row indices", [&](const char* b, const char* e, std::int64_t k) {
    std::int64_t v;
    if (!parse_int_field(b, e, v)) {
      trim(b, e);
      in.fail("bad row index " + (b == e ? std::string("(blank field)") : quoted(b, e)) + " (entry " +
              std::to_string(k + 1) + ", format " + h.ind.text + ")");
    }
    if (v == 0) in.fail("row index 0 (entry " + std::to_string(k + 1) + "): indices are 1-based");
    if (v < 0 || v > nrow)
      in.fail("row index " + std::to_string(v) + " out of range 1.." + std::to_string(nrow) + " (entry " +
              std::to_string(k + 1) + ")");
    while (colptr[col + 1] <= k) ++col;  // column of entry k
    const std::int64_t i = v - 1;
    if (mirrored) {
      if (i == col && skew)
        in.fail("diagonal entry (" + std::to_string(v) + ", " + std::to_string(col + 1) +
                ") in a skew-symmetric matrix (its diagonal is zero and not stored)");
      if (i != col) {
        const int t = i > col ? 1 : -1;
        if (triangle != t) {
          if (triangle != 0)
            in.fail("entry (" + std::to_string(v) + ", " + std::to_string(col + 1) + ") is in the " +
                    (t > 0 ? "lower" : "upper") + " triangle but line " + std::to_string(triangle_line) +
                    " has one in the other triangle: a " + to_string(h.pub.symmetry) +
                    " matrix stores one triangle only");
          triangle = t;
          triangle_line = in.line;
        }
      }
    }
    rowind.push_back(static_cast<std::int32_t>(i));
  });
  return rowind;
}

// The values (finite unless allowed; `reserve`: the entries read); none for pattern types, whose
// value lines (VALCRD, normally 0) are skipped.
std::vector<double> read_values(Lines& in, const Header& h, const ReadOptions& opt, std::size_t reserve) {
  std::vector<double> values;
  if (h.value_kind == 'P') {
    const char *b, *e;
    for (std::int64_t l = 0; l < h.valcrd; ++l)
      if (!in.next(b, e)) in.fail("truncated data: VALCRD = " + std::to_string(h.valcrd) + " lines of values expected");
    return values;
  }
  values.reserve(reserve);
  read_fields(in, h.val, h.pub.stored, "values", [&](const char* b, const char* e, std::int64_t k) {
    double v;
    bool ok;
    if (h.val.kind == 'I') {
      std::int64_t iv;
      ok = parse_int_field(b, e, iv);
      v = static_cast<double>(iv);
    } else {
      ok = parse_real_field(b, e, h.val, v);
    }
    if (!ok) {
      trim(b, e);
      in.fail("bad value " + (b == e ? std::string("(blank field)") : quoted(b, e)) + " (entry " +
              std::to_string(k + 1) + ", format " + h.val.text + ")");
    }
    if (!opt.allow_nonfinite && !std::isfinite(v)) {
      trim(b, e);
      in.fail("value " + quoted(b, e) + " (entry " + std::to_string(k + 1) +
              ") is not finite (NaN/Inf are refused unless allow_nonfinite is set)");
    }
    values.push_back(v);
  });
  return values;
}

// After the values: the right-hand-side lines (HB; not read) must be present as declared, and
// nothing but blank lines may follow the TOTCRD data lines.
void read_trailer(Lines& in, const Header& h) {
  const char *b, *e;
  for (std::int64_t l = 0; l < h.rhscrd; ++l)
    if (!in.next(b, e)) {
      ++in.line;
      in.fail("truncated data: RHSCRD = " + std::to_string(h.rhscrd) + " right-hand-side lines expected, found " +
              std::to_string(l));
    }
  while (in.next(b, e)) {
    const char *tb = b, *te = e;
    trim(tb, te);
    if (tb != te) in.fail("extra data after the " + std::to_string(h.totcrd) + " data lines the header declares: " + quoted(tb, te));
  }
}

// Header, declared sizes against the text, column pointers, row indices, values, trailer; then
// the triplets column by column, the mirror of each off-diagonal entry after it (negated for skew).
Parsed parse_text(const char* data, std::size_t size, const std::string& name, const ReadOptions& opt) {
  Lines in{data, data + size, 0, name};
  Parsed r;
  Header& h = r.h;
  h = parse_header(in);
  const std::int64_t nrow = h.pub.nrows, ncol = h.pub.ncols, nnz = h.pub.stored;
  if (opt.require_square && nrow != ncol)
    in.fail_at(3, "matrix is " + std::to_string(nrow) + " x " + std::to_string(ncol) +
                      " but a square matrix is required");
  // Declared sizes against the text left: every row index takes at least one character, so the
  // row offsets (8 bytes per declared row) must be backed by entries the file can hold.
  const std::size_t text_left = static_cast<std::size_t>(in.end - in.p);
  {
    std::int64_t cap = std::min<std::int64_t>(nnz, static_cast<std::int64_t>(text_left));
    if (h.pub.symmetry != Symmetry::general) cap *= 2;
    check_declared_dims(name, 3, nrow, ncol, cap, text_left, "after the header");
  }
  const std::vector<std::int64_t> colptr = read_column_pointers(in, h, text_left);
  const std::vector<std::int32_t> rowind = read_row_indices(in, h, colptr, text_left);
  const std::vector<double> values = read_values(in, h, opt, rowind.size());
  read_trailer(in, h);
  const bool mirrored = h.pub.symmetry != Symmetry::general;
  const bool skew = h.pub.symmetry == Symmetry::skew_symmetric;
  r.entries.reserve(mirrored ? 2 * rowind.size() : rowind.size());
  for (std::int64_t j = 0; j < ncol; ++j) {
    for (std::int64_t p = colptr[j]; p < colptr[j + 1]; ++p) {
      const std::int32_t i = rowind[p];
      const double v = values.empty() ? 1.0 : values[p];
      r.entries.push(i, static_cast<std::int32_t>(j), v);
      if (mirrored && i != j) r.entries.push(static_cast<std::int32_t>(j), i, skew ? -v : v);
    }
  }
  return r;
}

Csr<double> build(Parsed&& r) {
  return csr_from_coo(r.h.pub.nrows, r.h.pub.ncols, std::move(r.entries), r.h.pub.symmetry);
}

// .rb.gz (io/text_input.hpp, InflateLimit): the header's lines plus TOTCRD data lines, each at
// most twice the widest format's record (per_line · width; at least an 80-column card) plus 256
// bytes (trailing blanks), plus the slack. Undecided until five lines are complete in the prefix
// (the header has four or five); a malformed header throws its own error.
InflateBound inflate_bound(const char* text, std::size_t size, const std::string& name) {
  const char* end = text;
  for (int lines = 0; lines < 5; ++lines) {
    const void* nl = std::memchr(end, '\n', static_cast<std::size_t>(text + size - end));
    if (!nl) return {};
    end = static_cast<const char*>(nl) + 1;
  }
  Lines in{text, end, 0, name};
  const Header h = parse_header(in);
  double record = 80.0;
  for (const Format* f : {&h.ptr, &h.ind, &h.val})
    record = std::max(record, static_cast<double>(f->per_line) * static_cast<double>(f->width));
  const std::size_t header = static_cast<std::size_t>(in.p - text);
  InflateBound b;
  b.bytes = inflate_bound_bytes(header, static_cast<double>(h.totcrd), 2.0 * record + 256.0);
  b.why = "the header (" + std::to_string(header) + " bytes) with the " + std::to_string(h.totcrd) +
          " data lines its TOTCRD declares (at most " + std::to_string(static_cast<long long>(2.0 * record + 256.0)) +
          " bytes each, plus 16 MiB)";
  return b;
}

}  // namespace

RutherfordBoeingHeader parse_rutherford_boeing_header(const char* data, std::size_t size, const std::string& name) {
  Lines in{data, data + size, 0, name};
  return parse_header(in).pub;
}

Csr<double> parse_rutherford_boeing(const char* data, std::size_t size, const std::string& name,
                                    const ReadOptions& opt) {
  if (is_gzip(data, size)) {
    TextBuffer t = gunzip_text(data, size, name, [&](const char* p, std::size_t n) { return inflate_bound(p, n, name); });
    return build(parse_text(t.data(), t.size(), name, opt));
  }
  return build(parse_text(data, size, name, opt));
}

Csr<double> read_rutherford_boeing(const std::string& path, const ReadOptions& opt) {
  TextBuffer t = read_text_file(path, [&](const char* p, std::size_t n) { return inflate_bound(p, n, path); });
  Parsed r = parse_text(t.data(), t.size(), path, opt);
  t.clear();
  return build(std::move(r));
}

}  // namespace tcsolve
