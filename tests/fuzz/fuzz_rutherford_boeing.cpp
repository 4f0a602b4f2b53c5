// libFuzzer target: Rutherford-Boeing / Harwell-Boeing reader. Only tcsolve::Error may come out.
// Seed corpus: tests/fuzz/corpus/rb.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_guard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tcsolve::fuzz::run_rutherford_boeing(reinterpret_cast<const char*>(data), size);
  return 0;
}
