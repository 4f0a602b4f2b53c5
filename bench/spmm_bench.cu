// SpMM benchmark: tcsolve's kernels against cuSPARSE (CSR, BSR) and cuBLAS dense GEMM, one device
// run. For each matrix, precision and N: median of `reps` CUDA-event timings after warm-up,
// GFLOP/s (2·nnz·N), GB/s on bytes_min and its share of a device-to-device copy measured in the
// same run, and speedups. Prints a Markdown table; --csv FILE writes all numbers.
//
//   bytes_min = nnz·(sizeof(value)+4) + 8·(n+1) + n·N·(sizeof(x) + sizeof(y))
//     fp64: x, y double.  fp16/bf16: x 16-bit, y fp32 (all contenders write fp32 Y).
//
// Usage: spmm_bench [--quick] [--csv FILE] [--reps R] [--matrices a,b,...] [--band-sweep B1,B2,..]
//                   [--no-fp64] [--no-fp16] [--real DIR] [--cols N1,N2,..] [--no-bsr] [--no-trial]
// "tcsolve auto" is the operator make_sparse_operator builds (kernel chosen by the one-time
// trial at that N; its construction time and the trial's times are printed); "tcsolve model
// pick" is what the byte cost model alone would have chosen among the timed kernels.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/event_timing.cuh"
#include "core/csr.hpp"
#include "core/device.hpp"
#include "io/matrix_io.hpp"
#include "preprocess/bcsr_build.hpp"
#include "preprocess/jaccard_reorder.hpp"
#include "spmm/bcsr_spmm_cuda.hpp"
#include "spmm/csr_spmm_cuda.hpp"
#include "spmm/sparse_operator.hpp"

using namespace tcsolve;

namespace {

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

int g_reps = 21;
const int kWarm = 3;

// Median time (ms) of f() over g_reps runs after kWarm warm-ups, CUDA events on stream 0.
// Returns NaN when f throws (e.g. an unsupported library configuration).
double time_ms(const std::function<void()>& f) {
  try {
    return timing::median_event_ms(f, g_reps, kWarm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  (skipped: %s)\n", e.what());
    cudaGetLastError();
    return std::nan("");
  }
}

struct Lib : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void sp(cusparseStatus_t s, const char* what) {
  if (s != CUSPARSE_STATUS_SUCCESS) throw Lib(std::string(what) + ": " + cusparseGetErrorString(s));
}
void bl(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Lib(std::string(what) + ": cublas status " + std::to_string(s));
}

template <class T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  Dev() = default;
  explicit Dev(std::size_t n_) : n(n_) { if (n) CK(cudaMalloc(&p, n * sizeof(T))); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  Dev(Dev&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; o.n = 0; }
  Dev& operator=(Dev&& o) noexcept { std::swap(p, o.p); std::swap(n, o.n); return *this; }
  ~Dev() { if (p) cudaFree(p); }
  void upload(const std::vector<T>& h) { CK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice)); }
};

std::vector<double> randvec(std::size_t n, unsigned seed) {
  std::mt19937_64 r(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& e : v) e = u(r);
  return v;
}
template <class H>
std::vector<H> to16(const std::vector<double>& v) {
  std::vector<H> o(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) o[i] = H(static_cast<float>(v[i]));
  return o;
}

double copy_bandwidth() {
  const std::size_t bytes = std::size_t(1) << 30;
  Dev<char> a(bytes), b(bytes);
  CK(cudaMemset(a.p, 1, bytes));
  CK(cudaMemset(b.p, 0, bytes));
  const double ms = time_ms([&] { CK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice)); });
  return 2.0 * bytes / (ms * 1e-3);  // read + write
}

struct Row {
  std::string matrix, prec, contender, detail;
  std::int64_t n = 0, nnz = 0;
  int N = 0;
  double ms = 0, gflops = 0, gbs = 0, pct_copy = 0;
};
std::vector<Row> g_rows;
double g_copy_bw = 0;

void record(const std::string& m, std::int64_t n, std::int64_t nnz, const std::string& prec, int N,
            const std::string& who, const std::string& detail, double ms, double bytes_min) {
  Row r{m, prec, who, detail, n, nnz, N, ms, 0, 0, 0};
  if (std::isfinite(ms)) {
    r.gflops = 2.0 * nnz * N / (ms * 1e-3) / 1e9;
    r.gbs = bytes_min / (ms * 1e-3) / 1e9;
    r.pct_copy = 100.0 * bytes_min / (ms * 1e-3) / g_copy_bw;
  }
  g_rows.push_back(r);
  std::printf("  %-28s %-5s N=%-4d %-22s %9.4f ms %8.1f GFLOP/s %7.1f GB/s %5.1f%%  %s\n",
              m.c_str(), prec.c_str(), N, who.c_str(), ms, r.gflops, r.gbs, r.pct_copy, detail.c_str());
  std::fflush(stdout);
}

