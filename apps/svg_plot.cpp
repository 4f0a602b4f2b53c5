#include "apps/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "apps/cli.hpp"
#include "io/atomic_file.hpp"

namespace tcsolve::app {

namespace {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

}  // namespace

std::string convergence_svg(const std::vector<IterationRecord>& history, std::size_t columns,
                            const std::string& title) {
  const double W = 760, H = 460, left = 80, right = 150, top = 40, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  double it_min = 0, it_max = 1, lo = INFINITY, hi = -INFINITY;
  std::size_t ncol = 0;
  for (const auto& r : history) {
    it_max = std::max(it_max, static_cast<double>(r.iteration));
    const std::size_t c = std::min(columns, r.residual_norms.size());
    ncol = std::max(ncol, c);
    for (std::size_t j = 0; j < c; ++j) {
      const double v = r.residual_norms[j];
      if (std::isfinite(v) && v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (!(lo <= hi)) lo = 1e-16, hi = 1;
  double d_lo = std::floor(std::log10(lo)), d_hi = std::ceil(std::log10(hi));
  if (d_hi <= d_lo) d_hi = d_lo + 1;
  if (!history.empty()) it_min = std::min(it_min, static_cast<double>(history.front().iteration));
  if (it_max <= it_min) it_max = it_min + 1;
  auto X = [&](double it) { return left + pw * (it - it_min) / (it_max - it_min); };
  auto Y = [&](double v) { return top + ph * (d_hi - std::log10(v)) / (d_hi - d_lo); };

  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::ostringstream s;
  s << format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
              "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
              W, H, W, H);
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << format("<text x=\"%.1f\" y=\"22\" font-size=\"15\">%s</text>\n", left,
              xml_escape(title).c_str());
  // Decade grid and labels.
  for (double d = d_lo; d <= d_hi + 0.5; d += 1) {
    const double y = Y(std::pow(10.0, d));
    s << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
                left, y, left + pw, y);
    s << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%+03.0f</text>\n", left - 6,
                y + 4, d);
  }
  // Iteration ticks: about 6.
  const double span = it_max - it_min;
  const double raw = span / 6, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? mag : raw / mag < 5 ? 2 * mag : 5 * mag;
  for (double t = std::ceil(it_min / step) * step; t <= it_max + 1e-9; t += step)
    s << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", X(t),
                top + ph + 18, t);
  s << format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
              "stroke=\"black\"/>\n", left, top, pw, ph);
  s << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration</text>\n",
              left + pw / 2, H - 12);
  s << format("<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
              "residual norm</text>\n", top + ph / 2);
  for (std::size_t j = 0; j < ncol; ++j) {
    std::ostringstream pts;
    std::size_t npts = 0;
    for (const auto& r : history) {
      if (j >= r.residual_norms.size()) continue;
      const double v = r.residual_norms[j];
      if (!std::isfinite(v) || v <= 0) continue;
      pts << format("%.1f,%.1f ", X(static_cast<double>(r.iteration)), Y(v));
      ++npts;
    }
    const char* color = palette[j % 10];
    if (npts > 0)
      s << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << color << "\" points=\""
        << pts.str() << "\"/>\n";
    if (j < 20)
      s << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                  "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">column %zu</text>\n",
                  left + pw + 12, top + 10 + 16.0 * j, left + pw + 32, top + 10 + 16.0 * j, color,
                  left + pw + 38, top + 14 + 16.0 * j, j);
  }
  s << "</svg>\n";
  return s.str();
}

void write_convergence_svg(const std::string& path, const std::vector<IterationRecord>& history,
                           std::size_t columns, const std::string& title) {
  AtomicFile out(path);
  {
    std::ofstream f(out.temp_path(), std::ios::binary | std::ios::trunc);
    f << convergence_svg(history, columns, title);
    f.close();
    if (!f) throw OutputError(path + ": cannot write the plot: " + std::strerror(errno));
  }
  out.commit();
}

}  // namespace tcsolve::app
