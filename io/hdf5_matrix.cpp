// CSR matrices in HDF5 following anndata's csr_matrix encoding (docs/hdf5-schema.md).
//
// Reading validates everything before building the matrix: group and datasets present, dtypes
// (data float32/float64, indices and indptr int32/int64), 1-D extents, shape attribute, indptr
// starting at 0, non-decreasing and ending at nnz, column indices in range, finite values (unless
// allowed), and a declared symmetry that the values actually have. Rows with unsorted or
// duplicate column indices (legal in scipy) are sorted and their duplicates summed, as scipy's
// sum_duplicates() does.
#include "io/hdf5_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve {
namespace {

constexpr std::int64_t max_dim = (std::int64_t(1) << 31) - 1;  // 32-bit column indices

std::string normalized_group(const std::string& group) {
  std::string g = group;
  while (!g.empty() && g.back() == '/') g.pop_back();
  if (g.empty()) return "/";
  return g[0] == '/' ? g : "/" + g;
}

// a_ij == sign·a_ji for every stored entry (exact), where a missing entry counts as 0.
// O(nnz) with one cursor per row: rows i are visited in increasing order, so the entries (j, i)
// looked up in row j have increasing i and row j's cursor only moves forward. (A binary search per
// entry costs ~10x more on power-law matrices, where most lookups land in hub rows.)
bool has_symmetry(const Csr<double>& a, double sign, std::int64_t& bad_i, std::int32_t& bad_j) {
  std::vector<std::int64_t> cur(a.row_ptr.begin(), a.row_ptr.end() - 1);
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int32_t j = a.col_idx[p];
      std::int64_t& c = cur[j];
      const std::int64_t end = a.row_ptr[j + 1];
      while (c < end && a.col_idx[c] < i) ++c;
      const double aji = (c < end && a.col_idx[c] == i) ? a.values[c] : 0.0;
      if (a.values[p] != sign * aji) {
        bad_i = i;
        bad_j = j;
        return false;
      }
    }
  }
  return true;
}

inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Fast screen before the exact check: streams the arrays once, in parallel. Each off-diagonal
// entry contributes a 64-bit hash of (min(i,j), max(i,j), value as the upper entry would hold it)
// to the sum of its triangle; (skew-)symmetric matrices give equal sums. A mismatch proves
// asymmetry; equal sums are confirmed only when they can be trusted (no NaN, zero diagonal for
// skew), which a wrong matrix passes with probability ~2^-64. The exact check (random access,
// ~10x slower on power-law matrices) then runs only to locate an offending entry.
bool symmetry_screen(const Csr<double>& a, double sign) {
  const int nt = host_threads();
  std::vector<std::uint64_t> upper(nt, 0), lower(nt, 0);
  std::vector<char> trusted(nt, 1);
  parallel_for(nt, [&](std::int64_t t) {
    const std::int64_t r0 = a.nrows * t / nt, r1 = a.nrows * (t + 1) / nt;
    std::uint64_t su = 0, sl = 0;
    bool ok = true;
    for (std::int64_t i = r0; i < r1; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const std::int64_t j = a.col_idx[p];
        double v = a.values[p];
        if (std::isnan(v)) ok = false;
        if (j == i) {
          if (sign < 0 && v != 0.0) ok = false;
          continue;
        }
        if (j < i) v = sign * v;  // the value the upper entry must hold
        v += 0.0;                 // -0.0 -> +0.0: the exact check compares with ==
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        const std::uint64_t lo = static_cast<std::uint64_t>(std::min(i, j)), hi = static_cast<std::uint64_t>(std::max(i, j));
        const std::uint64_t h = mix64(mix64((lo << 32) | hi) ^ bits);
        (j > i ? su : sl) += h;
      }
    upper[t] = su;
    lower[t] = sl;
    trusted[t] = ok;
  }, 1);
  std::uint64_t su = 0, sl = 0;
  bool ok = true;
  for (int t = 0; t < nt; ++t) {
    su += upper[t];
    sl += lower[t];
    ok = ok && trusted[t];
  }
  return ok && su == sl;
}