// ---------------------------------------------------------------- cuSPARSE CSR / BSR, cuBLAS

struct CusparseCsr {
  cusparseHandle_t h{};
  cusparseSpMatDescr_t A{};
  Dev<std::int32_t> rp, ci;  // 32-bit offsets and columns (cuSPARSE's fastest; nnz < 2^31 here)
  Dev<char> vals;
  std::int64_t m = 0, n = 0, nnz = 0;
  CusparseCsr(cusparseHandle_t handle, const Csr<double>& a, cudaDataType t) : h(handle) {
    m = a.nrows;
    n = a.ncols;
    nnz = a.nnz();
    if (nnz >= (std::int64_t(1) << 31)) throw Lib("cuSPARSE baseline: nnz needs 64-bit offsets");
    std::vector<std::int32_t> rp32(a.row_ptr.begin(), a.row_ptr.end());
    rp = Dev<std::int32_t>(rp32.size());
    rp.upload(rp32);
    ci = Dev<std::int32_t>(a.col_idx.size());
    ci.upload(a.col_idx);
    if (t == CUDA_R_64F) {
      vals = Dev<char>(nnz * 8);
      CK(cudaMemcpy(vals.p, a.values.data(), nnz * 8, cudaMemcpyHostToDevice));
    } else {
      std::vector<__half> hv = to16<__half>(a.values);
      vals = Dev<char>(nnz * 2);
      CK(cudaMemcpy(vals.p, hv.data(), nnz * 2, cudaMemcpyHostToDevice));
    }
    sp(cusparseCreateCsr(&A, m, n, nnz, rp.p, ci.p, vals.p, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, t),
       "cusparseCreateCsr");
  }
  CusparseCsr(const CusparseCsr&) = delete;
  CusparseCsr& operator=(const CusparseCsr&) = delete;
  ~CusparseCsr() { if (A) cusparseDestroySpMat(A); }
};

// Times cusparseSpMM for one (layout, algorithm). X, Y device buffers of the right size.
double time_cusparse_spmm(cusparseHandle_t h, cusparseSpMatDescr_t A, std::int64_t m, std::int64_t n,
                          int N, void* x, void* y, cudaDataType xt, cudaDataType yt,
                          cusparseOrder_t order, cusparseSpMMAlg_t alg, Dev<char>& buf) {
  cusparseDnMatDescr_t X{}, Y{};
  const std::int64_t ldx = order == CUSPARSE_ORDER_COL ? n : N;
  const std::int64_t ldy = order == CUSPARSE_ORDER_COL ? m : N;
  double ms = std::nan("");
  try {
    sp(cusparseCreateDnMat(&X, n, N, ldx, x, xt, order), "DnMat X");
    sp(cusparseCreateDnMat(&Y, m, N, ldy, y, yt, order), "DnMat Y");
    const double a64 = 1.0, b64 = 0.0;
    const float a32 = 1.f, b32 = 0.f;
    const bool f64 = xt == CUDA_R_64F;
    const void* alpha = f64 ? static_cast<const void*>(&a64) : &a32;
    const void* beta = f64 ? static_cast<const void*>(&b64) : &b32;
    const cudaDataType ct = f64 ? CUDA_R_64F : CUDA_R_32F;
    std::size_t need = 0;
    sp(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                               alpha, A, X, beta, Y, ct, alg, &need),
       "SpMM_bufferSize");
    if (need > buf.n) buf = Dev<char>(need);
    if (alg == CUSPARSE_SPMM_CSR_ALG1 || alg == CUSPARSE_SPMM_CSR_ALG3)
      sp(cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 alpha, A, X, beta, Y, ct, alg, buf.p),
         "SpMM_preprocess");
    // one checked call before timing
    sp(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, A,
                    X, beta, Y, ct, alg, buf.p),
       "SpMM");
    ms = time_ms([&] {
      sp(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha,
                      A, X, beta, Y, ct, alg, buf.p),
         "SpMM");
    });
  } catch (const std::exception& e) {
    cudaGetLastError();
    std::fprintf(stderr, "  cusparse (order %d, alg %d) skipped: %s\n", int(order), int(alg), e.what());
  }
  if (X) cusparseDestroyDnMat(X);
  if (Y) cusparseDestroyDnMat(Y);
  return ms;
}

