// Block CG's public entry points (block_cg.hpp): the rungs of a solve (fp32 iterations inside
// fp64 refinement, climbing to fp64) and the chunks of a block wider than A. The solver's steps
// are in solvers/cg/.
#include "solvers/block_cg.hpp"

#include <algorithm>
#include <memory>

#include "core/error.hpp"
#include "core/format.hpp"
#include "solvers/cg/block_cg_solver.hpp"
#include "solvers/host_result.hpp"

namespace tcsolve {

namespace {

// Columns per chunk of a block of s right-hand sides for A with n rows (n of the whole A when it
// is distributed): ⌈s/k⌉ with k = ⌈s/n⌉ chunks. A block of more than n columns has rank ≤ n: its
// extra columns add no search direction, only dense work that grows as s² per pass (the s × s
// Gram products, n·s² flops) and s³ (the s × s factors and the SVQB of the deflation), with
// 7·s² doubles of small matrices. Chunks of at most n columns keep that work within the n × s
// passes (c³ ≤ n·c²), linear in s; each chunk of ~n columns then spans the whole space and
// converges in an iteration or two. Balanced widths (s = n + 1: 51 + 50 at n = 100, not 100 + 1)
// spare a narrow chunk its many iterations. s ≤ n: one block, as before.
std::int64_t chunk_width(std::int64_t s, std::int64_t n) {
  const std::int64_t k = (s + n - 1) / std::max<std::int64_t>(n, 1);
  return (s + k - 1) / std::max<std::int64_t>(k, 1);
}

// A chunk's result appended to the whole block's: its iterations follow the earlier chunks'.
void append_chunk(SolveResult& all, SolveResult&& r, std::int64_t c0, std::int64_t c, bool first) {
  const std::int64_t it0 = all.iterations;
  all.residual_norms.insert(all.residual_norms.end(), r.residual_norms.begin(), r.residual_norms.end());
  for (std::int64_t k : r.column_iterations) all.column_iterations.push_back(k >= 0 ? k + it0 : k);
  for (auto& h : r.history) h.iteration += it0;
  all.history.insert(all.history.end(), std::make_move_iterator(r.history.begin()),
                     std::make_move_iterator(r.history.end()));
  all.iterations += r.iterations;
  all.operator_applies += r.operator_applies;
  all.seconds += r.seconds;
  all.fp32_iterations += r.fp32_iterations;
  all.refinements += r.refinements;
  if (first || r.precision != "fp64") all.precision = r.precision;
  if (r.status != SolverStatus::converged && all.status == SolverStatus::converged) {
    all.status = r.status;
    all.reason = format("right-hand sides %lld-%lld: ", static_cast<long long>(c0),
                        static_cast<long long>(c0 + c - 1)) + r.reason;
  }
}

void add_stats(CgStats& t, const CgStats& c) {
  t.applies += c.applies;
  t.fused_iterations += c.fused_iterations;
  t.robust_steps += c.robust_steps;
  t.dense_budget_words += c.dense_budget_words;
  t.apply_seconds += c.apply_seconds;
  t.dense_seconds += c.dense_seconds;
}

}  // namespace

// The solver's rungs: the fp32 iteration inside fp64 refinement when CgOptions::step32 is given,
// climbing to the fp64 block CG (made on the first climb) from the current x when it must; a
// block wider than A in chunks (chunk_width), each solved alone.
struct BlockCg::Impl {
  const LinearOperator<double>& a;
  DenseBlockOps& ops;
  std::int64_t max_rhs, width;
  CgOptions opt;
  std::unique_ptr<cg::BlockCgSolver<float>> f32;
  std::unique_ptr<cg::BlockCgSolver<double>> f64;

  Impl(const LinearOperator<double>& a_, DenseBlockOps& ops_, std::int64_t s, CgOptions o)
      : a(a_), ops(ops_), max_rhs(s), width(std::min(s, ops_.global_rows(a_.rows()))), opt(std::move(o)) {
    if (opt.step32) f32 = std::make_unique<cg::BlockCgSolver<float>>(a, ops, width, opt);
    else f64 = std::make_unique<cg::BlockCgSolver<double>>(a, ops, width, opt);
  }

  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
    const std::int64_t s = rhs.cols;
    TCSOLVE_REQUIRE(s <= max_rhs, "block CG: more right-hand sides than the workspace holds");
    const std::int64_t w = chunk_width(s, ops.global_rows(a.rows()));
    if (w >= s) return solve_block(rhs, x, use_x0, x, 0);
    SolveResult all;
    all.n = a.rows();
    all.status = SolverStatus::converged;
    CgStats total;
    for (std::int64_t c0 = 0; c0 < s; c0 += w) {
      const std::int64_t c = std::min(w, s - c0);
      SolveResult r = solve_block(rhs.columns(c0, c), x.columns(c0, c), use_x0, x, c0);
      if (opt.stats) add_stats(total, *opt.stats);
      append_chunk(all, std::move(r), c0, c, c0 == 0);
    }
    if (opt.stats) *opt.stats = total;
    return all;
  }