// The shape bounds the entries as a text header does (io/text_input.hpp, InflateLimit): more
// stored entries than the nrows × ncols positions hold every position twice or more. scipy allows
// duplicates (summed here), but no writer stores more than that beyond small cases, while
// compressed datasets (accepted up to 1100:1) would let a 20 MB file of shape 2 x 2 allocate
// 12 GiB of indices and values. Refused above kDuplicateSlack entries, before any allocation.
template <class Fail>
void check_entries_fit_shape(std::int64_t entries, std::int64_t nrows, std::int64_t ncols, Fail&& fail) {
  constexpr std::int64_t kDuplicateSlack = std::int64_t(1) << 20;
  if (entries <= kDuplicateSlack || static_cast<double>(entries) <= static_cast<double>(nrows) * static_cast<double>(ncols))
    return;
  char what[300];
  std::snprintf(what, sizeof what,
                "holds %lld entries, more than the %lld x %lld positions of the shape: refused before "
                "allocating %.1f GiB (every position stored twice or more; a wrong shape attribute?)",
                static_cast<long long>(entries), static_cast<long long>(nrows), static_cast<long long>(ncols),
                12.0 * static_cast<double>(entries) / 1073741824.0);
  fail(what);
}

// The CSR group being read (anndata's csr_matrix or h5sparse's csr), and how its errors read:
// InputError "FILE: OBJECT: what".
struct CsrGroup {
  std::string path;   // the file
  std::string gpath;  // the group, normalized ("/" for the root)
  std::string gp;     // its datasets' prefix ("" for the root)
  Hdf5Group g;
  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw InputError(path, 0, object + ": " + what);
  }
};

// What the group's attributes and its datasets' headers declare.
struct CsrHeader {
  std::int64_t nrows = 0, ncols = 0;                 // the shape attribute
  std::int64_t n_data = 0, n_indices = 0, n_indptr = 0;  // the datasets' 1-D extents
  Symmetry sym = Symmetry::general;                  // the symmetry attribute (default general)
  bool csc = false;  // anndata's csc_matrix (h5sparse's csc): indptr over columns, indices are rows
};

// Opens the group `group_name` of the open file f (the root for "/" or "").
CsrGroup open_csr_group(const Hdf5File& f, const std::string& path, const std::string& group_name) {
  CsrGroup c;
  c.path = path;
  c.gpath = normalized_group(group_name);
  if (c.gpath != "/" && !f.has_group(c.gpath))
    c.fail(c.gpath, f.has(c.gpath) ? "is not a group" : "no such group (a CSR or CSC matrix group is expected here; "
                                                      "'FILE.h5:GROUP' selects another group)");
  c.g = c.gpath == "/" ? static_cast<const Hdf5Group&>(f) : f.group(c.gpath);
  c.gp = c.gpath == "/" ? "" : c.gpath;
  return c;
}

// The encoding attribute (csr_matrix, or h5sparse's csr), the shape [nrows, ncols] (integers in
// [0, 2^31 − 1]) and the declared symmetry into h.
void read_csr_attributes(const CsrGroup& c, CsrHeader& h) {
  const Hdf5Group& g = c.g;
  const std::string& gpath = c.gpath;
  std::string shape_attr = "shape";
  if (g.has_attr("encoding-type")) {
    if (g.attr_type("encoding-type") != Hdf5Type::string) c.fail(gpath + "@encoding-type", "is not a string");
    const std::string enc = g.attr_string("encoding-type");
    h.csc = enc == "csc_matrix";
    if (enc != "csr_matrix" && !h.csc)
      c.fail(gpath, "encoding-type is '" + enc + "', expected 'csr_matrix' or 'csc_matrix'");
  } else if (g.has_attr("h5sparse_format")) {  // h5sparse's convention
    const std::string fmt = g.attr_string("h5sparse_format");
    h.csc = fmt == "csc";
    if (fmt != "csr" && !h.csc) c.fail(gpath, "h5sparse_format is '" + fmt + "', expected 'csr' or 'csc'");
    shape_attr = "h5sparse_shape";
  } else {
    c.fail(gpath, "missing attribute 'encoding-type' (expected 'csr_matrix' or 'csc_matrix'): not a sparse matrix group");
  }
  if (!g.has_attr(shape_attr)) c.fail(gpath, "missing attribute '" + shape_attr + "' = [nrows, ncols]");
  const Hdf5Type st = g.attr_type(shape_attr);
  if (st == Hdf5Type::float32 || st == Hdf5Type::float64 || st == Hdf5Type::string || st == Hdf5Type::other)
    c.fail(gpath + "@" + shape_attr, std::string("has type ") + to_string(st) + ", expected integers");
  const std::vector<std::int64_t> shape = g.attr_int64s(shape_attr);
  if (shape.size() != 2) c.fail(gpath + "@" + shape_attr, "has " + std::to_string(shape.size()) + " elements, expected 2");
  for (auto d : shape)
    if (d < 0 || d > max_dim)
      c.fail(gpath + "@" + shape_attr, "dimension " + std::to_string(d) + " out of range [0, 2^31-1]");
  h.nrows = shape[0], h.ncols = shape[1];
  if (g.has_attr("symmetry")) {
    if (g.attr_type("symmetry") != Hdf5Type::string) c.fail(gpath + "@symmetry", "is not a string");
    const std::string s = g.attr_string("symmetry");
    if (s == "symmetric") h.sym = Symmetry::symmetric;
    else if (s == "skew-symmetric") h.sym = Symmetry::skew_symmetric;
    else if (s != "general")
      c.fail(gpath + "@symmetry", "is '" + s + "', expected general, symmetric or skew-symmetric");
  }
}