struct Best {
  double ms = std::nan("");
  std::string what;
  void take(double t, const std::string& w) {
    if (std::isfinite(t) && (!std::isfinite(ms) || t < ms)) {
      ms = t;
      what = w;
    }
  }
};

const char* alg_name(cusparseSpMMAlg_t a) {
  switch (a) {
    case CUSPARSE_SPMM_ALG_DEFAULT: return "DEFAULT";
    case CUSPARSE_SPMM_CSR_ALG1: return "CSR_ALG1";
    case CUSPARSE_SPMM_CSR_ALG2: return "CSR_ALG2";
    case CUSPARSE_SPMM_CSR_ALG3: return "CSR_ALG3";
    case CUSPARSE_SPMM_BSR_ALG1: return "BSR_ALG1";
    default: return "?";
  }
}

Best best_cusparse_csr(cusparseHandle_t h, CusparseCsr& A, int N, void* x, void* y, cudaDataType xt,
                       cudaDataType yt, Dev<char>& buf) {
  Best b;
  const cusparseSpMMAlg_t algs[] = {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG1,
                                    CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG3};
  for (cusparseOrder_t o : {CUSPARSE_ORDER_COL, CUSPARSE_ORDER_ROW})
    for (auto alg : algs) {
      if (o == CUSPARSE_ORDER_COL && alg == CUSPARSE_SPMM_CSR_ALG2) continue;  // row-major only
      const double t = time_cusparse_spmm(h, A.A, A.m, A.n, N, x, y, xt, yt, o, alg, buf);
      b.take(t, std::string(o == CUSPARSE_ORDER_COL ? "col " : "row ") + alg_name(alg));
    }
  return b;
}

