// libFuzzer target: Matrix Market reader. Only tcsolve::Error may come out; anything else (crash,
// other exception, sanitizer report, invalid CSR) is a bug. Seed corpus: tests/fuzz/corpus/mtx.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_guard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tcsolve::fuzz::run_matrix_market(reinterpret_cast<const char*>(data), size);
  return 0;
}
