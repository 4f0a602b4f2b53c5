// Host CSR utilities: construction from triplets, validation, permutations, reference SpMM.
#include "core/csr.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

const char* to_string(Symmetry s) {
  switch (s) {
    case Symmetry::general: return "general";
    case Symmetry::symmetric: return "symmetric";
    case Symmetry::skew_symmetric: return "skew-symmetric";
  }
  return "?";
}

template <class T>
Csr<T> csr_from_triplets(std::int64_t nrows, std::int64_t ncols, std::vector<Triplet<T>> e,
                         Symmetry symmetry) {
  TCSOLVE_REQUIRE(nrows >= 0 && ncols >= 0 && nrows < (std::int64_t(1) << 31) &&
                      ncols < (std::int64_t(1) << 31),
                  "matrix dimensions must fit 32-bit indices");
  Csr<T> a;
  a.nrows = nrows;
  a.ncols = ncols;
  a.symmetry = symmetry;
  // Counting sort by row (stable), then sort columns inside each row and sum duplicates.
  std::vector<std::int64_t> count(nrows + 1, 0);
  for (const auto& t : e) ++count[t.row + 1];
  for (std::int64_t i = 0; i < nrows; ++i) count[i + 1] += count[i];
  std::vector<std::int32_t> cols(e.size());
  std::vector<T> vals(e.size());
  {
    std::vector<std::int64_t> pos(count.begin(), count.end() - 1);
    for (const auto& t : e) {
      std::int64_t p = pos[t.row]++;
      cols[p] = t.col;
      vals[p] = t.value;
    }
  }
  e.clear();
  e.shrink_to_fit();
  a.row_ptr.assign(nrows + 1, 0);
  a.col_idx.resize(cols.size());
  a.values.resize(cols.size());
  std::int64_t out = 0;
  std::vector<std::pair<std::int32_t, T>> row;
  for (std::int64_t i = 0; i < nrows; ++i) {
    std::int64_t b = count[i], en = count[i + 1];
    bool sorted = true;
    for (std::int64_t p = b + 1; p < en; ++p)
      if (cols[p] <= cols[p - 1]) { sorted = false; break; }
    if (sorted) {
      for (std::int64_t p = b; p < en; ++p) {
        a.col_idx[out] = cols[p];
        a.values[out++] = vals[p];
      }
    } else {
      row.clear();
      for (std::int64_t p = b; p < en; ++p) row.emplace_back(cols[p], vals[p]);
      std::stable_sort(row.begin(), row.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (std::size_t k = 0; k < row.size(); ++k) {
        if (k > 0 && row[k].first == a.col_idx[out - 1]) {
          a.values[out - 1] += row[k].second;  // duplicate: sum
        } else {
          a.col_idx[out] = row[k].first;
          a.values[out++] = row[k].second;
        }
      }
    }
    a.row_ptr[i + 1] = out;
  }
  a.col_idx.resize(out);
  a.values.resize(out);
  a.col_idx.shrink_to_fit();
  a.values.shrink_to_fit();
  return a;
}

template <class T>
void validate(const Csr<T>& a) {
  auto fail = [](const std::string& m) { throw InvalidArgument("invalid CSR: " + m); };
  if (a.nrows < 0 || a.ncols < 0) fail("negative dimension");
  if (static_cast<std::int64_t>(a.row_ptr.size()) != a.nrows + 1) fail("row_ptr size != nrows + 1");
  if (a.row_ptr[0] != 0) fail("row_ptr[0] != 0");
  std::int64_t nnz = a.row_ptr.back();
  if (static_cast<std::int64_t>(a.col_idx.size()) != nnz ||
      static_cast<std::int64_t>(a.values.size()) != nnz)
    fail("col_idx/values size != row_ptr[nrows]");
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    if (a.row_ptr[i + 1] < a.row_ptr[i]) fail("row_ptr decreases at row " + std::to_string(i));
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      if (a.col_idx[p] < 0 || a.col_idx[p] >= a.ncols)
        fail("column index " + std::to_string(a.col_idx[p]) + " out of range in row " +
             std::to_string(i));
      if (p > a.row_ptr[i] && a.col_idx[p] <= a.col_idx[p - 1])
        fail("columns not sorted/unique in row " + std::to_string(i));
    }
  }
}

