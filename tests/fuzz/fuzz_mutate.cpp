// A deterministic mutation fuzzer over every matrix reader, built with the normal compiler: CI's
// machine has no clang (libFuzzer) unless scripts/install-deps.sh installs it, so this is the
// standing fuzz job (ctest io_fuzz_mutate, label cpu: it runs in the plain build and again under
// ASan/UBSan in scripts/sanitize.sh). The libFuzzer targets beside it (clang builds) explore
// further from the same corpus; this one replays a fixed, reproducible walk.
//
// Inputs, in turn:
//   mtx, rb   a seed of tests/fuzz/corpus/{mtx,rb} with 1-4 byte-level mutations (bit flips,
//             interesting bytes, deleted/duplicated/inserted ranges, numbers replaced by edge
//             values, lines duplicated or dropped, truncation, splices of two seeds), through
//             both text readers (fuzz_guard.hpp: only tcsolve::Error may come out);
//   gz        a mutated text seed gzip-compressed, sometimes with its compressed bytes mutated
//             too (flips, truncation, a second member, trailing bytes), or a small bomb (a
//             header followed by a long run of one line): the inflate bound and the readers;
//   h5        an HDF5 CSR group written through io/hdf5_file.hpp with mutated content (shape,
//             indptr, indices, values, dtypes, ranks, attributes, compression, missing pieces),
//             read by read_hdf5_matrix. Structure-level only: byte-level corruption of HDF5
//             files would test libhdf5's own parser, not ours.
// Each input is written to CRASH_DIR/last-input before it runs (a crash or a hang leaves its
// reproducer), and runs under a per-input alarm (a hang fails). Memory: RLIMIT_AS 4 GiB, or under
// ASan (whose shadow memory cannot live under RLIMIT_AS) ASan's hard RSS limit of 3 GiB.
//
// Usage: fuzz_mutate CORPUS_DIR CRASH_DIR [--inputs N] [--min-inputs M] [--seconds S] [--seed X]
// Exit status 0 when at least M inputs ran (N default 4000, M 1000) within S seconds (default
// 150) without a failure; 1 on a failure (its message and reproducer); 2 on bad usage.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "hard_rss_limit_mb=3072"; }
#endif

namespace tcsolve::fuzz {
namespace {

namespace fs = std::filesystem;

// ---- the run ----

struct Args {
  fs::path corpus, crash_dir;
  long inputs = 4000, min_inputs = 1000;
  double seconds = 150.0;
  std::uint64_t seed = 20261128;
};

std::vector<std::string> load_seeds(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // the walk must not depend on the folder's order
  std::vector<std::string> seeds;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    seeds.push_back(s.str());
  }
  return seeds;
}

std::string g_last_input;  // path of CRASH_DIR/last-input

void write_last_input(const std::string& bytes, const char* kind) {
  std::ofstream(g_last_input, std::ios::binary | std::ios::trunc) << bytes;
  std::ofstream(g_last_input + ".kind", std::ios::trunc) << kind << "\n";
}

extern "C" void on_alarm(int) {
  const char msg[] = "fuzz_mutate: an input ran longer than its alarm (a hang): see last-input\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(1);
}

void limit_memory() {
#if !defined(__SANITIZE_ADDRESS__)
  rlimit rl{};
  rl.rlim_cur = rl.rlim_max = rlim_t(4) << 30;
  setrlimit(RLIMIT_AS, &rl);
#endif
}

int run(const Args& a) {
  const std::vector<std::string> mtx = load_seeds(a.corpus / "mtx"), rb = load_seeds(a.corpus / "rb");
  if (mtx.empty() || rb.empty()) {
    std::fprintf(stderr, "fuzz_mutate: no seeds under %s\n", a.corpus.c_str());
    return 2;
  }
  std::vector<std::string> text = mtx;
  text.insert(text.end(), rb.begin(), rb.end());
  std::vector<Csr<double>> base;  // the valid seeds' matrices, the HDF5 inputs' starting points
  for (const auto& s : mtx) try { base.push_back(parse_matrix_market(s.data(), s.size(), "seed")); } catch (const Error&) {}
  if (base.empty()) base.push_back(Csr<double>{});
  const std::string h5 = (a.crash_dir / "input.h5").string();
  g_last_input = (a.crash_dir / "last-input").string();
  signal(SIGALRM, on_alarm);
  limit_memory();
  Rng r(a.seed);
  long counts[4] = {0, 0, 0, 0}, h5_unwritable = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  long i = 0;
  for (; i < a.inputs && elapsed() < a.seconds; ++i) {
    const int kind = static_cast<int>(i % 4);
    std::string in;
    H5Spec spec;
    if (kind == 0) in = mutated(r, mtx);
    else if (kind == 1) in = mutated(r, rb);
    else if (kind == 2) in = gz_input(r, text);
    else spec = h5_spec(r, base[pick(r, base.size())]);
    if (kind == 3 && !write_h5(spec, h5)) {
      ++h5_unwritable;
      continue;
    }
    const char* names[] = {"mtx", "rb", "gz", "h5"};
    if (kind == 3) {
      std::ifstream f(h5, std::ios::binary);
      std::ostringstream s;
      s << f.rdbuf();
      in = s.str();
    }
    write_last_input(in, names[kind]);
    alarm(kind == 2 ? 30 : 10);
    try {
      if (kind == 3) {
        run_h5(h5);
      } else {
        run_matrix_market(in.data(), in.size());
        run_rutherford_boeing(in.data(), in.size());
      }
    } catch (const std::exception& e) {
      alarm(0);
      std::fprintf(stderr, "fuzz_mutate: input %ld (%s, seed %llu): %s\nreproducer: %s\n", i, names[kind],
                   static_cast<unsigned long long>(a.seed), e.what(), g_last_input.c_str());
      return 1;
    }
    alarm(0);
    ++counts[kind];
  }
  const long ran = counts[0] + counts[1] + counts[2] + counts[3];
  std::printf("fuzz_mutate: %ld inputs in %.1f s (mtx %ld, rb %ld, gz %ld, h5 %ld; %ld HDF5 specs the writer "
              "refused), seed %llu: 0 failures\n",
              ran, elapsed(), counts[0], counts[1], counts[2], counts[3], h5_unwritable,
              static_cast<unsigned long long>(a.seed));
  if (ran < a.min_inputs) {
    std::fprintf(stderr, "fuzz_mutate: only %ld inputs within %.0f s (at least %ld wanted)\n", ran, a.seconds,
                 a.min_inputs);
    return 1;
  }
  std::remove(g_last_input.c_str());
  std::remove((g_last_input + ".kind").c_str());
  std::remove(h5.c_str());
  return 0;
}

}  // namespace
}  // namespace tcsolve::fuzz

int main(int argc, char** argv) {
  using tcsolve::fuzz::Args;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR CRASH_DIR [--inputs N] [--min-inputs M] [--seconds S] [--seed X]\n", argv[0]);
    return 2;
  }
  Args a;
  a.corpus = argv[1];
  a.crash_dir = argv[2];
  for (int k = 3; k + 1 < argc; k += 2) {
    const std::string o = argv[k];
    if (o == "--inputs") a.inputs = std::atol(argv[k + 1]);
    else if (o == "--min-inputs") a.min_inputs = std::atol(argv[k + 1]);
    else if (o == "--seconds") a.seconds = std::atof(argv[k + 1]);
    else if (o == "--seed") a.seed = std::strtoull(argv[k + 1], nullptr, 10);
    else return std::fprintf(stderr, "unknown option %s\n", o.c_str()), 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.crash_dir, ec);
  return tcsolve::fuzz::run(a);
}
