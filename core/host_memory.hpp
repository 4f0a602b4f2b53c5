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

// Advises the whole 2 MiB pages inside [p, p + bytes) onto huge pages (nothing below 4 MiB).
inline void advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t(2) << 20;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t start = (a + huge - 1) & ~(huge - 1);
  const std::uintptr_t end = (a + bytes) & ~(huge - 1);
  if (bytes >= 2 * huge && end > start)
    (void)::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

template <class T, class A>
void resize_huge(std::vector<T, A>& v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.resize(n);
}

}  // namespace tcsolve
