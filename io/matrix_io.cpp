// read_matrix / write_matrix: dispatch on generator specs and file extensions.
#include "io/matrix_io.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/generators.hpp"
#include "io/hdf5_matrix.hpp"
#include "io/matrix_market.hpp"
#include "io/rutherford_boeing.hpp"
#include "io/text_input.hpp"

namespace tcsolve {
namespace {

enum class Format { matrix_market, rutherford_boeing, hdf5, unknown };

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Format format_of(const std::string& path) {
  std::string p = lower(path);
  if (ends_with(p, ".gz")) {
    p.resize(p.size() - 3);
    if (ends_with(p, ".h5") || ends_with(p, ".hdf5") || ends_with(p, ".h5ad")) return Format::unknown;  // no gzip for HDF5
  }
  if (ends_with(p, ".mtx")) return Format::matrix_market;
  for (const char* e : {".rb", ".rsa", ".rua", ".hb"})
    if (ends_with(p, e)) return Format::rutherford_boeing;
  if (ends_with(p, ".h5") || ends_with(p, ".hdf5") || ends_with(p, ".h5ad")) return Format::hdf5;
  return Format::unknown;
}

const char* supported_inputs =
    "supported: .mtx, .mtx.gz (Matrix Market), .rb .rsa .rua .hb (+ .gz) (Rutherford-Boeing), "
    ".h5 .hdf5 (HDF5 CSR or CSC group, FILE.h5:GROUP), .h5ad (anndata; its X unless FILE.h5ad:GROUP), "
    "or a generator spec gen:NAME:PARAMS";

// The group read when the spec names none: anndata's X in an .h5ad, else tcsolve's "matrix".
std::string default_group(const std::string& file) { return ends_with(lower(file), ".h5ad") ? "X" : "matrix"; }

// Splits "FILE.h5:GROUP" (also .hdf5); group is empty when the spec names only a file.
void split_hdf5_spec(const std::string& spec, std::string& file, std::string& group) {
  const std::string l = lower(spec);
  for (const char* ext : {".h5:", ".hdf5:", ".h5ad:"}) {
    std::size_t at = l.rfind(ext);
    if (at != std::string::npos) {
      const std::size_t cut = at + std::char_traits<char>::length(ext) - 1;
      file = spec.substr(0, cut);
      group = spec.substr(cut + 1);
      return;
    }
  }
  file = spec;
  group.clear();
}

void check_readable_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path, 0, "no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, 0, "is a directory, not a matrix file");
}

}  // namespace

std::optional<MatrixSizeHint> matrix_size_hint(const std::string& spec) {
  if (is_generator_spec(spec) || format_of(spec) != Format::matrix_market) return std::nullopt;
  try {
    const std::string head = read_text_prefix(spec, std::size_t(1) << 16);
    if (head.empty()) return std::nullopt;
    const MatrixMarketHeader h = parse_matrix_market_header(head.data(), head.size(), spec);
    if (!h.coordinate || h.nrows <= 0 || h.stored < 0) return std::nullopt;
    MatrixSizeHint m;
    m.rows = h.nrows;
    m.entries = h.symmetry == Symmetry::general ? h.stored : 2 * h.stored - std::min(h.stored, h.nrows);
    return m;
  } catch (const std::exception&) {
    return std::nullopt;  // a header that does not parse (or does not fit the prefix)
  }
}

std::string matrix_spec_file(const std::string& spec) {
  if (is_generator_spec(spec)) return {};
  std::string file, group;
  split_hdf5_spec(spec, file, group);
  return file;
}

bool reads_row_ranges(const std::string& spec) {
  if (is_generator_spec(spec)) return generator_rows(spec) >= 0;  // the stencils build rows alone
  std::string file, group;
  split_hdf5_spec(spec, file, group);
  return format_of(file) == Format::hdf5;
}

Csr<double> read_matrix_rows(const std::string& spec, std::int64_t r0, std::int64_t r1,
                             const ReadOptions& opt, std::int64_t* total_rows) {
  if (is_generator_spec(spec)) {
    std::int64_t n = generator_rows(spec);
    if (n < 0) n = generate(spec).nrows;  // not a stencil: built whole (generate_rows keeps the range)
    if (total_rows) *total_rows = n;
    return generate_rows(spec, r0, r1);
  }
  std::string file, group;
  split_hdf5_spec(spec, file, group);
  if (format_of(file) != Format::hdf5)
    throw InvalidArgument("'" + spec + "': only HDF5 files and generators are read by row ranges");
  check_readable_file(file);
  std::int64_t total = 0;
  Csr<double> a = read_hdf5_matrix_rows(file, r0, r1, group.empty() ? default_group(file) : group, opt, &total);
  if (total_rows) *total_rows = total;
  if (opt.require_square && a.ncols != total)
    throw InputError(file, 0, "matrix is " + std::to_string(total) + "x" + std::to_string(a.ncols) +
                                  ", a square matrix is required");
  return a;
}

Csr<double> read_matrix(const std::string& spec, const ReadOptions& opt) {
  if (spec.empty()) throw InvalidArgument("empty matrix path or spec");
  Csr<double> a;
  std::string file = spec;
  if (is_generator_spec(spec)) {
    a = generate(spec);
  } else {
    std::string group;
    split_hdf5_spec(spec, file, group);
    const Format fmt = format_of(file);
    if (!group.empty() && fmt != Format::hdf5)
      throw InvalidArgument("'" + spec + "': a :GROUP suffix is only valid for .h5/.hdf5/.h5ad files");
    if (fmt == Format::unknown)
      throw InvalidArgument("'" + spec + "': unknown matrix file extension (" + supported_inputs + ")");
    check_readable_file(file);
    switch (fmt) {
      case Format::matrix_market: a = read_matrix_market(file, opt); break;
      case Format::rutherford_boeing: a = read_rutherford_boeing(file, opt); break;
      case Format::hdf5: a = read_hdf5_matrix(file, group.empty() ? default_group(file) : group, opt); break;
      case Format::unknown: break;
    }
  }
  if (opt.require_square && !a.square())
    throw InputError(file, 0,
                     "matrix is " + std::to_string(a.nrows) + "x" + std::to_string(a.ncols) +
                         ", a square matrix is required");
  return a;
}

void write_matrix(const std::string& path_spec, const Csr<double>& a) {
  if (path_spec.empty()) throw InvalidArgument("empty output path");
  std::string path, group;
  split_hdf5_spec(path_spec, path, group);
  const std::string l = lower(path);
  const bool mtx = ends_with(l, ".mtx");
  const bool h5 = ends_with(l, ".h5") || ends_with(l, ".hdf5");
  if (!group.empty() && !h5)
    throw InvalidArgument("'" + path_spec + "': a :GROUP suffix is only valid for .h5/.hdf5 outputs");
  if (!mtx && !h5)
    throw InvalidArgument("'" + path_spec + "': cannot write this extension (supported outputs: .mtx, .h5, .hdf5, "
                          "FILE.h5:GROUP)");
  AtomicFile out(path);
  if (mtx) write_matrix_market(out.temp_path(), a);
  else write_hdf5_matrix(out.temp_path(), a, group.empty() ? "matrix" : group);
  out.commit();
}

}  // namespace tcsolve
