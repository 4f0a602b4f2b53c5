// Scale benchmark (issue 11): for each matrix, the setup by step (generate/read, plan, reorder,
// BCSR build, upload + trial), host and device memory peaks, and the SpMM of the operator the
// solvers get (make_sparse_operator, kernel by the one-time trial) at N = 8 and 16 against a
// device-to-device copy measured in the same run.
//
//   bytes_min = nnz·(8 + 4) + 8·(n + 1) + 2·8·n·N   (A in CSR once, X once, Y once; fp64)
//   bytes_stored = the operator's own format once (BCSR: nblocks·(8·h·w + 4) + 8·(nbr + 1))
//                  + X once + Y once
// Times: CUDA events, 3 warm-ups, median of --reps runs. Copy: cudaMemcpy D2D of 2 × 1 GiB
// buffers, bytes read + written. Check: 4096 random rows of Y against the host CSR product.
// Memory: host peak = getrusage ru_maxrss (whole process so far); device = the core/device.hpp
// counters (operator upload and the trial's scratch), plus cudaMemGetInfo for the whole card.
//
// Usage: scale_bench --matrices gen:lap3d:200,gen:elast3d:64 [--cols 8,16] [--reps 11]
//                    [--reorder none|symmetric] [--basis original|permuted] [--csv FILE]
#include <cuda_runtime.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/event_timing.cuh"
#include "core/csr.hpp"
#include "core/device.hpp"
#include "io/matrix_io.hpp"
#include "spmm/sparse_operator.hpp"

using namespace tcsolve;

namespace {

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

int g_reps = 11;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double rss_gb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0 / 1e9;  // ru_maxrss is in KiB on Linux
}

double median_ms(const std::function<void()>& f) { return timing::median_event_ms(f, g_reps); }

// x[i] = uniform in [-1, 1) from a hash of i (never zero-filled: the bench times real data)
__global__ void fill_kernel(double* x, std::int64_t n, unsigned long long seed) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    unsigned long long z = static_cast<unsigned long long>(i) + seed * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    x[i] = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
}

void fill(double* x, std::int64_t n, unsigned long long seed) {
  fill_kernel<<<4096, 256>>>(x, n, seed);
  CK(cudaGetLastError());
}

// Copy roofline: D2D cudaMemcpy between two 1 GiB buffers (well beyond the 50-60 MB L2).
double copy_tb_s() {
  const std::size_t bytes = std::size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 0x3f, bytes));
  const double ms = median_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 2.0 * bytes / (ms * 1e-3) / 1e12;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) if (!t.empty()) out.push_back(t);
  return out;
}

double gib(double b) { return b / 1073741824.0; }

struct Row {
  std::string matrix, kernel;
  std::int64_t n = 0, nnz = 0;
  int cols = 0;
  double read_s = 0, plan_s = 0, reorder_s = 0, bcsr_s = 0, upload_s = 0, setup_s = 0;
  double host_peak_gb = 0, dev_held_gib = 0, dev_pred_gib = 0, dev_peak_gib = 0, card_used_gib = 0;
  double ms = 0, tbs_min = 0, pct_copy = 0, tbs_stored = 0, pct_copy_stored = 0, check = 0, copy = 0;
};

