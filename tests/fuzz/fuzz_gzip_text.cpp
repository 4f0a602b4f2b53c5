// libFuzzer target: the fuzzer's bytes as the text inside a .gz file, through both text readers
// (the inflate bound of io/text_input.hpp and the readers behind it). Only tcsolve::Error may come
// out. Seed corpus: tests/fuzz/corpus/mtx and rb (plain text).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_guard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tcsolve::fuzz::run_gzipped_text(reinterpret_cast<const char*>(data), size);
  return 0;
}
