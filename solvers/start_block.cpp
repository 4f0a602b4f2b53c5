// check_start_block() (solvers/eigensolvers.hpp): a caller's start block is checked before the
// iteration instead of failing (or being silently replaced) inside it.
//
// Refuse, do not repair. A zero, non-finite or dependent column in a start block is a mistake on
// the caller's side (a wrong slice, an uninitialized buffer, the same guess twice); SciPy refuses
// it too (eigsh: ARPACK's "starting vector is zero"; lobpcg: "linearly dependent initial
// approximations", which the Python module already raises for X). Replacing such a column with a
// random one would run a different start than the one asked for and hide the mistake; the caller
// who wants random columns gives fewer columns (the block is completed with random ones).
//
// Cost: one Gram matrix G = XᵀX of the c given columns (c × c, in ops.space(); one host round trip,
// once per solve, before the loop) and O(c³) on the host; the host copy of the block is read only
// to locate a non-finite entry once one is known to exist.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solvers/eigensolvers.hpp"

namespace tcsolve {

namespace {

// Relative squared distance of a column to the span of the columns before it (in the unit-diagonal
// Gram matrix) at or below which it counts as dependent: distance ≤ 1e-6·‖x_j‖, where a Gram
// matrix can still tell (its rounding is ~1e-16) and as the Python module's check of X (smallest
// Gram eigenvalue above 1e-12 of the largest).
constexpr double kDependentTol = 1e-12;

std::string non_finite_column(const double* x, std::int64_t n, std::int64_t j) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i + j * n];
    if (!std::isfinite(v))
      return "column " + std::to_string(j) + " has a non-finite value (" + (std::isnan(v) ? "NaN" : "Inf") +
             ") at row " + std::to_string(i);
  }
  return "column " + std::to_string(j) + " is too large (its squared norm overflows)";
}

// Sequential Cholesky of the scaled Gram Gs (c × c, column-major) over the usable columns, in
// order: column j is dependent when 1 − ‖L(j, kept)‖² ≤ kDependentTol.
void dependent_columns(const std::vector<double>& gs, std::int64_t c, const std::vector<char>& bad,
                       std::vector<std::string>& problems) {
  std::vector<double> l(c * c, 0.0);  // L(j, i) at l[j + i·c]
  std::vector<std::int64_t> kept;
  for (std::int64_t j = 0; j < c; ++j) {
    if (bad[j]) continue;
    double r = gs[j + j * c];
    for (std::int64_t i : kept) {
      double s = gs[i + j * c];
      for (std::int64_t q : kept) {
        if (q >= i) break;
        s -= l[j + q * c] * l[i + q * c];
      }
      l[j + i * c] = s / l[i + i * c];
      r -= l[j + i * c] * l[j + i * c];
    }
    if (r > kDependentTol) {
      l[j + j * c] = std::sqrt(r);
      kept.push_back(j);
      continue;
    }
    std::string what = "column " + std::to_string(j);
    std::int64_t twin = -1;
    for (std::int64_t i : kept)
      if (std::abs(gs[i + j * c]) >= 1.0 - kDependentTol) twin = i;
    if (twin >= 0) {
      what += " is a multiple of column " + std::to_string(twin);
    } else {
      what += " lies in the span of columns";
      for (std::size_t q = 0; q < kept.size(); ++q) what += (q ? ", " : " ") + std::to_string(kept[q]);
    }
    problems.push_back(what);
  }
}

}  // namespace

void check_start_block(DenseBlockOps& ops, MvView<const double> x, const EigenOptions& opt,
                       const char* solver) {
  const std::int64_t c = opt.start ? std::min(x.cols, opt.start_cols) : 0;
  if (c <= 0) return;
  const std::int64_t n = x.rows;
  std::vector<double> g(c * c);
  ops.gram(x.columns(0, c), x.columns(0, c), g.data(), c);  // G = XᵀX of the given columns
  std::vector<std::string> problems;
  std::vector<char> bad(c, 0);
  std::vector<double> dinv(c, 0.0);
  for (std::int64_t j = 0; j < c; ++j) {
    const double d = g[j + j * c];
    if (!std::isfinite(d)) problems.push_back(non_finite_column(opt.start, n, j));
    else if (!(d > 0)) problems.push_back("column " + std::to_string(j) + " is zero");
    else dinv[j] = 1.0 / std::sqrt(d);
    bad[j] = !(dinv[j] > 0);
  }
  std::vector<double> gs(c * c, 0.0);  // D·G·D, unit diagonal over the usable columns
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < c; ++i)
      if (!bad[i] && !bad[j]) gs[i + j * c] = g[i + j * c] * dinv[i] * dinv[j];
  dependent_columns(gs, c, bad, problems);
  if (problems.empty()) return;
  std::string msg = std::string(solver) + ": the given start block (v0 / X / --start, " +
                    std::to_string(c) + " column" + (c > 1 ? "s" : "") + " used) is unusable: ";
  for (std::size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
  msg += ". Give finite, linearly independent columns (or fewer of them: the rest of the block is "
         "random)";
  throw InvalidArgument(msg);
}

}  // namespace tcsolve
