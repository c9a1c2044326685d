// link_bandwidth (analyze/findings_link.cpp): which link a rank's collectives are compared
// with, when the finding fires, and its time lost.
#include <catch2/catch.hpp>

#include "analyze/findings.h"
#include "common/link_peaks.h"
#include "common/thresholds.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kNvLink4 = 6;  // nvmlNvlinkVersion_t's 4.0

// A rank whose 100 large collectives moved `bus_gb` GB of bus bytes in `large_ms` of GPU
// time, in a 2 s run without CUPTI (all of it exposed), its device sampled with `links_up` of
// `links` NVLink links up (`links` 0: no NVLink) on a PCIe gen `pcie_gen` x16 link; NVML's
// NVLink counters, when `nvlink_bps` is set, gave that rate each way (0: no counters).
col::RankResult Rank(uint32_t links_up, double large_ms = 1000, uint32_t pcie_gen = 5, uint32_t links = 18,
                     double bus_gb = 10, uint32_t version = kNvLink4, uint64_t nvlink_bps = 0) {
  col::RankResult r;
  r.rank = 0;
  r.host = "node1";
  r.host_first_ns = 0;
  r.host_last_ns = 2000 * kMs;
  r.coll_sizes.large_calls = r.coll_sizes.large_timed = 100;
  r.coll_sizes.large_ns = static_cast<uint64_t>(large_ms * kMs);
  r.coll_sizes.large_bus_bytes = bus_gb * 1e9;
  col::DeviceStateCounter d;
  for (int i = 0; i < 3; ++i) {
    wire::DeviceSample s;
    s.set_t_ns((1 + i) * 500 * kMs);
    s.set_pcie_gen(pcie_gen);
    s.set_pcie_gen_max(5);
    s.set_pcie_width(16);
    s.set_pcie_width_max(16);
    s.set_nvlink_links(links);
    s.set_nvlink_version(links ? version : 0);
    s.set_nvlink_links_up(links_up);
    if (nvlink_bps && i > 0) {  // the first reading has no rate
      s.set_nvlink_tx_bytes_per_s(nvlink_bps * i);  // 1x then 2x: mean 1.5x, peak 2x
      s.set_nvlink_rx_bytes_per_s(nvlink_bps);
      s.set_nvlink_rate_links(links_up);
    }
    d.OnDeviceSample(s);
  }
  r.device = d.figures();
  return r;
}

// Ranks on two hosts, each host with these NIC ports (Mb/s together, the fastest) and GPUs.
std::vector<col::RankResult> TwoHosts(double large_ms, uint64_t total_mbps, uint64_t max_mbps, uint32_t gpus) {
  std::vector<col::RankResult> ranks = {Rank(18, large_ms), Rank(18, large_ms)};
  ranks[1].rank = 1;
  ranks[1].host = "node2";
  for (auto& r : ranks) {
    r.env.known = true;
    r.env.nic_total_mbps = total_mbps;
    r.env.nic_max_mbps = max_mbps;
    r.env.nic_ports = max_mbps ? static_cast<uint32_t>(total_mbps / max_mbps) : 0;
    r.env.nic_source = max_mbps ? "infiniband" : "";
    r.env.host_gpus = gpus;
    r.findings = col::RankFindings(r);
  }
  return ranks;
}

std::optional<col::Finding> JobLinkFinding(const std::vector<col::RankResult>& ranks) {
  for (const col::Finding& f : col::JobFindings(ranks))
    if (f.id == "link_bandwidth") return f;
  return std::nullopt;
}

std::optional<col::Finding> Measure(const col::RankResult& r) { return col::LinkBandwidth(col::RankContext(r), {}); }

bool Has(const std::vector<col::Finding>& v, const char* id) {
  return std::any_of(v.begin(), v.end(), [id](const col::Finding& f) { return f.id == id; });
}

const double kLatencyS = 100 * col::kCollLatencyFloorNs * 1e-9;  // 100 calls, no small call measured

}  // namespace

TEST_CASE("link_bandwidth: NVML's NVLink version enum gives the rate per link") {
  CHECK(col::NvLinkLinkGbps(1) == 20);  // 1.0
  CHECK(col::NvLinkLinkGbps(5) == 25);  // 3.1: what A100 answers
  CHECK(col::NvLinkLinkGbps(kNvLink4) == 25);
  CHECK(col::NvLinkLinkGbps(7) == 50);  // 5.0
  CHECK(col::NvLinkLinkGbps(8) == 0);   // not known: no peak
  CHECK(std::string(col::NvLinkVersionText(kNvLink4)) == "4.0");
}

