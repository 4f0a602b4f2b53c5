// Building a Bcsr from a Csr (after an optional row permutation) and its statistics.
#pragma once
#include <cstdint>
#include <vector>

#include "core/csr.hpp"
#include "preprocess/bcsr.hpp"

namespace tcsolve {

// Bcsr of P·A with block shape h×w. perm empty = identity. Row i of P·A is row perm[i] of A.
template <class T>
Bcsr<T> build_bcsr(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm = {});

}  // namespace tcsolve
