// Large host vectors on transparent huge pages: resize_huge(v, n) reserves, madvises
// (MADV_HUGEPAGE) the reserved range, faults it in from all threads (an empty vector of 256 MiB
// and more: populate_in_parallel), then resizes, so that the first touch (std::vector's
// zero-fill) takes one page fault per 2 MiB instead of one per 4 KiB. On the H200's host (THP "madvise" mode) the
// zero-fill of a 1M-row Laplacian's 56 MB of values took 25 ms with 4 KiB pages; on this
// development machine 150 ms against 8 ms. A hint only: where THP is off or unsupported, the
// vector is an ordinary one.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/parallel.hpp"
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

// Faults the pages of [p, p + bytes) in (zeroed, writable) from all host threads at once
// (MADV_POPULATE_WRITE, Linux 5.14+; nothing where unsupported or below 256 MiB): the kernel's
// zeroing of fresh pages, serial inside one thread's first touch, is spread over the threads. On
// the H200's host the zero-fill of the 1M x 30k count matrix's 14.4 GB took 7.5 s in one thread.
inline void populate_in_parallel(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  constexpr std::size_t kMin = std::size_t(256) << 20, kPiece = std::size_t(64) << 20;
  if (bytes < kMin) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t page = 4096, start = (a + page - 1) & ~(page - 1), end = (a + bytes) & ~(page - 1);
  if (end <= start) return;
  const std::int64_t pieces = static_cast<std::int64_t>((end - start + kPiece - 1) / kPiece);
  parallel_for(pieces, [&](std::int64_t i) {
    const std::uintptr_t b = start + static_cast<std::uintptr_t>(i) * kPiece;
    (void)::madvise(reinterpret_cast<void*>(b), std::min<std::uintptr_t>(kPiece, end - b), MADV_POPULATE_WRITE);
  }, 1);
#else
  (void)p, (void)bytes;
#endif
}

template <class T, class A>
void resize_huge(std::vector<T, A>& v, std::size_t n) {
  const std::size_t old = v.size();
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  if (old == 0) populate_in_parallel(v.data(), n * sizeof(T));
  v.resize(n);
}

}  // namespace tcsolve
