// GPU solves with an exported CHOLMOD factor S(p, p) = L·Lᵀ (factor/triangular_solve.hpp):
//   Z = X(perm, :)      gather, written row-major (n × s, ld s): cuSPARSE SpSM is fastest on
//                       row-major dense operands, and the layout change rides on the gather
//   L·W = Z             SpSM, L as CSR (lower, non-unit)
//   Lᵀ·V = W            SpSM, Lᵀ as CSR (upper) = the CSC arrays of L as they are
//   Y(perm, :) = V      scatter back to column-major
// Memory: L twice (CSR of L and of Lᵀ, 12 bytes per entry each with 32-bit indices, 16 with 64-bit
// offsets), two n × max_cols blocks, the SpSM buffers. Traffic per solve of s columns: both
// factors once (≈ 2·12·nnz(L) bytes) plus ≈ 6·n·s·8 bytes for the blocks.
// An SpSM analysis is made per block width s on first use of that width (the solvers use one or
// two widths: the Lanczos block and k), and reused afterwards.
#include <cusparse.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/cuda_library_check.cuh"
#include "core/device_buffer.hpp"
#include "core/error.hpp"
#include "factor/triangular_solve.hpp"

namespace tcsolve::detail {

namespace {

// z[i·s + j] = x[perm[i] + j·ldx]: rows permuted, column-major → row-major. Grid-stride over n·s.
__global__ void gather_rows_kernel(const double* __restrict__ x, long long ldx,
                                   const int* __restrict__ perm, double* __restrict__ z,
                                   long long n, int s) {
  const long long total = n * s;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = t / s;
    const int j = static_cast<int>(t - i * s);
    z[t] = x[perm[i] + j * ldx];
  }
}

// y[perm[i] + j·ldy] = v[i·s + j].
__global__ void scatter_rows_kernel(const double* __restrict__ v, const int* __restrict__ perm,
                                    double* __restrict__ y, long long ldy, long long n, int s) {
  const long long total = n * s;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = t / s;
    const int j = static_cast<int>(t - i * s);
    y[perm[i] + j * ldy] = v[t];
  }
}

class CusparseTriangular final : public DeviceTriangularSolver {
 public:
  CusparseTriangular(const ExportedFactor& f, void* stream, std::int64_t max_cols)
      : n_(f.n), max_cols_(max_cols), stream_(static_cast<cudaStream_t>(stream)) {
    TCSOLVE_REQUIRE(f.n > 0 && static_cast<std::int64_t>(f.perm.size()) == f.n,
                    "triangular solve: empty or inconsistent factor");
    const std::int64_t nnz = f.col_ptr.back();
    index64_ = nnz > 2147483647LL;
    // CSR of Lᵀ (upper) = the CSC arrays of L; CSR of L (lower) by a host transpose.
    std::vector<std::int64_t> lp(n_ + 1, 0);
    std::vector<std::int32_t> li(nnz);
    std::vector<double> lx(nnz);
    for (std::int64_t p = 0; p < nnz; ++p) ++lp[f.row_idx[p] + 1];
    for (std::int64_t i = 0; i < n_; ++i) lp[i + 1] += lp[i];
    {
      std::vector<std::int64_t> next(lp.begin(), lp.end() - 1);
      for (std::int64_t j = 0; j < n_; ++j)  // columns in order: rows of L come out sorted
        for (std::int64_t p = f.col_ptr[j]; p < f.col_ptr[j + 1]; ++p) {
          const std::int64_t q = next[f.row_idx[p]]++;
          li[q] = static_cast<std::int32_t>(j);
          lx[q] = f.values[p];
        }
    }
    upload(lower_, lp, li, lx);
    upload(upper_, f.col_ptr, f.row_idx, f.values);
    perm_ = DeviceArray<int>(std::vector<int>(f.perm.begin(), f.perm.end()));
    z_ = DeviceArray<double>(static_cast<std::size_t>(n_ * max_cols_));
    w_ = DeviceArray<double>(static_cast<std::size_t>(n_ * max_cols_));
    TCSOLVE_CUSPARSE_CHECK(cusparseCreate(&handle_));
    TCSOLVE_CUSPARSE_CHECK(cusparseSetStream(handle_, stream_));
    make_mat(lower_, CUSPARSE_FILL_MODE_LOWER);
    make_mat(upper_, CUSPARSE_FILL_MODE_UPPER);
    int dev = 0;
    TCSOLVE_CUDA_CHECK(cudaGetDevice(&dev));
    TCSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
  }
  ~CusparseTriangular() override {
    for (auto& w : widths_) {
      cusparseSpSM_destroyDescr(w.lower);
      cusparseSpSM_destroyDescr(w.upper);
      cusparseDestroyDnMat(w.z);
      cusparseDestroyDnMat(w.w);
    }
    if (lower_.mat) cusparseDestroySpMat(lower_.mat);
    if (upper_.mat) cusparseDestroySpMat(upper_.mat);
    if (handle_) cusparseDestroy(handle_);
  }

  double device_bytes() const override {
    double b = 0;
    for (const Tri* t : {&lower_, &upper_})
      b += t->ptr32.bytes() + t->ptr64.bytes() + t->idx32.bytes() + t->idx64.bytes() + t->val.bytes();
    b += perm_.bytes() + z_.bytes() + w_.bytes();
    for (const auto& w : widths_) b += w.buf_lower.bytes() + w.buf_upper.bytes();
    return b;
  }

