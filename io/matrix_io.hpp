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

// The file a spec reads ("FILE.h5:GROUP" -> "FILE.h5"); "" for a generator spec.
std::string matrix_spec_file(const std::string& spec);

// Writes by extension: .mtx (coordinate real general, or symmetric lower triangle when
// a.symmetry == symmetric and the values are symmetric) or .h5. Atomic: a temporary file in the
// same folder is renamed over the target only when complete.
void write_matrix(const std::string& path, const Csr<double>& a);

}  // namespace tcsolve
