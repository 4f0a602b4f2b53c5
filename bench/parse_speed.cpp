// Matrix Market parsing speed, end to end (read file + parse + build CSR), on one core.
//
//   parse_speed --generate FILE [MB]   writes a random coordinate real general file of about MB
//                                      megabytes (default 1000): 2^k-ish rows, 13 sorted columns
//                                      per row, values with 17 significant digits
//   parse_speed --generate-sym FILE [MB]  same, "symmetric": lower triangle written column by
//                                      column as SuiteSparse does (the reader must sort by row)
//   parse_speed FILE [REPEATS]         reads it REPEATS times (default 3) and prints MB/s
//
// Besides the end-to-end time (wall and CPU) it times, on the same matrix, (a) the file read
// alone and (b) the CSR build alone (csr_from_coo, as the reader calls it, on the entries in
// file order, mirrored for symmetric files), to report the CSR-build share.
// Pin to one core for the one-core number: taskset -c 1 parse_speed FILE.
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "io/matrix_market.hpp"
#include "io/text_input.hpp"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int generate(const char* path, double mb, bool sym) {
  // Line "IIIIIII JJJJJJJ -d.dddddddddddddddde-XX\n" is about 41 bytes.
  const std::int64_t per_row = 13;
  const std::int64_t n = std::max<std::int64_t>(16, static_cast<std::int64_t>(mb * 1e6 / 41.0 / per_row));
  std::FILE* f = std::fopen(path, "wb");
  if (!f) {
    std::perror(path);
    return 1;
  }
  std::fprintf(f, "%%%%MatrixMarket matrix coordinate real %s\n%% tcsolve bench/parse_speed random matrix\n",
               sym ? "symmetric" : "general");
  std::int64_t stored = 0;
  for (std::int64_t i = 0; i < n; ++i) stored += sym ? std::min<std::int64_t>(per_row, n - i) : per_row;
  std::fprintf(f, "%lld %lld %lld\n", static_cast<long long>(n), static_cast<long long>(n),
               static_cast<long long>(stored));
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> col(0, n - 1);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> ex(-3, 3);
  std::vector<char> buf(1 << 22);
  std::size_t pos = 0;
  std::vector<std::int64_t> cols;
  // General: row i, 13 sorted random columns. Symmetric: column i, the diagonal and 12 sorted
  // random rows below it (fewer near the end), printed as "row col value".
  for (std::int64_t i = 0; i < n; ++i) {
    cols.clear();
    if (sym) cols.push_back(i);
    const std::int64_t want = sym ? std::min<std::int64_t>(per_row, n - i) : per_row;
    std::uniform_int_distribution<std::int64_t> below(i, n - 1);
    while (static_cast<std::int64_t>(cols.size()) < want) {
      const std::int64_t c = sym ? below(rng) : col(rng);
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    std::sort(cols.begin(), cols.end());
    for (std::int64_t c : cols) {
      if (pos + 128 > buf.size()) {
        std::fwrite(buf.data(), 1, pos, f);
        pos = 0;
      }
      char* q = buf.data() + pos;
      char* e = buf.data() + buf.size();
      q = std::to_chars(q, e, (sym ? c : i) + 1).ptr;
      *q++ = ' ';
      q = std::to_chars(q, e, (sym ? i : c) + 1).ptr;
      *q++ = ' ';
      const double v = mant(rng) * std::pow(10.0, ex(rng));
      q = std::to_chars(q, e, v, std::chars_format::scientific, 16).ptr;  // 17 significant digits
      *q++ = '\n';
      pos = static_cast<std::size_t>(q - buf.data());
    }
  }
  std::fwrite(buf.data(), 1, pos, f);
  std::fclose(f);
  std::printf("wrote %s\n", path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--generate") == 0)
    return generate(argv[2], argc >= 4 ? std::atof(argv[3]) : 1000.0, false);
  if (argc >= 3 && std::strcmp(argv[1], "--generate-sym") == 0)
    return generate(argv[2], argc >= 4 ? std::atof(argv[3]) : 1000.0, true);
  if (argc < 2) {
    std::fprintf(stderr, "usage: parse_speed FILE [REPEATS] | parse_speed --generate[-sym] FILE [MB]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int repeats = argc >= 3 ? std::atoi(argv[2]) : 3;
  try {
    double best_total = 1e300, best_cpu = 1e300, best_read = 1e300, best_build = 1e300;
    std::size_t bytes = 0;
    std::int64_t nnz = 0;
    for (int r = 0; r < repeats; ++r) {
      double t0 = now();
      {
        tcsolve::TextBuffer t = tcsolve::read_text_file(path);
        bytes = t.size();
      }
      best_read = std::min(best_read, now() - t0);

      t0 = now();
      const double c0 = cpu_now();
      tcsolve::Csr<double> a = tcsolve::read_matrix_market(path);
      const double total = now() - t0, cpu = cpu_now() - c0;
      best_total = std::min(best_total, total);
      best_cpu = std::min(best_cpu, cpu);
      nnz = a.nnz();

      // The CSR build alone on the entries as the reader collects them: file order, and for a
      // symmetric file the mirror right after each off-diagonal entry.
      const bool sym = a.symmetry == tcsolve::Symmetry::symmetric;
      tcsolve::CooEntries e;
      e.reserve(static_cast<std::size_t>(a.nnz()));
      if (!sym) {
        for (std::int64_t i = 0; i < a.nrows; ++i)
          for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
            e.push(static_cast<std::int32_t>(i), a.col_idx[p], a.values[p]);
      } else {  // lower triangle by columns = upper triangle of the rows, row by row
        for (std::int64_t j = 0; j < a.nrows; ++j)
          for (std::int64_t p = a.row_ptr[j]; p < a.row_ptr[j + 1]; ++p) {
            const std::int32_t i = a.col_idx[p];
            if (i < j) continue;
            e.push(i, static_cast<std::int32_t>(j), a.values[p]);
            if (i != j) e.push(static_cast<std::int32_t>(j), i, a.values[p]);
          }
      }
      const std::int64_t nr = a.nrows, nc = a.ncols;
      a = tcsolve::Csr<double>();
      t0 = now();
      tcsolve::Csr<double> b = tcsolve::csr_from_coo(nr, nc, std::move(e), tcsolve::Symmetry::general);
      best_build = std::min(best_build, now() - t0);
      std::printf("run %d: end-to-end %.3f s wall (%.1f MB/s), %.3f s CPU (%.1f MB/s), nnz %lld\n", r + 1, total,
                  bytes / total / 1e6, cpu, bytes / cpu / 1e6, static_cast<long long>(b.nnz()));
    }
    std::printf("file %s: %.1f MB, %lld entries after expansion\n", path.c_str(), bytes / 1e6,
                static_cast<long long>(nnz));
    std::printf("best of %d: end-to-end %.3f s wall = %.1f MB/s (%.3f s CPU = %.1f MB/s); "
                "file map alone %.3f s (%.0f%%); CSR build alone %.3f s (%.0f%%)\n",
                repeats, best_total, bytes / best_total / 1e6, best_cpu, bytes / best_cpu / 1e6, best_read,
                100 * best_read / best_total, best_build, 100 * best_build / best_total);
  } catch (const tcsolve::Error& e) {
    std::fprintf(stderr, "parse_speed: %s\n", e.what());
    return 2;
  }
  return 0;
}
