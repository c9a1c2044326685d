// See html_comms.h.
#include "report/html_comms.h"

#include "common/format.h"
#include "common/json_read.h"
#include "report/html_findings.h"
#include "report/html_page.h"
#include "report/html_report.h"

namespace gpuwatch::collector {
namespace {

using html::Esc;
using nlohmann::json;
using json_read::Arr;
using json_read::Get;
using json_read::Num;
using json_read::Whole;
using json_read::Str;


}  // namespace

void CommsSection(const json& s, std::string& out) {
  const json& comms = Arr(Get(Get(s, "job"), "collectives"), "by_comm");
  if (comms.empty()) return;
  out += "<section id=\"communicators\"><h2>Communicators: calls, exposed and overlapped communication</h2>\n"
         "<p class=\"note\">Times per rank: the mean over the communicator's members. waiting = time its "
         "collectives spent waiting for the last member to arrive (that member's doing, not the link's); "
         "busbw is the transfer's after it. exposed = NCCL kernel time with no other kernel running; "
         "overlapped = the rest (HTA's comm-compute overlap). kind is guessed from size and members (tp: "
         "consecutive ranks, dp: a stride, pp: send/recv only).</p>\n"
         "<table><tr><th>members</th><th>kind</th><th class=\"n\">calls (all ranks)</th><th class=\"n\">bytes (all ranks)</th>"
         "<th class=\"n\">GPU time per rank</th><th class=\"n\">waiting per rank</th><th class=\"n\">exposed per rank</th>"
         "<th class=\"n\">overlapped per rank</th><th>busbw GB/s per op</th></tr>\n";
  for (const json& c : comms) {
    const json& pr = Get(c, "per_rank");
    std::string ops;
    const json& o = Get(c, "ops");
    if (o.is_object())
      for (auto it = o.begin(); it != o.end(); ++it)
        ops += (ops.empty() ? "" : ", ") + it.key() + " " +
               (Get(it.value(), "busbw_gbps").is_number() ? FmtRate(Num(it.value(), "busbw_gbps"))
                                                          : std::string("- (one member)"));
    out += "<tr><td>" + Esc(RanksText(Get(c, "members"))) + (Get(c, "identified") == true ? "" : " (not identified)") +
           "</td><td>" + Esc(Str(c, "kind", "-")) + "</td>" + html::NumCell(Printf("%.0f", Num(c, "calls"))) +
           html::NumCell(FmtBytes(Whole<uint64_t>(c, "bytes"))) + html::NumCell(FmtDuration(Num(pr, "gpu_s"))) +
           html::NumCell(FmtDuration(Num(pr, "wait_s"))) + html::NumCell(FmtDuration(Num(pr, "exposed_s"))) +
           html::NumCell(FmtDuration(Num(pr, "overlapped_s"))) + "<td>" + Esc(ops) +
           "</td></tr>\n";
  }
  out += "</table>\n<table><tr><th>rank</th><th class=\"n\">NCCL kernels</th><th class=\"n\">overlapped</th>"
         "<th class=\"n\">exposed</th><th class=\"n\">exposed per step (median)</th></tr>\n";
  for (const json& r : Arr(s, "ranks")) {
    const json& ov = Get(r, "comm_overlap");
    if (!ov.is_object()) continue;
    out += "<tr><td>" + Esc(RankLabel(r)) + "</td>" + html::NumCell(FmtDuration(Num(ov, "nccl_kernel_s"))) +
           html::NumCell(Printf("%s (%.0f%%)", FmtDuration(Num(ov, "overlapped_s")).c_str(), 100 * Num(ov, "overlapped_share"))) +
           html::NumCell(FmtDuration(Num(ov, "exposed_s"))) +
           html::NumCell(Printf("%.3f ms", Num(Get(Get(ov, "per_step"), "exposed_ms"), "median"))) + "</tr>\n";
  }
  out += "</table></section>\n";
}

}  // namespace gpuwatch::collector
