// What jobs share on one worker: matrices read and checked once (by spec), the dense block
// operations of each backend (one stream), the sparse operators (built or uploaded once per
// matrix, backend and precision) and the eigs planner's measurements.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/matrix_kind.hpp"
#include "core/types.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigs/plan.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::app {

// A matrix read and checked once, with what the jobs reuse.
struct PreparedMatrix {
  std::string spec;
  Csr<double> a;
  double read_seconds = 0, check_seconds = 0;
  // "csrhash1:<hex>" of the CSR arrays (core/csr.hpp), computed on first use (a pass over the
  // arrays: only results written to a file need it).
  const std::string& checksum() const {
    if (checksum_.empty()) checksum_ = csr_checksum(a);
    return checksum_;
  }
  // Whether a checksum stored by this or an earlier version ("fnv1a64:") is this matrix's.
  bool has_checksum(const std::string& stored) const {
    if (stored.rfind("fnv1a64:", 0) == 0) return csr_checksum_fnv1a64(a) == stored;
    return checksum() == stored;
  }
  double inf_norm = 0;    // ‖A‖∞ = max_i Σ_j |a_ij| (≥ ‖A‖₂ for symmetric A)
  std::vector<double> diagonal;  // square A only
  MatrixKindFacts kind;          // core/matrix_kind.hpp

 private:
  mutable std::string checksum_;
};

// What a batch shares between jobs: matrices by spec (read and checked once; dropped after their
// last use), the dense block operations of each backend (one stream), and the sparse operators
// (built/uploaded once per matrix, backend and precision).
class MatrixCache {
 public:
  MatrixCache();
  ~MatrixCache();
  // Reads and checks (finite values; the kind: core/matrix_kind.hpp) on first use. `fresh` is set
  // when this call did the read. need == symmetric (eigs, mass matrices, distributed runs):
  // InvalidArgument unless A is square and symmetric; need == any (solve): every shape.
  enum class Need { symmetric, any };
  std::shared_ptr<const PreparedMatrix> get(const std::string& spec, bool* fresh = nullptr,
                                            Need need = Need::symmetric);
  DenseBlockOps& ops(Backend backend);
  // basis == permuted: the operator of B = P·A·Pᵀ for the symmetric Jaccard/RCM reordering
  // (spmm/sparse_operator.hpp; permutation() is nullptr when the reordering was not applied).
  SparseOperator& op(const std::shared_ptr<const PreparedMatrix>& m, Backend backend,
                     Precision precision, int expected_cols, bool* fresh = nullptr,
                     OperatorBasis basis = OperatorBasis::original);
  // The planner's measurements of a matrix (with its mass matrix), kept for the next jobs on it.
  PlanMemo& memo(const std::string& matrix, const std::string& mass);
  // Forgets the matrix and its operators.
  void drop(const std::string& spec);

 private:
  std::map<std::string, std::shared_ptr<const PreparedMatrix>> matrices_;
  std::map<int, std::unique_ptr<DenseBlockOps>> ops_;
  std::map<std::string, std::unique_ptr<SparseOperator>> operators_;
  std::map<std::string, std::unique_ptr<PlanMemo>> memos_;
};

}  // namespace tcsolve::app
