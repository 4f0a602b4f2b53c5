#include "distributed/partition.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

int RowPartition::owner(std::int64_t row) const {
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), row) - starts.begin()) - 1;
}

RowPartition RowPartition::even(std::int64_t n, int parts) {
  TCSOLVE_REQUIRE(parts >= 1 && n >= 0, "RowPartition::even: need parts >= 1");
  RowPartition p;
  p.starts.resize(parts + 1);
  const std::int64_t q = n / parts, r = n % parts;
  p.starts[0] = 0;
  for (int i = 0; i < parts; ++i) p.starts[i + 1] = p.starts[i] + q + (i < r ? 1 : 0);
  return p;
}

RowPartition RowPartition::from_starts(std::vector<std::int64_t> starts) {
  if (starts.size() < 2 || starts.front() != 0)
    throw InvalidArgument("row partition: need at least one range, starting at row 0");
  for (std::size_t i = 1; i < starts.size(); ++i)
    if (starts[i] < starts[i - 1])
      throw InvalidArgument("row partition: range " + std::to_string(i - 1) + " ends before it starts");
  RowPartition p;
  p.starts = std::move(starts);
  return p;
}

PartitionMethod parse_partition_method(const std::string& s) {
  if (s == "auto") return PartitionMethod::automatic;
  if (s == "contiguous") return PartitionMethod::contiguous;
  if (s == "metis") return PartitionMethod::metis;
  throw InvalidArgument("partition '" + s + "': expected auto, contiguous or metis");
}

std::int64_t edge_cut(const Csr<double>& a, const std::vector<int>& part_of_row) {
  std::int64_t cut = 0;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const std::int64_t j = a.col_idx[e];
      if (j > i && part_of_row[i] != part_of_row[j]) ++cut;
    }
  return cut;
}

PartitionChoice choose_partition(const Csr<double>& a, int parts, PartitionMethod method) {
  PartitionChoice c;
  c.part = RowPartition::even(a.nrows, parts);
  std::vector<int> owner(a.nrows);
  for (int r = 0; r < parts; ++r)
    for (std::int64_t i = c.part.starts[r]; i < c.part.starts[r + 1]; ++i) owner[i] = r;
  c.cut_contiguous = c.cut = edge_cut(a, owner);
  c.how = "contiguous ranges (edge cut " + std::to_string(c.cut) + ")";
  if (method == PartitionMethod::contiguous || parts == 1) return c;
  if (method == PartitionMethod::automatic && !detail::metis_available()) {
    c.how += "; METIS not built in";
    return c;
  }
  std::int64_t metis_cut = 0;
  const std::vector<int> mp = detail::metis_parts(a, parts, &metis_cut);
  metis_cut = edge_cut(a, mp);  // counted as above (METIS's objective counts the same edges)
  std::vector<std::int64_t> count(parts, 0);
  for (int p : mp) ++count[p];
  bool empty_part = false;
  for (auto k : count) empty_part = empty_part || k == 0;
  if (method == PartitionMethod::automatic && (metis_cut >= c.cut_contiguous || empty_part)) {
    c.how += "; METIS k-way cut " + std::to_string(metis_cut) + (empty_part ? " and left a rank empty" : "") +
             ": kept the ranges";
    return c;
  }
  if (empty_part) throw InvalidArgument("METIS left a rank without rows: use fewer ranks");
  // Rows renumbered part by part (original order within a part).
  std::vector<std::int64_t> start(parts + 1, 0);
  for (int r = 0; r < parts; ++r) start[r + 1] = start[r] + count[r];
  c.part = RowPartition::from_starts(start);
  c.perm.resize(a.nrows);
  std::vector<std::int64_t> at(start.begin(), start.end() - 1);
  for (std::int64_t i = 0; i < a.nrows; ++i) c.perm[at[mp[i]]++] = static_cast<std::int32_t>(i);
  c.cut = metis_cut;
  c.how = "METIS k-way (edge cut " + std::to_string(metis_cut) + " against " +
          std::to_string(c.cut_contiguous) + " for contiguous ranges)";
  return c;
}

