// Row partition of a square sparse A over the ranks, and each rank's pieces of it.
//
// Rank r owns rows [starts[r], starts[r+1]) of A and of every block of vectors (a 1D row
// partition: contiguous ranges, so a rank's share of a block is a plain column-major block). Its
// rows of A split into
//   interior: the entries whose column it owns, as a rows × rows CSR in local numbering (applied
//             to the rank's own block while the halo is in flight);
//   per peer p: the entries whose column p owns, as a (rows touching p) × (halo from p) CSR,
//             applied to the halo block received from p and added into those rows.
// The halo from p is the sorted list of p's rows that appear as columns here; p sends exactly
// those rows, in that order (send_rows on p), learned at setup with one all-to-all of index lists.
// Bytes per apply of k columns: 8·k·(Σ halo) received and as many sent, per rank.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "distributed/comm.hpp"

namespace tcsolve {

struct RowPartition {
  std::vector<std::int64_t> starts;  // parts + 1 entries, starts[0] = 0, starts.back() = n
  int parts() const { return static_cast<int>(starts.size()) - 1; }
  std::int64_t rows(int r) const { return starts[r + 1] - starts[r]; }
  int owner(std::int64_t row) const;
  // Contiguous ranges of n/parts rows (the first n % parts ranges one row longer).
  static RowPartition even(std::int64_t n, int parts);
  // Given starts (tests: uneven partitions); checked.
  static RowPartition from_starts(std::vector<std::int64_t> starts);
};

// How the rows are split: contiguous ranges, or METIS k-way on A's graph with the rows renumbered
// so that each part is a contiguous range of B = P·A·Pᵀ. auto: METIS when it cuts fewer edges
// (entries a_ij, i ≠ j, with i and j on different ranks; each pair counted once) than the
// contiguous ranges, and METIS is built in.
enum class PartitionMethod { automatic, contiguous, metis };
PartitionMethod parse_partition_method(const std::string& s);  // auto|contiguous|metis

struct PartitionChoice {
  RowPartition part;                // ranges of the (renumbered) rows
  std::vector<std::int32_t> perm;   // B(i, j) = A(perm[i], perm[j]); empty: no renumbering
  std::int64_t cut_contiguous = 0;  // edges cut by the contiguous ranges
  std::int64_t cut = 0;             // by the chosen partition
  std::string how;                  // "contiguous ranges (edge cut 400)", "METIS k-way (...)"
};
// On the process that holds the whole (structurally symmetric) A. metis without METIS built in:
// NotCompiled; automatic then keeps the contiguous ranges and says so.
PartitionChoice choose_partition(const Csr<double>& a, int parts, PartitionMethod method);
// Edges (i < j, a_ij ≠ 0 stored) whose rows lie on different parts (part_of_row: one per row).
std::int64_t edge_cut(const Csr<double>& a, const std::vector<int>& part_of_row);

namespace detail {
// METIS_PartGraphKway on A's graph (diagonal dropped): a part per row. Throws NotCompiled
// without METIS (partition_metis_stub.cpp).
std::vector<int> metis_parts(const Csr<double>& a, int parts, std::int64_t* cut);
bool metis_available();
}  // namespace detail

struct HaloPeer {
  int rank = 0;
  std::vector<std::int32_t> send_rows;      // local rows p needs, in p's halo order
  std::vector<std::int32_t> boundary_rows;  // local rows with entries in p's columns
  Csr<double> boundary;                     // boundary_rows.size() × halo (halo column numbering)
  std::int64_t halo = 0;                    // rows received from p per column
};

struct LocalParts {
  std::int64_t global_rows = 0;
  std::int64_t row0 = 0;   // first global row owned here
  Csr<double> interior;    // rows × rows, local numbering
  std::vector<HaloPeer> peers;  // by rank; a peer is listed if anything goes either way
  std::int64_t halo_rows() const;  // Σ halo
  std::int64_t send_rows() const;  // Σ send_rows
};

// Collective: `mine` holds this rank's rows (mine.nrows == part.rows(comm.rank())) with global
// column indices (mine.ncols = n). Throws InvalidArgument when the shapes disagree with the
// partition or a column is out of range.
LocalParts build_local_parts(const Csr<double>& mine, const RowPartition& part,
                             Communicator& comm);

}  // namespace tcsolve