// The extent of the 1-D dataset `name`, after checking it is one of floats (data) or integers
// (indices, indptr).
std::int64_t dataset_length(const CsrGroup& c, const char* name, bool floating) {
  const std::string obj = c.gp + "/" + name;
  if (!c.g.has_dataset(name)) c.fail(obj, c.g.has(name) ? "is not a dataset" : "missing dataset");
  Hdf5DatasetInfo info = c.g.dataset_info(name);
  if (info.dims.size() != 1) c.fail(obj, "has rank " + std::to_string(info.dims.size()) + ", expected a 1-D dataset");
  const bool ok = floating ? (info.type == Hdf5Type::float32 || info.type == Hdf5Type::float64)
                           : (info.type == Hdf5Type::int32 || info.type == Hdf5Type::int64);
  if (!ok)
    c.fail(obj, std::string("has element type ") + to_string(info.type) + ", expected " +
                    (floating ? "float32 or float64" : "int32 or int64"));
  return info.dims[0];
}

// The attributes, then the datasets' headers (data, indices, indptr in that order).
CsrHeader read_csr_header(const CsrGroup& c) {
  CsrHeader h;
  read_csr_attributes(c, h);
  h.n_data = dataset_length(c, "data", true);
  h.n_indices = dataset_length(c, "indices", false);
  h.n_indptr = dataset_length(c, "indptr", false);
  return h;
}

// The extents agree with the shape and with each other, and bound the entries (before any read).
void check_extents(const CsrGroup& c, const CsrHeader& h) {
  const std::string& gp = c.gp;
  if (h.n_indptr != h.nrows + 1)  // (a CSC group's h holds Aᵀ's shape: its indptr runs over A's columns)
    c.fail(gp + "/indptr", "has " + std::to_string(h.n_indptr) + " elements, expected " +
                               (h.csc ? "ncols + 1 = " : "nrows + 1 = ") + std::to_string(h.nrows + 1));
  if (h.n_indices != h.n_data)
    c.fail(gp + "/indices", "has " + std::to_string(h.n_indices) + " elements but data has " + std::to_string(h.n_data));
  check_entries_fit_shape(h.n_data, h.nrows, h.ncols, [&](const std::string& what) { c.fail(gp + "/data", what); });
}

// indptr[r0 .. r0 + a.nrows] into a.row_ptr, shifted to start at 0, after checking the whole
// indptr starts at 0, ends at nnz, and does not decrease over the rows read. Returns this
// range's first entry (base); its entries are [base, base + a.row_ptr[a.nrows]).
std::int64_t read_row_pointers(const CsrGroup& c, const CsrHeader& h, std::int64_t r0, bool whole,
                               Csr<double>& a) {
  const Hdf5Group& g = c.g;
  const std::string& gp = c.gp;
  const std::int64_t nl = a.nrows, nrows = h.nrows, r1 = r0 + nl;
  a.row_ptr = whole ? g.read_int64s("indptr") : g.read_int64s_range("indptr", r0, nl + 1);
  // The whole indptr's ends, read alone when only a range is read.
  const std::int64_t first = whole ? a.row_ptr[0] : g.read_int64s_range("indptr", 0, 1)[0];
  const std::int64_t last = whole ? a.row_ptr[nrows] : g.read_int64s_range("indptr", nrows, 1)[0];
  if (first != 0) c.fail(gp + "/indptr", "indptr[0] = " + std::to_string(first) + ", expected 0");
  for (std::int64_t i = 0; i < nl; ++i)
    if (a.row_ptr[i + 1] < a.row_ptr[i])
      c.fail(gp + "/indptr", "decreases at row " + std::to_string(r0 + i) + " (" + std::to_string(a.row_ptr[i]) +
                                 " then " + std::to_string(a.row_ptr[i + 1]) + ")");
  if (last != h.n_data)
    c.fail(gp + "/indptr", "indptr[nrows] = " + std::to_string(last) + " but data/indices hold " +
                               std::to_string(h.n_data) + " entries");
  if (a.row_ptr[0] < 0 || a.row_ptr[nl] > h.n_data)
    c.fail(gp + "/indptr", "rows " + std::to_string(r0) + ".." + std::to_string(r1) + " point outside data/indices");
  // This range's entries [base, base + cnt); row offsets from 0.
  const std::int64_t base = a.row_ptr[0];
  for (auto& q : a.row_ptr) q -= base;
  return base;
}

