#include "apps/job/cache.hpp"

#include "apps/cli.hpp"
#include "core/trace.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace tcsolve::app {

MatrixCache::MatrixCache() = default;
MatrixCache::~MatrixCache() = default;

namespace {

// eigs and block CG: A square and symmetric (what the stored kind says), else InvalidArgument.
void require_symmetric(const PreparedMatrix& m) {
  const Csr<double>& a = m.a;
  if (!a.square())
    throw InputError(m.spec, 0, format("matrix is %lld x %lld, a square matrix is required", (long long)a.nrows,
                                       (long long)a.ncols));
  if (m.kind.kind == MatrixKind::unsymmetric)
    throw InvalidArgument(format("%s is not symmetric (max |a_ij - a_ji| / max |a| = %.3g): the "
                                 "eigensolvers need a symmetric matrix",
                                 m.spec.c_str(), m.kind.asymmetry));
}

}  // namespace

std::shared_ptr<const PreparedMatrix> MatrixCache::get(const std::string& spec, bool* fresh, Need need) {
  if (fresh) *fresh = false;
  auto it = matrices_.find(spec);
  if (it != matrices_.end()) {
    if (need == Need::symmetric) require_symmetric(*it->second);
    return it->second;
  }
  auto m = std::make_shared<PreparedMatrix>();
  m->spec = spec;
  ReadOptions ro;
  // (every shape is read; the kind says which solves apply: require_symmetric, below)
  Timer tr;
  m->a = read_matrix(spec, ro);
  m->read_seconds = tr.seconds();
  trace_mark("matrix: read");
  Timer tc;
  const Csr<double>& a = m->a;
  // Symmetry is checked, not assumed (a "general" file may hold a symmetric matrix, or not).
  // Generators build both triangles from one formula (tests/io/test_generators checks every
  // kind): symmetric by construction, not checked again (18 ms at 1M rows on the H200).
  const bool by_construction = is_generator_spec(spec) && a.symmetry == Symmetry::symmetric;
  m->kind = classify_matrix(a, 1e-12, by_construction);
  if (need == Need::symmetric) require_symmetric(*m);
  trace_mark("matrix: symmetry checked");
  if (a.square()) m->diagonal = csr_diagonal(a);
  m->inf_norm = csr_inf_norm(a);
  m->check_seconds = tc.seconds();
  matrices_[spec] = m;
  if (fresh) *fresh = true;
  return m;
}

DenseBlockOps& MatrixCache::ops(Backend backend) {
  auto& p = ops_[static_cast<int>(backend)];
  if (!p) p = make_dense_ops(backend);
  return *p;
}

SparseOperator& MatrixCache::op(const std::shared_ptr<const PreparedMatrix>& m, Backend backend,
                                Precision precision, int expected_cols, bool* fresh,
                                OperatorBasis basis) {
  const bool permuted = basis == OperatorBasis::permuted;
  const std::string key = m->spec + "|" + to_string(backend) + "|" + to_string(precision) +
                          (permuted ? "|permuted" : "");
  auto& p = operators_[key];
  if (fresh) *fresh = !p;
  if (!p) {
    OperatorOptions oo;
    oo.precision = precision;
    oo.stream = ops(backend).stream();
    oo.expected_cols = expected_cols;
    if (permuted) oo.reorder = Reorder::symmetric, oo.basis = OperatorBasis::permuted;
    p = make_sparse_operator(m->a, backend, oo);
  }
  return *p;
}

PlanMemo& MatrixCache::memo(const std::string& matrix, const std::string& mass) {
  auto& p = memos_[matrix + "|" + mass];
  if (!p) p = std::make_unique<PlanMemo>();
  return *p;
}

void MatrixCache::drop(const std::string& spec) {
  matrices_.erase(spec);
  for (auto it = memos_.begin(); it != memos_.end();)
    it = it->first.rfind(spec + "|", 0) == 0 || it->first.find("|" + spec) != std::string::npos
             ? memos_.erase(it) : std::next(it);
  for (auto it = operators_.begin(); it != operators_.end();)
    it = it->first.rfind(spec + "|", 0) == 0 ? operators_.erase(it) : std::next(it);
}

}  // namespace tcsolve::app