std::int64_t LocalParts::halo_rows() const {
  std::int64_t s = 0;
  for (const auto& p : peers) s += p.halo;
  return s;
}
std::int64_t LocalParts::send_rows() const {
  std::int64_t s = 0;
  for (const auto& p : peers) s += static_cast<std::int64_t>(p.send_rows.size());
  return s;
}

namespace {

// What pass 1 finds in one block of rows: its halo columns per owner (unsorted), the rows with a
// column of another rank (in order), and the first column outside the matrix.
struct RowBlockScan {
  std::vector<std::vector<std::int64_t>> need;
  std::vector<std::int64_t> off_rows;
  std::int64_t bad_row = -1, bad_col = 0;
};

// Pass 1 over rows [b, e): interior entries per row counted into counts[i + 1], the rest listed.
void scan_rows(const Csr<double>& mine, const RowPartition& part, std::int64_t r0, std::int64_t b, std::int64_t e,
               std::vector<std::int64_t>& counts, RowBlockScan& out) {
  const std::int64_t n = part.starts.back(), nl = mine.nrows;
  out.need.assign(part.parts(), {});
  for (std::int64_t i = b; i < e; ++i) {
    std::int64_t inner = 0;
    bool off = false;
    for (std::int64_t k = mine.row_ptr[i]; k < mine.row_ptr[i + 1]; ++k) {
      const std::int64_t c = mine.col_idx[k];
      if (c < 0 || c >= n) {
        if (out.bad_row < 0) out.bad_row = i, out.bad_col = c;
      } else if (c >= r0 && c < r0 + nl) {
        ++inner;
      } else {
        out.need[part.owner(c)].push_back(c);
        off = true;
      }
    }
    counts[i + 1] = inner;
    if (off) out.off_rows.push_back(i);
  }
}

// Peer p's boundary block: the rows (of `off_rows`) with a column p owns, numbered by position in
// need (sorted halo columns of p).
void boundary_of(const Csr<double>& mine, const RowPartition& part, int p, const std::vector<std::int64_t>& need,
                 const std::vector<std::int64_t>& off_rows, HaloPeer& hp) {
  Csr<double>& b = hp.boundary;
  b.ncols = hp.halo;
  b.symmetry = Symmetry::general;
  b.row_ptr.assign(1, 0);
  const std::int64_t c0 = part.starts[p], c1 = part.starts[p + 1];
  for (std::int64_t i : off_rows) {
    const std::size_t before = b.col_idx.size();
    for (std::int64_t e = mine.row_ptr[i]; e < mine.row_ptr[i + 1]; ++e) {
      const std::int64_t c = mine.col_idx[e];
      if (c < c0 || c >= c1) continue;
      b.col_idx.push_back(static_cast<std::int32_t>(std::lower_bound(need.begin(), need.end(), c) - need.begin()));
      b.values.push_back(mine.values[e]);
    }
    if (b.col_idx.size() != before) {
      hp.boundary_rows.push_back(static_cast<std::int32_t>(i));
      b.row_ptr.push_back(static_cast<std::int64_t>(b.col_idx.size()));
    }
  }
  b.nrows = static_cast<std::int64_t>(hp.boundary_rows.size());
}

}  // namespace