// indices[base, base + cnt) into a.col_idx, each in [0, ncols) (int64 ones checked before they
// are narrowed to int32).
void read_column_indices(const CsrGroup& c, std::int64_t base, std::int64_t cnt, bool whole, Csr<double>& a) {
  const Hdf5Group& g = c.g;
  const std::string& gp = c.gp;
  const std::int64_t ncols = a.ncols;
  const Hdf5DatasetInfo ii = g.dataset_info("indices");
  if (ii.type == Hdf5Type::int64) {
    std::vector<std::int64_t> wide = whole ? g.read_int64s("indices") : g.read_int64s_range("indices", base, cnt);
    a.col_idx.resize(wide.size());
    for (std::int64_t p = 0; p < cnt; ++p) {
      if (wide[p] < 0 || wide[p] >= ncols)
        c.fail(gp + "/indices", "element " + std::to_string(base + p) + " = " + std::to_string(wide[p]) +
                                    " out of range [0, " + std::to_string(ncols) + ")");
      a.col_idx[p] = static_cast<std::int32_t>(wide[p]);
    }
  } else {
    a.col_idx = whole ? g.read_int32s("indices") : g.read_int32s_range("indices", base, cnt);
  }
  for (std::int64_t p = 0; p < cnt; ++p)
    if (a.col_idx[p] < 0 || a.col_idx[p] >= ncols)
      c.fail(gp + "/indices", "element " + std::to_string(base + p) + " = " + std::to_string(a.col_idx[p]) +
                                  " out of range [0, " + std::to_string(ncols) + ")");
}

// data[base, base + cnt) into a.values, finite unless allowed.
void read_values(const CsrGroup& c, std::int64_t base, std::int64_t cnt, bool whole, bool allow_nonfinite,
                 Csr<double>& a) {
  a.values = whole ? c.g.read_doubles("data") : c.g.read_doubles_range("data", base, cnt);
  if (!allow_nonfinite)
    for (std::int64_t p = 0; p < cnt; ++p)
      if (!std::isfinite(a.values[p]))
        c.fail(c.gp + "/data", "element " + std::to_string(base + p) + " is " + (std::isnan(a.values[p]) ? "NaN" : "Inf") +
                                   " (non-finite values are refused by default)");
}

// Canonical rows: sorted, duplicates summed (only when some row is not strictly increasing).
void sum_duplicates(Csr<double>& a) {
  const std::int64_t nl = a.nrows;
  bool canonical = true;
  for (std::int64_t i = 0; i < nl && canonical; ++i)
    for (std::int64_t p = a.row_ptr[i] + 1; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] <= a.col_idx[p - 1]) {
        canonical = false;
        break;
      }
  if (canonical) return;
  // In place, row by row (no nnz-sized temporary): a row already increasing moves left over
  // the duplicates removed before it; otherwise its (column, value) pairs are stable-sorted in
  // a row-sized buffer and duplicates summed in file order. The write position never passes
  // the row being read.
  std::vector<std::pair<std::int32_t, double>> row;
  std::int64_t out = 0;
  for (std::int64_t i = 0; i < nl; ++i) {
    const std::int64_t b = a.row_ptr[i], e = a.row_ptr[i + 1];
    a.row_ptr[i] = out;
    row.clear();
    for (std::int64_t p = b; p < e; ++p) row.emplace_back(a.col_idx[p], a.values[p]);
    std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    const std::int64_t start = out;
    for (const auto& [col, v] : row) {
      if (out > start && a.col_idx[out - 1] == col) {
        a.values[out - 1] += v;
      } else {
        a.col_idx[out] = col;
        a.values[out++] = v;
      }
    }
  }
  a.row_ptr[nl] = out;
  a.col_idx.resize(out);
  a.values.resize(out);
  a.col_idx.shrink_to_fit();
  a.values.shrink_to_fit();
}

