// The SVG charts of report.html. Fixed 960-unit-wide view boxes scaled by CSS; coordinates
// printed with one decimal so the file stays small; native <title> tooltips instead of a
// script.
#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>

#include "common/format.h"

namespace gpuwatch::collector::html {
namespace {

constexpr double kWidth = 960;

std::string N(double v) { return Printf("%.1f", v); }

// The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) at or above v, so
// axis ticks are short and the data fills most of the width.
double NiceMax(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

std::string Text(double x, double y, const std::string& s, const char* anchor = "start",
                 const char* cls = "lbl") {
  return "<text x=\"" + N(x) + "\" y=\"" + N(y) + "\" text-anchor=\"" + anchor +
         "\" class=\"" + cls + "\">" + Esc(s) + "</text>";
}

std::string Line(double x1, double y1, double x2, double y2, const char* cls) {
  return "<line x1=\"" + N(x1) + "\" y1=\"" + N(y1) + "\" x2=\"" + N(x2) + "\" y2=\"" + N(y2) +
         "\" class=\"" + cls + "\"/>";
}

std::string Open(double height, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + N(kWidth) + " " +
         N(height) + "\" width=\"" + N(kWidth) + "\" height=\"" + N(height) + "\" role=\"img\"" +
         Attr("aria-label", label) + ">";
}

// Ticks 0 .. max along x in [x0, x1] at baseline y, with a unit on the last one.
std::string XAxis(double x0, double x1, double y, double max, const std::string& unit) {
  std::string out = Line(x0, y, x1, y, "axis");
  for (int i = 0; i <= 5; ++i) {
    const double x = x0 + (x1 - x0) * i / 5;
    out += Line(x, y, x, y + 4, "axis");
    out += Text(x, y + 16, Tick(max * i / 5) + (i == 5 ? " " + unit : ""),
                i == 0 ? "start" : i == 5 ? "end" : "middle");
  }
  return out;
}

}  // namespace

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

std::string Attr(std::string_view name, std::string_view value) {
  return " " + std::string(name) + "=\"" + Esc(value) + "\"";
}

std::string Tick(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 100) return Printf("%.0f", v);
  if (a >= 10) return Printf("%.1f", v);
  if (a >= 1) return Printf("%.2f", v);
  return Printf("%.3g", v);
}

std::string UtilizationSvg(const std::vector<UtilRow>& rows, const std::string& chart, const std::string& caption) {
  constexpr double kLeft = 170, kRight = 10, kRowH = 30, kGap = 8, kTop = 6;
  double t_max = 0;
  for (const auto& r : rows)
    t_max = std::max(t_max, r.offset_s + r.window_s * static_cast<double>(r.busy.size()));
  t_max = NiceMax(t_max);
  const double x0 = kLeft, x1 = kWidth - kRight;
  const auto X = [&](double t) { return x0 + (x1 - x0) * t / t_max; };
  const double height = kTop + rows.size() * (kRowH + kGap) + 26;
  std::string out = Open(height, caption);
  double y = kTop;
  for (const auto& r : rows) {
    const double base = y + kRowH;
    out += "<rect x=\"" + N(x0) + "\" y=\"" + N(y) + "\" width=\"" + N(x1 - x0) +
           "\" height=\"" + N(kRowH) + "\" class=\"track\"/>";
    out += Line(x0, y + kRowH / 2, x1, y + kRowH / 2, "grid");
    // Two short lines beside the track: a long one would run off the chart's left edge.
    if (r.note.empty()) {
      out += Text(kLeft - 8, y + kRowH / 2 + 4, r.label, "end");
    } else {
      out += Text(kLeft - 8, y + kRowH / 2 - 2, r.label, "end");
      out += Text(kLeft - 8, y + kRowH / 2 + 11, r.note, "end", "lbl sub");
    }
    // A step line: each window's share held flat across the window.
    std::string d = "M" + N(X(r.offset_s)) + "," + N(base);
    for (size_t i = 0; i < r.busy.size(); ++i) {
      const double v = std::clamp(r.busy[i], 0.0, 1.0);
      const double ya = base - v * kRowH;
      d += " L" + N(X(r.offset_s + r.window_s * i)) + "," + N(ya) + " L" +
           N(X(r.offset_s + r.window_s * (i + 1))) + "," + N(ya);
    }
    d += " L" + N(X(r.offset_s + r.window_s * r.busy.size())) + "," + N(base) + " Z";
    double sum = 0;
    for (double v : r.busy) sum += v;
    out += "<path d=\"" + d + "\"" + Attr("class", "util " + chart) + Attr("data-chart", chart) +
           Attr("data-rank", std::to_string(r.rank)) +
           Attr("data-points", std::to_string(r.busy.size())) +
           Attr("data-window-s", Printf("%g", r.window_s)) +
           Attr("data-mean", Printf("%.3f", r.busy.empty() ? 0.0 : sum / r.busy.size())) +
           "><title>" + Esc(r.label + " " + r.note) + Printf(": %zu windows of %s", r.busy.size(),
                                             FmtDuration(r.window_s).c_str()) +
           "</title></path>";
    y += kRowH + kGap;
  }
  out += XAxis(x0, x1, y, t_max, "s");
  return out + "</svg>";
}

std::string StackedBarsSvg(const std::vector<StackPart>& parts, const std::vector<StackRow>& rows,
                           const std::string& unit, const std::string& marker_label, const std::string& chart,
                           const std::string& caption) {
  constexpr double kLeft = 170, kRight = 120, kRowH = 20, kGap = 8, kTop = 6;
  double max = 0;
  for (const auto& r : rows) {
    double sum = 0;
    for (double v : r.values) sum += std::max(0.0, v);
    max = std::max({max, sum, r.marker});
  }
  max = NiceMax(max);
  const double x0 = kLeft, x1 = kWidth - kRight;
  const auto W = [&](double v) { return (x1 - x0) * v / max; };
  const double height = kTop + rows.size() * (kRowH + kGap) + 26;
  std::string out = Open(height, caption);
  double y = kTop;
  for (const auto& r : rows) {
    out += Text(kLeft - 8, y + kRowH / 2 + 4, r.label, "end");
    double x = x0, sum = 0;
    for (size_t i = 0; i < parts.size() && i < r.values.size(); ++i) {
      const double v = std::max(0.0, r.values[i]);
      sum += v;
      out += "<rect x=\"" + N(x) + "\" y=\"" + N(y) + "\" width=\"" + Printf("%.2f", W(v)) +
             "\" height=\"" + N(kRowH) + "\"" + Attr("fill", parts[i].color) +
             Attr("data-chart", chart) + Attr("data-rank", std::to_string(r.rank)) +
             Attr("data-part", parts[i].key) + Attr("data-value", Printf("%g", v)) + "><title>" +
             Esc(r.label + " " + parts[i].label + ": " + Tick(v) + " " + unit) +
             "</title></rect>";
      x += W(v);
    }
    // The label names the tick, not the parts' sum: the parts may overlap or leave time out.
    out += Text(std::max(x, x0 + W(r.marker)) + 5, y + kRowH / 2 + 4,
                (r.marker >= 0 ? marker_label + " " + Tick(r.marker) : Tick(sum)) + " " + unit);
    if (r.marker >= 0) {
      const double mx = x0 + W(r.marker);
      out += "<line x1=\"" + N(mx) + "\" y1=\"" + N(y - 3) + "\" x2=\"" + N(mx) + "\" y2=\"" +
             N(y + kRowH + 3) + "\" class=\"marker\"" + Attr("data-chart", chart + "-marker") +
             Attr("data-rank", std::to_string(r.rank)) +
             Attr("data-value", Printf("%g", r.marker)) + "><title>" +
             Esc(r.label + " " + marker_label + " step: " + Tick(r.marker) + " " + unit) + "</title></line>";
    }
    y += kRowH + kGap;
  }
  out += XAxis(x0, x1, y, max, unit);
  return out + "</svg>";
}

std::string LegendHtml(const std::vector<StackPart>& parts) {
  std::string out = "<div class=\"legend\">";
  for (const auto& p : parts)
    out += "<span><i" + Attr("style", "background:" + p.color) + "></i>" + Esc(p.label) +
           "</span>";
  return out + "</div>";
}

std::string GroupedBarsSvg(const std::vector<BarGroup>& groups, const std::string& chart,
                           const std::string& unit) {
  constexpr double kLeft = 60, kRight = 10, kTop = 24, kPlotH = 200, kBottom = 44;
  double max = 0;
  for (const auto& g : groups)
    for (const auto& [rank, v] : g.bars) max = std::max(max, v);
  max = NiceMax(max);
  const double x0 = kLeft, x1 = kWidth - kRight, base = kTop + kPlotH;
  std::string out = Open(kTop + kPlotH + kBottom, chart + " per operation and rank");
  for (int i = 0; i <= 4; ++i) {
    const double y = base - kPlotH * i / 4;
    out += Line(x0, y, x1, y, i ? "grid" : "axis");
    out += Text(x0 - 6, y + 4, Tick(max * i / 4), "end");
  }
  out += Text(x0 - 6, kTop - 10, unit, "end");
  const double gw = groups.empty() ? 0 : (x1 - x0) / groups.size();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const BarGroup& g = groups[gi];
    const double gx = x0 + gw * gi;
    const double bw = g.bars.empty() ? 0 : std::min(28.0, gw * 0.8 / g.bars.size());
    double x = gx + (gw - bw * g.bars.size()) / 2;
    for (const auto& [rank, v] : g.bars) {
      const double h = kPlotH * std::max(0.0, v) / max;
      out += "<rect x=\"" + N(x) + "\" y=\"" + N(base - h) + "\" width=\"" +
             Printf("%.2f", std::max(0.5, bw - 1)) + "\" height=\"" + N(h) + "\"" +
             Attr("fill", kBarColor) +
             Attr("data-chart", chart) + Attr("data-op", g.key) +
             Attr("data-rank", std::to_string(rank)) + Attr("data-value", Printf("%g", v)) +
             "><title>" + Esc(g.key + Printf(" rank %d: %s ", rank, Tick(v).c_str()) + unit) +
             "</title></rect>";
      if (bw >= 14) out += Text(x + bw / 2, base + 14, std::to_string(rank), "middle", "lbl sub");
      x += bw;
    }
    out += Text(gx + gw / 2, base + 34, g.key, "middle");
  }
  return out + "</svg>";
}

}  // namespace gpuwatch::collector::html
