// Measured rates of the host engines and their cache (factor/engine_rates.hpp).
#include "factor/engine_rates.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "core/blas_kernels.hpp"
#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"

namespace tcsolve {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// d-dimensional Dirichlet Laplacian on an nx^d grid (d = 1, 2 or 3): the model problems.
Csr<double> model_laplacian(int nx, int d) {
  const std::int64_t n = d == 1 ? std::int64_t(nx) : d == 2 ? std::int64_t(nx) * nx : std::int64_t(nx) * nx * nx;
  std::vector<Triplet<double>> t;
  t.reserve(static_cast<std::size_t>(n) * (2 * d + 1));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = r % nx, j = d >= 2 ? (r / nx) % nx : 0, l = d == 3 ? r / (std::int64_t(nx) * nx) : 0;
    const auto id = [&](std::int64_t a, std::int64_t b, std::int64_t c) {
      return static_cast<std::int32_t>(a + nx * (b + std::int64_t(nx) * c));
    };
    t.push_back({static_cast<std::int32_t>(r), static_cast<std::int32_t>(r), 2.0 * d});
    if (i > 0) t.push_back({static_cast<std::int32_t>(r), id(i - 1, j, l), -1.0});
    if (i + 1 < nx) t.push_back({static_cast<std::int32_t>(r), id(i + 1, j, l), -1.0});
    if (d >= 2 && j > 0) t.push_back({static_cast<std::int32_t>(r), id(i, j - 1, l), -1.0});
    if (d >= 2 && j + 1 < nx) t.push_back({static_cast<std::int32_t>(r), id(i, j + 1, l), -1.0});
    if (d == 3 && l > 0) t.push_back({static_cast<std::int32_t>(r), id(i, j, l - 1), -1.0});
    if (d == 3 && l + 1 < nx) t.push_back({static_cast<std::int32_t>(r), id(i, j, l + 1), -1.0});
  }
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

struct Sample {
  double n = 0, lower_entries = 0, entries = 0, flops = 0;
  double analyze_s = 0, factor_s = 0, solve1_s = 0, solve16_s = 0, inertia_s = 0;
  // t(cols) = entries·(per_entry + cols·per_entry_col) through the solves of 1 and 16 columns.
  double per_entry_col() const { return std::max(0.0, (solve16_s - solve1_s) / (15.0 * entries)); }
  double per_entry() const { return std::max(0.0, solve1_s / entries - per_entry_col()); }
};

Sample sample(const Csr<double>& a, bool with_inertia) {
  Sample s;
  s.n = static_cast<double>(a.nrows);
  s.lower_entries = 0.5 * static_cast<double>(a.nnz() + a.nrows);
  const SymbolicAnalysis sym = analyze_factor(a, nullptr);
  s.analyze_s = sym.seconds;
  auto f = factor_shifted(a, nullptr, 0.0, [] {
    FactorOptions o;
    o.engine = FactorEngine::cholmod;
    return o;
  }());
  s.entries = f->factor_entries();
  s.flops = f->factor_flops() > 0 ? f->factor_flops() : sym.flops;
  s.factor_s = f->factor_seconds();
  const std::int64_t n = a.nrows, cols = 16;
  std::vector<double> x(static_cast<std::size_t>(n * cols)), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * static_cast<double>(i) + 1.0);
  MvView<const double> xv{x.data(), n, cols, n, Space::host};
  MvView<double> yv{y.data(), n, cols, n, Space::host};
  for (std::int64_t c : {std::int64_t(1), cols}) {
    MvView<const double> xc = xv.columns(0, c);
    MvView<double> yc = yv.columns(0, c);
    f->solve(xc, yc);  // warm
    double best = INFINITY;
    for (int r = 0; r < 5; ++r) {
      const double t0 = now();
      f->solve(xc, yc);
      best = std::min(best, now() - t0);
    }
    (c == 1 ? s.solve1_s : s.solve16_s) = best;
  }
  if (with_inertia) {
    const double t0 = now();
    inertia_at(a, nullptr, -1.0);
    s.inertia_s = now() - t0;
  }
  return s;
}