template <class U, class T>
Csr<U> csr_cast(const Csr<T>& a) {
  Csr<U> b;
  b.nrows = a.nrows;
  b.ncols = a.ncols;
  b.row_ptr = a.row_ptr;
  b.col_idx = a.col_idx;
  b.values.assign(a.values.begin(), a.values.end());
  b.symmetry = a.symmetry;
  return b;
}

namespace {
// Chunks of rows for one partial result per host thread (at least 4096 rows each).
int row_chunks(std::int64_t nrows) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(host_threads(), nrows / 4096)));
}
}  // namespace

// Rows split over the host threads (one chunk each); a thread stops at its first defect or when
// another thread has found one. Same answer as the sequential scan.
template <class T>
bool is_symmetric(const Csr<T>& a, double rel_tol) {
  if (!a.square()) return false;
  const int nt = row_chunks(a.nrows);
  std::vector<double> part(nt, 0.0);
  const std::int64_t nnz = static_cast<std::int64_t>(a.values.size());
  parallel_for(nt, [&](std::int64_t t) {
    double m = 0;
    for (std::int64_t p = nnz * t / nt; p < nnz * (t + 1) / nt; ++p)
      m = std::max(m, std::abs(static_cast<double>(a.values[p])));
    part[t] = m;
  }, 1);
  const double tol = rel_tol * *std::max_element(part.begin(), part.end());
  std::atomic<bool> ok{true};
  parallel_for(nt, [&](std::int64_t t) {
    for (std::int64_t i = a.nrows * t / nt; i < a.nrows * (t + 1) / nt; ++i) {
      if ((i & 1023) == 0 && !ok.load(std::memory_order_relaxed)) return;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        std::int32_t j = a.col_idx[p];
        auto b = a.col_idx.begin() + a.row_ptr[j], en = a.col_idx.begin() + a.row_ptr[j + 1];
        auto it = std::lower_bound(b, en, static_cast<std::int32_t>(i));
        double aji = (it != en && *it == i) ? static_cast<double>(a.values[it - a.col_idx.begin()]) : 0.0;
        if (std::abs(static_cast<double>(a.values[p]) - aji) > tol) {
          ok.store(false, std::memory_order_relaxed);
          return;
        }
      }
    }
  }, 1);
  return ok.load();
}

double csr_symmetry_defect(const Csr<double>& a) {
  if (!a.square()) return std::numeric_limits<double>::quiet_NaN();  // a_ji may not exist
  const std::int64_t n = a.nrows;
  std::vector<double> mx(static_cast<std::size_t>(n), 0.0), def(static_cast<std::size_t>(n), 0.0);
  parallel_for(n, [&](std::int64_t i) {
    double m = 0, d = 0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      m = std::max(m, std::abs(a.values[p]));
      const std::int32_t j = a.col_idx[p];
      auto b = a.col_idx.begin() + a.row_ptr[j], e = a.col_idx.begin() + a.row_ptr[j + 1];
      auto it = std::lower_bound(b, e, static_cast<std::int32_t>(i));
      const double aji = (it != e && *it == i) ? a.values[it - a.col_idx.begin()] : 0.0;
      d = std::max(d, std::abs(a.values[p] - aji));
    }
    mx[i] = m, def[i] = d;
  });
  const double amax = mx.empty() ? 0.0 : *std::max_element(mx.begin(), mx.end());
  const double dmax = def.empty() ? 0.0 : *std::max_element(def.begin(), def.end());
  return amax > 0 ? dmax / amax : 0.0;
}

std::vector<double> csr_diagonal(const Csr<double>& a) {
  std::vector<double> d;
  resize_huge(d, static_cast<std::size_t>(a.nrows));  // zeros
  parallel_for(a.nrows, [&](std::int64_t i) {
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) d[i] = a.values[p];
  });
  return d;
}

double csr_inf_norm(const Csr<double>& a) {
  // One partial maximum per thread's rows (no n-vector: its first touch cost more than the sums).
  const int nt = row_chunks(a.nrows);
  std::vector<double> part(nt, 0.0);
  parallel_for(nt, [&](std::int64_t t) {
    double m = 0;
    for (std::int64_t i = a.nrows * t / nt; i < a.nrows * (t + 1) / nt; ++i) {
      double r = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) r += std::abs(a.values[p]);
      m = std::max(m, r);
    }
    part[t] = m;
  }, 1);
  return *std::max_element(part.begin(), part.end());
}