  // One block (x the columns c0: of x_all, which checkpoints show).
  SolveResult solve_block(MvView<const double> rhs, MvView<double> x, bool use_x0,
                          MvView<const double> x_all, std::int64_t c0) {
    if (!f32) {
      f64->set_checkpoint_block(x_all, c0);
      return f64->solve(rhs, x, use_x0);
    }
    f32->set_checkpoint_block(x_all, c0);
    SolveResult r = f32->solve(rhs, x, use_x0);
    r.fp32_iterations = r.iterations;
    r.refinements = f32->refinements();
    r.precision = "fp32 iterations inside fp64 refinement (" + std::to_string(r.refinements) +
                  (r.refinements == 1 ? " step)" : " steps)");
    if (!f32->climbed()) return r;
    // Climb: the fp64 block CG from the x reached, with the iterations left. The fp32 workspace
    // goes first (the fp64 one is larger), and later solves of this A stay in fp64.
    const std::string why = f32->climb_reason();
    f32.reset();
    CgOptions o = opt;
    o.step32 = nullptr;
    f64 = std::make_unique<cg::BlockCgSolver<double>>(a, ops, width, o);
    f64->set_checkpoint_block(x_all, c0);
    f64->set_iteration_limit(std::max<std::int64_t>(1, opt.max_iterations - r.iterations));
    SolveResult r2 = f64->solve(rhs, x, true);
    f64->set_iteration_limit(opt.max_iterations);
    for (std::size_t j = 0; j < r2.column_iterations.size(); ++j)
      if (r.column_iterations[j] < 0 && r2.column_iterations[j] >= 0)
        r.column_iterations[j] = r2.column_iterations[j] + r.iterations;
    for (auto& h : r2.history) h.iteration += r.iterations;
    r.history.insert(r.history.end(), std::make_move_iterator(r2.history.begin()),
                     std::make_move_iterator(r2.history.end()));
    r.status = r2.status;
    r.reason = r2.reason;
    r.residual_norms = std::move(r2.residual_norms);
    r.iterations += r2.iterations;
    r.operator_applies += r2.operator_applies;
    r.seconds += r2.seconds;
    r.precision += ", then fp64 (" + why + ")";
    return r;
  }
};

BlockCg::BlockCg(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs,
                 CgOptions opt)
    : impl_(std::make_unique<Impl>(a, ops, max_rhs, std::move(opt))) {}
BlockCg::~BlockCg() = default;
SolveResult BlockCg::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  return impl_->solve(rhs, x, use_x0);
}

SolveResult block_cg(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb,
                     std::int64_t s, DenseBlockOps& ops, const CgOptions& opt, const double* x0) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "block CG: A must be square");
  TCSOLVE_REQUIRE(s >= 1 && ldb >= n, "block CG: need s >= 1 and ldb >= n");
  BlockCg cg(a, ops, s, opt);
  // (the host result buffer is prepared on another thread while the solve runs, so that the final
  // copy runs at pinned speed)
  return detail::solve_from_host(ops, n, rhs, ldb, s, x0,
                                 [&](MvView<const double> b, MvView<double> x, bool use_x0) {
                                   return cg.solve(b, x, use_x0);
                                 });
}

SolveResult block_cg_random(const LinearOperator<double>& a, std::uint64_t seed, std::int64_t s,
                            DenseBlockOps& ops, const CgOptions& opt, bool copy_solutions) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "block CG: A must be square");
  TCSOLVE_REQUIRE(s >= 1, "block CG: need s >= 1");
  BlockCg cg(a, ops, s, opt);
  MultiVector<double> b = ops.allocate(n, s), x = ops.allocate(n, s);
  ops.fill_random(b.view(), seed);
  std::vector<double> sol;
  std::unique_ptr<detail::HostResult> prep;
  if (copy_solutions) prep = std::make_unique<detail::HostResult>(ops, sol, n * s);
  SolveResult res = cg.solve(b.view(), x.view(), false);
  if (copy_solutions) {
    prep->wait();
    ops.to_host(x.view(), sol.data(), n);
    prep->release();
    res.solutions = std::move(sol);
  }
  ops.synchronize();
  return res;
}

}  // namespace tcsolve
