// Shared by the libFuzzer targets and the corpus replay test: feed one input to a reader and let
// only tcsolve::Error out. Every input is read in full: the readers refuse declared sizes that
// the text cannot back before allocating for them (io/text_input.hpp, check_declared_dims), so a
// small input cannot make them allocate gigabytes (which the fuzzer would report as an
// out-of-memory finding). The header is still parsed first, as a separate entry point.
#pragma once
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
    TextBuffer t;
    const char* d = data;
    std::size_t n = size;
    if (is_gzip(data, size)) {
      t = gunzip_text(data, size, "fuzz");
      d = t.data();
      n = t.size();
    }
    (void)header(d, n);
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

}  // namespace tcsolve::fuzz