namespace {
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;
inline std::uint64_t csrhash_step(std::uint64_t h, std::uint64_t x) {
  h = (h ^ x) * kFnvPrime;
  return h ^ (h >> 32);
}
// One chunk's hash (core/csr.hpp): whole 8-byte little-endian words, then the bytes left over.
std::uint64_t csrhash_chunk(const unsigned char* p, std::size_t bytes) {
  std::uint64_t h = kFnvOffset;
  std::size_t i = 0;
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "csrhash1 reads little-endian words");
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = csrhash_step(h, w);
  }
  for (; i < bytes; ++i) h = csrhash_step(h, p[i]);
  return h;
}
}  // namespace

std::string csr_checksum(const Csr<double>& a) {
  constexpr std::size_t kChunk = std::size_t(1) << 20;
  struct Part {
    const unsigned char* p;
    std::size_t bytes;
  };
  const Part parts[3] = {
      {reinterpret_cast<const unsigned char*>(a.row_ptr.data()), a.row_ptr.size() * sizeof(std::int64_t)},
      {reinterpret_cast<const unsigned char*>(a.col_idx.data()), a.col_idx.size() * sizeof(std::int32_t)},
      {reinterpret_cast<const unsigned char*>(a.values.data()), a.values.size() * sizeof(double)}};
  std::vector<Part> chunks;
  for (const Part& part : parts)
    for (std::size_t off = 0; off < part.bytes; off += kChunk)
      chunks.push_back({part.p + off, std::min(kChunk, part.bytes - off)});
  std::vector<std::uint64_t> hashes(chunks.size());
  parallel_for(static_cast<std::int64_t>(chunks.size()), [&](std::int64_t c) {
    hashes[c] = csrhash_chunk(chunks[c].p, chunks[c].bytes);
  }, 1);
  std::uint64_t h = kFnvOffset;
  for (const std::uint64_t c : hashes) h = csrhash_step(h, c);
  char buf[40];
  std::snprintf(buf, sizeof buf, "csrhash1:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string csr_checksum_fnv1a64(const Csr<double>& a) {
  std::uint64_t h = kFnvOffset;
  auto eat = [&h](const void* p, std::size_t bytes) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ c[i]) * kFnvPrime;
  };
  eat(a.row_ptr.data(), a.row_ptr.size() * sizeof(std::int64_t));
  eat(a.col_idx.data(), a.col_idx.size() * sizeof(std::int32_t));
  eat(a.values.data(), a.values.size() * sizeof(double));
  char buf[40];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void permute_block_rows(const double* in, std::int64_t ld_in, double* out, std::int64_t ld_out,
                        std::int64_t n, std::int64_t cols, const std::int32_t* p, bool scatter) {
  parallel_for(n * cols, [&](std::int64_t e) {
    const std::int64_t j = e / n, i = e % n;
    if (scatter) out[p[i] + j * ld_out] = in[i + j * ld_in];
    else out[i + j * ld_out] = in[p[i] + j * ld_in];
  }, 1 << 16);
}

template <class T>
Csr<T> permute_rows(const Csr<T>& a, const std::vector<std::int32_t>& perm) {
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(perm.size()) == a.nrows, "permutation length != nrows");
  Csr<T> b;
  b.nrows = a.nrows;
  b.ncols = a.ncols;
  b.symmetry = Symmetry::general;
  b.row_ptr.assign(a.nrows + 1, 0);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    b.row_ptr[i + 1] = b.row_ptr[i] + (a.row_ptr[perm[i] + 1] - a.row_ptr[perm[i]]);
  b.col_idx.resize(a.nnz());
  b.values.resize(a.nnz());
  parallel_for(a.nrows, [&](std::int64_t i) {
    std::copy(a.col_idx.begin() + a.row_ptr[perm[i]], a.col_idx.begin() + a.row_ptr[perm[i] + 1],
              b.col_idx.begin() + b.row_ptr[i]);
    std::copy(a.values.begin() + a.row_ptr[perm[i]], a.values.begin() + a.row_ptr[perm[i] + 1],
              b.values.begin() + b.row_ptr[i]);
  });
  return b;
}

