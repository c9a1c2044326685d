// See html_page.h.
#include "report/html_page.h"

#include "common/kernel_names.h"

namespace gpuwatch::collector::html {

std::string NumCell(const std::string& v) { return "<td class=\"n\">" + Esc(v) + "</td>"; }

std::string NameHtml(const std::string& full, const std::string& readable) {
  return "<code class=\"name\"" + Attr("title", full) + ">" + Esc(ShortName(readable.empty() ? full : readable)) +
         "</code>";
}

const char* PageCss() {
  return R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2430;background:#fff}
body{margin:0 auto;max-width:1000px;padding:16px 20px}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
.meta{color:#5a6475}
.verdict{background:#f3f6fb;border-left:4px solid #4e79a7;padding:10px 14px;margin:14px 0}
.verdict{font-size:15px}
.verdict.bad{border-left-color:#c0392b}
.finding{border:1px solid #d8dde6;border-radius:6px;padding:8px 12px;margin:8px 0}
.finding h3{font-size:15px;margin:0 0 4px}
.frames{margin:4px 0}.frames ol{margin:2px 0 2px 20px;padding:0}
.sev{display:inline-block;border-radius:3px;padding:0 6px;margin-right:6px}
.sev{color:#fff;font-size:12px}
.sev-high{background:#c0392b}
.sev-medium{background:#d68910}
.sev-low{background:#7f8c8d}
.fix{margin:4px 0 0}
.fix b{color:#2e7d32}
.what{margin:2px 0 4px;font-weight:600}
.why{border-left:3px solid #d8dde6;padding:2px 0 2px 10px;margin:6px 0}
table.ev,table.evl{margin:4px 0}
table.evl{width:auto}
table.ev>tbody>tr>td{max-width:0}
div.evl{overflow-x:auto}
table.ev>tbody>tr>th{background:none;color:#5a6475;font-weight:normal;width:1%;white-space:nowrap}
table.evl th{font-weight:normal}
code.name{display:inline-block;max-width:min(100%,80ch);white-space:nowrap;overflow:hidden;text-overflow:ellipsis;vertical-align:bottom;word-break:normal}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eceff4;vertical-align:top}
th{background:#f6f8fa}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.name{word-break:break-all}
code{font:12px ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
.bar{background:#4e79a7;height:8px;border-radius:2px;min-width:1px}
svg{max-width:100%;height:auto;display:block}
svg .lbl{font:12px system-ui,sans-serif;fill:#1d2430}
svg .axis{stroke:#8a94a6;stroke-width:1}
svg .grid{stroke:#e3e7ee;stroke-width:1}
svg .track{fill:#f6f8fa}
svg .util{fill:#4e79a7;fill-opacity:.75;stroke:#2f5d8a;stroke-width:.8}
svg .util.memory{fill:#59a14f;stroke:#3b7a34}
svg .lbl.sub{font-size:11px;fill:#5a6475}
svg .marker{stroke:#1d2430;stroke-width:2}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:4px 0 8px}
.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;border-radius:2px}
.legend i{vertical-align:-1px}
.note{color:#5a6475;font-size:12px}
.trend{display:inline-block;border-radius:3px;padding:0 6px;font-size:12px;color:#fff}
.trend-new,.trend-grown,.trend-tripped{background:#c0392b}
.trend-gone,.trend-shrunk,.trend-ok{background:#2e7d32}
.trend-same{background:#7f8c8d}
.trend-changed,.trend-up,.trend-down{background:#d68910}
)css";
}

const std::vector<StackPart>& StepParts() {
  static const std::vector<StackPart> kParts = {
      {"gpu_compute", "GPU compute", "#4e79a7"},
      {"comm_not_overlapped", "communication not overlapped", "#f28e2b"},
      {"gpu_idle_waiting_for_host", "GPU idle: waiting for host", "#e15759"},
      {"gpu_idle_waiting_for_launches", "GPU idle: waiting for launches", "#ff9da7"},
      {"gpu_idle_in_syncs", "GPU idle: in syncs", "#b07aa1"},
      {"gpu_idle_other", "GPU idle: other", "#bab0ac"},
      {"host_blocked_in_syncs", "host blocked in syncs", "#9c755f"},
      {"copies", "copies", "#59a14f"}};
  return kParts;
}

}  // namespace gpuwatch::collector::html
