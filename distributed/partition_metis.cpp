// METIS k-way partition of A's graph (distributed/partition.hpp, detail::metis_parts).
#include <metis.h>

#include <string>

#include "core/error.hpp"
#include "distributed/partition.hpp"

namespace tcsolve::detail {

bool metis_available() { return true; }

std::vector<int> metis_parts(const Csr<double>& a, int parts, std::int64_t* cut) {
  static_assert(sizeof(idx_t) == 4 || sizeof(idx_t) == 8, "METIS idx_t");
  const std::int64_t n = a.nrows;
  if (a.nnz() >= (std::int64_t(1) << 31) - 1 && sizeof(idx_t) == 4)
    throw InvalidArgument("METIS (32-bit indices) cannot partition " + std::to_string(a.nnz()) +
                          " entries: use --partition contiguous");
  // The graph: A's pattern without its diagonal (METIS wants no self loops).
  std::vector<idx_t> xadj(n + 1, 0), adj;
  adj.reserve(a.nnz());
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
      if (a.col_idx[e] != i) adj.push_back(static_cast<idx_t>(a.col_idx[e]));
    xadj[i + 1] = static_cast<idx_t>(adj.size());
  }
  idx_t nv = static_cast<idx_t>(n), ncon = 1, np = parts, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // the same partition on every run
  std::vector<idx_t> part(n, 0);
  const int rc = METIS_PartGraphKway(&nv, &ncon, xadj.data(), adj.data(), nullptr, nullptr, nullptr,
                                     &np, nullptr, nullptr, options, &objval, part.data());
  if (rc != METIS_OK) throw Error("METIS_PartGraphKway failed (code " + std::to_string(rc) + ")");
  if (cut) *cut = objval;
  return std::vector<int>(part.begin(), part.end());
}

}  // namespace tcsolve::detail