void bench(const std::string& spec, const std::vector<int>& cols, const OperatorOptions& base,
           double copy, std::vector<Row>& rows) {
  Row r;
  r.matrix = spec;
  const double t0 = now_s();
  Csr<double> a = read_matrix(spec);
  r.read_s = now_s() - t0;
  r.n = a.nrows;
  r.nnz = a.nnz();
  std::printf("\n== %s: n = %lld, nnz = %lld (%.1f per row, %s 2^31), generated/read in %.2f s, host peak %.1f GB\n",
              spec.c_str(), (long long)r.n, (long long)r.nnz, double(r.nnz) / std::max<std::int64_t>(1, r.n),
              r.nnz > (std::int64_t(1) << 31) ? "above" : "below", r.read_s, rss_gb());
  std::fflush(stdout);
  OperatorOptions opt = base;
  opt.expected_cols = *std::max_element(cols.begin(), cols.end());
  reset_device_peak();
  const std::size_t held_before = device_allocated_bytes();
  auto op = make_sparse_operator(a, Backend::cuda, opt);
  CK(cudaDeviceSynchronize());
  const SpmmPlan& p = op->plan();
  r.kernel = to_string(p.kernel);
  if (p.stage_x) r.kernel += " staged";
  if (p.permuted_basis) r.kernel += " permuted";
  r.plan_s = p.setup.plan_s;
  r.reorder_s = p.setup.reorder_s;
  r.bcsr_s = p.setup.bcsr_s;
  r.upload_s = p.setup.upload_s;
  r.setup_s = p.setup.total_s;
  r.dev_held_gib = gib(static_cast<double>(op->device_bytes()));
  r.dev_pred_gib = gib(static_cast<double>(predict_device_bytes(a, p)));
  r.dev_peak_gib = gib(static_cast<double>(device_peak_bytes() - held_before));
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  r.card_used_gib = gib(static_cast<double>(total_b - free_b));
  r.host_peak_gb = rss_gb();
  std::printf("%s", p.describe().c_str());
  std::printf("  setup: plan %.2f s, reorder %.2f s, bcsr %.2f s, upload+trial %.2f s, operator total %.2f s "
              "(+ generate/read %.2f s)\n",
              r.plan_s, r.reorder_s, r.bcsr_s, r.upload_s, r.setup_s, r.read_s);
  std::printf("  memory: operator holds %.2f GiB on the device (predicted %.2f GiB), construction peak %.2f GiB "
              "(counters), card in use %.2f GiB; host peak %.1f GB (ru_maxrss)\n",
              r.dev_held_gib, r.dev_pred_gib, r.dev_peak_gib, r.card_used_gib, r.host_peak_gb);
  std::fflush(stdout);

  // stored bytes of the format the operator reads once per apply (without X, Y)
  double stored = 12.0 * r.nnz + 8.0 * (r.n + 1);
  if (p.kernel == SpmmKernel::bcsr_dmma)
    stored = static_cast<double>(p.nblocks) * (8.0 * p.block_h * p.block_w + 4.0) +
             8.0 * ((r.n + p.block_h - 1) / p.block_h + 1);

  const int nmax = opt.expected_cols;
  double *x = nullptr, *y = nullptr;
  CK(cudaMalloc(&x, sizeof(double) * a.ncols * nmax));
  CK(cudaMalloc(&y, sizeof(double) * a.nrows * nmax));
  fill(x, a.ncols * static_cast<std::int64_t>(nmax), 17);
  // host sample for the check: 4096 random rows
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> sample(4096);
  for (auto& i : sample) i = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(a.nrows));
  for (int N : cols) {
    Row q = r;
    q.cols = N;
    q.copy = copy;
    const MvView<const double> xv{x, a.ncols, N, a.ncols, Space::device};
    const MvView<double> yv{y, a.nrows, N, a.nrows, Space::device};
    q.ms = median_ms([&] { op->apply(xv, yv); });
    const double bytes_min = 12.0 * r.nnz + 8.0 * (r.n + 1) + 2.0 * 8.0 * r.n * N;
    const double bytes_stored = stored + 2.0 * 8.0 * r.n * N;
    q.tbs_min = bytes_min / (q.ms * 1e-3) / 1e12;
    q.pct_copy = 100.0 * q.tbs_min / copy;
    q.tbs_stored = bytes_stored / (q.ms * 1e-3) / 1e12;
    q.pct_copy_stored = 100.0 * q.tbs_stored / copy;
    // check the sampled rows against the host CSR. A permuted-basis operator applies
    // B = P·A·Pᵀ to x̃ (the vector as stored): row i is Σ_e a_e · x̃[p⁻¹(col_e)] over row p[i] of A.
    op->apply(xv, yv);
    CK(cudaDeviceSynchronize());
    std::vector<double> xh(static_cast<std::size_t>(a.ncols) * N), yi(N);
    CK(cudaMemcpy(xh.data(), x, xh.size() * 8, cudaMemcpyDeviceToHost));
    const std::vector<std::int32_t>* perm = op->permutation();
    std::vector<std::int32_t> pinv;
    if (perm) {
      pinv.resize(perm->size());
      for (std::size_t k = 0; k < perm->size(); ++k) pinv[(*perm)[k]] = static_cast<std::int32_t>(k);
    }
    double md = 0, my = 0;
    for (std::int64_t i : sample) {
      CK(cudaMemcpy2D(yi.data(), 8, y + i, 8 * a.nrows, 8, N, cudaMemcpyDeviceToHost));
      const std::int64_t src = perm ? (*perm)[i] : i;
      for (int c = 0; c < N; ++c) {
        double ref = 0;
        for (std::int64_t e = a.row_ptr[src]; e < a.row_ptr[src + 1]; ++e) {
          const std::int64_t j = perm ? pinv[a.col_idx[e]] : a.col_idx[e];
          ref += a.values[e] * xh[j + static_cast<std::int64_t>(c) * a.ncols];
        }
        md = std::max(md, std::abs(yi[c] - ref));
        my = std::max(my, std::abs(ref));
      }
    }
    q.check = md / std::max(my, 1e-300);
    std::printf("  N=%3d: %.3f ms, %.3f TB/s on bytes_min = %.1f %% of copy (%.3f TB/s, %.1f %% on the "
                "stored format); check max|dy|/max|y| = %.1e\n",
                N, q.ms, q.tbs_min, q.pct_copy, q.tbs_stored, q.pct_copy_stored, q.check);
    std::fflush(stdout);
    rows.push_back(q);
  }
  CK(cudaFree(x));
  CK(cudaFree(y));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> mats = {"gen:lap3d:100", "gen:elast3d:64"};
  std::vector<int> cols = {8, 16};
  std::string csv;
  OperatorOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--matrices") mats = split(next());
    else if (s == "--cols") { cols.clear(); for (auto& t : split(next())) cols.push_back(std::stoi(t)); }
    else if (s == "--reps") g_reps = std::stoi(next());
    else if (s == "--csv") csv = next();
    else if (s == "--reorder") { const std::string v = next(); opt.reorder = v == "symmetric" ? Reorder::symmetric : v == "jaccard" ? Reorder::jaccard : Reorder::none; }
    else if (s == "--basis") opt.basis = next() == "permuted" ? OperatorBasis::permuted : OperatorBasis::original;
    else { std::fprintf(stderr, "unknown option %s\n", s.c_str()); return 2; }
  }
  if (device_count() == 0) { std::fprintf(stderr, "scale_bench: no CUDA device\n"); return 2; }
  std::printf("device: %s\n", device_name().c_str());
  const double copy = copy_tb_s();
  std::printf("copy roofline (D2D cudaMemcpy, 1 GiB, read + write): %.3f TB/s\n", copy);
  std::vector<Row> rows;
  for (const auto& m : mats) {
    try {
      bench(m, cols, opt, copy, rows);
    } catch (const std::exception& e) {
      std::printf("  !! %s: %s\n", m.c_str(), e.what());
      cudaGetLastError();
    }
  }
  std::printf("\n| matrix | n | nnz | kernel | N | ms | TB/s (min) | %% copy | %% copy (stored) | read s | plan s | reorder s | bcsr s | upload+trial s | dev held GiB | dev pred GiB | dev peak GiB | host peak GB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& q : rows)
    std::printf("| %s | %lld | %lld | %s | %d | %.3f | %.3f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |\n",
                q.matrix.c_str(), (long long)q.n, (long long)q.nnz, q.kernel.c_str(), q.cols, q.ms, q.tbs_min,
                q.pct_copy, q.pct_copy_stored, q.read_s, q.plan_s, q.reorder_s, q.bcsr_s, q.upload_s, q.dev_held_gib,
                q.dev_pred_gib, q.dev_peak_gib, q.host_peak_gb);
  if (!csv.empty()) {
    std::ofstream f(csv);
    f << "matrix,n,nnz,kernel,N,ms,tbs_min,pct_copy,tbs_stored,pct_copy_stored,copy_tbs,check,read_s,plan_s,"
         "reorder_s,bcsr_s,upload_trial_s,setup_s,dev_held_gib,dev_pred_gib,dev_peak_gib,card_used_gib,host_peak_gb\n";
    for (const Row& q : rows)
      f << q.matrix << "," << q.n << "," << q.nnz << "," << q.kernel << "," << q.cols << "," << q.ms << ","
        << q.tbs_min << "," << q.pct_copy << "," << q.tbs_stored << "," << q.pct_copy_stored << "," << q.copy
        << "," << q.check << "," << q.read_s << "," << q.plan_s << "," << q.reorder_s << "," << q.bcsr_s << ","
        << q.upload_s << "," << q.setup_s << "," << q.dev_held_gib << "," << q.dev_pred_gib << ","
        << q.dev_peak_gib << "," << q.card_used_gib << "," << q.host_peak_gb << "\n";
  }
  return 0;
}
