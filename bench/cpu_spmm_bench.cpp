// The CPU's sparse products against a copy measured in the same run (issue 46 §1):
//   cpu_spmm_bench [--runs R] [--cols 24,32] [--reference] [--whole] [--cpu-time] [--auto-order]
//                  [--profile spmm|step|rows] SPEC...
// (--profile: that kernel alone, R times, no copy and no other kernel: for perf record.)
// SPEC: a matrix file or generator (gen:lap3d:60, gen:rgg:55000, ...). Per matrix and column
// count k, R rounds (default 7, after 2 warm-up rounds); each round runs, back to back,
//   - copy:  a multithreaded memcpy between two arrays of max(B/2, 256 MB) each (larger than the
//            caches; B the step's bytes below): its rate is (read + write bytes) / time;
//   - spmm:  the CPU operator's Y = A·X (make_sparse_operator, Backend::cpu);
//   - step:  the fused Chebyshev step next = a·A·cur + b·cur + c·next (make_chebyshev_step, cpu);
//   - rows:  the same step on blocks by rows (step_rows: the CPU filter's layout, its iterates
//            kept by rows across the filter's steps; the same bytes as step);
//   - to-rows, from-rows: X by rows and back (the CPU filter's one transpose in and one out per
//            filter, CpuCsrKernels::to_rows/from_rows), 16 bytes an entry;
//   - ref:   with --reference, csr_spmm_reference (core/csr.hpp: the CPU operator's kernel
//            before issue 46; a simple row loop over column-major X).
//   - spmm-w, step-w: with --whole, the same kernels forced to stage all of X first, Y with plain
//            stores (spmm/cpu_csr_kernels.hpp: the staging before the ring, for A/B).
// The header line says which staging the kernels pick for each k (ring or whole). --auto-order:
// the matrix in the order eigs iterates in on the CPU (preprocess/rcm.hpp locality_order: RCM
// where it cuts the lines of X read per entry, as `--reorder auto` and tcsolve.eigsh).
// Blocks are MultiVectors, as the solvers allocate them. Medians over the rounds. Bytes (the formula, what a kernel must move at least):
//   spmm: 12·nnz + 8·rows + 8·rows·k·2 (X read, Y written)
//   step: 12·nnz + 8·rows + 8·rows·k·3 (cur read, next read and written)
// GB/s = bytes / median time; "of copy" = that rate over the same round's copy rate. A line
// starting "JSON " repeats each row for scripts (bench/cpu_spmm_scipy.py).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/multivector.hpp"
#include "core/parallel.hpp"
#include "io/matrix_io.hpp"
#include "preprocess/rcm.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/cpu_csr_kernels.hpp"
#include "spmm/sparse_operator.hpp"

using namespace tcsolve;

namespace {

// --cpu-time: the process's CPU seconds instead of wall seconds (development on a loaded machine,
// one thread: `taskset -c 0 cpu_spmm_bench --cpu-time ...`; time preempted by others not counted).
bool g_cpu_time = false;

double now_s() {
  if (g_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// dst = src over all host threads (parts of 4 MB), the rate a stream of the kernel's bytes could
// reach on this machine now.
void parallel_copy(const char* src, char* dst, std::size_t bytes) {
  const std::size_t part = std::size_t(4) << 20;
  const int parts = static_cast<int>((bytes + part - 1) / part);
  parallel_parts(parts, [&](int p) {
    const std::size_t b = static_cast<std::size_t>(p) * part, e = std::min(bytes, b + part);
    std::memcpy(dst + b, src + b, e - b);
  });
}

void fill(double* v, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t z = (seed + i) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    v[i] = static_cast<double>(z >> 11) * 0x1.0p-53 - 0.5;
  }
}

struct Options {
  int runs = 7;
  std::vector<int> cols{24, 32};
  bool reference = false;
  bool whole = false;
  bool auto_order = false;
  std::string profile;  // --profile KERNEL: only that kernel, --runs times, no copy (perf record)
  std::vector<std::string> specs;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--runs" && i + 1 < argc) {
      o.runs = std::stoi(argv[++i]);
    } else if (s == "--cols" && i + 1 < argc) {
      o.cols.clear();
      std::string l = argv[++i];
      for (std::size_t p = 0; p < l.size();) {
        const std::size_t q = l.find(',', p);
        o.cols.push_back(std::stoi(l.substr(p, q - p)));
        p = q == std::string::npos ? l.size() : q + 1;
      }
    } else if (s == "--cpu-time") {
      g_cpu_time = true;
    } else if (s == "--reference") {
      o.reference = true;
    } else if (s == "--whole") {
      o.whole = true;
    } else if (s == "--auto-order") {
      o.auto_order = true;
    } else if (s == "--profile" && i + 1 < argc) {
      o.profile = argv[++i];
      if (o.profile != "spmm" && o.profile != "step" && o.profile != "rows")
        throw InvalidArgument("cpu_spmm_bench: --profile takes spmm, step or rows, not " + o.profile);
    } else if (!s.empty() && s[0] == '-') {
      throw InvalidArgument("cpu_spmm_bench: unknown option " + s);
    } else {
      o.specs.push_back(s);
    }
  }
  if (o.specs.empty() || o.runs < 1 || o.cols.empty())
    throw InvalidArgument("usage: cpu_spmm_bench [--runs R] [--cols 24,32] [--reference] [--whole] [--auto-order] [--profile spmm|step|rows] SPEC...");
  for (int k : o.cols)
    if (k < 1 || k > 1024) throw InvalidArgument("cpu_spmm_bench: column counts must be 1..1024");
  return o;
}

