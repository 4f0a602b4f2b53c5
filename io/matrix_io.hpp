// One entry point for every matrix source: files by extension, or generator specs.
//
// Contract: read_matrix() returns a canonical Csr<double> (core/csr.hpp: both triangles of a
// symmetric file expanded, column indices sorted, duplicates summed, explicit zeros kept) or
// throws -- InputError "FILE:LINE: what" for malformed, truncated, oversized or non-finite data,
// InvalidArgument for a bad spec; it never returns a partial matrix. Declared sizes are checked
// against what the file can hold before anything is allocated. `symmetry` records the file's
// declaration; whether the VALUES are symmetric is the caller's check (is_symmetric).
// write_matrix() replaces `path` atomically (temporary file + rename) or leaves it as it was.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/csr.hpp"

namespace tcsolve {

struct ReadOptions {
  bool allow_nonfinite = false;  // NaN/Inf values are refused unless this is set
  bool require_square = false;   // refuse non-square matrices (solvers set this)
};

// spec: "gen:NAME:PARAMS[+scramble]" (io/generators.hpp), or a path ending in
// .mtx / .mtx.gz (Matrix Market), .rb .rsa .rua .hb (+ .gz) (Rutherford-Boeing/Harwell-Boeing),
// .h5 / .hdf5 (HDF5 CSR group "/matrix", see docs/hdf5-schema.md; "FILE.h5:GROUP" picks another).
// Throws InputError (file, line, what) for malformed data, InvalidArgument for a bad spec.
Csr<double> read_matrix(const std::string& spec, const ReadOptions& opt = {});

// Rows [r0, r1) of the matrix a spec names (global column indices), without reading the rest:
// HDF5 groups by hyperslab (io/hdf5_matrix.hpp), lap2d/lap3d generators by building those rows;
// other generators build the whole matrix and keep the range. total_rows (optional): the matrix's
// rows (for a range [0, 0): the size alone). Files of other formats (Matrix Market, RB) cannot
// be read by rows: InvalidArgument. reads_row_ranges: HDF5 specs and the stencil generators (the
// specs whose rows cost no more than their share).
Csr<double> read_matrix_rows(const std::string& spec, std::int64_t r0, std::int64_t r1,
                             const ReadOptions& opt = {}, std::int64_t* total_rows = nullptr);
bool reads_row_ranges(const std::string& spec);

// What a cheap look at a spec tells of its size, without reading the matrix: Matrix Market files
// (plain or gzip) from their size line; nothing for other sources (nullopt), nor on any error
// (the reader reports those). entries: the stored entries with a symmetric file's upper
// triangle counted (2·stored − rows: the diagonal is assumed full).
struct MatrixSizeHint {
  std::int64_t rows = 0, entries = 0;
};
std::optional<MatrixSizeHint> matrix_size_hint(const std::string& spec);

// The file a spec reads ("FILE.h5:GROUP" -> "FILE.h5"); "" for a generator spec.
std::string matrix_spec_file(const std::string& spec);

// Writes by extension: .mtx (coordinate real general, or symmetric lower triangle when
// a.symmetry == symmetric and the values are symmetric) or .h5. Atomic: a temporary file in the
// same folder is renamed over the target only when complete.
void write_matrix(const std::string& path, const Csr<double>& a);

}  // namespace tcsolve
