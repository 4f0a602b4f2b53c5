// tcsolve info MATRIX: what the matrix is (size, symmetry, row lengths, diagonal) and how long
// it took to read.
#include <cmath>
#include <iostream>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "apps/matrix_summary.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve::app {

namespace {

std::string symmetry_verdict(const MatrixSummary& s) {
  if (std::isnan(s.symmetry_defect)) return "n/a (not square)";
  if (s.symmetry_defect == 0) return "yes (exactly)";
  if (s.symmetry_defect <= 1e-12)
    return format("yes to %.1e (max |a_ij - a_ji| / max |a|)", s.symmetry_defect);
  return format("no (max |a_ij - a_ji| / max |a| = %.3g)", s.symmetry_defect);
}

void print_text(const std::string& name, const MatrixSummary& s, double read_s) {
  auto line = [](const char* key, const std::string& value) {
    std::cout << format("%-18s %s\n", key, value.c_str());
  };
  line("matrix", name);
  line("size", format("%lld x %lld%s", (long long)s.nrows, (long long)s.ncols,
                      s.nrows == s.ncols ? "" : " (not square)"));
  line("non-zeros", format("%lld (%.3g%% dense)", (long long)s.nnz,
                           s.nrows && s.ncols ? 100.0 * double(s.nnz) / (double(s.nrows) * double(s.ncols)) : 0.0));
  line("symmetry", "declared " + s.declared_symmetry);
  line("values symmetric", symmetry_verdict(s));
  line("row lengths", format("min %lld, mean %.3f, max %lld, std %.3f", (long long)s.row_min,
                             s.row_mean, (long long)s.row_max, s.row_std));
  line("empty rows", std::to_string(s.empty_rows));
  line("diagonal", format("%lld present (%lld of them zero), %lld missing", (long long)s.diag_present,
                          (long long)s.diag_zero, (long long)s.diag_missing));
  line("bandwidth", std::to_string(s.bandwidth));
  line("|values|", format("min %.6g, max %.6g", s.abs_min, s.abs_max));
  if (s.nonfinite) line("non-finite values", std::to_string(s.nonfinite));
  line("read time", format_seconds(read_s));
}

void print_json(const std::string& name, const MatrixSummary& s, double read_s) {
  auto i64 = [](std::int64_t v) { return std::to_string(v); };
  std::cout << "{\"matrix\": " << json_string(name) << ", \"rows\": " << i64(s.nrows)
            << ", \"cols\": " << i64(s.ncols) << ", \"nnz\": " << i64(s.nnz)
            << ", \"declared_symmetry\": " << json_string(s.declared_symmetry)
            << ", \"symmetry_defect\": " << json_number(s.symmetry_defect)
            << ", \"row_length\": {\"min\": " << i64(s.row_min) << ", \"mean\": "
            << json_number(s.row_mean) << ", \"max\": " << i64(s.row_max)
            << ", \"std\": " << json_number(s.row_std) << "}"
            << ", \"empty_rows\": " << i64(s.empty_rows)
            << ", \"diagonal\": {\"present\": " << i64(s.diag_present)
            << ", \"zero\": " << i64(s.diag_zero) << ", \"missing\": " << i64(s.diag_missing) << "}"
            << ", \"bandwidth\": " << i64(s.bandwidth) << ", \"abs_min\": " << json_number(s.abs_min)
            << ", \"abs_max\": " << json_number(s.abs_max) << ", \"nonfinite\": " << i64(s.nonfinite)
            << ", \"read_seconds\": " << json_number(read_s) << "}\n";
}

}  // namespace

int run_info(const Args& args) {
  CommandSpec spec{"info", "info MATRIX [options]",
                   "Reads a matrix and prints its size, symmetry (declared, and whether the values "
                   "are symmetric),\nrow-length statistics, diagonal and the time the read took.",
                   std::string(matrix_argument_help), {"MATRIX"}};
  bool json = false, allow_nonfinite = false;
  po::options_description opts = option_table();
  opts.add_options()
      ("json", po::bool_switch(&json), "print one JSON object instead of the table")
      ("allow-nonfinite", po::bool_switch(&allow_nonfinite),
       "accept NaN/Inf values (refused by default) and count them");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  const std::string name = vm["MATRIX"].as<std::string>();

  ReadOptions ro;
  ro.allow_nonfinite = allow_nonfinite;
  Timer t;
  Csr<double> a = read_matrix(name, ro);
  const double read_s = t.seconds();
  const MatrixSummary s = summarize(a);
  if (json) print_json(name, s, read_s);
  else print_text(name, s, read_s);
  return exit_ok;
}

}  // namespace tcsolve::app
