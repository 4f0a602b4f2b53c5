// Block CG's fused passes (DenseBlockOps::cg()), in fp64 and on fp32 tall blocks. Small matrices
// (α, β, G) and the Jacobi scales d are backend blocks (DenseBlockOps::allocate), read and written
// in stream order like the tall blocks. "Pass" = one read or one write of an n × (its columns)
// block. CPU (cg_kernels.cpp): Eigen. CUDA (cg_kernels.cu): fused tensor-core kernels (mma.sync
// m8n8k4 f64). Distributed: the Grams all-reduced.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "core/multivector.hpp"

namespace tcsolve {

class CgKernels {
 public:
  virtual ~CgKernels() = default;
  // Block CG residual pass: R ← R − Q·α and G = [Q R]ᵀ·R with the updated R, in one pass over
  // Q and R (reads Q, R; writes R). Q n × q, α (q × r) and G ((q + r) × r) backend, R n × r.
  virtual void cg_residual_update(MvView<const double> q, MvView<const double> alpha,
                                  MvView<double> r, MvView<double> g) = 0;
  // Its Jacobi-preconditioned twin: R ← R − Q·α, Z ← diag(d)·R (d: n doubles, backend), and
  // G ((q + r + 1) × r) = [Q R]ᵀ·Z in rows 0:q+r with ‖R_j‖² in row q + r, all with the updated
  // R, in one pass (reads Q, R, d; writes R, Z). Z must not alias Q or R.
  virtual void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                         const double* d, MvView<double> r, MvView<double> z,
                                         MvView<double> g) = 0;
  // Block CG direction pass, in place: X ← X + P(:, 0:q)·α and P(:, 0:r) ← Z + P(:, 0:q)·β
  // (α, β q × r backend; X, Z n × r; the view P has max(q, r) columns: q before, r after).
  // Reads P, Z, X; writes P, X. Z must not alias P.
  virtual void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                                   MvView<const double> z, MvView<double> p, MvView<double> x) = 0;

  // ==== fp32 blocks (block CG's fp32 inner iteration, solvers/block_cg.hpp) ====================
  // The same passes with the tall blocks stored in fp32 and everything else in fp64: the small
  // matrices (α, β, G), the Jacobi scales d, and every sum (an fp32 entry converts to fp64
  // exactly; the products and sums are those of the fp64 passes on the converted entries). A
  // result written to an fp32 block is rounded once, at the store. Half the bytes of each pass.
  // Default: not supported (fp32_blocks() false; the calls throw InvalidArgument). CPU (Eigen, on
  // fp64 copies of the blocks: a reference, not fast) and CUDA (the fused kernels, ≤ 32 columns
  // of P and R, any rows) implement them. Blocks from DenseBlockOps::allocate32.
  virtual bool fp32_blocks() const { return false; }
  // G = α·Xᵀ·Y + β·G (G backend fp64), as DenseBlockOps::gram_into.
  virtual void gram_into(double alpha, MvView<const float> x, MvView<const float> y, double beta,
                         MvView<double> g);
  virtual void cg_residual_update(MvView<const float> q, MvView<const double> alpha,
                                  MvView<float> r, MvView<double> g);
  virtual void cg_residual_update_jacobi(MvView<const float> q, MvView<const double> alpha,
                                         const double* d, MvView<float> r, MvView<float> z,
                                         MvView<double> g);
  virtual void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                                   MvView<const float> z, MvView<float> p, MvView<float> x);
  virtual void copy(MvView<const float> x, MvView<float> y);
  virtual void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                              MvView<float> y);
  virtual void fill_zero(MvView<float> x);
  // Y = fp32(X) (rounded to nearest), and Y += α·X (Y fp64): one pass each.
  virtual void convert(MvView<const double> x, MvView<float> y);
  virtual void add_converted(MvView<const float> x, MvView<double> y, double alpha);
};

namespace detail {
// The shapes the block CG passes above require (one check for every backend and block type T).
// z (Jacobi) is given for cg_residual_update_jacobi, whose G has one row more.
template <class V>
struct NoDeduce {  // (T is deduced from the first block; the others convert)
  using type = V;
};
template <class T>
void check_cg_residual(MvView<const T> q, MvView<const double> alpha,
                       typename NoDeduce<MvView<const T>>::type r, MvView<const double> g,
                       const MvView<T>* z = nullptr) {
  TCSOLVE_REQUIRE(q.rows == r.rows && alpha.rows == q.cols && alpha.cols == r.cols &&
                      (!z || (z->rows == r.rows && z->cols == r.cols)) &&
                      g.rows == q.cols + r.cols + (z ? 1 : 0) && g.cols == r.cols,
                  z ? "cg_residual_update_jacobi: shapes" : "cg_residual_update: shapes");
}
template <class T>
void check_cg_direction(MvView<const double> alpha, MvView<const double> beta, MvView<const T> z,
                        typename NoDeduce<MvView<const T>>::type p,
                        typename NoDeduce<MvView<const T>>::type x) {
  const std::int64_t q = alpha.rows, r = z.cols;
  TCSOLVE_REQUIRE(beta.rows == q && alpha.cols == r && beta.cols == r && x.cols == r &&
                      p.cols >= std::max(q, r) && z.rows == p.rows && x.rows == p.rows,
                  "cg_direction_update: shapes");
}
}  // namespace detail

}  // namespace tcsolve
