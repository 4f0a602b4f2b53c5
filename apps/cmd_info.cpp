// tcsolve info MATRIX: what the matrix is (size, symmetry, row lengths, diagonal) and how long
// it took to read; with --blocks HxW [--reorder none|jaccard] also its h×w block layout before
// and after the Jaccard row reordering, and the SpMM kernel the plan would choose.
#include <cmath>
#include <iostream>
#include <sstream>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "apps/matrix_summary.hpp"
#include "core/matrix_kind.hpp"
#include "io/matrix_io.hpp"
#include "preprocess/bcsr_stats.hpp"
#include "preprocess/jaccard_reorder.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::app {

namespace {

std::string symmetry_verdict(const MatrixSummary& s) {
  if (std::isnan(s.symmetry_defect)) return "n/a (not square)";
  if (s.symmetry_defect == 0) return "yes (exactly)";
  if (s.symmetry_defect <= 1e-12)
    return format("yes to %.1e (max |a_ij - a_ji| / max |a|)", s.symmetry_defect);
  return format("no (max |a_ij - a_ji| / max |a| = %.3g)", s.symmetry_defect);
}

// One block shape: statistics of A and of the reordered P·A (or the identity kept).
struct BlockReport {
  int h = 0, w = 0;
  BcsrStats before, after;
  bool reordered = false;  // a reordering was attempted (--reorder jaccard)
  ReorderResult reorder;   // valid when reordered
  double stats_seconds = 0;
};

// "8x4" -> (8, 4). Block shapes from 1x1 to 256x256.
std::pair<int, int> parse_block_shape(const std::string& text, const std::string& list) {
  int h = 0, w = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &h, &x, &w, &extra) != 3 || x != 'x' || h < 1 ||
      w < 1 || h > 256 || w > 256)
    throw UsageError("--blocks '" + list + "': '" + text +
                     "' is not HxW with 1 <= H, W <= 256 (e.g. 8x4 or 8x4,16x16)");
  return {h, w};
}

std::vector<std::pair<int, int>> parse_block_shapes(const std::string& list) {
  std::vector<std::pair<int, int>> shapes;
  std::size_t b = 0;
  while (true) {  // every item, empty ones included ("8x4," is an error)
    const std::size_t e = list.find(',', b);
    shapes.push_back(parse_block_shape(list.substr(b, e == std::string::npos ? e : e - b), list));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return shapes;
}

int value_bytes_of(Precision p) {
  switch (p) {
    case Precision::fp64: return 8;
    case Precision::fp32: case Precision::tf32: return 4;
    case Precision::fp16: case Precision::bf16: return 2;
  }
  return 8;
}

void print_blocks_text(const BlockReport& r, Precision precision) {
  auto line = [](const std::string& key, const std::string& value) {
    std::cout << format("%-18s %s\n", key.c_str(), value.c_str());
  };
  std::cout << "\n";
  line(format("blocks %dx%d", r.h, r.w), format("(%s values)", to_string(precision)));
  auto rows = [&](const char* label, const BcsrStats& b) {
    line(format("  %s", label), format("%lld blocks, fill %.3f", (long long)b.nblocks, b.fill));
    line("", format("blocks per block row: mean %.2f, std %.2f, max %lld", b.blocks_per_row_mean,
                    b.blocks_per_row_std, (long long)b.blocks_per_row_max));
    line("", format("%s (%lld block rows)", format_bytes(double(b.bytes)).c_str(),
                    (long long)b.nblock_rows));
  };
  rows("input order", r.before);
  if (!r.reordered) {
    line("  reordering", "none (--reorder none)");
    return;
  }
  const ReorderResult& o = r.reorder;
  if (o.applied) {
    rows((o.ordering + " order").c_str(), r.after);
    line("  reordering", format("kept (%s mode, %s): %lld -> %lld blocks (%.1f%% fewer) in %s",
                                to_string(o.mode), o.ordering.c_str(), (long long)o.blocks_before,
                                (long long)o.blocks_after,
                                o.blocks_before ? 100.0 * double(o.blocks_before - o.blocks_after) /
                                                      double(o.blocks_before)
                                                : 0.0,
                                format_seconds(o.seconds).c_str()));
  } else {
    line("  reordering", format("identity kept (%s mode): the %s order gives %lld blocks vs "
                                "%lld; took %s",
                                to_string(o.mode), o.ordering.c_str(), (long long)o.blocks_candidate,
                                (long long)o.blocks_before, format_seconds(o.seconds).c_str()));
  }
  if (!o.reason.empty()) line("  why", o.reason);
}

void print_plan_text(const SpmmPlan& p, bool reorder_asked) {
  std::cout << "\n";
  std::istringstream in(p.describe());
  std::string l;
  while (std::getline(in, l)) std::cout << l << "\n";
  if (reorder_asked && !p.reordered)
    std::cout << "  note: the plan counted blocks in the input order (it does not reorder)\n";
}

std::string stats_json(const BcsrStats& b) {
  return format("{\"blocks\": %lld, \"block_rows\": %lld, \"fill\": %s, \"blocks_per_row_mean\": %s, "
                "\"blocks_per_row_std\": %s, \"blocks_per_row_max\": %lld, \"bytes\": %lld}",
                (long long)b.nblocks, (long long)b.nblock_rows, json_number(b.fill).c_str(),
                json_number(b.blocks_per_row_mean).c_str(), json_number(b.blocks_per_row_std).c_str(),
                (long long)b.blocks_per_row_max, (long long)b.bytes);
}

std::string blocks_json(const std::vector<BlockReport>& reports) {
  std::string out = "[";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const BlockReport& r = reports[i];
    out += (i ? ", " : "") + format("{\"h\": %d, \"w\": %d, \"before\": ", r.h, r.w) +
           stats_json(r.before) + ", \"after\": " + stats_json(r.after);
    if (r.reordered)
      out += format(", \"reorder\": {\"method\": %s, \"mode\": %s, \"applied\": %s, "
                    "\"blocks_candidate\": %lld, \"seconds\": %s, \"reason\": %s}",
                    json_string(r.reorder.ordering).c_str(), json_string(to_string(r.reorder.mode)).c_str(),
                    r.reorder.applied ? "true" : "false", (long long)r.reorder.blocks_candidate,
                    json_number(r.reorder.seconds).c_str(), json_string(r.reorder.reason).c_str());
    else
      out += ", \"reorder\": {\"method\": \"none\"}";
    out += "}";
  }
  return out + "]";
}