// Two parallel passes over blocks of rows (count, then copy the interior entries), the halo
// columns merged per owner, one exchange of the lists, and each peer's boundary block from the
// rows that have off-rank columns only (a few per cent of the rows for a stencil's slab).
LocalParts build_local_parts(const Csr<double>& mine, const RowPartition& part,
                             Communicator& comm) {
  const int me = comm.rank(), np = comm.size();
  if (part.parts() != np)
    throw InvalidArgument("row partition of " + std::to_string(part.parts()) + " ranges for " +
                          std::to_string(np) + " ranks");
  const std::int64_t n = part.starts.back(), r0 = part.starts[me], nl = part.rows(me);
  if (mine.nrows != nl || mine.ncols != n)
    throw InvalidArgument("rank " + std::to_string(me) + " holds a " + std::to_string(mine.nrows) +
                          " x " + std::to_string(mine.ncols) + " slice; its range is " +
                          std::to_string(nl) + " rows of " + std::to_string(n));
  LocalParts lp;
  lp.global_rows = n;
  lp.row0 = r0;

  // Pass 1: per block of rows, the interior count of each row and the halo columns per owner.
  const std::int64_t blocks = std::max<std::int64_t>(1, std::min<std::int64_t>(256, nl / 16384));
  std::vector<RowBlockScan> scans(static_cast<std::size_t>(blocks));
  Csr<double>& in = lp.interior;
  in.nrows = in.ncols = nl;
  in.symmetry = Symmetry::general;
  resize_huge(in.row_ptr, static_cast<std::size_t>(nl + 1));  // (zeroed; huge pages: a fault per 2 MiB)
  parallel_for(blocks, [&](std::int64_t t) {
    scan_rows(mine, part, r0, nl * t / blocks, nl * (t + 1) / blocks, in.row_ptr, scans[t]);
  }, 1);
  for (const RowBlockScan& sc : scans)  // the first bad row (blocks are in row order)
    if (sc.bad_row >= 0)
      throw InvalidArgument("row " + std::to_string(r0 + sc.bad_row) + ": column " + std::to_string(sc.bad_col) +
                            " outside the matrix (" + std::to_string(n) + " columns)");
  for (std::int64_t i = 0; i < nl; ++i) in.row_ptr[i + 1] += in.row_ptr[i];
  // Pass 2: the interior entries, local column numbers.
  resize_huge(in.col_idx, static_cast<std::size_t>(in.row_ptr[nl]));
  resize_huge(in.values, static_cast<std::size_t>(in.row_ptr[nl]));
  parallel_for(nl, [&](std::int64_t i) {
    std::int64_t o = in.row_ptr[i];
    for (std::int64_t e = mine.row_ptr[i]; e < mine.row_ptr[i + 1]; ++e) {
      const std::int64_t c = mine.col_idx[e];
      if (c >= r0 && c < r0 + nl) in.col_idx[o] = static_cast<std::int32_t>(c - r0), in.values[o++] = mine.values[e];
    }
  });
  std::vector<std::vector<std::int64_t>> need(np);
  std::vector<std::int64_t> off_rows;
  for (RowBlockScan& sc : scans) {
    for (int p = 0; p < np; ++p) need[p].insert(need[p].end(), sc.need[p].begin(), sc.need[p].end());
    off_rows.insert(off_rows.end(), sc.off_rows.begin(), sc.off_rows.end());
  }
  for (auto& v : need) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  // Each owner learns which of its rows it sends, in the order they are received here.
  const std::vector<std::vector<std::int64_t>> asked = comm.alltoall_lists(need);

  for (int p = 0; p < np; ++p) {
    if (p == me || (need[p].empty() && asked[p].empty())) continue;
    HaloPeer hp;
    hp.rank = p;
    hp.halo = static_cast<std::int64_t>(need[p].size());
    for (std::int64_t g : asked[p]) {
      if (g < r0 || g >= r0 + nl)
        throw Error("halo setup: rank " + std::to_string(p) + " asked for row " + std::to_string(g) +
                    ", not owned by rank " + std::to_string(me));
      hp.send_rows.push_back(static_cast<std::int32_t>(g - r0));
    }
    if (hp.halo > 0) boundary_of(mine, part, p, need[p], off_rows, hp);
    else hp.boundary.ncols = 0, hp.boundary.symmetry = Symmetry::general, hp.boundary.row_ptr.assign(1, 0);
    lp.peers.push_back(std::move(hp));
  }
  return lp;
}

}  // namespace tcsolve
