// Matrix Market reader and writer (https://math.nist.gov/MatrixMarket/formats.html).
#pragma once
#include <string>

#include "core/csr.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve {

// Reads coordinate or array; real, integer or pattern (pattern values = 1); general, symmetric or
// skew-symmetric (expanded to both triangles); plain or gzip (detected from the magic bytes).
// Complex and hermitian files are refused. Errors: InputError with file and line.
Csr<double> read_matrix_market(const std::string& path, const ReadOptions& opt = {});

// Same, from an in-memory text (name is used in error messages). Used by the fuzzer.
Csr<double> parse_matrix_market(const char* data, std::size_t size, const std::string& name,
                                const ReadOptions& opt = {});

// Coordinate real; "symmetric" with the lower triangle when a.symmetry == symmetric (values are
// checked), "general" otherwise. Values printed with 17 significant digits (exact round trip).
// Writes to `path` directly; callers wanting atomicity go through write_matrix().
void write_matrix_market(const std::string& path, const Csr<double>& a);

}  // namespace tcsolve
