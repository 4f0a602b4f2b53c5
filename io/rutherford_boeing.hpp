// Rutherford-Boeing / Harwell-Boeing reader for assembled real matrices (.rb .rsa .rua .hb,
// plain or gzip): types RSA (symmetric, expanded), RUA/RRA (unsymmetric/rectangular), RZA
// (skew-symmetric, expanded with the negated mirror), ISA/IUA (integer values), PSA/PUA/PZA
// (pattern, values 1). Complex (C..), hermitian (.H.), pattern-with-separate-values (Q..) and
// elemental (..E) matrices are refused with a clear message.
//
// Layout: 4 header lines (5 when the HB right-hand-side count RHSCRD > 0), then column pointers,
// row indices and values in Fortran fixed-width fields described by the header's formats
// ((nIw), (nEw.d), (nDw.d), (nFw.d), (nGw.d), optional kP scale factor). Fields are read by
// width, so numbers may touch ("1.0D+00-2.0D+00"); Fortran rules apply: D exponents, exponents
// without a letter ("1.0-100"), and d implied decimals when a field has no '.'. Card counts in
// the header must match the data. Errors: InputError with file and line.
#pragma once
#include <cstdint>
#include <string>

#include "core/csr.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve {

Csr<double> read_rutherford_boeing(const std::string& path, const ReadOptions& opt = {});
// In-memory text (gzip bytes are inflated first); name is used in error messages.
Csr<double> parse_rutherford_boeing(const char* data, std::size_t size, const std::string& name,
                                    const ReadOptions& opt = {});

// What the header declares (no data read), for tools and for the fuzzer's size guard.
struct RutherfordBoeingHeader {
  std::string title, key, type;  // type: 3 upper-case letters, e.g. "RSA"
  std::int64_t nrows = 0, ncols = 0;
  std::int64_t stored = 0;  // NNZERO: stored entries (one triangle for symmetric types)
  Symmetry symmetry = Symmetry::general;
};
// Plain text only (no gzip). Throws InputError like the reader.
RutherfordBoeingHeader parse_rutherford_boeing_header(const char* data, std::size_t size,
                                                      const std::string& name);

}  // namespace tcsolve
