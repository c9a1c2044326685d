// Inline SVG charts for report.html, drawn in C++ so the report needs no script and no
// library. Every chart takes plain numbers and labels; labels are escaped here. Each drawn
// mark carries data-* attributes (chart, rank, value) so tests (and users with a DOM
// inspector) can check what a chart holds without reading pixels.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gpuwatch::collector::html {

// Text for HTML element content and attribute values: & < > " ' escaped, control
// characters (but tab/newline) replaced by '?'. Every string from a rank goes through it.
std::string Esc(std::string_view s);
// ` name="value"` with the value escaped.
std::string Attr(std::string_view name, std::string_view value);

// One filled step-line per rank: the GPU busy share (0..1) of consecutive windows.
struct UtilRow {
  std::string label;     // "rank 0 · host"
  std::string note;      // a second, smaller line under the label ("busy 18%"); may be empty
  int rank = 0;
  double offset_s = 0;   // where the first window starts on the shared time axis
  double window_s = 0;   // width of each window
  std::vector<double> busy;
};
// Small multiples on one time axis (0 .. the latest row end). `chart`: the paths'
// data-chart and CSS class (device memory uses the same drawing), `caption` the chart's label.
std::string UtilizationSvg(const std::vector<UtilRow>& rows, const std::string& chart = "util",
                           const std::string& caption = "GPU busy share over time, one row per rank");

// Horizontal stacked bars, one row per rank; `parts` names the segments (with colours),
// `marker` (if >= 0) draws a tick at that value, e.g. the median step time, and the row's
// label at its end names it (`marker_label` and the value); without one the label is the sum.
struct StackPart {
  std::string key, label, color;
};
struct StackRow {
  std::string label;
  int rank = 0;
  std::vector<double> values;  // one per part
  double marker = -1;
};
// `chart`: the marks' data-chart (the tick's is chart + "-marker"), `caption` the chart's label.
std::string StackedBarsSvg(const std::vector<StackPart>& parts, const std::vector<StackRow>& rows,
                           const std::string& unit, const std::string& marker_label = "median",
                           const std::string& chart = "steps",
                           const std::string& caption = "Where each rank's step time goes");
// A chart's colour legend, as HTML: every chart has one, printed just above it.
std::string LegendHtml(const std::vector<StackPart>& parts);

// Vertical grouped bars: one group per key (collective op), one bar per rank in it, in one
// colour (kBarColor), the rank's number under its bar where it fits.
struct BarGroup {
  std::string key;
  std::vector<std::pair<int, double>> bars;  // (rank, value)
};
inline constexpr const char* kBarColor = "#76b7b2";
std::string GroupedBarsSvg(const std::vector<BarGroup>& groups, const std::string& chart,
                           const std::string& unit);

// "0", "2.5", "120": short tick labels.
std::string Tick(double v);

}  // namespace gpuwatch::collector::html
