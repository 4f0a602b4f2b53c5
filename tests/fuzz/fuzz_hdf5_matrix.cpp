// libFuzzer target: the HDF5 CSR reader (io/hdf5_matrix.cpp). The fuzzer's bytes seed the choices
// of fuzz_inputs.hpp's HDF5 spec (shape, indptr, indices, values, dtypes, attributes, missing
// pieces) applied to a small valid matrix; the file is written through io/hdf5_file.hpp and read
// back. Structure-level: raw byte corruption would fuzz libhdf5's own format parser instead.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tcsolve;
  std::uint64_t seed = 1469598103934665603ull;  // FNV-1a of the bytes
  for (std::size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 1099511628211ull;
  fuzz::Rng r(seed);
  Csr<double> a = csr_from_triplets<double>(4, 4, {{0, 0, 2.0}, {1, 0, -1.0}, {0, 1, -1.0}, {2, 3, 0.5}, {3, 3, 1.0}},
                                            Symmetry::general);
  static const std::string path = "/tmp/tcsolve_fuzz_hdf5_" + std::to_string(::getpid()) + ".h5";
  if (fuzz::write_h5(fuzz::h5_spec(r, a), path)) fuzz::run_h5(path);
  return 0;
}
