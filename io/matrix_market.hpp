// Matrix Market reader and writer (https://math.nist.gov/MatrixMarket/formats.html).
#pragma once
#include <cstdint>
#include <string>

#include "core/csr.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve {

// Reads coordinate or array; real, integer or pattern (pattern values = 1); general, symmetric or
// skew-symmetric (expanded to both triangles); plain or gzip (detected from the magic bytes).
// Complex and hermitian files are refused. Errors: InputError with file and line.
// Symmetric files store one triangle (lower, as the format says; a file storing only the upper
// triangle is accepted too, a file mixing both is refused). Duplicates are summed, explicit zeros
// kept; every value of an array file is an entry (a dense array gives a dense Csr).
Csr<double> read_matrix_market(const std::string& path, const ReadOptions& opt = {});

// Same, from an in-memory text (name is used in error messages). Used by the fuzzer.
// gzip bytes are inflated first, as in read_matrix_market.
Csr<double> parse_matrix_market(const char* data, std::size_t size, const std::string& name,
                                const ReadOptions& opt = {});

// What the banner and the size line declare (no data read). For `info`-like tools and for the
// fuzzer, which skips inputs whose declared size would need gigabytes of row offsets.
struct MatrixMarketHeader {
  bool coordinate = true;      // false: array
  std::string field;           // "real", "integer" or "pattern"
  Symmetry symmetry = Symmetry::general;
  std::int64_t nrows = 0, ncols = 0;
  std::int64_t stored = 0;     // entries in the file (coordinate: declared; array: implied)
  std::int64_t data_line = 0;  // 1-based line number of the size line
};
// Plain text only (no gzip). Throws InputError like the reader.
MatrixMarketHeader parse_matrix_market_header(const char* data, std::size_t size,
                                              const std::string& name);

// Coordinate real; "symmetric" with the lower triangle when a.symmetry == symmetric (values are
// checked: exact symmetry of values and structure, else "general" is written), "general" otherwise.
// Values printed in the shortest form that reads back exactly (std::to_chars; <= 17 digits).
// Writes to `path` directly; callers wanting atomicity go through write_matrix().
// Throws tcsolve::Error when the file cannot be written.
void write_matrix_market(const std::string& path, const Csr<double>& a);

}  // namespace tcsolve