TEST_CASE("link_bandwidth: collectives far below the NVLink that is up") {
  const auto f = Measure(Rank(18));  // 10 GB/s against 18 x 25 GB/s
  REQUIRE(f);
  CHECK(f->evidence["link"] == "nvlink");
  CHECK(f->evidence["link_peak_gbps"].get<double>() == Approx(450));
  CHECK(f->evidence["busbw_gbps"].get<double>() == Approx(10));
  CHECK(f->evidence["nvlink_version"] == "4.0");
  CHECK(f->evidence["latency_per_call_us"].get<double>() == Approx(20));
  // 1 s of GPU time against 100 latencies plus 10 GB at 70% of 450 GB/s; all of it exposed.
  CHECK(f->time_lost_s == Approx(1.0 - (kLatencyS + 10.0 / (0.7 * 450))));
  CHECK(f->summary.find("NVLink 4.0 (18 of 18 links up)") != std::string::npos);
}

TEST_CASE("link_bandwidth: NVLink present but every link down falls back to the PCIe link as trained") {
  const auto f = Measure(Rank(0, 2000, 4));  // 5 GB/s; gen 4 x16: 31.5 GB/s each way
  REQUIRE(f);
  CHECK(f->evidence["link"] == "pcie");
  const double peak = 1.969 * 16;
  CHECK(f->evidence["link_peak_gbps"].get<double>() == Approx(peak));
  CHECK(f->time_lost_s == Approx(2.0 - (kLatencyS + 10.0 / (0.7 * peak))));
}

TEST_CASE("link_bandwidth: none on healthy NVLink, without NVLink or its samples, or without large collectives") {
  CHECK_FALSE(Measure(Rank(18, 10.0 / 300 * 1000)));  // 300 GB/s of 450: healthy
  // 1 MiB all-reduces of 8 ranks in 30 us each (61 GB/s): latency-bound, not a slow link.
  CHECK_FALSE(Measure(Rank(18, 100 * 0.030, 5, 18, 100 * 1048576 * 1.75 / 1e9)));
  CHECK_FALSE(Measure(Rank(0, 1000, 5, 0)));                 // no NVLink: the path is not known
  CHECK_FALSE(Measure(Rank(18, 1000, 5, 18, 10, 8)));        // a version the table does not know
  col::RankResult unsampled = Rank(18);
  unsampled.device = {};
  CHECK_FALSE(Measure(unsampled));
  col::RankResult none = Rank(18);
  none.coll_sizes.large_timed = none.coll_sizes.large_ns = 0;
  none.coll_sizes.large_bus_bytes = 0;
  CHECK_FALSE(Measure(none));
}

TEST_CASE("link_bandwidth: the shortest small collective is the latency, when above the floor") {
  col::RankResult r = Rank(18);
  r.coll_sizes.small_timed = 10;
  r.coll_sizes.min_call_ns = 1 * kMs;  // 100 calls x 1 ms
  const auto f = Measure(r);
  REQUIRE(f);
  CHECK(f->evidence["latency_per_call_us"].get<double>() == Approx(1000));
  CHECK(f->time_lost_s == Approx(1.0 - (0.1 + 10.0 / (0.7 * 450))));
}

TEST_CASE("link_bandwidth: ranks on several hosts are judged against the network too") {
  // 30 GB/s: far below NVLink's 450, not below the network's 50 per GPU.
  std::vector<col::RankResult> ranks = {Rank(18, 1000.0 / 3), Rank(18, 1000.0 / 3)};
  ranks[1].rank = 1;
  for (auto& r : ranks) r.findings = col::RankFindings(r);
  REQUIRE(Has(ranks[0].findings, "link_bandwidth"));
  CHECK(Has(col::JobFindings(ranks), "link_bandwidth"));  // one host: NVLink joins them
  ranks[1].host = "node2";
  CHECK_FALSE(Has(col::JobFindings(ranks), "link_bandwidth"));

  // 10 GB/s is far below the network as well: the job's finding names it.
  std::vector<col::RankResult> slow = {Rank(18), Rank(18)};
  slow[1].rank = 1;
  slow[1].host = "node2";
  for (auto& r : slow) r.findings = col::RankFindings(r);
  const auto job = col::JobFindings(slow);
  const auto it = std::find_if(job.begin(), job.end(), [](const col::Finding& f) { return f.id == "link_bandwidth"; });
  REQUIRE(it != job.end());
  CHECK(it->evidence["link"] == "network");
  CHECK(it->evidence["link_peak_gbps"].get<double>() == Approx(col::kNetworkPerGpuGbps));
  CHECK(it->evidence["peak_source"] == "assumed");  // the ranks read no NIC
  CHECK(it->time_lost_s == Approx(1.0 - (kLatencyS + 10.0 / (0.7 * col::kNetworkPerGpuGbps))));
}