template <class T>
Csr<T> permute_symmetric(const Csr<T>& a, const std::vector<std::int32_t>& perm) {
  TCSOLVE_REQUIRE(a.square(), "symmetric permutation needs a square matrix");
  Csr<T> b = permute_rows(a, perm);
  b.symmetry = a.symmetry;
  std::vector<std::int32_t> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<std::int32_t>(i);
  parallel_for(b.nrows, [&](std::int64_t i) {
    thread_local std::vector<std::pair<std::int32_t, T>> row;  // reused: no allocation per row
    row.clear();
    for (std::int64_t p = b.row_ptr[i]; p < b.row_ptr[i + 1]; ++p)
      row.emplace_back(inv[b.col_idx[p]], b.values[p]);
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::size_t k = 0; k < row.size(); ++k) {
      b.col_idx[b.row_ptr[i] + k] = row[k].first;
      b.values[b.row_ptr[i] + k] = row[k].second;
    }
  });
  return b;
}

namespace {
// Row chunks of about equal non-zeros for work that keeps one length-ncols array per thread
// (column counts or sums): as many as the host threads, at least 4096 rows each, and the arrays
// (nt·ncols·8 bytes) at most about A's values' bytes. Returns the nt + 1 chunk boundaries.
template <class T>
std::vector<std::int64_t> column_chunks(const Csr<T>& a) {
  const std::int64_t m = a.nrows, nnz = a.nnz();
  const std::int64_t nt = std::max<std::int64_t>(
      1, std::min<std::int64_t>({std::int64_t(host_threads()), m / 4096, nnz / (a.ncols + 1)}));
  std::vector<std::int64_t> first(static_cast<std::size_t>(nt + 1), m);
  first[0] = 0;
  for (std::int64_t c = 1; c < nt; ++c)
    first[c] = std::lower_bound(a.row_ptr.begin(), a.row_ptr.end(), nnz * c / nt) - a.row_ptr.begin();
  return first;
}
}  // namespace

double csr_one_norm(const Csr<double>& a) {
  const std::vector<std::int64_t> first = column_chunks(a);
  const std::int64_t nt = static_cast<std::int64_t>(first.size()) - 1, n = a.ncols;
  std::vector<double> sum(static_cast<std::size_t>(nt * n), 0.0);  // sum[c·n + j]
  parallel_for(nt, [&](std::int64_t c) {
    double* mine = sum.data() + c * n;
    for (std::int64_t p = a.row_ptr[first[c]]; p < a.row_ptr[first[c + 1]]; ++p) mine[a.col_idx[p]] += std::abs(a.values[p]);
  }, 1);
  double best = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    double col = 0;
    for (std::int64_t c = 0; c < nt; ++c) col += sum[c * n + j];
    best = std::max(best, col);
  }
  return best;
}

