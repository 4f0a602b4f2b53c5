// Plots as hand-written SVG (no dependency), logarithmic y axis with a grid line per decade:
// the convergence plot (residual norm against iteration, one line per column) and svds' spectrum
// (singular values and both residuals of each triplet against its index).
#pragma once
#include <string>
#include <vector>

#include "solvers/result.hpp"

namespace tcsolve::app {

// SVG text for the first `columns` residual columns of `history` (non-finite and non-positive
// values are skipped). `title` goes above the plot.
std::string convergence_svg(const std::vector<IterationRecord>& history, std::size_t columns,
                            const std::string& title);

// Writes the SVG atomically (temporary file + rename).
void write_convergence_svg(const std::string& path, const std::vector<IterationRecord>& history,
                           std::size_t columns, const std::string& title);

// svds: s_j, ‖A·v_j − s_j·u_j‖ and ‖Aᵀ·u_j − s_j·v_j‖ against j = 1..k (markers joined by
// lines), and the test's bound tol·s₁ as a dashed line (`bound` ≤ 0: none).
std::string spectrum_svg(const std::vector<double>& values, const std::vector<double>& residual_av,
                         const std::vector<double>& residual_atu, double bound, const std::string& title);
void write_spectrum_svg(const std::string& path, const std::vector<double>& values,
                        const std::vector<double>& residual_av, const std::vector<double>& residual_atu,
                        double bound, const std::string& title);

}  // namespace tcsolve::app