std::string plan_json(const SpmmPlan& p) {
  return format("{\"backend\": %s, \"precision\": %s, \"cols\": %d, \"kernel\": %s, "
                "\"block_h\": %d, \"block_w\": %d, \"blocks\": %lld, \"fill\": %s, "
                "\"model_bytes_csr\": %s, \"model_bytes_bcsr\": %s, \"reason\": %s}",
                json_string(to_string(p.backend)).c_str(), json_string(to_string(p.precision)).c_str(),
                p.expected_cols, json_string(to_string(p.kernel)).c_str(), p.block_h, p.block_w,
                (long long)p.nblocks, json_number(p.fill).c_str(), json_number(p.est_bytes_csr).c_str(),
                json_number(p.est_bytes_bcsr).c_str(), json_string(p.reason).c_str());
}

// The kind (core/matrix_kind.hpp): which solve methods apply.
std::string kind_text(const MatrixKindFacts& k) {
  std::string t = to_string(k.kind);
  if (k.kind == MatrixKind::symmetric_positive) t += " (positive definite not proven: block CG finds out)";
  if (k.kind == MatrixKind::symmetric_indefinite)
    t += format(" (%lld rows with a_ii <= 0)", (long long)k.nonpositive_diagonal);
  if (k.empty_rows || k.empty_cols)
    t += format("; %lld empty rows, %lld empty columns: singular%s", (long long)k.empty_rows, (long long)k.empty_cols,
                k.kind == MatrixKind::rectangular ? " (rank deficient)" : "");
  return t;
}

void print_text(const std::string& name, const MatrixSummary& s, const MatrixKindFacts& k, double read_s) {
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
  line("kind", kind_text(k));
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

void print_json(const std::string& name, const MatrixSummary& s, const MatrixKindFacts& k, double read_s,
                const std::vector<BlockReport>& blocks, const SpmmPlan* plan) {
  auto i64 = [](std::int64_t v) { return std::to_string(v); };
  std::cout << "{\"matrix\": " << json_string(name) << ", \"rows\": " << i64(s.nrows)
            << ", \"cols\": " << i64(s.ncols) << ", \"nnz\": " << i64(s.nnz)
            << ", \"declared_symmetry\": " << json_string(s.declared_symmetry)
            << ", \"symmetry_defect\": " << json_number(s.symmetry_defect)
            << ", \"kind\": " << json_string(to_string(k.kind)) << ", \"kind_detail\": " << json_string(kind_text(k))
            << ", \"row_length\": {\"min\": " << i64(s.row_min) << ", \"mean\": "
            << json_number(s.row_mean) << ", \"max\": " << i64(s.row_max)
            << ", \"std\": " << json_number(s.row_std) << "}"
            << ", \"empty_rows\": " << i64(s.empty_rows)
            << ", \"diagonal\": {\"present\": " << i64(s.diag_present)
            << ", \"zero\": " << i64(s.diag_zero) << ", \"missing\": " << i64(s.diag_missing) << "}"
            << ", \"bandwidth\": " << i64(s.bandwidth) << ", \"abs_min\": " << json_number(s.abs_min)
            << ", \"abs_max\": " << json_number(s.abs_max) << ", \"nonfinite\": " << i64(s.nonfinite)
            << ", \"read_seconds\": " << json_number(read_s);
  if (!blocks.empty()) std::cout << ", \"block_layouts\": " << blocks_json(blocks);
  if (plan) std::cout << ", \"spmm_plan\": " << plan_json(*plan);
  std::cout << "}\n";
}

}  // namespace