// cuSPARSE BSR (generic API, square bs×bs blocks, row-major blocks), column- and row-major X.
Best best_cusparse_bsr(cusparseHandle_t h, const Csr<double>& a, const Bcsr<double>& b, int N,
                       void* x, void* y, cudaDataType vt, cudaDataType yt, Dev<char>& buf) {
  Best best;
  const int bs = b.h;
  if (static_cast<double>(b.values.size()) * (vt == CUDA_R_64F ? 8 : 2) > 6e9) return best;
  Dev<std::int64_t> rp(b.block_row_ptr.size());
  rp.upload(b.block_row_ptr);
  std::vector<std::int64_t> c64(b.block_col.begin(), b.block_col.end());
  Dev<std::int64_t> ci(c64.size());
  ci.upload(c64);
  Dev<char> v(b.values.size() * (vt == CUDA_R_64F ? 8 : 2));
  if (vt == CUDA_R_64F) CK(cudaMemcpy(v.p, b.values.data(), v.n, cudaMemcpyHostToDevice));
  else {
    auto hv = to16<__half>(b.values);
    CK(cudaMemcpy(v.p, hv.data(), v.n, cudaMemcpyHostToDevice));
  }
  const std::int64_t mb = b.nblock_rows(), nb = (a.ncols + bs - 1) / bs;
  cusparseSpMatDescr_t A{};
  try {
    sp(cusparseCreateBsr(&A, mb, nb, b.nblocks(), bs, bs, rp.p, ci.p, v.p, CUSPARSE_INDEX_64I,
                         CUSPARSE_INDEX_64I, CUSPARSE_INDEX_BASE_ZERO, vt, CUSPARSE_ORDER_ROW),
       "cusparseCreateBsr");
    // dense operands padded to whole blocks: m = mb·bs rows of Y, n = nb·bs rows of X
    for (cusparseOrder_t o : {CUSPARSE_ORDER_COL, CUSPARSE_ORDER_ROW}) {
      const double t = time_cusparse_spmm(h, A, mb * bs, nb * bs, N, x, y, vt, yt, o,
                                          CUSPARSE_SPMM_BSR_ALG1, buf);
      best.take(t, std::string(o == CUSPARSE_ORDER_COL ? "col " : "row ") + "BSR_ALG1 " +
                       std::to_string(bs) + "x" + std::to_string(bs));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  cusparse BSR skipped: %s\n", e.what());
  }
  if (A) cusparseDestroySpMat(A);
  return best;
}

// ---------------------------------------------------------------- one matrix

struct Config {
  std::vector<int> n64 = {8, 16, 32, 64, 128};
  std::vector<int> n16 = {8, 32, 128};
  bool fp64 = true, fp16 = true;
  bool bf16 = true;
  bool bsr = true;    // cuSPARSE BSR contender
  bool trial = true;  // time the trial-planned operator ("tcsolve auto")
};

bool is_band(const std::string& spec) { return spec.rfind("gen:band:", 0) == 0 && spec.find('+') == std::string::npos; }

void bench_matrix(const std::string& spec, const Csr<double>& a, const Config& cfg,
                  cusparseHandle_t sh, cublasHandle_t bh) {
  const std::int64_t n = a.nrows, nnz = a.nnz();
  std::printf("\n== %s: n = %lld, nnz = %lld (%.1f per row)\n", spec.c_str(), (long long)n,
              (long long)nnz, double(nnz) / std::max<std::int64_t>(1, n));
  const int nmax = std::max(cfg.fp64 ? *std::max_element(cfg.n64.begin(), cfg.n64.end()) : 1,
                            cfg.fp16 ? *std::max_element(cfg.n16.begin(), cfg.n16.end()) : 1);
  const std::size_t pad = static_cast<std::size_t>(std::max(a.nrows, a.ncols) + 64);
  // X and Y big enough for padded BSR operands; random contents (never zeros).
  Dev<double> X(pad * nmax), Y(pad * nmax);
  X.upload(randvec(pad * nmax, 1));
  CK(cudaMemset(Y.p, 0, Y.n * 8));
  Dev<char> buf;
  const bool band = is_band(spec);

  if (cfg.fp64) {
    OperatorOptions o;
    SpmmPlan p = plan_spmm(a, Backend::cuda, o);
    std::printf("%s", p.describe().c_str());
    const bool dmma_ok = p.nblocks * 32.0 * 8 < 6e9;
    std::unique_ptr<CsrSpmmDevice> csr = std::make_unique<CsrSpmmDevice>(
        a, Precision::fp64, p.csr_group > 1 ? p.csr_group : (p.mean_row_nnz < 10 && p.max_row_nnz <= 256 ? 1 : 8));
    std::unique_ptr<CsrSpmmDevice> csr_st;
    if (csr->group() > 1) csr_st = std::make_unique<CsrSpmmDevice>(a, Precision::fp64, csr->group(), nmax);
    std::unique_ptr<BcsrSpmmDevice> dmma, dmma_st, dmma_j, dmma_s;
    std::unique_ptr<SparseOperator> op_sym;  // symmetric-mode operator, trial at N = sym_n
    int sym_n = 0;
    double sym_build_s = 0;
    if (dmma_ok) {
      const Bcsr<double> b84 = build_bcsr(a, 8, 4);
      dmma = std::make_unique<BcsrSpmmDevice>(b84, Precision::fp64);
      dmma_st = std::make_unique<BcsrSpmmDevice>(b84, Precision::fp64, nmax);
    }
    std::string jinfo, sinfo;
    if (spec.find("+scramble") != std::string::npos) {
      const ReorderResult rr = jaccard_reorder(a, 8, 4);
      jinfo = "jaccard " + std::to_string(rr.seconds).substr(0, 5) + " s, blocks " +
              std::to_string(rr.blocks_before) + " -> " + std::to_string(rr.blocks_after);
      std::printf("  %s\n", rr.reason.c_str());
      if (rr.applied && rr.blocks_after * 256.0 < 6e9)
        dmma_j = std::make_unique<BcsrSpmmDevice>(build_bcsr(a, 8, 4, rr.perm), Precision::fp64, nmax);
      // symmetric reordering P·A·Pᵀ (Jaccard kw = 1 or RCM): the DMMA kernel on it, X gathered by
      // the staging copy (always staged), Y written through perm
      ReorderOptions so;
      so.mode = ReorderMode::symmetric;
      const ReorderResult rs = jaccard_reorder(a, 8, 4, so);
      sinfo = rs.ordering + " " + std::to_string(rs.seconds).substr(0, 5) + " s, blocks " +
              std::to_string(rs.blocks_before) + " -> " + std::to_string(rs.blocks_after);
      std::printf("  symmetric: %s\n", rs.reason.c_str());
      if (rs.applied && rs.blocks_after * 256.0 < 6e9)
        dmma_s = std::make_unique<BcsrSpmmDevice>(build_bcsr(a, 8, 4, rs.perm, rs.perm),
                                                  Precision::fp64, nmax);
      // the operator the solvers would get with OperatorOptions::reorder = symmetric: built once
      // (the reordering costs seconds), its one-time trial at N = 32, then timed at every N
      if (cfg.trial) {
        OperatorOptions os;
        os.reorder = Reorder::symmetric;
        sym_n = 32;
        os.expected_cols = sym_n;
        const auto c0 = std::chrono::steady_clock::now();
        op_sym = make_sparse_operator(a, Backend::cuda, os);
        CK(cudaDeviceSynchronize());
        sym_build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
        std::printf("  symmetric operator: construction %.3f s (reordering included)\n%s",
                    sym_build_s, op_sym->plan().describe().c_str());
      }
    }
    CusparseCsr cs(sh, a, CUDA_R_64F);
    const Bcsr<double> b88 = dmma_ok && cfg.bsr ? build_bcsr(a, 8, 8) : Bcsr<double>{};
    // dense A for cuBLAS (band matrices only; column-major)
    Dev<double> dense;
    if (band && double(n) * n * 8 < 4.5e9) {
      std::vector<double> hd(static_cast<std::size_t>(n * n), 0.0);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) hd[i + a.col_idx[q] * n] = a.values[q];
      dense = Dev<double>(hd.size());
      dense.upload(hd);
    }
    for (int N : cfg.n64) {
      const double bytes_min = nnz * 12.0 + 8.0 * (n + 1) + 2.0 * n * N * 8;
      o.expected_cols = N;
      SpmmPlan pn = plan_spmm(a, Backend::cuda, o);
      // our kernels
      const double t_csr = time_ms([&] { csr->apply(X.p, a.ncols, Y.p, n, N, nullptr); });
      record(spec, n, nnz, "fp64", N, "tcsolve CSR", "group " + std::to_string(csr->group()), t_csr, bytes_min);
      double t_dmma = std::nan("");
      if (dmma) {
        t_dmma = time_ms([&] { dmma->apply(X.p, a.ncols, Y.p, n, N, nullptr); });
        record(spec, n, nnz, "fp64", N, "tcsolve BCSR-DMMA", "8x4 fill " + std::to_string(p.fill).substr(0, 5), t_dmma, bytes_min);
      }
      double t_csr_st = std::nan(""), t_dmma_st = std::nan("");
      if (csr_st) {
        t_csr_st = time_ms([&] { csr_st->apply(X.p, a.ncols, Y.p, n, N, nullptr); });
        record(spec, n, nnz, "fp64", N, "tcsolve CSR staged", "group " + std::to_string(csr->group()) + (N >= 4 ? " row-major X" : " (direct below N=4)"), t_csr_st, bytes_min);
      }
      if (dmma_st) {
        t_dmma_st = time_ms([&] { dmma_st->apply(X.p, a.ncols, Y.p, n, N, nullptr); });
        record(spec, n, nnz, "fp64", N, "tcsolve BCSR-DMMA staged", N >= 16 ? "row-major X" : "(direct below N=16)", t_dmma_st, bytes_min);
      }
      if (dmma_j) {
        const double t = time_ms([&] { dmma_j->apply(X.p, a.ncols, Y.p, n, N, nullptr); });
        record(spec, n, nnz, "fp64", N, "tcsolve DMMA jaccard", jinfo, t, bytes_min);
      }
      if (dmma_s) {
        const double t = time_ms([&] { dmma_s->apply(X.p, a.ncols, Y.p, n, N, nullptr); });
        record(spec, n, nnz, "fp64", N, "tcsolve DMMA symmetric", sinfo, t, bytes_min);
      }
      if (op_sym) {
        const SpmmPlan& spl = op_sym->plan();
        const MvView<const double> xv{X.p, a.ncols, N, a.ncols, Space::device};
        const MvView<double> yv{Y.p, n, N, n, Space::device};
        const double t = time_ms([&] { op_sym->apply(xv, yv); });
        std::string kept = std::string(to_string(spl.kernel)) + (spl.symmetric ? " sym" : "");
        if (spl.stage_x) kept += " staged";
        if (spl.dmma_tile_cols > 0) kept += " t" + std::to_string(spl.dmma_tile_cols);
        record(spec, n, nnz, "fp64", N, "tcsolve auto symmetric",
               kept + " (trial at N=" + std::to_string(sym_n) + ")", t, bytes_min);
      }
      const bool picked_bcsr = pn.kernel == SpmmKernel::bcsr_dmma;
      const double t_model = picked_bcsr ? (pn.stage_x ? t_dmma_st : t_dmma)
                                         : (pn.stage_x && csr_st ? t_csr_st : t_csr);
      record(spec, n, nnz, "fp64", N, "tcsolve model pick", std::string(to_string(pn.kernel)) + (pn.stage_x ? " staged" : ""), t_model, bytes_min);
      // the operator the solvers get: kernel chosen by the one-time trial at this N
      if (cfg.trial) {
        const auto c0 = std::chrono::steady_clock::now();
        auto op = make_sparse_operator(a, Backend::cuda, o);
        CK(cudaDeviceSynchronize());
        const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
        const SpmmPlan& tp = op->plan();
        std::string tr;
        for (const auto& t : tp.trials) tr += t.name + " " + std::to_string(t.ms).substr(0, 6) + "; ";
        std::printf("  trial N=%d: construction %.3f s; %s\n", N, build_s, tr.c_str());
        const MvView<const double> xv{X.p, a.ncols, N, a.ncols, Space::device};
        const MvView<double> yv{Y.p, n, N, n, Space::device};
        const double t_auto = time_ms([&] { op->apply(xv, yv); });
        std::string kept = to_string(tp.kernel);
        if (tp.kernel == SpmmKernel::csr_row && tp.csr_tiled) kept += " tiled";
        if (tp.stage_x) kept += " staged";
        if (tp.dmma_tile_cols > 0) kept += " t" + std::to_string(tp.dmma_tile_cols);
        record(spec, n, nnz, "fp64", N, "tcsolve auto", kept + (tp.by_trial ? " (trial)" : " (model)"), t_auto, bytes_min);
      }
      // cuSPARSE: X, Y reinterpreted in each layout (same random contents)
      Best b = best_cusparse_csr(sh, cs, N, X.p, Y.p, CUDA_R_64F, CUDA_R_64F, buf);
      record(spec, n, nnz, "fp64", N, "cuSPARSE CSR best", b.what, b.ms, bytes_min);
      if (cfg.bsr && dmma_ok && (N == 8 || N == 64)) {
        Best bb = best_cusparse_bsr(sh, a, b88, N, X.p, Y.p, CUDA_R_64F, CUDA_R_64F, buf);
        record(spec, n, nnz, "fp64", N, "cuSPARSE BSR best", bb.what, bb.ms, bytes_min);
      }
      if (dense.p) {
        const double one = 1, zero = 0;
        const double t = time_ms([&] {
          bl(cublasDgemm(bh, CUBLAS_OP_N, CUBLAS_OP_N, n, N, n, &one, dense.p, n, X.p, n, &zero, Y.p, n), "Dgemm");
        });
        record(spec, n, nnz, "fp64", N, "cuBLAS dense GEMM", "", t, bytes_min);
      }
    }
    // correctness spot check: ours (auto at N=16) vs cuSPARSE col-major default, max rel diff
    {
      const int N = 16;
      Dev<double> Y2(n * N);
      csr->apply(X.p, a.ncols, Y.p, n, N, nullptr);
      if (dmma) dmma->apply(X.p, a.ncols, Y2.p, n, N, nullptr);
      CK(cudaDeviceSynchronize());
      std::vector<double> y1(n * N), y2(n * N);
      CK(cudaMemcpy(y1.data(), Y.p, n * N * 8, cudaMemcpyDeviceToHost));
      double md = 0, my = 0;
      if (dmma) {
        CK(cudaMemcpy(y2.data(), Y2.p, n * N * 8, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < y1.size(); ++i) { md = std::max(md, std::abs(y1[i] - y2[i])); my = std::max(my, std::abs(y1[i])); }
        std::printf("  check CSR vs DMMA (N=16): max |diff| / max |y| = %.2e\n", md / std::max(my, 1e-300));
      }
      for (auto* d : {dmma_s.get(), dmma_j.get()}) {
        if (!d) continue;
        d->apply(X.p, a.ncols, Y2.p, n, N, nullptr);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(y2.data(), Y2.p, n * N * 8, cudaMemcpyDeviceToHost));
        md = my = 0;
        for (std::size_t i = 0; i < y1.size(); ++i) { md = std::max(md, std::abs(y1[i] - y2[i])); my = std::max(my, std::abs(y1[i])); }
        std::printf("  check CSR vs DMMA %s (N=16): max |diff| / max |y| = %.2e\n",
                    d == dmma_s.get() ? "symmetric" : "jaccard rows", md / std::max(my, 1e-300));
      }
      if (op_sym) {
        op_sym->apply(MvView<const double>{X.p, a.ncols, N, a.ncols, Space::device},
                      MvView<double>{Y2.p, n, N, n, Space::device});
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(y2.data(), Y2.p, n * N * 8, cudaMemcpyDeviceToHost));
        md = my = 0;
        for (std::size_t i = 0; i < y1.size(); ++i) { md = std::max(md, std::abs(y1[i] - y2[i])); my = std::max(my, std::abs(y1[i])); }
        std::printf("  check CSR vs symmetric operator (N=16): max |diff| / max |y| = %.2e\n",
                    md / std::max(my, 1e-300));
      }
    }
  }

  if (cfg.fp16 && (band || spec.find("lap3d") != std::string::npos || spec.find("elast3d") != std::string::npos)) {
    OperatorOptions o;
    o.precision = Precision::fp16;
    SpmmPlan p = plan_spmm(a, Backend::cuda, o);
    std::printf("%s", p.describe().c_str());
    const bool ok16 = p.nblocks * 256.0 * 2 < 6e9;
    const Bcsr<double> b16 = ok16 ? build_bcsr(a, 16, 16) : Bcsr<double>{};
    std::unique_ptr<BcsrSpmmDevice> hm, bm;
    if (ok16) {
      hm = std::make_unique<BcsrSpmmDevice>(b16, Precision::fp16);
      if (cfg.bf16 && band) bm = std::make_unique<BcsrSpmmDevice>(b16, Precision::bf16);
    }
    CusparseCsr cs(sh, a, CUDA_R_16F);
    Dev<__half> Xh(pad * nmax);
    Xh.upload(to16<__half>(randvec(pad * nmax, 2)));
    Dev<float> Yf(pad * nmax);
    Dev<__half> dense;
    if (band && double(n) * n * 2 < 2.5e9) {
      std::vector<__half> hd(static_cast<std::size_t>(n * n), __half(0.f));
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q)
          hd[i + a.col_idx[q] * n] = __half(static_cast<float>(a.values[q]));
      dense = Dev<__half>(hd.size());
      dense.upload(hd);
    }
    for (int N : cfg.n16) {
      const double bytes_min = nnz * 6.0 + 8.0 * (n + 1) + n * N * (2.0 + 4.0);
      if (hm) {
        const double t = time_ms([&] { hm->apply_lowp(Xh.p, a.ncols, Yf.p, n, N, nullptr); });
        record(spec, n, nnz, "fp16", N, "tcsolve BCSR-MMA16", "16x16 fill " + std::to_string(p.fill).substr(0, 5), t, bytes_min);
      }
      if (bm) {
        const double t = time_ms([&] { bm->apply_lowp(Xh.p, a.ncols, Yf.p, n, N, nullptr); });
        record(spec, n, nnz, "bf16", N, "tcsolve BCSR-MMA16", "16x16 (bf16)", t, bytes_min);
      }
      Best b = best_cusparse_csr(sh, cs, N, Xh.p, Yf.p, CUDA_R_16F, CUDA_R_32F, buf);
      record(spec, n, nnz, "fp16", N, "cuSPARSE CSR best", b.what, b.ms, bytes_min);
      if (dense.p) {
        const float one = 1, zero = 0;
        const double t = time_ms([&] {
          bl(cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, n, N, n, &one, dense.p, CUDA_R_16F, n, Xh.p,
                          CUDA_R_16F, n, &zero, Yf.p, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT),
             "GemmEx fp16");
        });
        record(spec, n, nnz, "fp16", N, "cuBLAS dense GEMM", "fp16 in, fp32 out", t, bytes_min);
      }
    }
    // spot check: MMA16 fp16 vs fp64 CSR reference on the host for N = 8 (rel. to ‖A‖‖X‖)
    if (hm) {
      const int N = 8;
      hm->apply_lowp(Xh.p, a.ncols, Yf.p, n, N, nullptr);
      CK(cudaDeviceSynchronize());
      std::vector<float> yf(n * N);
      CK(cudaMemcpy(yf.data(), Yf.p, n * N * 4, cudaMemcpyDeviceToHost));
      std::vector<__half> xh(a.ncols * N);
      CK(cudaMemcpy(xh.data(), Xh.p, xh.size() * 2, cudaMemcpyDeviceToHost));
      std::vector<double> xd(xh.size()), yr(n * N);
      for (std::size_t i = 0; i < xh.size(); ++i) xd[i] = __half2float(xh[i]);
      csr_spmm_reference(a, xd.data(), a.ncols, yr.data(), n, N);
      double d = 0, na = 0, nx = 0;
      for (std::size_t i = 0; i < yr.size(); ++i) d += (yf[i] - yr[i]) * (yf[i] - yr[i]);
      for (double v : a.values) na += v * v;
      for (double v : xd) nx += v * v;
      std::printf("  check MMA16 fp16 vs fp64 reference (N=8): |dY|/(|A||X|) = %.2e\n",
                  std::sqrt(d / (na * nx)));
    }
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) if (!t.empty()) out.push_back(t);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> mats = {"gen:lap2d:1024", "gen:lap3d:100", "gen:elast3d:64",
                                   "gen:rmat:20:16", "gen:lap3d:100+scramble"};
  std::vector<int> sweep = {64, 256, 512, 1024, 2048, 4096};
  std::string csv, real_dir;
  std::vector<std::string> real = {"luxembourg.mtx", "fe_4elt2.mtx", "crack.mtx", "bcsstk22.mtx",
                                   "Trefethen_2000.mtx"};
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--quick") {
      mats = {"gen:lap3d:40", "gen:rmat:14:8"};
      sweep = {64, 1024};
      cfg.n64 = {8, 64};
      cfg.n16 = {8, 128};
      g_reps = 5;
    } else if (s == "--csv") csv = next();
    else if (s == "--reps") g_reps = std::stoi(next());
    else if (s == "--matrices") mats = split(next());
    else if (s == "--band-sweep") { sweep.clear(); for (auto& t : split(next())) sweep.push_back(std::stoi(t)); }
    else if (s == "--no-fp64") cfg.fp64 = false;
    else if (s == "--no-fp16") cfg.fp16 = false;
    else if (s == "--real") real_dir = next();
    else if (s == "--cols") { cfg.n64.clear(); for (auto& t : split(next())) cfg.n64.push_back(std::stoi(t)); }
    else if (s == "--no-bsr") cfg.bsr = false;
    else if (s == "--cols16") { cfg.n16.clear(); for (auto& t : split(next())) cfg.n16.push_back(std::stoi(t)); }
    else if (s == "--no-trial") cfg.trial = false;
    else { std::fprintf(stderr, "unknown argument %s\n", s.c_str()); return 1; }
  }
  if (device_count() == 0) {
    std::printf("spmm_bench: no CUDA device, nothing to measure\n");
    return 0;
  }
  std::printf("device: %s\n", device_name().c_str());
  g_copy_bw = copy_bandwidth();
  std::printf("device-to-device copy: %.1f GB/s (read + write)\n", g_copy_bw / 1e9);
  cusparseHandle_t sh;
  cublasHandle_t bh;
  sp(cusparseCreate(&sh), "cusparseCreate");
  bl(cublasCreate(&bh), "cublasCreate");
  for (int B : sweep) mats.push_back("gen:band:16384:" + std::to_string(B));
  if (!real_dir.empty())
    for (auto& r : real)
      if (std::filesystem::exists(real_dir + "/" + r)) mats.push_back(real_dir + "/" + r);
  for (const auto& spec : mats) {
    try {
      const auto t0 = std::chrono::steady_clock::now();
      Csr<double> a = read_matrix(spec);
      const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("(read/generated in %.1f s)\n", gen_s);
      bench_matrix(spec, a, cfg, sh, bh);
    } catch (const std::exception& e) {
      std::printf("!! %s: %s\n", spec.c_str(), e.what());
      cudaGetLastError();
    }
  }
  cusparseDestroy(sh);
  cublasDestroy(bh);
  if (!csv.empty()) {
    std::ofstream f(csv);
    f << "matrix,n,nnz,precision,N,contender,detail,ms,gflops,gbs_min,pct_copy\n";
    for (auto& r : g_rows)
      f << r.matrix << ',' << r.n << ',' << r.nnz << ',' << r.prec << ',' << r.N << ',' << r.contender
        << ",\"" << r.detail << "\"," << r.ms << ',' << r.gflops << ',' << r.gbs << ',' << r.pct_copy << '\n';
  }
  std::printf("\ncopy bandwidth %.1f GB/s; %zu rows\n", g_copy_bw / 1e9, g_rows.size());
  return 0;
}
