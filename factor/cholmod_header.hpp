// Internal to the SuiteSparse engines (cholmod_factor.cpp, qr_factor.cpp): a cholmod_sparse
// header over CSC arrays the caller keeps (64-bit indices for the cholmod_l_ API, fp64 values;
// no copy), sorted and packed.
#pragma once
#include <cholmod.h>

#include <cstddef>
#include <cstdint>

namespace tcsolve::detail {

// nrow × ncol with nnz entries; stype −1: the lower triangle of a symmetric matrix, 0: unsymmetric.
inline cholmod_sparse csc_header(std::int64_t nrow, std::int64_t ncol, std::size_t nnz,
                                 SuiteSparse_long* p, SuiteSparse_long* i, double* x, int stype) {
  cholmod_sparse h{};
  h.nrow = static_cast<std::size_t>(nrow);
  h.ncol = static_cast<std::size_t>(ncol);
  h.nzmax = nnz;
  h.p = p;
  h.i = i;
  h.x = x;
  h.stype = stype;
  h.itype = CHOLMOD_LONG;
  h.xtype = CHOLMOD_REAL;
  h.dtype = CHOLMOD_DOUBLE;
  h.sorted = 1;
  h.packed = 1;
  return h;
}

}  // namespace tcsolve::detail
