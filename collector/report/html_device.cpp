// See html_device.h. Lookups go through common/json_read.h (an older summary has neither
// `memory` nor `device`: the sections then say so).
#include "report/html_device.h"

#include <algorithm>

#include "common/format.h"
#include "common/json_read.h"
#include "report/html_page.h"
#include "report/html_report.h"
#include "report/svg_chart.h"

namespace gpuwatch::collector {
namespace {

using html::Esc;
using nlohmann::json;
using json_read::Arr;
using json_read::Get;
using json_read::Int;
using json_read::Num;
using json_read::Whole;
using json_read::Str;

// NVML's view of the rank's device.
const json& DeviceState(const json& r) { return Get(r, "device_state"); }

void MemoryChart(const json& s, std::string& out) {
  out += "<section id=\"memory\"><h2>Device memory over time</h2>\n";
  std::vector<html::UtilRow> rows;
  for (const json& r : Arr(s, "ranks")) {
    const json& m = Get(r, "memory");
    const json& ser = Get(m, "reserved_series");
    const double total = Num(m, "total_bytes");
    if (!ser.is_object() || total <= 0 || rows.size() >= kHtmlMaxChartRanks) continue;
    html::UtilRow row;
    row.rank = Int(r, "rank");
    row.window_s = Num(ser, "window_s");
    for (const json& v : Arr(ser, "peak_bytes")) row.busy.push_back(v.is_number() ? v.get<double>() / total : 0);
    row.label = RankLabel(r);
    row.note = "peak " + FmtBytes(Whole<uint64_t>(m, "peak_bytes")) + " of " + FmtBytes(static_cast<uint64_t>(total));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    out += "<p class=\"note\">No allocation was recorded (cudaMalloc, cudaMallocAsync, cudaMallocManaged).</p></section>\n";
    return;
  }
  out += "<p class=\"note\">Device memory the rank's allocations held (PyTorch's reserved memory), as a share of the "
         "device's memory: the most in each window, from the rank's first allocation.</p>\n";
  out += html::LegendHtml({{"memory", "device memory held, share of the device's (0 to 100%)", "#59a14f"}}) +
         html::UtilizationSvg(rows, "memory", "Device memory held over time, one row per rank") + "\n</section>\n";
}


void DeviceTable(const json& s, std::string& out) {
  out += "<section id=\"device\"><h2>Devices (NVML)</h2>\n<table><tr><th>rank</th><th>device</th>"
         "<th>utilization curve (compute)</th><th class=\"n\">NVML utilization (sampled)</th><th class=\"n\">SM clock busy / max</th>"
         "<th class=\"n\">held back</th><th class=\"n\">power / limit</th><th class=\"n\">max temp</th>"
         "<th class=\"n\">PCIe</th><th class=\"n\">NVLink</th><th class=\"n\">memory used / total</th><th>other processes</th></tr>\n";
  for (const json& r : Arr(s, "ranks")) {
    const json& d = DeviceState(r);
    const json& env = Get(r, "environment");
    const json& shape = Get(Get(r, "gpu"), "utilization_shape");
    out += "<tr><td>" + Esc(RankLabel(r)) + "</td><td>" + Esc(Str(env, "device_name", "-")) + "</td><td>" +
           Esc(shape.is_string() ? shape.get<std::string>() : "-") + "</td>";
    if (!d.is_object() || Num(d, "samples") <= 0) {
      out += "<td colspan=\"9\">" + Esc(Str(d, "sampler_detail", "no NVML samples")) + "</td></tr>\n";
      continue;
    }
    const json& pcie = Get(d, "pcie");
    std::string others;
    for (const json& o : Arr(d, "other_processes"))
      others += Printf("%s%d: %s, %.0f%% busy", others.empty() ? "" : "; ", Int(o, "pid"),
                       FmtBytes(Whole<uint64_t>(o, "memory_bytes")).c_str(), 100 * Num(o, "busy"));
    const json& nv = Get(d, "nvlink");
    std::string nvlink = "none";
    if (nv.is_object()) {
      nvlink = Printf("%d of %d up (%.0f GB/s)", Int(nv, "links_up"), Int(nv, "links"), Num(nv, "peak_gbps"));
      if (Get(nv, "tx_gbps_mean").is_number())  // what crossed them, when NVML's counters said
        nvlink += Printf(", TX %.1f / RX %.1f GB/s mean", Num(nv, "tx_gbps_mean"), Num(nv, "rx_gbps_mean"));
    }
    out += html::NumCell(Printf("%.0f%%", 100 * Num(d, "utilization"))) +
           html::NumCell(Printf("%.0f / %.0f MHz", Num(d, "sm_clock_busy_mhz"), Num(d, "sm_clock_max_mhz"))) +
           html::NumCell(Printf("%.0f%%", 100 * Num(d, "throttled_share"))) +
           html::NumCell(Printf("%.0f / %.0f W", Num(d, "power_mean_w"), Num(d, "power_limit_w"))) +
           html::NumCell(Printf("%.0f C", Num(d, "temperature_max_c"))) +
           html::NumCell(Printf("gen %d x%d of %d x%d", Int(pcie, "gen"), Int(pcie, "width"), Int(pcie, "gen_max"),
                       Int(pcie, "width_max"))) +
           html::NumCell(nvlink) +
           html::NumCell(FmtBytes(Whole<uint64_t>(d, "memory_used_max_bytes")) + " / " +
                FmtBytes(Whole<uint64_t>(d, "memory_total_bytes"))) +
           "<td>" + Esc(others.empty() ? "none" : others) + "</td></tr>\n";
  }
  out += "</table><p class=\"note\">NVML utilization is the driver's own figure: the share of its last "
         "sample period (1/6 s to 1 s, by product) during which a kernel ran, read about once a second and "
         "averaged. It sees kernels only, and only around the moments it was read, so it can differ from GPU "
         "busy (CUPTI, in the Ranks table), which adds up the time every kernel, copy and memset ran.</p></section>\n";
}

// How each rank used its GPU's SMs and where it ran on its host (gpu.sm_fill, placement).
void PlacementTable(const json& s, std::string& out) {
  out += "<section id=\"placement\"><h2>SM fill and host placement</h2>\n<table><tr><th>rank</th>"
         "<th class=\"n\">SM fill</th><th class=\"n\">small-grid kernels</th><th class=\"n\">idle SM time</th>"
         "<th>CPUs</th><th class=\"n\">on the GPU's NUMA node</th><th class=\"n\">CPU quota</th>"
         "<th class=\"n\">cgroup throttled</th></tr>\n";
  for (const json& r : Arr(s, "ranks")) {
    const json& f = Get(Get(r, "gpu"), "sm_fill");
    const json& p = Get(r, "placement");
    out += "<tr><td>" + Esc(RankLabel(r)) + "</td>";
    if (f.is_object())
      out += html::NumCell(Printf("%.0f%% of %d SMs", 100 * Num(f, "fill"), Int(f, "sm_count"))) +
             html::NumCell(Printf("%d of %d", Int(f, "small_grid_kernels"), Int(f, "kernels"))) +
             html::NumCell(FmtDuration(Num(f, "idle_sm_s")));
    else
      out += "<td colspan=\"3\">no launch geometry</td>";
    if (p.is_object()) {
      const json& node = Get(p, "gpu_numa_node");
      out += "<td>" + Esc(Str(p, "cpu_affinity", "-")) + "</td>" +
             html::NumCell(Get(p, "off_node_share").is_number()
                      ? Printf("%d of %d (node %d)", Int(p, "cpus_on_gpu_node"), Int(p, "cpus"), node.is_number() ? node.get<int>() : -1)
                      : std::string("-")) +
             html::NumCell(Get(p, "cpu_quota_cores").is_number() ? Printf("%.1f cores", Num(p, "cpu_quota_cores")) : std::string("none")) +
             html::NumCell(FmtDuration(Num(p, "cgroup_throttled_s")));
    } else {
      out += "<td colspan=\"4\">not known</td>";
    }
    out += "</tr>\n";
  }
  out += "</table></section>\n";
}

}  // namespace

void DeviceSections(const json& s, std::string& out) {
  MemoryChart(s, out);
  DeviceTable(s, out);
  PlacementTable(s, out);
}

}  // namespace gpuwatch::collector
