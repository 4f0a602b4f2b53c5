// Helper for check_h5_from_python.py: writes tcsolve HDF5/Matrix Market files for Python to read,
// and converts files that Python wrote.
//   h5_python_fixture write DIR     -> DIR/{lap,band,rect}.{h5,mtx}, DIR/nested.h5:results/A
//   h5_python_fixture convert IN OUT -> read_matrix(IN), write_matrix(OUT); prints "rows cols nnz"
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <string>

#include "core/csr.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"

using namespace tcsolve;

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc == 3) {
      const std::string dir = argv[2];
      Csr<double> lap = generate("gen:lap2d:7x5");
      write_matrix(dir + "/lap.h5", lap);
      write_matrix(dir + "/lap.mtx", lap);
      Csr<double> band = generate("gen:band:57:4@3");
      write_matrix(dir + "/band.h5", band);
      write_matrix(dir + "/band.mtx", band);
      // Rectangular, general, random values over many magnitudes, an empty row.
      std::mt19937_64 rng(11);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<Triplet<double>> t;
      for (int i = 0; i < 23; ++i)
        for (int j = 0; j < 31; ++j)
          if (i != 5 && (rng() % 7) == 0) t.push_back({i, j, u(rng) * std::pow(10.0, static_cast<int>(rng() % 13) - 6)});
      Csr<double> rect = csr_from_triplets(23, 31, std::move(t));
      write_matrix(dir + "/rect.h5", rect);
      write_matrix(dir + "/rect.mtx", rect);
      write_matrix(dir + "/nested.h5:results/A", band);
      return 0;
    }
    if (mode == "convert" && argc == 4) {
      Csr<double> a = read_matrix(argv[2]);
      write_matrix(argv[3], a);
      std::printf("%lld %lld %lld\n", static_cast<long long>(a.nrows), static_cast<long long>(a.ncols),
                  static_cast<long long>(a.nnz()));
      return 0;
    }
    std::fprintf(stderr, "usage: %s write DIR | convert IN OUT\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