std::string cache_dir() {
  if (const char* d = std::getenv("TCSOLVE_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/tcsolve";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tcsolve";
  return "";
}

// Host, cores, the BLAS kernels and the thread settings the engines run with: rates measured
// under other settings do not apply.
std::string machine_key() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  std::string k = std::string(host) + "|cores=" + std::to_string(std::thread::hardware_concurrency());
  // OpenBLAS's kernels: the command may have it choose again (apps/tcsolve.cpp: "Prescott" ->
  // "SkylakeX" on the model 207 Xeons; shift-invert on gen:jump3d:30:1e6, smallest, k = 1,
  // 2-core Xeon: 2.08 -> 0.89 s).
  if (const std::string core = blas_core_name(); !core.empty()) k += "|blas=" + core;
  for (const char* v : {"TCSOLVE_FACTOR_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (const char* e = std::getenv(v)) k += std::string("|") + v + "=" + e;
  for (char& c : k)
    if (c == ' ' || c == '\t' || c == '\n') c = '_';
  return k;
}

constexpr const char* kCacheFile = "engine-rates-v8.txt";

// The cache file's text, read without following a symbolic link and only from a regular file:
// with TCSOLVE_CACHE_DIR in a folder another user can write, a link planted at the cache's name
// would otherwise make us read (and, in write_rate_cache, copy into a new readable file) whatever
// it points to. Anything else reads as empty.
std::string read_cache_text(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (std::int64_t(1) << 20)) {
    char buf[4096];
    for (;;) {
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      text.append(buf, static_cast<std::size_t>(got));
    }
  }
  ::close(fd);
  return text;
}

// One line of the cache: KEY and the sixteen rates, all finite and non-negative.
bool parse_cache_line(const std::string& line, std::string& key, EngineRates& c) {
  std::istringstream ls(line);
  if (!(ls >> key >> c.analyze_s_per_entry >> c.factor_s_per_flop >> c.factor_s_per_entry >>
        c.solve_s_per_entry >> c.solve_s_per_entry_col >> c.simplicial_solve_s_per_entry >>
        c.simplicial_solve_s_per_entry_col >> c.simplicial_solve_s_per_row >>
        c.simplicial_solve_s_per_row_col >> c.inertia_ratio >> c.inertia_call_s >>
        c.inertia_s_per_row >> c.wide_solve_s_per_entry >> c.wide_solve_s_per_entry_col >>
        c.narrow_flops_per_entry >> c.wide_flops_per_entry))
    return false;
  const double v[] = {c.analyze_s_per_entry, c.factor_s_per_flop, c.factor_s_per_entry,
                      c.solve_s_per_entry, c.solve_s_per_entry_col, c.simplicial_solve_s_per_entry,
                      c.simplicial_solve_s_per_entry_col, c.simplicial_solve_s_per_row,
                      c.simplicial_solve_s_per_row_col, c.inertia_ratio, c.inertia_call_s,
                      c.inertia_s_per_row, c.wide_solve_s_per_entry, c.wide_solve_s_per_entry_col,
                      c.narrow_flops_per_entry, c.wide_flops_per_entry};
  return std::all_of(std::begin(v), std::end(v), [](double x) { return std::isfinite(x) && x >= 0; });
}

bool read_cache(const std::string& file, const std::string& key, EngineRates& r) {
  std::istringstream in(read_cache_text(file));
  std::string line, k;
  while (std::getline(in, line)) {
    EngineRates c;
    if (!parse_cache_line(line, k, c) || k != key) continue;
    c.source = "cached in " + file;
    r = c;
    return true;
  }
  return false;
}

// A temporary file next to `file` that this call alone created: a random name (nothing another
// user could plant in advance, unlike FILE.tmp-<pid>), opened with O_CREAT | O_EXCL (fails on
// any existing name, a symbolic link included, wherever it points) and O_NOFOLLOW, as mkstemp
// does but with the mode of a new file (0666 minus umask). Returns the descriptor (path set),
// or -1 when the folder does not let us create one.
int create_temporary(const std::string& file, std::string& path) {
  static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;  // getrandom(2)
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::string name = file + ".tmp-";
    for (int i = 0; i < 12; ++i) name += digits[rd() % 36];
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      path = name;
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

}  // namespace

namespace detail {

void factor_coefficients(double t2, double flops2, double entries2, double t3, double flops3,
                         double entries3, double* a_out, double* b_out) {
  // t = flops·a + entries·b: two equations; both coefficients kept non-negative. Where the fit
  // gives none, flops only from the flop-heavy problem. The fit can leave a near 0 where the
  // samples' times are noisy (the H200 machine's host, 2026-11-30: 1.5e-12 s a flop, ~70x below
  // its other sessions, and the dense solve priced at 9 ms where it ran 0.1–0.8 s): a is at least
  // a quarter of the flop-heavy sample's whole rate. b follows from the 2D sample where a moved.
  const double det = flops2 * entries3 - flops3 * entries2;
  double a = det != 0 ? (t2 * entries3 - t3 * entries2) / det : -1;
  double b = det != 0 ? (flops2 * t3 - flops3 * t2) / det : -1;
  const double whole = t3 / std::max(1.0, flops3);
  if (!(a > 0) || !(b > 0) || a < 0.25 * whole) {
    a = a > 0 && b > 0 ? 0.25 * whole : whole;
    b = std::max(0.0, (t2 - a * flops2) / std::max(1.0, entries2));
  }
  *a_out = a;
  *b_out = b;
}

void write_rate_cache(const std::string& dir, const std::string& file, const std::string& key,
                      const EngineRates& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // The other keys' lines (those that parse as rates: nothing else is carried over).
  std::string text;
  {
    std::istringstream in(read_cache_text(file));
    std::string line, k;
    EngineRates c;
    while (std::getline(in, line))
      if (parse_cache_line(line, k, c) && k != key) text += line + "\n";
  }
  char b[512];
  std::snprintf(b, sizeof b, "%s %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n",
                key.c_str(),
                r.analyze_s_per_entry, r.factor_s_per_flop, r.factor_s_per_entry, r.solve_s_per_entry,
                r.solve_s_per_entry_col, r.simplicial_solve_s_per_entry, r.simplicial_solve_s_per_entry_col,
                r.simplicial_solve_s_per_row, r.simplicial_solve_s_per_row_col, r.inertia_ratio,
                r.inertia_call_s, r.inertia_s_per_row, r.wide_solve_s_per_entry, r.wide_solve_s_per_entry_col,
                r.narrow_flops_per_entry, r.wide_flops_per_entry);
  text += b;
  std::string tmp;
  const int fd = create_temporary(file, tmp);
  if (fd < 0) return;  // (a cache that cannot be written is ignored)
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += static_cast<std::size_t>(w);
  }
  ok = ::close(fd) == 0 && ok;
  // rename(2) replaces the directory entry `file` itself: a link planted there is replaced, never
  // followed; readers see the old cache or the new one, never a partial file.
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace detail

EngineRates measure_engine_rates() {
  const double t0 = now();
  // A 2D problem (entries dominate: small supernodes) and a 3D one (flops dominate), both
  // supernodal; a small 2D one, simplicial (its solves only).
  const Sample s2 = sample(model_laplacian(160, 2), false);
  trace_mark("rates: 2D sample");
  const Sample s3 = sample(model_laplacian(22, 3), true);
  trace_mark("rates: 3D sample with inertia");
  const Sample ss = sample(model_laplacian(60, 2), false);
  trace_mark("rates: small 2D sample");
  const Sample s1 = sample(model_laplacian(200000, 1), false);
  trace_mark("rates: chain sample");
  EngineRates r;
  r.analyze_s_per_entry = std::max(s2.analyze_s / s2.lower_entries, s3.analyze_s / s3.lower_entries);
  detail::factor_coefficients(s2.factor_s, s2.flops, s2.entries, s3.factor_s, s3.flops, s3.entries,
                              &r.factor_s_per_flop, &r.factor_s_per_entry);
  // Block solves: each supernodal sample's pair at its front width (EngineRates::solve_seconds
  // interpolates between them); the small 2D sample and the chain for the simplicial factors.
  r.solve_s_per_entry = s2.per_entry();
  r.solve_s_per_entry_col = s2.per_entry_col();
  r.wide_solve_s_per_entry = s3.per_entry();
  r.wide_solve_s_per_entry_col = s3.per_entry_col();
  r.narrow_flops_per_entry = s2.flops / std::max(1.0, s2.entries);
  r.wide_flops_per_entry = s3.flops / std::max(1.0, s3.entries);
  // Simplicial: t = E·(e + cols·ec) + n·(q + cols·qc) through the 2D sample (E ≈ 12n) and the
  // chain (E = 2n − 1); each pair from two equations, non-negative (else nnz(L) alone, as before).
  const auto fit = [&](double t2, double t1, double* e, double* q) {
    const double det = ss.entries * s1.n - s1.entries * ss.n;
    *e = det != 0 ? (t2 * s1.n - t1 * ss.n) / det : -1;
    *q = det != 0 ? (ss.entries * t1 - s1.entries * t2) / det : -1;
    if (!(*e >= 0) || !(*q >= 0)) *e = t2 / ss.entries, *q = 0;
  };
  const auto col = [](const Sample& s) { return std::max(0.0, (s.solve16_s - s.solve1_s) / 15.0); };
  fit(col(ss), col(s1), &r.simplicial_solve_s_per_entry_col, &r.simplicial_solve_s_per_row_col);
  fit(std::max(0.0, ss.solve1_s - col(ss)), std::max(0.0, s1.solve1_s - col(s1)),
      &r.simplicial_solve_s_per_entry, &r.simplicial_solve_s_per_row);
  // A count's fixed cost (MUMPS's instance, its analysis and factorization calls) from a 64-row
  // problem, the fastest of three; the ratio from the 3D sample beyond it.
  const Csr<double> tiny = model_laplacian(8, 2);
  r.inertia_call_s = INFINITY;
  for (int i = 0; i < 3; ++i) {
    const double ti = now();
    inertia_at(tiny, nullptr, -1.0);
    r.inertia_call_s = std::min(r.inertia_call_s, now() - ti);
  }
  trace_mark("rates: a count's fixed cost");
  // The per-row part from a chain (fronts of one or two rows: MUMPS's cost per front dominates),
  // beyond its own analysis and factorization at the 3D sample's ratio; the ratio then refitted
  // without the 3D sample's per-row part.
  const Sample sc = sample(model_laplacian(20000, 1), true);
  trace_mark("rates: chain count");
  const double work3 = std::max(1e-6, s3.analyze_s + s3.factor_s);
  const double ratio0 = std::max(0.5, (s3.inertia_s - r.inertia_call_s) / work3);
  r.inertia_s_per_row =
      std::max(0.0, (sc.inertia_s - r.inertia_call_s - ratio0 * (sc.analyze_s + sc.factor_s)) / sc.n);
  r.inertia_ratio = std::max(0.5, (s3.inertia_s - r.inertia_call_s - r.inertia_s_per_row * s3.n) / work3);
  char b2[96];
  std::snprintf(b2, sizeof b2, "measured in %.2f s", now() - t0);
  r.source = b2;
  return r;
}

namespace {

// This machine's lines of the cache, read once (none where TCSOLVE_NO_RATE_CACHE is set): the full
// rates, else the analysis rate alone (key "<machine>|analysis").
struct CachedRates {
  std::optional<EngineRates> full;
  std::optional<double> analyze_s_per_entry;
};
const CachedRates& cached_rates() {
  static std::once_flag once;
  static CachedRates cached;
  std::call_once(once, [] {
    if (std::getenv("TCSOLVE_NO_RATE_CACHE")) return;
    const std::string dir = cache_dir();
    if (dir.empty()) return;
    const std::string file = dir + "/" + kCacheFile, key = machine_key();
    EngineRates r;
    if (read_cache(file, key, r)) cached.full = r;
    if (cached.full) cached.analyze_s_per_entry = cached.full->analyze_s_per_entry;
    else if (read_cache(file, key + "|analysis", r)) cached.analyze_s_per_entry = r.analyze_s_per_entry;
  });
  return cached;
}

// Set once engine_rates() / engine_analyze_rate() have their answer in this process.
std::atomic<const EngineRates*> g_measured{nullptr};
std::atomic<bool> g_analyze_rate_ready{false};

}  // namespace

bool engine_analyze_rate_known() {
  return g_analyze_rate_ready.load(std::memory_order_acquire) || known_engine_rates() ||
         cached_rates().analyze_s_per_entry.has_value();
}

double engine_analyze_rate() {
  static std::once_flag once;
  static double rate = 0.0;
  std::call_once(once, [] {
    if (const EngineRates* known = known_engine_rates()) {
      rate = known->analyze_s_per_entry;
    } else if (cached_rates().analyze_s_per_entry) {
      rate = *cached_rates().analyze_s_per_entry;
    } else {
      // The full measurement's analysis rate: the same two samples' AMD analyses, nothing else.
      auto per_entry = [](const Csr<double>& a) {
        const SymbolicAnalysis sym = analyze_factor(a, nullptr);
        return sym.seconds / (0.5 * static_cast<double>(a.nnz() + a.nrows));
      };
      rate = std::max(per_entry(model_laplacian(160, 2)), per_entry(model_laplacian(22, 3)));
      trace_mark("rates: the analysis rate alone");
      const std::string dir = std::getenv("TCSOLVE_NO_RATE_CACHE") ? "" : cache_dir();
      if (!dir.empty()) {
        EngineRates r;
        r.analyze_s_per_entry = rate;
        detail::write_rate_cache(dir, dir + "/" + kCacheFile, machine_key() + "|analysis", r);
      }
    }
    g_analyze_rate_ready.store(true, std::memory_order_release);
  });
  return rate;
}

const EngineRates& engine_rates() {
  static std::once_flag once;
  static EngineRates rates;
  std::call_once(once, [] {
    if (const auto& c = cached_rates().full) {
      rates = *c;
    } else {
      rates = measure_engine_rates();
      const std::string dir = std::getenv("TCSOLVE_NO_RATE_CACHE") ? "" : cache_dir();
      if (!dir.empty()) {
        const std::string file = dir + "/" + kCacheFile;
        detail::write_rate_cache(dir, file, machine_key(), rates);
        rates.source += ", cached in " + file;
      }
    }
    g_measured.store(&rates, std::memory_order_release);
  });
  return rates;
}

const EngineRates* known_engine_rates() {
  if (const EngineRates* r = g_measured.load(std::memory_order_acquire)) return r;
  const auto& c = cached_rates().full;
  return c ? &*c : nullptr;
}

}  // namespace tcsolve
