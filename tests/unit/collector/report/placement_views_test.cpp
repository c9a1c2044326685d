// SM fill, host placement and NVLink in the views (issue 17): one rank's figures give the
// same numbers in summary.json, summary.txt, report.html and Prometheus.
#include <catch2/catch.hpp>

#include <sstream>

#include "analyze/rank_result.h"
#include "live/prometheus.h"
#include "live/snapshot.h"
#include "report/device_text.h"
#include "report/figures_json.h"
#include "report/html_device.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;
using nlohmann::json;

namespace {

// A rank whose kernels filled 60% of 132 SMs, pinned to CPUs 0-7 while its GPU sits on
// node 1 (CPUs 6-11), in a cgroup with a 4-core quota that held it 1.5 s; 12 of its GPU's 18
// NVLink 4.0 links up.
col::RankResult PlacedRank() {
  col::RankResult r;
  r.rank = 3;
  r.sm_fill.sm_count = 132;
  r.sm_fill.kernels = 10;
  r.sm_fill.small_grid_kernels = 4;
  r.sm_fill.kernel_ns = 2'000'000'000;
  r.sm_fill.idle_sm_ns = 800'000'000;
  r.env.cpu_affinity = "0-7";
  r.env.device_numa_node = 1;
  r.env.device_numa_cpus = "6-11";
  r.env.cgroup_version = 2;
  r.env.cpu_quota_us = 400000;
  r.env.cpu_period_us = 100000;
  r.io.cgroup = true;
  r.io.all_throttled_s = 1.5;
  wire::DeviceSample s;
  s.set_t_ns(1);
  s.set_nvlink_links(18);
  s.set_nvlink_version(6);  // nvmlNvlinkVersion_t's 4.0
  s.set_nvlink_links_up(12);
  col::DeviceStateCounter d;
  d.OnDeviceSample(s);
  r.device = d.figures();
  return r;
}

// The value of the family's one series in Prometheus text.
double Metric(const std::string& text, const std::string& family) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(family + "{", 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  FAIL("no " << family << " in\n" << text);
  return 0;
}

}  // namespace

TEST_CASE("views: SM fill, placement and NVLink agree in summary.json, summary.txt, report.html, Prometheus") {
  const col::RankResult r = PlacedRank();
  json rank = {{"rank", 3}};
  col::AddRankFigures(r, rank);
  const json& fill = rank["gpu"]["sm_fill"];
  REQUIRE(fill.is_object());
  CHECK(fill["fill"].get<double>() == Approx(0.6));
  const json& p = rank["placement"];
  REQUIRE(p.is_object());
  CHECK(p["cpus"] == 8);
  CHECK(p["cpus_on_gpu_node"] == 2);
  CHECK(p["off_node_share"].get<double>() == Approx(0.75));
  CHECK(p["cpu_quota_cores"].get<double>() == Approx(4.0));
  const json& nv = rank["device_state"]["nvlink"];
  REQUIRE(nv.is_object());
  CHECK(nv["version"] == "4.0");
  CHECK(nv["links"] == 18);
  CHECK(nv["links_up"] == 12);
  CHECK(nv["peak_gbps"].get<double>() == Approx(12 * 25.0));

  std::string text;
  col::DeviceStateText(r, text);
  INFO(text);
  CHECK(text.find("SM fill: 60% of 132 SMs, 4 of 10 kernels") != std::string::npos);
  CHECK(text.find("  host: 8 CPUs (0-7), 2 on the GPU's NUMA node 1\n") != std::string::npos);
  CHECK(text.find("  cgroup v2: quota 4.0 cores, throttled 1.500 s\n") != std::string::npos);
  CHECK(text.find("NVLink 4.0: 12 of 18 links up (300 GB/s each way)") != std::string::npos);

  std::string html;
  col::DeviceSections(json{{"ranks", json::array({rank})}}, html);
  INFO(html);
  CHECK(html.find("<section id=\"placement\">") != std::string::npos);
  CHECK(html.find("60% of 132 SMs") != std::string::npos);
  CHECK(html.find(">4 of 10<") != std::string::npos);
  CHECK(html.find(">800.000 ms<") != std::string::npos);
  CHECK(html.find("2 of 8 (node 1)") != std::string::npos);
  CHECK(html.find("4.0 cores") != std::string::npos);
  CHECK(html.find(">1.500 s<") != std::string::npos);
  CHECK(html.find(">12 of 18 up (300 GB/s)<") != std::string::npos);

  col::LiveSnapshot snap;
  col::RankSample s = col::SampleOf(r);
  s.job = "j";
  s.rank = 3;
  snap.ranks.push_back(s);
  const std::string m = col::FormatPrometheus(snap);
  CHECK(Metric(m, "gpuwatch_sm_fill_ratio") == Approx(fill["fill"].get<double>()));
  CHECK(Metric(m, "gpuwatch_sm_idle_seconds_total") == Approx(0.8));
  CHECK(Metric(m, "gpuwatch_cpu_off_gpu_node_ratio") == Approx(p["off_node_share"].get<double>()));
  CHECK(Metric(m, "gpuwatch_cgroup_throttled_seconds_total") == Approx(1.5));
  CHECK(Metric(m, "gpuwatch_cgroup_cpu_quota_cores") == Approx(4.0));
  CHECK(Metric(m, "gpuwatch_device_nvlink_links_up") == 12);
}

TEST_CASE("views: a rank without launch geometry, placement or a CPU limit shows none of them") {
  col::RankResult r;
  r.rank = 0;
  std::string text;
  col::DeviceStateText(r, text);
  CHECK(text.find("SM fill") == std::string::npos);
  CHECK(text.find("host:") == std::string::npos);
  CHECK(text.find("cgroup") == std::string::npos);
  // A cgroup without a quota that never throttled: nothing to say either.
  r.env.cgroup_version = 2;
  r.io.cgroup = true;
  col::DeviceStateText(r, text);
  CHECK(text.find("cgroup") == std::string::npos);
  json rank = {{"rank", 0}};
  col::AddRankFigures(r, rank);
  std::string html;
  col::DeviceSections(json{{"ranks", json::array({rank})}}, html);
  CHECK(html.find("no launch geometry") != std::string::npos);
  // Nor their Prometheus series, nor NVLink's (without a cgroup either).
  col::RankResult bare;
  bare.rank = 0;
  col::LiveSnapshot snap;
  snap.ranks.push_back(col::SampleOf(bare));
  const std::string m = col::FormatPrometheus(snap);
  for (const char* family : {"gpuwatch_sm_fill_ratio", "gpuwatch_cpu_off_gpu_node_ratio",
                             "gpuwatch_cgroup_throttled_seconds_total", "gpuwatch_device_nvlink_links_up"}) {
    INFO(family);
    CHECK(m.find(family) == std::string::npos);
  }
}