void print_row(const std::string& spec, const Csr<double>& a, int k, const char* what, const std::vector<double>& t,
               double bytes, double copy_gbs) {
  const double ms = median(t), best = *std::min_element(t.begin(), t.end());
  const double gbs = bytes / (ms * 1e-3) * 1e-9;
  std::printf("%-22s %8lld %9lld %3d %-6s %9.3f %9.3f %8.1f %7.2f %7.2f %6.0f%%\n", spec.c_str(),
              static_cast<long long>(a.nrows), static_cast<long long>(a.nnz()), k, what, ms, best,
              bytes * 1e-6, gbs, copy_gbs, 100.0 * gbs / copy_gbs);
  std::printf("JSON {\"matrix\": \"%s\", \"rows\": %lld, \"nnz\": %lld, \"cols\": %d, \"kernel\": \"%s\", "
              "\"ms\": %.5f, \"best_ms\": %.5f, \"bytes\": %.0f, \"gbs\": %.4f, \"copy_gbs\": %.4f, \"threads\": %d}\n",
              spec.c_str(), static_cast<long long>(a.nrows), static_cast<long long>(a.nnz()), k, what,
              ms, best, bytes, gbs, copy_gbs, host_threads());
  std::fflush(stdout);
}

void bench_matrix(const std::string& spec, const Options& o) {
  Csr<double> a = read_matrix(spec);
  TCSOLVE_REQUIRE(a.square(), "cpu_spmm_bench: " + spec + " is not square");
  if (o.auto_order) {
    LocalityOrder lo = locality_order(a);
    std::printf("# %s: %s\n", spec.c_str(), lo.perm.empty() ? "order kept" : lo.describe().c_str());
    if (!lo.perm.empty()) a = std::move(lo.permuted);
  }
  const std::int64_t n = a.nrows;
  OperatorOptions opt;
  auto op = make_sparse_operator(a, Backend::cpu, opt);
  auto step = make_chebyshev_step(a, Backend::cpu, Precision::fp64, nullptr);
  for (int k : o.cols) {
    const std::size_t block = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
    // the blocks as the solvers allocate them (MultiVector: cache-line aligned)
    MultiVector<double> x(n, k), y(n, k), nx(n, k);
    fill(x.data(), block, 1);
    fill(y.data(), block, 3);
    fill(nx.data(), block, 2);
    const double base = 12.0 * static_cast<double>(a.nnz()) + 8.0 * static_cast<double>(n);
    const double spmm_bytes = base + 16.0 * static_cast<double>(block);
    const double step_bytes = base + 24.0 * static_cast<double>(block);
    const std::size_t copy_bytes = std::max<std::size_t>(static_cast<std::size_t>(step_bytes / 2), std::size_t(256) << 20);
    std::vector<char> src(o.profile.empty() ? copy_bytes : 0, 1), dst(src.size(), 0);
    const MvView<const double> xv{x.data(), n, k, n, Space::host};
    const MvView<double> yv{y.data(), n, k, n, Space::host}, nv{nx.data(), n, k, n, Space::host};
    // step coefficients of a filter step (|a·λ + b| ≤ 1 keeps the iterate bounded: scaled by the
    // Gershgorin bound), c = −1 as in the recurrence's later steps
    double gersh = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) s += std::abs(a.values[p]);
      gersh = std::max(gersh, s);
    }
    const double sa = gersh > 0 ? 1.0 / gersh : 1.0;
    std::vector<double> t_copy, t_spmm, t_step, t_rows, t_ref, t_spmm_w, t_step_w, t_tin, t_tout;
    const std::int64_t ldr = (k + 3) / 4 * 4;
    std::vector<double> xr(static_cast<std::size_t>(n * ldr)), nr(xr.size());
    step->to_rows(xv, xr.data(), ldr);
    step->to_rows(nv, nr.data(), ldr);
    detail::CpuCsrKernels kw(a), probe(a);  // forced whole staging, plain stores (A/B)
    kw.force_staging(detail::CpuCsrKernels::Staging::whole);
    kw.set_stream_bytes(std::numeric_limits<std::int64_t>::max());
    detail::StepCoefs sc;
    sc.a = sa, sc.b = 0.1 * sa, sc.c = -0.5;
    std::printf("# %s k %d: %s staging (ring of %lld rows)\n", spec.c_str(), k,
                probe.staging_for(k, sizeof(double)) == detail::CpuCsrKernels::Staging::ring ? "ring" : "whole",
                static_cast<long long>(probe.ring_rows()));
    auto timed = [](std::vector<double>& t, const std::function<void()>& f) {
      const double t0 = now_s();
      f();
      t.push_back(1e3 * (now_s() - t0));
    };
    if (!o.profile.empty()) {  // one kernel alone, for a profiler: its median, no copy
      std::vector<double> t;
      for (int r = 0; r < o.runs; ++r) {
        if (o.profile == "spmm") timed(t, [&] { op->apply(xv, yv); });
        else if (o.profile == "step") timed(t, [&] { step->step(sa, xv, 0.1 * sa, -0.5, nv, 0.0, xv); });
        else timed(t, [&] { step->step_rows(sa, xr.data(), 0.1 * sa, -0.5, nr.data(), ldr, 0, k); });
      }
      std::vector<double> q = t;
      std::sort(q.begin(), q.end());
      const auto at = [&](double f) { return q[static_cast<std::size_t>(f * static_cast<double>(q.size() - 1))]; };
      std::printf("%-22s k %d %s alone: median %.3f ms, best %.3f, over %d runs (deciles 1, 3, 7, 9: %.3f %.3f %.3f %.3f)\n",
                  spec.c_str(), k, o.profile.c_str(), median(t), q.front(), o.runs, at(0.1), at(0.3), at(0.7), at(0.9));
      continue;
    }
    for (int r = 0; r < o.runs + 2; ++r) {
      timed(t_copy, [&] { parallel_copy(src.data(), dst.data(), copy_bytes); });
      timed(t_spmm, [&] { op->apply(xv, yv); });
      timed(t_step, [&] { step->step(sa, xv, 0.1 * sa, -0.5, nv, 0.0, xv); });
      timed(t_rows, [&] { step->step_rows(sa, xr.data(), 0.1 * sa, -0.5, nr.data(), ldr, 0, k); });
      timed(t_tin, [&] { step->to_rows(xv, xr.data(), ldr); });
      timed(t_tout, [&] { step->from_rows(nr.data(), ldr, yv); });
      if (o.reference) timed(t_ref, [&] { csr_spmm_reference(a, x.data(), n, y.data(), n, k); });
      if (o.whole) {
        timed(t_spmm_w, [&] { kw.spmm(xv, yv); });
        timed(t_step_w, [&] { kw.step(sc, xv, nv, xv); });
      }
      if (r < 2)
        t_copy.clear(), t_tin.clear(), t_tout.clear(), t_spmm.clear(), t_step.clear(), t_rows.clear(), t_ref.clear(), t_spmm_w.clear(), t_step_w.clear();
    }
    const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / (median(t_copy) * 1e-3) * 1e-9;
    print_row(spec, a, k, "copy", t_copy, 2.0 * static_cast<double>(copy_bytes), copy_gbs);
    print_row(spec, a, k, "spmm", t_spmm, spmm_bytes, copy_gbs);
    print_row(spec, a, k, "step", t_step, step_bytes, copy_gbs);
    print_row(spec, a, k, "rows", t_rows, step_bytes, copy_gbs);
    print_row(spec, a, k, "to-rows", t_tin, 16.0 * static_cast<double>(block), copy_gbs);
    print_row(spec, a, k, "from-rows", t_tout, 16.0 * static_cast<double>(block), copy_gbs);
    if (o.reference) print_row(spec, a, k, "ref", t_ref, spmm_bytes, copy_gbs);
    if (o.whole) {
      print_row(spec, a, k, "spmm-w", t_spmm_w, spmm_bytes, copy_gbs);
      print_row(spec, a, k, "step-w", t_step_w, step_bytes, copy_gbs);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    std::printf("cpu_spmm_bench: %d threads, %d rounds (median; 2 warm-up rounds first)\n", host_threads(), o.runs);
    std::printf("%-22s %8s %9s %3s %-6s %9s %9s %8s %7s %7s %7s\n", "matrix", "rows", "nnz", "k", "what", "ms",
                "best ms", "MB", "GB/s", "copy", "of copy");
    for (const std::string& s : o.specs) bench_matrix(s, o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_spmm_bench: %s\n", e.what());
    return 2;
  }
}
