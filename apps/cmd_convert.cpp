// tcsolve convert IN OUT and tcsolve generate SPEC OUT: any supported input to .mtx or .h5.
// The output is written atomically by write_matrix (temporary file renamed when complete).
#include <iostream>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve::app {

namespace {

const char* const output_help =
    "OUT is written atomically (a temporary file in the same folder, renamed when complete):\n"
    "  OUT.mtx          Matrix Market coordinate real: 'symmetric' (lower triangle) when the\n"
    "                   input was declared symmetric and its values are, 'general' otherwise;\n"
    "                   values with 17 significant digits (exact round trip)\n"
    "  OUT.h5, .hdf5    HDF5 CSR group /matrix (anndata's csr_matrix convention, readable with\n"
    "                   h5py + scipy.sparse; see docs/hdf5-schema.md)\n"
    "  OUT.h5:GROUP     the same group at GROUP (e.g. run.h5:inputs/A) of a new file: an existing\n"
    "                   OUT.h5 is replaced as a whole (atomically; its other groups are not kept)\n";

int read_and_write(const std::string& in, const std::string& out, bool allow_nonfinite,
                   bool quiet) {
  require_writable_matrix_format(out);  // before a read that may take minutes
  // Its folder too; OUT may name IN (the matrix is read completely before the atomic write).
  check_output_path("'" + out + "'", matrix_spec_file(out));
  ReadOptions ro;
  ro.allow_nonfinite = allow_nonfinite;
  Timer t_read;
  Csr<double> a = read_matrix(in, ro);
  const double read_s = t_read.seconds();
  Timer t_write;
  write_matrix(out, a);
  const double write_s = t_write.seconds();
  if (!quiet)
    std::cout << format("%s: %lld x %lld, %lld non-zeros, %s (read %s, write %s)\n", out.c_str(),
                        (long long)a.nrows, (long long)a.ncols, (long long)a.nnz(),
                        to_string(a.symmetry), format_seconds(read_s).c_str(),
                        format_seconds(write_s).c_str());
  return exit_ok;
}

}  // namespace

int run_convert(const Args& args) {
  CommandSpec spec{"convert", "convert IN OUT [options]",
                   "Reads a matrix (any supported file or a gen: spec) and writes it as .mtx or .h5.",
                   std::string("IN is any MATRIX argument. ") + matrix_argument_help + "\n" +
                       output_help,
                   {"IN", "OUT"}};
  bool allow_nonfinite = false, quiet = false;
  po::options_description opts = option_table();
  opts.add_options()
      ("allow-nonfinite", po::bool_switch(&allow_nonfinite), "accept NaN/Inf values (refused by default)")
      ("quiet,q", po::bool_switch(&quiet), "print nothing on success");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  return read_and_write(vm["IN"].as<std::string>(), vm["OUT"].as<std::string>(), allow_nonfinite,
                        quiet);
}

int run_generate(const Args& args) {
  CommandSpec spec{"generate", "generate SPEC OUT [options]",
                   "Generates a test matrix from a gen: spec and writes it as .mtx or .h5\n"
                   "(deterministic: the same spec and seed give the same matrix).",
                   std::string("SPEC is gen:NAME:PARAMS[+scramble][@SEED]. ") +
                       matrix_argument_help + "\n" + output_help,
                   {"SPEC", "OUT"}};
  bool quiet = false;
  po::options_description opts = option_table();
  opts.add_options()("quiet,q", po::bool_switch(&quiet), "print nothing on success");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  const std::string gen = vm["SPEC"].as<std::string>();
  if (!is_generator_spec(gen))
    throw UsageError("'" + gen + "' is not a generator spec (expected gen:NAME:PARAMS, e.g. " +
                     "gen:lap2d:100; see 'tcsolve generate --help')");
  return read_and_write(gen, vm["OUT"].as<std::string>(), false, quiet);
}

}  // namespace tcsolve::app