// The declared (skew-)symmetry holds: a square matrix whose entries match their transposes.
void check_declared_symmetry(const CsrGroup& c, const CsrHeader& h, const Csr<double>& a) {
  if (h.nrows != h.ncols)
    c.fail(c.gpath + "@symmetry", std::string("declares ") + to_string(h.sym) + " but the matrix is " +
                                      std::to_string(h.nrows) + "x" + std::to_string(h.ncols));
  std::int64_t bi = 0;
  std::int32_t bj = 0;
  const double sign = h.sym == Symmetry::symmetric ? 1.0 : -1.0;
  if (!symmetry_screen(a, sign) && !has_symmetry(a, sign, bi, bj))
    c.fail(c.gpath + "@symmetry", std::string("declares ") + to_string(h.sym) + " but entries (" + std::to_string(bi) +
                                      ", " + std::to_string(bj) + ") and (" + std::to_string(bj) + ", " +
                                      std::to_string(bi) + ") do not match");
}

}  // namespace

// Validates the header and extents, then reads the row range's pointers, indices and values with
// their checks, canonicalizes the rows and checks the declared structure.
Csr<double> read_hdf5_matrix_rows(const std::string& path, std::int64_t r0, std::int64_t r1,
                                  const std::string& group_name, const ReadOptions& opt,
                                  std::int64_t* total_rows) {
  Hdf5File f = Hdf5File::open(path);
  const CsrGroup c = open_csr_group(f, path, group_name);
  const CsrHeader h = read_csr_header(c);
  if (total_rows) *total_rows = h.nrows;
  const bool whole = r1 < 0;
  // A CSC group of A (m × n) is the CSR of Aᵀ (n × m): read and checked as that (indptr over the
  // n columns, indices rows in [0, m)), then transposed by a counting sort (core/csr.hpp): 12·nnz
  // bytes more while it runs, no dense copy. Its rows are spread over every column: whole only.
  if (h.csc && !whole)
    c.fail(c.gpath, "a row range of a CSC group cannot be read (its rows are spread over every column); "
                    "store the matrix as CSR for distributed reads");
  CsrHeader stored = h;  // the CSR the group holds: A's, or Aᵀ's for CSC
  if (h.csc) std::swap(stored.nrows, stored.ncols);
  if (whole) r0 = 0, r1 = h.nrows;
  if (r0 < 0 || r0 > r1 || r1 > h.nrows)
    throw InvalidArgument(path + ": rows [" + std::to_string(r0) + ", " + std::to_string(r1) +
                          ") outside the matrix's " + std::to_string(h.nrows));
  check_extents(c, stored);
  Csr<double> a;
  a.nrows = whole ? stored.nrows : r1 - r0;  // rows read
  a.ncols = stored.ncols;
  const std::int64_t base = read_row_pointers(c, stored, r0, whole, a);
  const std::int64_t cnt = a.row_ptr[a.nrows];
  read_column_indices(c, base, cnt, whole, a);
  read_values(c, base, cnt, whole, opt.allow_nonfinite, a);
  sum_duplicates(a);
  if (h.csc) a = transpose(a);
  a.symmetry = whole ? h.sym : Symmetry::general;  // a range of rows is a rectangular slice
  // (A range of rows cannot show its symmetry: distributed/ callers check it otherwise.)
  if (h.sym != Symmetry::general && whole) check_declared_symmetry(c, h, a);
  if (opt.require_square && h.nrows != h.ncols)
    c.fail(c.gpath, "matrix is " + std::to_string(h.nrows) + "x" + std::to_string(h.ncols) + ", a square matrix is required");
  return a;
}

Csr<double> read_hdf5_matrix(const std::string& path, const std::string& group_name, const ReadOptions& opt) {
  return read_hdf5_matrix_rows(path, 0, -1, group_name, opt, nullptr);
}

void write_hdf5_matrix(const std::string& path, const Csr<double>& a, const std::string& group_name) {
  if (static_cast<std::int64_t>(a.row_ptr.size()) != a.nrows + 1 ||
      static_cast<std::int64_t>(a.col_idx.size()) != a.nnz() || static_cast<std::int64_t>(a.values.size()) != a.nnz())
    throw InvalidArgument("write_hdf5_matrix: inconsistent CSR arrays");
  const std::string gpath = normalized_group(group_name);
  Hdf5File f = Hdf5File::create(path, 12.0 * static_cast<double>(a.nnz()) + 8.0 * static_cast<double>(a.nrows + 1));
  {
    Hdf5Group g = gpath == "/" ? static_cast<Hdf5Group>(f) : f.create_group(gpath);
    g.set_attr("encoding-type", "csr_matrix");
    g.set_attr("encoding-version", "0.1.0");
    g.set_attr("shape", std::vector<std::int64_t>{a.nrows, a.ncols});
    g.set_attr("symmetry", to_string(a.symmetry));
    g.write("data", a.values);
    g.write("indices", a.col_idx);
    g.write("indptr", a.row_ptr);
  }
  f.close();
}

}  // namespace tcsolve
