#include "apps/cli.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "io/matrix_io.hpp"

namespace tcsolve::app {

namespace {
const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();
}  // namespace

double process_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - kProcessStart).count();
}

std::string command_help(const CommandSpec& spec, const po::options_description& options) {
  std::ostringstream os;
  os << "Usage: tcsolve " << spec.synopsis << "\n\n" << spec.summary << "\n\n";
  os << options;
  if (!spec.details.empty()) os << "\n" << spec.details;
  if (spec.details.empty() || spec.details.back() != '\n') os << "\n";
  return os.str();
}

int parse_gpus_option(const std::string& gpus) {
  if (gpus == "all") return 0;
  char* end = nullptr;
  const long v = std::strtol(gpus.c_str(), &end, 10);
  if (gpus.empty() || *end != '\0' || v < 1 || v > 1024)
    throw UsageError("--gpus " + gpus + ": a count of GPUs (1, 2, ...) or all");
  return static_cast<int>(v);
}

bool parse_command(const CommandSpec& spec, po::options_description& options,
                   const std::vector<std::string>& args, po::variables_map& vm) {
  options.add_options()("help,h", "print this help and exit");
  // --help anywhere wins, even next to other mistakes: the user asked how to call us.
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << command_help(spec, options);
      return false;
    }
  po::options_description hidden;
  po::positional_options_description pos;
  for (const auto& name : spec.positional) {
    hidden.add_options()(name.c_str(), po::value<std::string>());
    pos.add(name.c_str(), 1);
  }
  po::options_description all;
  all.add(options).add(hidden);
  // No guessing of abbreviated long options: a typo must not silently select another option.
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  po::store(po::command_line_parser(args).options(all).positional(pos).style(style).run(), vm);
  for (const auto& name : spec.positional)
    if (!vm.count(name))
      throw UsageError("missing argument " + name + " (usage: tcsolve " + spec.synopsis + ")");
  po::notify(vm);
  return true;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled && stderr_is_terminal()) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  double now = since_start_.seconds();
  if (!force && last_draw_ >= 0 && now - last_draw_ < 0.1) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r%s\x1b[K", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
  shown_ = false;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? format("%.0f B", bytes) : format("%.2f %s", bytes, units[u]);
}

std::string format_seconds(double s) {
  if (s < 10) return format("%.3f s", s);
  if (s < 120) return format("%.1f s", s);
  long t = std::lround(s);
  return format("%ld min %02ld s", t / 60, t % 60);
}

const char* const matrix_argument_help =
    "MATRIX is a file or a generator spec:\n"
    "  FILE.mtx, FILE.mtx.gz          Matrix Market (coordinate or array; real, integer, pattern)\n"
    "  FILE.rb .rsa .rua .hb (+.gz)   Rutherford-Boeing / Harwell-Boeing (assembled, real)\n"
    "  FILE.h5[:GROUP]                HDF5 CSR group (default /matrix; docs/hdf5-schema.md)\n"
    "  gen:lap2d:NX[xNY]              5-point Dirichlet Laplacian (4 on the diagonal, -1 off)\n"
    "  gen:lap3d:N                    7-point Dirichlet Laplacian on an N^3 grid\n"
    "  gen:elast3d:N                  SPD, 3 unknowns per node of an N^3 grid, 27-point coupling\n"
    "  gen:band:N:B                   random values within bandwidth B\n"
    "  gen:random:N:K                 about K random non-zeros per row\n"
    "  gen:rmat:SCALE:EF              Laplacian of an R-MAT power-law graph\n"
    "  ...+scramble, ...@SEED         random symmetric permutation; seed (default 1)\n";

bool ends_with(const std::string& path, const std::string& suffix) {
  return path.size() >= suffix.size() &&
         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void require_writable_matrix_format(const std::string& path) {
  // FILE.h5:GROUP (io/matrix_io.hpp split_hdf5_spec): the matrix at GROUP of a new FILE.h5.
  const std::string file = matrix_spec_file(path);
  const bool h5 = ends_with(file, ".h5") || ends_with(file, ".hdf5");
  if (file != path && h5) {
    if (file.size() + 1 == path.size())
      throw UsageError("cannot write '" + path + "': empty GROUP after ':' (FILE.h5:GROUP)");
    return;
  }
  if (ends_with(path, ".mtx") || h5) return;
  throw UsageError("cannot write '" + path +
                   "': unsupported output format (the name must end in .mtx, .h5 or .hdf5, or be "
                   "FILE.h5:GROUP)");
}

void check_output_path(const std::string& what, const std::string& path,
                       const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError(what + ": no such folder '" + dir + "'");
  if (::access(dir.c_str(), W_OK) != 0) throw UsageError(what + ": folder '" + dir + "' is not writable");
  if (fs::is_directory(path, ec)) throw UsageError(what + ": is a folder");
  for (const std::string& in : inputs)
    if (fs::exists(in, ec) && fs::exists(path, ec) && fs::equivalent(in, path, ec))
      throw UsageError(what + ": is the input file '" + in + "' (the result would replace it)");
}

}  // namespace tcsolve::app