// Aᵀ in two cache-friendly passes (a direct scatter writes to n rows of Aᵀ at once: at n = 20k
// columns every non-zero missed the cache and the TLB, 2.8–3.7 s for 80M non-zeros on 2 cores).
// The columns of A are cut into buckets of at most kBucket; the rows of Aᵀ of one bucket are one
// contiguous range of its arrays. Pass 1: the rows are split into column_chunks, thread c counts
// its chunk's entries per bucket, and places them (row i, value, and the column's offset in its
// bucket) into the bucket's range, thread 0's first: a handful of write streams per thread.
// Pass 2: each bucket, on its own, is counting-sorted by that offset into its rows through a
// scratch block (its rows' write streams fit in the cache). Both passes keep the order of rows,
// so every row of Aᵀ comes out sorted, as before. Traffic: A read once, Aᵀ written twice and
// read once, plus 2 bytes a non-zero of offsets.
template <class T>
Csr<T> transpose(const Csr<T>& a) {
  constexpr std::int64_t kBucket = 512;  // rows of Aᵀ a bucket (≤ 65536: the offsets are 16-bit)
  const std::int64_t m = a.nrows, n = a.ncols, nnz = a.nnz();
  Csr<T> t;
  t.nrows = n;
  t.ncols = m;
  t.symmetry = a.symmetry;
  t.row_ptr.assign(static_cast<std::size_t>(n + 1), 0);
  resize_huge(t.col_idx, static_cast<std::size_t>(nnz));
  resize_huge(t.values, static_cast<std::size_t>(nnz));
  const std::vector<std::int64_t> first = column_chunks(a);
  const int nt = static_cast<int>(first.size()) - 1;
  const std::int64_t nb = (n + kBucket - 1) / kBucket;
  // row lengths of Aᵀ (per chunk, then summed) and each chunk's first slot in each bucket
  std::vector<std::int64_t> cnt(static_cast<std::size_t>(nt) * n, 0);
  parallel_for(nt, [&](std::int64_t c) {
    std::int64_t* mine = cnt.data() + c * n;
    for (std::int64_t p = a.row_ptr[first[c]]; p < a.row_ptr[first[c + 1]]; ++p) ++mine[a.col_idx[p]];
  }, 1);
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t len = 0;
    for (int c = 0; c < nt; ++c) len += cnt[c * n + j];
    t.row_ptr[j + 1] = t.row_ptr[j] + len;
  }
  std::vector<std::int64_t> slot(static_cast<std::size_t>(nt) * nb);  // slot[c·nb + b]
  for (std::int64_t b = 0; b < nb; ++b) {
    std::int64_t run = t.row_ptr[b * kBucket];
    for (int c = 0; c < nt; ++c) {
      slot[c * nb + b] = run;
      for (std::int64_t j = b * kBucket; j < std::min(n, (b + 1) * kBucket); ++j) run += cnt[c * n + j];
    }
  }
  std::vector<std::uint16_t> local;  // column − bucket start
  resize_huge(local, static_cast<std::size_t>(nnz));
  parallel_for(nt, [&](std::int64_t c) {
    std::int64_t* next = slot.data() + c * nb;
    for (std::int64_t i = first[c]; i < first[c + 1]; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const std::int64_t j = a.col_idx[p], q = next[j / kBucket]++;
        t.col_idx[q] = static_cast<std::int32_t>(i);
        t.values[q] = a.values[p];
        local[q] = static_cast<std::uint16_t>(j % kBucket);
      }
  }, 1);
  parallel_for(nb, [&](std::int64_t b) {
    const std::int64_t j0 = b * kBucket, j1 = std::min(n, j0 + kBucket);
    const std::int64_t q0 = t.row_ptr[j0], len = t.row_ptr[j1] - q0;
    std::vector<std::int32_t> ci(t.col_idx.begin() + q0, t.col_idx.begin() + q0 + len);
    std::vector<T> va(t.values.begin() + q0, t.values.begin() + q0 + len);
    std::int64_t at[kBucket];
    for (std::int64_t j = j0; j < j1; ++j) at[j - j0] = t.row_ptr[j];
    for (std::int64_t e = 0; e < len; ++e) {
      const std::int64_t q = at[local[q0 + e]]++;
      t.col_idx[q] = ci[e];
      t.values[q] = va[e];
    }
  }, 1);
  return t;
}

template <class T>
void csr_spmm_reference(const Csr<T>& a, const T* x, std::int64_t ldx, T* y, std::int64_t ldy,
                        int k) {
  parallel_for(a.nrows, [&](std::int64_t i) {
    for (int c = 0; c < k; ++c) {
      T s = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        s += a.values[p] * x[a.col_idx[p] + c * ldx];
      y[i + c * ldy] = s;
    }
  });
}

#define TCSOLVE_INSTANTIATE_CSR(T)                                                              \
  template Csr<T> csr_from_triplets(std::int64_t, std::int64_t, std::vector<Triplet<T>>, Symmetry); \
  template void validate(const Csr<T>&);                                                        \
  template bool is_symmetric(const Csr<T>&, double);                                            \
  template Csr<T> permute_rows(const Csr<T>&, const std::vector<std::int32_t>&);                \
  template Csr<T> permute_symmetric(const Csr<T>&, const std::vector<std::int32_t>&);           \
  template Csr<T> transpose(const Csr<T>&);                                                     \
  template void csr_spmm_reference(const Csr<T>&, const T*, std::int64_t, T*, std::int64_t, int);
TCSOLVE_INSTANTIATE_CSR(double)
TCSOLVE_INSTANTIATE_CSR(float)
template Csr<float> csr_cast(const Csr<double>&);
template Csr<double> csr_cast(const Csr<float>&);
template Csr<double> csr_cast(const Csr<double>&);

}  // namespace tcsolve