int run_info(const Args& args) {
  CommandSpec spec{
      "info", "info MATRIX [options]",
      "Reads a matrix and prints its size, symmetry (declared, and whether the values are symmetric),\n"
      "row-length statistics, diagonal and the time the read took. With --blocks, also the HxW block\n"
      "layout (blocks, fill, blocks per block row, bytes) before and after the Jaccard row\n"
      "reordering, and the SpMM kernel the GPU plan chooses for this matrix.",
      std::string(matrix_argument_help), {"MATRIX"}};
  bool json = false, allow_nonfinite = false, plan = false;
  std::string blocks, reorder = "jaccard", mode = "rows", precision = "fp64", device = "cuda";
  int cols = 8;
  po::options_description opts = option_table();
  opts.add_options()
      ("json", po::bool_switch(&json), "print one JSON object instead of the table")
      ("allow-nonfinite", po::bool_switch(&allow_nonfinite),
       "accept NaN/Inf values (refused by default) and count them")
      ("blocks", po::value(&blocks)->value_name("HxW[,HxW]"),
       "block statistics for these block shapes (8x4: fp64 DMMA kernel, 16x16: fp16/bf16)")
      ("reorder", po::value(&reorder)->value_name("none|jaccard"),
       "row reordering before blocking (default jaccard; implies --blocks 8x4 when given alone)")
      ("reorder-mode", po::value(&mode)->value_name("rows|symmetric"),
       "rows: P*A (what the solvers use, default); symmetric: P*A*P^T")
      ("precision", po::value(&precision)->value_name("P"),
       "stored value precision for bytes and the plan: fp64 (default), fp32, fp16, bf16")
      ("plan", po::bool_switch(&plan), "print the SpMM plan (implied by --blocks)")
      ("plan-device", po::value(&device)->value_name("cuda|cpu"),
       "backend the plan is made for (default cuda: the model works without a GPU)")
      ("cols", po::value(&cols)->value_name("N"), "columns of X the plan is made for (default 8)");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  const std::string name = vm["MATRIX"].as<std::string>();

  // Validate every option before the read, which can take minutes.
  if (reorder != "none" && reorder != "jaccard")
    throw UsageError("--reorder '" + reorder + "': expected none or jaccard");
  if (vm.count("reorder") && blocks.empty()) blocks = "8x4";
  const auto shapes = blocks.empty() ? std::vector<std::pair<int, int>>{} : parse_block_shapes(blocks);
  ReorderOptions ropt;
  ropt.mode = parse_reorder_mode(mode);
  const Precision prec = parse_precision(precision);
  if (device != "cuda" && device != "cpu")
    throw UsageError("--plan-device '" + device + "': expected cuda or cpu");
  if (cols < 1 || cols > 4096) throw UsageError(format("--cols %d: expected 1 to 4096", cols));
  plan = plan || !shapes.empty();

  ReadOptions ro;
  ro.allow_nonfinite = allow_nonfinite;
  ProgressLine progress(!json);
  progress.update("reading " + name + " ...", true);
  Timer t;
  Csr<double> a = read_matrix(name, ro);
  const double read_s = t.seconds();
  progress.clear();
  const MatrixSummary s = summarize(a);
  const MatrixKindFacts kind = classify_matrix(a);

  std::vector<BlockReport> reports;
  for (auto [h, w] : shapes) {
    BlockReport r;
    r.h = h;
    r.w = w;
    Timer ts;
    r.before = block_stats(a, h, w, {}, {}, value_bytes_of(prec));
    r.stats_seconds = ts.seconds();
    r.after = r.before;
    if (reorder == "jaccard") {
      r.reordered = true;
      Timer tr;
      ropt.progress = [&](double f) {
        progress.update(format("reordering %dx%d: %3.0f%% (%s)", h, w, 100.0 * f,
                               format_seconds(tr.seconds()).c_str()));
      };
      r.reorder = jaccard_reorder(a, h, w, ropt);
      progress.clear();
      if (r.reorder.applied)
        r.after = block_stats(a, h, w, r.reorder.perm, r.reorder.col_perm, value_bytes_of(prec));
    }
    reports.push_back(std::move(r));
  }
  SpmmPlan sp;
  if (plan) {
    OperatorOptions oo;
    oo.precision = prec;
    oo.expected_cols = cols;
    oo.reorder = reorder != "jaccard"                    ? Reorder::none
                 : ropt.mode == ReorderMode::symmetric ? Reorder::symmetric
                                                       : Reorder::jaccard;
    sp = plan_spmm(a, device == "cuda" ? Backend::cuda : Backend::cpu, oo);
  }

  if (json) {
    print_json(name, s, kind, read_s, reports, plan ? &sp : nullptr);
    return exit_ok;
  }
  print_text(name, s, kind, read_s);
  for (const auto& r : reports) print_blocks_text(r, prec);
  if (plan) print_plan_text(sp, reorder == "jaccard");
  return exit_ok;
}

}  // namespace tcsolve::app
