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

// The plot's frame: the area, the x range and the decades of the logarithmic y axis.
struct LogFrame {
  double W = 760, H = 460, left = 80, right = 150, top = 40, bottom = 50;
  double x_min = 0, x_max = 1, d_lo = -16, d_hi = 0;
  double pw() const { return W - left - right; }
  double ph() const { return H - top - bottom; }
  double X(double x) const { return left + pw() * (x - x_min) / (x_max - x_min); }
  double Y(double v) const { return top + ph() * (d_hi - std::log10(v)) / (d_hi - d_lo); }
  // The decades around [lo, hi] (1e-16 to 1 when nothing positive was seen).
  void decades(double lo, double hi) {
    if (!(lo <= hi)) lo = 1e-16, hi = 1;
    d_lo = std::floor(std::log10(lo)), d_hi = std::ceil(std::log10(hi));
    if (d_hi <= d_lo) d_hi = d_lo + 1;
  }
};

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// The header, title, decade grid with labels, about 6 x ticks (at least min_step apart), the box
// and the axis labels.
void draw_frame(std::ostringstream& s, const LogFrame& f, const std::string& title, const char* xlabel,
                const char* ylabel, double min_step) {
  const double pw = f.pw(), ph = f.ph();
  s << format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
              "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
              f.W, f.H, f.W, f.H);
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << format("<text x=\"%.1f\" y=\"22\" font-size=\"15\">%s</text>\n", f.left, xml_escape(title).c_str());
  for (double d = f.d_lo; d <= f.d_hi + 0.5; d += 1) {
    const double y = f.Y(std::pow(10.0, d));
    s << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", f.left, y,
                f.left + pw, y);
    s << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%+03.0f</text>\n", f.left - 6, y + 4, d);
  }
  const double span = f.x_max - f.x_min;
  const double raw = span / 6, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = std::max(min_step, raw / mag < 2 ? mag : raw / mag < 5 ? 2 * mag : 5 * mag);
  for (double t = std::ceil(f.x_min / step) * step; t <= f.x_max + 1e-9; t += step)
    s << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", f.X(t), f.top + ph + 18, t);
  s << format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
              "stroke=\"black\"/>\n", f.left, f.top, pw, ph);
  s << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", f.left + pw / 2, f.H - 12, xlabel);
  s << format("<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
              "%s</text>\n", f.top + ph / 2, ylabel);
}

// A legend entry (row j at the right of the plot).
void legend(std::ostringstream& s, const LogFrame& f, std::size_t j, const char* color, const std::string& label,
            const char* dash = "") {
  s << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
              "stroke-width=\"2\"%s/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
              f.left + f.pw() + 12, f.top + 10 + 16.0 * j, f.left + f.pw() + 32, f.top + 10 + 16.0 * j, color, dash,
              f.left + f.pw() + 38, f.top + 14 + 16.0 * j, label.c_str());
}

void write_svg(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  {
    std::ofstream f(out.temp_path(), std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) throw OutputError(path + ": cannot write the plot: " + std::strerror(errno));
  }
  out.commit();
}

}  // namespace

std::string convergence_svg(const std::vector<IterationRecord>& history, std::size_t columns,
                            const std::string& title) {
  LogFrame f;
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
  f.decades(lo, hi);
  if (!history.empty()) it_min = std::min(it_min, static_cast<double>(history.front().iteration));
  if (it_max <= it_min) it_max = it_min + 1;
  f.x_min = it_min, f.x_max = it_max;
  std::ostringstream s;
  draw_frame(s, f, title, "iteration", "residual norm", 0.0);
  for (std::size_t j = 0; j < ncol; ++j) {
    std::ostringstream pts;
    std::size_t npts = 0;
    for (const auto& r : history) {
      if (j >= r.residual_norms.size()) continue;
      const double v = r.residual_norms[j];
      if (!std::isfinite(v) || v <= 0) continue;
      pts << format("%.1f,%.1f ", f.X(static_cast<double>(r.iteration)), f.Y(v));
      ++npts;
    }
    const char* color = kPalette[j % 10];
    if (npts > 0)
      s << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << color << "\" points=\""
        << pts.str() << "\"/>\n";
    if (j < 20) legend(s, f, j, color, format("column %zu", j));
  }
  s << "</svg>\n";
  return s.str();
}

void write_convergence_svg(const std::string& path, const std::vector<IterationRecord>& history,
                           std::size_t columns, const std::string& title) {
  write_svg(path, convergence_svg(history, columns, title));
}

std::string spectrum_svg(const std::vector<double>& values, const std::vector<double>& residual_av,
                         const std::vector<double>& residual_atu, double bound, const std::string& title) {
  const std::vector<const std::vector<double>*> series = {&values, &residual_av, &residual_atu};
  LogFrame f;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* v : series)
    for (double x : *v)
      if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
  if (std::isfinite(bound) && bound > 0) lo = std::min(lo, bound), hi = std::max(hi, bound);
  f.decades(lo, hi);
  f.x_min = 1, f.x_max = std::max<double>(2, static_cast<double>(values.size()));
  std::ostringstream s;
  draw_frame(s, f, title, "triplet j", "singular value / residual", 1.0);
  const char* names[] = {"singular value s_j", "|A v_j - s_j u_j|", "|A'u_j - s_j v_j|"};
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::ostringstream pts, dots;
    for (std::size_t j = 0; j < series[i]->size(); ++j) {
      const double x = (*series[i])[j];
      if (!std::isfinite(x) || x <= 0) continue;
      pts << format("%.1f,%.1f ", f.X(static_cast<double>(j + 1)), f.Y(x));
      dots << format("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", f.X(static_cast<double>(j + 1)),
                     f.Y(x), kPalette[i]);
    }
    s << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << kPalette[i] << "\" points=\"" << pts.str()
      << "\"/>\n" << dots.str() << "\n";
    legend(s, f, i, kPalette[i], names[i]);
  }
  if (std::isfinite(bound) && bound > 0) {
    s << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-dasharray=\"6 4\"/>\n", f.left, f.Y(bound), f.left + f.pw(), f.Y(bound), kPalette[7]);
    legend(s, f, series.size(), kPalette[7], "tol * s_1", " stroke-dasharray=\"6 4\"");
  }
  s << "</svg>\n";
  return s.str();
}

void write_spectrum_svg(const std::string& path, const std::vector<double>& values,
                        const std::vector<double>& residual_av, const std::vector<double>& residual_atu,
                        double bound, const std::string& title) {
  write_svg(path, spectrum_svg(values, residual_av, residual_atu, bound, title));
}

}  // namespace tcsolve::app
