// Convergence plot as a hand-written SVG (no dependency): residual norm against iteration, one
// line per column, logarithmic y axis with a grid line per decade.
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

}  // namespace tcsolve::app
