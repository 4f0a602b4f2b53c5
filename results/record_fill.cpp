// What a solver's result tells the record (results/record.hpp): one conversion for the job
// pipeline (apps/job/pipeline.cpp) and the Python module (python/src/results.cpp).
#include <utility>

#include "results/record.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve {

void record_eigs(EigsResult& er, ResultRecord& r) {
  r.status = to_string(er.status), r.reason = er.reason, r.method = er.method;
  r.iterations = er.iterations, r.operator_applies = er.operator_applies;
  // the pairs: values, true residuals, what the test allowed, error bounds
  r.eigenvalues = er.values, r.residual_norms = er.residual_norms;
  r.residual_bounds = er.residual_bounds, r.error_bounds = er.error_bounds;
  r.a_norm = er.a_norm, r.b_norm = er.b_norm, r.convergence_test = to_string(er.conv);
  // the set's verification
  r.verification = to_string(er.verification), r.certified = to_string(er.certified);
  r.certificate = er.certificate;
  // the plan: method, transformation, prediction, precision, factorization
  r.method_reason = er.why, r.predicted_seconds = er.predicted_seconds;
  r.transform = er.transform, r.sigma = er.sigma, r.has_sigma = r.has_sigma || er.transform == "shift-invert";
  r.precision_used = er.precision, r.solve_steps = er.solve_steps, r.factorization = er.factor;
  r.time_plan = er.plan_seconds, r.time_solve = er.solve_seconds, r.time_verify = er.verify_seconds;
  r.vectors = std::move(er.vectors);
  r.history = std::move(er.history);
}

void record_solve(SolveResult& sr, ResultRecord& r) {
  r.status = to_string(sr.status), r.reason = sr.reason, r.method = sr.method.empty() ? "block_cg" : sr.method;
  r.backward_errors = sr.backward_errors, r.optimality = sr.optimality;
  r.iterations = sr.iterations, r.operator_applies = sr.operator_applies;
  r.residual_norms = sr.residual_norms, r.column_iterations = sr.column_iterations;
  r.precision_used = sr.precision;
  r.vectors = std::move(sr.solutions);
  r.history = std::move(sr.history);
}

void record_svds(SvdResult& sr, ResultRecord& r) {
  r.status = to_string(sr.status), r.reason = sr.reason, r.method = sr.method, r.method_reason = sr.method_reason;
  r.iterations = sr.iterations, r.operator_applies = sr.operator_applies;
  r.rows = sr.m, r.cols = sr.n, r.k = sr.k, r.tolerance = sr.tol, r.a_norm = sr.a_norm;
  r.singular_values = sr.values, r.residual_av = sr.residual_av, r.residual_atu = sr.residual_atu;
  r.explained_variance = sr.explained_variance(), r.explained_variance_ratio = sr.explained_variance_ratio();
  r.total_sq = sr.total_sq;
  r.certified = to_string(sr.certified), r.certificate = sr.certificate, r.verification = sr.verification;
  if (!sr.spmm_kernel.empty()) r.spmm_kernel = sr.spmm_kernel, r.spmm_plan = sr.spmm_plan;
  r.means = std::move(sr.means);
  r.scales = std::move(sr.scales);
  r.left_vectors = std::move(sr.u);
  r.vectors = std::move(sr.v);
  r.history = std::move(sr.history);
  r.time_setup += sr.phases.setup_s, r.time_solve = sr.phases.iterate_s, r.time_verify = sr.phases.verify_s;
}

}  // namespace tcsolve
