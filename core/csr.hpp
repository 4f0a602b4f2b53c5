// Compressed sparse row matrix on the host: 64-bit row offsets, 32-bit column indices.
//
// Contract: a Csr<T> is a plain value (copyable, movable, host memory) that every tcsolve function
// may assume to be canonical: row_ptr has nrows + 1 non-decreasing entries from 0 to nnz(),
// col_idx holds nnz() indices in [0, ncols), strictly increasing within each row, values holds
// nnz() entries, and a symmetric matrix stores BOTH triangles (`symmetry` only records what the
// source declared). The readers (io/matrix_io.hpp) and csr_from_triplets() produce canonical
// matrices; anything built by hand is checked by validate(), which throws InvalidArgument naming
// the first defect. The functions below never modify their argument.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tcsolve {

// What the source declared. The stored Csr always holds every entry (both triangles expanded).
enum class Symmetry { general, symmetric, skew_symmetric };
const char* to_string(Symmetry s);

template <class T>
struct Csr {
  std::int64_t nrows = 0;
  std::int64_t ncols = 0;
  std::vector<std::int64_t> row_ptr{0};  // [nrows + 1], row_ptr[0] = 0, non-decreasing
  std::vector<std::int32_t> col_idx;     // [nnz], sorted and unique within each row
  std::vector<T> values;                 // [nnz]
  Symmetry symmetry = Symmetry::general;

  std::int64_t nnz() const { return row_ptr.empty() ? 0 : row_ptr.back(); }
  bool square() const { return nrows == ncols; }
};

// One (row, col, value) triplet, 0-based.
template <class T>
struct Triplet {
  std::int32_t row;
  std::int32_t col;
  T value;
};

// Builds a Csr from triplets: sorts by (row, col), sums duplicates, keeps explicit zeros.
// Indices must already be in range (checked by the readers, which know file and line).
template <class T>
Csr<T> csr_from_triplets(std::int64_t nrows, std::int64_t ncols, std::vector<Triplet<T>> entries,
                         Symmetry symmetry = Symmetry::general);

// Throws InvalidArgument describing the first structural defect (offsets, ordering, ranges).
template <class T>
void validate(const Csr<T>& a);

// Converts values to another precision (same structure).
template <class U, class T>
Csr<U> csr_cast(const Csr<T>& a);

// Symmetry check of the stored values: max |a_ij - a_ji| <= tol * max|a|. O(nnz log).
template <class T>
bool is_symmetric(const Csr<T>& a, double rel_tol = 0.0);

// max |a_ij − a_ji| / max |a_ij| (0 for a zero matrix): what is_symmetric compares with its
// tolerance, as a number for messages. O(nnz log), multithreaded; sorted rows. NaN when A is not
// square (as `tcsolve info` reports it: "n/a").
double csr_symmetry_defect(const Csr<double>& a);

// The stored diagonal a_ii (0 where a row holds none). Multithreaded.
std::vector<double> csr_diagonal(const Csr<double>& a);
// ‖A‖∞ = max_i Σ_j |a_ij| (an upper bound of ‖A‖₂ for symmetric A). Multithreaded.
double csr_inf_norm(const Csr<double>& a);
// ‖A‖₁ = max_j Σ_i |a_ij| = ‖Aᵀ‖∞, equal to ‖A‖∞ only when |A| is symmetric; for any A (square
// or not) ‖A‖₂ ≤ √(‖A‖₁·‖A‖∞). Column sums per thread, as transpose's counts. Multithreaded.
double csr_one_norm(const Csr<double>& a);

// "csrhash1:<16 hex>": identifies the content whatever the file format (the results'
// matrix_checksum; batch --resume and --resume-from compare it). Defined on the little-endian
// bytes of row_ptr (int64), col_idx (int32) and values (float64), each array cut into chunks of
// 2^20 bytes (the last may be shorter); a chunk's hash starts at the FNV-1a offset basis and takes
// each whole 8-byte little-endian word w, then each byte b left over, as
//   h = (h ^ x) · 0x100000001b3 (mod 2^64);  h ^= h >> 32
// and the checksum takes the chunks' hashes in order (row_ptr's, col_idx's, values') the same
// way. Chunks hash in parallel: 0.7 GB (lap3d:200) in about 0.05 s on 16 threads, where the
// byte-at-a-time FNV-1a of earlier versions took about 1 s.
std::string csr_checksum(const Csr<double>& a);
// The earlier "fnv1a64:<hex>" (FNV-1a over every byte of the three arrays, one thread), to
// compare with results and checkpoints written by earlier versions.
std::string csr_checksum_fnv1a64(const Csr<double>& a);

// Rows of a host block (n × c, column-major, leading dimensions) through a permutation p:
// gather out[i] = in[p[i]] (scatter == false), scatter out[p[i]] = in[i] (true). Multithreaded;
// in and out must not alias.
void permute_block_rows(const double* in, std::int64_t ld_in, double* out, std::int64_t ld_out,
                        std::int64_t n, std::int64_t cols, const std::int32_t* p, bool scatter);

// Row permutation: result row i is a's row perm[i] (A' = P·A).
template <class T>
Csr<T> permute_rows(const Csr<T>& a, const std::vector<std::int32_t>& perm);

// Symmetric permutation: B = P·A·Pᵀ with B(i, j) = A(perm[i], perm[j]).
template <class T>
Csr<T> permute_symmetric(const Csr<T>& a, const std::vector<std::int32_t>& perm);

// Aᵀ (ncols × nrows), canonical: row j of Aᵀ holds column j of A in increasing row order, explicit
// zeros kept, `symmetry` copied (a symmetric or skew-symmetric declaration holds for Aᵀ too).
// A counting sort: O(nnz + ncols) work, rows split over the host threads (each thread counts and
// places its rows' entries: per-thread column counts of at most nnz·8 bytes in all). For the
// least-squares and SVD solvers' explicit transposed operator (make_sparse_operator(transpose(a))).
template <class T>
Csr<T> transpose(const Csr<T>& a);

// Y = A·X for column-major X (ncols × k, leading dim ldx) and Y (nrows × k, ldy). Multithreaded.
template <class T>
void csr_spmm_reference(const Csr<T>& a, const T* x, std::int64_t ldx, T* y, std::int64_t ldy,
                        int k);

}  // namespace tcsolve
