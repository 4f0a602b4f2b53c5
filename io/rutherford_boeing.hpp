// Rutherford-Boeing / Harwell-Boeing reader for assembled real matrices (.rb .rsa .rua .hb,
// plain or gzip): types RSA (symmetric, expanded), RUA (unsymmetric), RSS/RZA skew, PSA/PUA
// pattern. Complex (C..) and elemental (..E) matrices are refused with a clear message.
#pragma once
#include <string>

#include "core/csr.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve {

Csr<double> read_rutherford_boeing(const std::string& path, const ReadOptions& opt = {});
Csr<double> parse_rutherford_boeing(const char* data, std::size_t size, const std::string& name,
                                    const ReadOptions& opt = {});

}  // namespace tcsolve
