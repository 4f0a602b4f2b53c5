// Shared by the libFuzzer targets and the corpus replay test: feed one input to a reader and let
// only tcsolve::Error out. Every input is read in full: the readers refuse declared sizes that
// the text cannot back before allocating for them (io/text_input.hpp, check_declared_dims), so a
// small input cannot make them allocate gigabytes (which the fuzzer would report as an
// out-of-memory finding). The header is still parsed first, as a separate entry point.
#pragma once
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "io/matrix_market.hpp"
#include "io/rutherford_boeing.hpp"
#include "io/text_input.hpp"

namespace tcsolve::fuzz {

// Returns true when the full reader ran and succeeded; tcsolve::Error is caught (returns false);
// any other exception propagates (a bug).
template <class Header, class Parse>
bool run_guarded(const char* data, std::size_t size, Header&& header, Parse&& parse) {
  try {
    {
      TextBuffer t;
      const char* d = data;
      std::size_t n = size;
      if (is_gzip(data, size)) {
        // The header's look inflates at most 16 MiB: more (a bomb) is for the reader to refuse,
        // below, within its own bound (io/text_input.hpp, InflateLimit).
        try {
          t = gunzip_text(data, size, "fuzz", [](const char*, std::size_t) {
            return InflateBound{std::size_t(16) << 20, "the fuzz guard's look at the header"};
          });
          d = t.data();
          n = t.size();
        } catch (const InputError&) {
          d = nullptr;
        }
      }
      if (d) (void)header(d, n);
    }
    const auto a = parse(data, size);
    validate(a);  // throws InvalidArgument (an Error) on a structural defect: treat as a bug below
    if (a.symmetry == Symmetry::symmetric && !is_symmetric(a))
      throw std::logic_error("reader returned a non-symmetric matrix for a symmetric file");
    return true;
  } catch (const InvalidArgument& e) {
    throw std::logic_error(std::string("reader returned an invalid CSR: ") + e.what());
  } catch (const Error&) {
    return false;
  }
}

inline bool run_matrix_market(const char* data, std::size_t size) {
  return run_guarded(
      data, size, [](const char* d, std::size_t n) { return parse_matrix_market_header(d, n, "fuzz.mtx"); },
      [](const char* d, std::size_t n) { return parse_matrix_market(d, n, "fuzz.mtx"); });
}

inline bool run_rutherford_boeing(const char* data, std::size_t size) {
  return run_guarded(
      data, size, [](const char* d, std::size_t n) { return parse_rutherford_boeing_header(d, n, "fuzz.rb"); },
      [](const char* d, std::size_t n) { return parse_rutherford_boeing(d, n, "fuzz.rb"); });
}

// gzip-format compression of `text` (zlib's deflate with the gzip wrapper), at `level`.
inline std::string gzip_bytes(const std::string& text, int level = 6) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

// The fuzzer's bytes as the text of a .gz file, through both readers (libFuzzer's mutations of
// compressed bytes rarely make a valid stream: this reaches the inflate bound and the readers
// behind it with the text mutated).
inline void run_gzipped_text(const char* data, std::size_t size) {
  const std::string gz = gzip_bytes(std::string(data, size), 1);
  run_matrix_market(gz.data(), gz.size());
  run_rutherford_boeing(gz.data(), gz.size());
}

}  // namespace tcsolve::fuzz
