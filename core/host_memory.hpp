// Large host vectors on transparent huge pages: resize_huge(v, n) reserves, madvises
// (MADV_HUGEPAGE) the reserved range, then resizes, so that the first touch (std::vector's
// zero-fill) takes one page fault per 2 MiB instead of one per 4 KiB. On the H200's host (THP "madvise" mode) the
// zero-fill of a 1M-row Laplacian's 56 MB of values took 25 ms with 4 KiB pages; on this
// development machine 150 ms against 8 ms. A hint only: where THP is off or unsupported, the
// vector is an ordinary one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tcsolve {

template <class T, class A>
void resize_huge(std::vector<T, A>& v, std::size_t n) {
  v.reserve(n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t(2) << 20;
  const std::size_t bytes = n * sizeof(T);
  const auto p = reinterpret_cast<std::uintptr_t>(v.data());
  const std::uintptr_t start = (p + huge - 1) & ~(huge - 1);
  const std::uintptr_t end = (p + bytes) & ~(huge - 1);
  if (bytes >= 2 * huge && end > start)
    (void)::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
#endif
  v.resize(n);
}

}  // namespace tcsolve
