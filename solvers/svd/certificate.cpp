// Sylvester count certificate of svds' largest singular values (solvers/svd/certificate.hpp).
#include "solvers/svd/certificate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/format.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/eigs/certificate.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::detail {

Csr<double> augmented(const Csr<double>& a) {
  const std::int64_t m = a.nrows, n = a.ncols, N = m + n;
  TCSOLVE_REQUIRE(N < std::numeric_limits<std::int32_t>::max(),
                  "svds certificate: m + n = " + std::to_string(N) + " past 32-bit indices");
  const Csr<double> at = transpose(a);
  Csr<double> k;
  k.nrows = k.ncols = N;
  k.symmetry = Symmetry::symmetric;
  k.row_ptr.resize(static_cast<std::size_t>(N) + 1);
  k.col_idx.resize(static_cast<std::size_t>(2 * a.nnz()));
  k.values.resize(k.col_idx.size());
  std::int64_t p = 0;
  // rows 0..m-1: [0 A] (A's columns shifted by m); rows m..m+n-1: [Aᵀ 0]
  for (std::int64_t i = 0; i < m; ++i) {
    k.row_ptr[i] = p;
    for (std::int64_t q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q, ++p)
      k.col_idx[p] = static_cast<std::int32_t>(a.col_idx[q] + m), k.values[p] = a.values[q];
  }
  for (std::int64_t j = 0; j < n; ++j) {
    k.row_ptr[m + j] = p;
    for (std::int64_t q = at.row_ptr[j]; q < at.row_ptr[j + 1]; ++q, ++p)
      k.col_idx[p] = at.col_idx[q], k.values[p] = at.values[q];
  }
  k.row_ptr[N] = p;
  return k;
}

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// r's triplets as K's approximate eigenpairs (header): values σ_j, residuals
// √((r_av² + r_atu²)/2), the Rayleigh quotient's distance min(r_av, r_atu).
eigs_detail::PairSet as_pairs(const SvdResult& r) {
  eigs_detail::PairSet p;
  p.values = r.values;
  for (std::size_t j = 0; j < r.values.size(); ++j) {
    const double av = r.residual_av[j], atu = r.residual_atu[j];
    p.rn.push_back(std::sqrt(0.5 * (av * av + atu * atu)));
    p.xn.push_back(1.0);
    p.rq_dev.push_back(std::min(av, atu));
  }
  return p;
}

}  // namespace

SvdCertificate certify_svds(const Csr<double>& a, const SvdResult& r, bool forced) {
  SvdCertificate c;
  const double t0 = now_seconds();
  const std::int64_t k = static_cast<std::int64_t>(r.values.size());
  TCSOLVE_REQUIRE(k > 0 && r.residual_av.size() == r.values.size() && r.residual_atu.size() == r.values.size(),
                  "svds certificate: the result holds no verified triplets");
  if (!built_with_factor()) {
    c.detail = "not counted: this build has no sparse direct engine (MUMPS)";
    return c;
  }
  const double entries = 2.0 * static_cast<double>(a.nnz());
  if (!forced && entries > kAutoEntries) {
    c.detail = "not counted: K = [0 A; A^T 0] has " + format("%.3g", entries) + " entries, more than " +
               format("%.3g", kAutoEntries) + " (--certify counts anyway)";
    return c;
  }
  const Csr<double> kmat = augmented(a);
  eigs_detail::Problem s;
  s.a = &kmat;
  s.n = kmat.nrows;
  s.a_norm = r.a_norm;  // σ₁ = ‖K‖₂
  s.radius = r.a_norm;
  const eigs_detail::PairSet p = as_pairs(r);
  // σ_k's window must stay clear of K's zero eigenvalues (the null space and m − n copies).
  if (const double w = eigs_detail::cert_width(s, p, k - 1); !(r.values[k - 1] - w > 0)) {
    c.detail = "not counted: sigma_k = " + eigs_detail::g17(r.values[k - 1]) +
               " is within its error window " + eigs_detail::g17(w) + " of 0 (K's null space)";
    c.seconds = now_seconds() - t0;
    return c;
  }
  if (!forced) {
    const SymbolicAnalysis sym = analyze_factor(kmat, nullptr);
    if (sym.flops > kAutoFlops) {
      c.detail = "not counted: the LDL^T of K = [0 A; A^T 0] needs about " + format("%.3g", sym.flops) +
                 " flops (AMD), more than " + format("%.3g", kAutoFlops) + " (--certify counts anyway)";
      c.seconds = now_seconds() - t0;
      return c;
    }
  }
  const eigs_detail::Certificate e = eigs_detail::certify_end(s, p, /*lower=*/false);
  c.state = e.state;
  c.missing = e.missing;
  c.factorizations = e.factorizations;
  // eigs' wording, in K's terms: K's eigenvalues above τ > 0 are the singular values above τ
  c.detail = replace_all(replace_all(e.detail, "eigenvalues", "singular values"), "A - tau*B", "K - tau*I") +
             ", K = [0 A; A^T 0]";
  c.seconds = now_seconds() - t0;
  return c;
}

}  // namespace tcsolve::detail
