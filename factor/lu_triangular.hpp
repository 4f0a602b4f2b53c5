// Host solves with an LU factorization P·R·M·Q = L·U held in plain arrays (UMFPACK's factors,
// read once with umfpack_dl_get_numeric: factor/lu_factor.cpp), several right-hand sides at a
// time. M is n × n; P, Q permutations (P[k] = the original row of pivot k, Q[k] its column);
// R = diag(r) the row scaling; L unit lower and U upper triangular, both stored by rows.
//   M·X = B:   W = (P·R·B) gathered into a row-major n × c chunk; L·Z = W forward and U·Y = Z
//              backward, both as row dot products; X(Q[k], :) = Y(k, :) scattered;
//   Mᵀ·X = B:  W = Qᵀ·B gathered; Uᵀ·Z = W forward and Lᵀ·V = Z backward, both as row axpys
//              of the same rows; X(P[k], :) = r[P[k]]·V(k, :).
// Traffic per chunk of c columns: the factors once (12 bytes an entry: a 4-byte index and the
// value) and the chunk's B and X once each, where UMFPACK's umfpack_dl_wsolve passes over its
// factors once per column. At one column a chain's solve is latency-bound (each row waits on
// the last); the pivot's reciprocal keeps the division off that chain. Issue 46's B7
// (eigsh(sigma=0.5) on a 3000-row chain, 2-core Xeon): 10.9 ms a call with umfpack_dl_wsolve,
// 9.3 ms with these solves. No refinement here: the callers that need it refine with A itself
// (solvers/direct/direct_solve.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "core/multivector.hpp"

namespace tcsolve::detail {

struct LuFactors {
  std::int64_t n = 0;
  std::vector<std::int64_t> lp, up;   // row pointers of L (strictly lower part) and U (strictly upper part)
  std::vector<std::int32_t> lj, uj;   // column indices
  std::vector<double> lx, ux;         // values
  std::vector<double> u_diag, u_inv;  // U(k, k) and 1 / U(k, k)
  bool divide = false;                // some 1 / U(k, k) is not finite: the solves divide
  std::vector<std::int64_t> p, q;     // pivot k's original row and column
  std::vector<double> r;              // R's diagonal (row i of M multiplied by r[i])

  // u_inv and divide from u_diag.
  void set_pivot_reciprocals();
};

// Columns solved together (the row-major chunk is n × kLuChunk doubles).
constexpr std::int64_t kLuChunk = 8;

// X = M⁻¹·B (transpose: M⁻ᵀ·B), host blocks n × s with their own leading dimensions; X may not
// alias B. work: n·kLuChunk doubles.
void lu_solve(const LuFactors& f, MvView<const double> b, MvView<double> x, bool transpose, double* work);

}  // namespace tcsolve::detail