TEST_CASE("link_bandwidth: the fewest NVLink links seen up count (a link that dropped)") {
  col::DeviceStateCounter d;
  for (uint32_t links : {18u, 12u, 18u}) {
    wire::DeviceSample s;
    s.set_t_ns(links);
    s.set_nvlink_links(18);
    s.set_nvlink_version(kNvLink4);
    s.set_nvlink_links_up(links);
    d.OnDeviceSample(s);
  }
  CHECK(d.figures().nvlink_links == 18);
  CHECK(d.figures().nvlink_links_up == 12);
  CHECK(d.figures().NvLinkGbps() == Approx(300));
}

TEST_CASE("link_bandwidth: across hosts, the network's peak is the hosts' NIC ports over their GPUs when read") {
  // 8 x 800 Gb/s ports for 8 GPUs: 100 GB/s per GPU. 30 GB/s is below 35% of it, though not of
  // the 50 GB/s the assumption would give.
  auto fast = TwoHosts(1000.0 / 3, 8 * 800000, 800000, 8);
  auto f = JobLinkFinding(fast);
  REQUIRE(f);
  CHECK(f->evidence["link"] == "network");
  CHECK(f->evidence["peak_source"] == "host_nics_per_gpu");
  CHECK(f->evidence["link_peak_gbps"].get<double>() == Approx(100));
  CHECK(f->evidence["nic_ports"] == 8);
  CHECK(f->evidence["host_gpus"] == 8);
  CHECK(f->time_lost_s == Approx(1.0 / 3 - (kLatencyS + 10.0 / (0.7 * 100))));
  CHECK(f->summary.find("8 NIC ports") != std::string::npos);
  CHECK_FALSE(JobLinkFinding(TwoHosts(1000.0 / 3, 0, 0, 0)));  // the assumed 50: 30 GB/s is fine

  // Without the GPU count: the fastest port, 200 Gb/s = 25 GB/s (5 GB/s is far below it).
  auto per_nic = TwoHosts(2000, 4 * 200000, 200000, 0);
  f = JobLinkFinding(per_nic);
  REQUIRE(f);
  CHECK(f->evidence["peak_source"] == "fastest_nic");
  CHECK(f->evidence["link_peak_gbps"].get<double>() == Approx(25));
  CHECK(f->time_lost_s == Approx(2.0 - (kLatencyS + 10.0 / (0.7 * 25))));

  // One host: NVLink joins the ranks, whatever the NICs.
  auto one_host = TwoHosts(1000, 8 * 800000, 800000, 8);
  one_host[1].host = "node1";
  f = JobLinkFinding(one_host);
  REQUIRE(f);
  CHECK(f->evidence["link"] == "nvlink");
  CHECK(f->evidence["peak_source"] == "nvml");
}

TEST_CASE("link_bandwidth on NVLink quotes what NVML measured crossing it, when its counters gave a rate") {
  const auto f = Measure(Rank(18, 1000, 5, 18, 10, kNvLink4, 4'000'000'000));
  REQUIRE(f);
  // Samples 500 ms apart: TX 4 then 8 GB/s (mean 6, peak 8), RX 4.
  CHECK(f->evidence["nvlink_tx_gbps_mean"].get<double>() == Approx(6));
  CHECK(f->evidence["nvlink_tx_gbps_peak"].get<double>() == Approx(8));
  CHECK(f->evidence["nvlink_rx_gbps_mean"].get<double>() == Approx(4));
  CHECK(f->evidence["nvlink_rx_gbps_peak"].get<double>() == Approx(4));
  CHECK(f->summary.find("NVML measured 6.0 GB/s sent over NVLink") != std::string::npos);
  const auto without = Measure(Rank(18));  // no counters: no figure, rather than 0
  REQUIRE(without);
  CHECK_FALSE(without->evidence.contains("nvlink_tx_gbps_mean"));
}

TEST_CASE("device state: NVLink bytes are the rates over the time they cover, and no rate is not a zero rate") {
  const col::RankResult r = Rank(18, 1000, 5, 18, 10, kNvLink4, 2'000'000'000);
  const col::DeviceStateFigures& d = r.device;
  CHECK(d.HasNvLinkRate());
  CHECK(d.nvlink_rate_samples == 2);
  CHECK(d.nvlink_rate_s == Approx(1.0));
  CHECK(d.nvlink_tx_bytes == Approx(0.5 * 2e9 + 0.5 * 4e9));
  CHECK(d.nvlink_rx_bytes == Approx(1.0 * 2e9));
  CHECK(d.NvLinkTxGbps() == Approx(3));
  CHECK(d.nvlink_tx_peak_gbps == Approx(4));
  const col::RankResult none = Rank(18);
  CHECK_FALSE(none.device.HasNvLinkRate());
  CHECK(none.device.NvLinkTxGbps() == 0);
}