  void solve(MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == n_ && y.rows == n_ && x.cols == y.cols && x.cols <= max_cols_,
                    "triangular solve: shapes");
    const int s = static_cast<int>(x.cols);
    if (s == 0) return;
    Width& w = width(s);
    const long long total = n_ * static_cast<long long>(s);
    const int blocks = static_cast<int>(std::min<long long>((total + 255) / 256, 8LL * sms_));
    gather_rows_kernel<<<blocks, 256, 0, stream_>>>(x.data, x.ld, perm_.get(), z_.get(), n_, s);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    const double one = 1.0;
    TCSOLVE_CUSPARSE_CHECK(cusparseSpSM_solve(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                              CUSPARSE_OPERATION_NON_TRANSPOSE, &one, lower_.mat,
                                              w.z, w.w, CUDA_R_64F, CUSPARSE_SPSM_ALG_DEFAULT,
                                              w.lower));
    TCSOLVE_CUSPARSE_CHECK(cusparseSpSM_solve(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                              CUSPARSE_OPERATION_NON_TRANSPOSE, &one, upper_.mat,
                                              w.w, w.z, CUDA_R_64F, CUSPARSE_SPSM_ALG_DEFAULT,
                                              w.upper));
    scatter_rows_kernel<<<blocks, 256, 0, stream_>>>(z_.get(), perm_.get(), y.data, y.ld, n_, s);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

 private:
  struct Tri {
    DeviceArray<int> ptr32, idx32;
    DeviceArray<std::int64_t> ptr64, idx64;
    DeviceArray<double> val;
    std::int64_t nnz = 0;
    cusparseSpMatDescr_t mat = nullptr;
  };
  struct Width {
    int s = 0;
    cusparseDnMatDescr_t z = nullptr, w = nullptr;  // row-major n × s views of z_, w_
    cusparseSpSMDescr_t lower = nullptr, upper = nullptr;
    DeviceArray<char> buf_lower, buf_upper;
  };

  void upload(Tri& t, const std::vector<std::int64_t>& ptr, const std::vector<std::int32_t>& idx,
              const std::vector<double>& val) {
    t.nnz = ptr.back();
    if (index64_) {
      t.ptr64 = DeviceArray<std::int64_t>(ptr);
      t.idx64 = DeviceArray<std::int64_t>(std::vector<std::int64_t>(idx.begin(), idx.end()));
    } else {
      t.ptr32 = DeviceArray<int>(std::vector<int>(ptr.begin(), ptr.end()));
      t.idx32 = DeviceArray<int>(std::vector<int>(idx.begin(), idx.end()));
    }
    t.val = DeviceArray<double>(val);
  }
  void make_mat(Tri& t, cusparseFillMode_t fill) {
    const cusparseIndexType_t it = index64_ ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
    void* ptr = index64_ ? static_cast<void*>(t.ptr64.get()) : static_cast<void*>(t.ptr32.get());
    void* idx = index64_ ? static_cast<void*>(t.idx64.get()) : static_cast<void*>(t.idx32.get());
    TCSOLVE_CUSPARSE_CHECK(cusparseCreateCsr(&t.mat, n_, n_, t.nnz, ptr, idx, t.val.get(), it, it,
                                             CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
    TCSOLVE_CUSPARSE_CHECK(cusparseSpMatSetAttribute(t.mat, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof fill));
    TCSOLVE_CUSPARSE_CHECK(cusparseSpMatSetAttribute(t.mat, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof diag));
  }
  // The analysis for block width s (made once per width).
  Width& width(int s) {
    for (auto& w : widths_)
      if (w.s == s) return w;
    Width w;
    w.s = s;
    TCSOLVE_CUSPARSE_CHECK(cusparseCreateDnMat(&w.z, n_, s, s, z_.get(), CUDA_R_64F, CUSPARSE_ORDER_ROW));
    TCSOLVE_CUSPARSE_CHECK(cusparseCreateDnMat(&w.w, n_, s, s, w_.get(), CUDA_R_64F, CUSPARSE_ORDER_ROW));
    const double one = 1.0;
    auto analyse = [&](Tri& t, cusparseDnMatDescr_t in, cusparseDnMatDescr_t out,
                       cusparseSpSMDescr_t* d, DeviceArray<char>* buf) {
      TCSOLVE_CUSPARSE_CHECK(cusparseSpSM_createDescr(d));
      std::size_t bytes = 0;
      TCSOLVE_CUSPARSE_CHECK(cusparseSpSM_bufferSize(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t.mat,
                                                     in, out, CUDA_R_64F, CUSPARSE_SPSM_ALG_DEFAULT,
                                                     *d, &bytes));
      *buf = DeviceArray<char>(std::max<std::size_t>(bytes, 1));
      TCSOLVE_CUSPARSE_CHECK(cusparseSpSM_analysis(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t.mat,
                                                   in, out, CUDA_R_64F, CUSPARSE_SPSM_ALG_DEFAULT,
                                                   *d, buf->get()));
    };
    analyse(lower_, w.z, w.w, &w.lower, &w.buf_lower);
    analyse(upper_, w.w, w.z, &w.upper, &w.buf_upper);
    widths_.push_back(std::move(w));
    return widths_.back();
  }

  std::int64_t n_, max_cols_;
  cudaStream_t stream_;
  bool index64_ = false;
  int sms_ = 1;
  cusparseHandle_t handle_ = nullptr;
  Tri lower_, upper_;
  DeviceArray<int> perm_;
  DeviceArray<double> z_, w_;
  std::vector<Width> widths_;
};

}  // namespace

std::unique_ptr<DeviceTriangularSolver> make_device_triangular_solver(const ExportedFactor& f,
                                                                      void* stream,
                                                                      std::int64_t max_cols) {
  return std::make_unique<CusparseTriangular>(f, stream, max_cols);
}

}  // namespace tcsolve::detail
