// link_bandwidth: the rank's large collectives moved their bus bytes far slower than the
// link that connects its GPU to its peers can (common/link_peaks.h).
//
// Which link: only one the collector knows the collectives take. NVML reports NVLink links
// up: NVLink (links up x the version's per-link rate). The device has NVLink but none of its
// links is up: NCCL fell back to PCIe, at the link's generation x width as trained. A device
// without NVLink may reach its peers over PCIe peer-to-peer, through host memory, or over the
// network, which NVML does not tell apart: no finding. A job whose ranks run on more than one
// host is judged, at job level, against the slower of that link and the network: its peak per
// GPU as the rank's library read the host's NIC ports in sysfs (their rates together over the
// host's GPUs; without the GPU count, the fastest port), else the DGX assumption (link_peaks.h).
// Only collectives of at least kSmallCollectiveBytes count: smaller ones are latency-bound
// (small_collectives), whatever the link.
#include <algorithm>

#include "analyze/findings.h"
#include "common/format.h"
#include "common/link_peaks.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {

struct Link {
  const char* kind;  // "nvlink", "pcie", "network"
  double peak_gbps;  // each way
  std::string name;  // for the summary
  const char* peak_source;  // "nvml"; the network's: "host_nics_per_gpu", "fastest_nic", "assumed"
};

std::optional<Link> DeviceLink(const DeviceStateFigures& d) {
  if (!d.known() || !d.nvlink_links) return std::nullopt;
  if (d.nvlink_links_up > 0) {
    if (d.NvLinkGbps() <= 0) return std::nullopt;  // a version the table does not know
    return Link{"nvlink", d.NvLinkGbps(),
                Printf("NVLink %s (%u of %u links up)", NvLinkVersionText(d.nvlink_version), d.nvlink_links_up,
                       d.nvlink_links),
                "nvml"};
  }
  if (d.PcieGbps() <= 0) return std::nullopt;
  return Link{"pcie", d.PcieGbps(),
              Printf("PCIe gen %u x%u (none of %u NVLink links up)", d.pcie_gen, d.pcie_width, d.nvlink_links), "nvml"};
}

// Mb/s (sysfs) -> GB/s.
constexpr double kMbpsToGBps = 1.0 / 8000;

Link NetworkLink(const EnvFacts& e) {
  if (e.nic_total_mbps && e.host_gpus) {
    const double gbps = static_cast<double>(e.nic_total_mbps) * kMbpsToGBps / e.host_gpus;
    return Link{"network", gbps,
                Printf("the network (%u NIC ports, %.0f Gb/s together, over %u GPUs: %.1f GB/s per GPU)", e.nic_ports,
                       e.nic_total_mbps * 1e-3, e.host_gpus, gbps),
                "host_nics_per_gpu"};
  }
  if (e.nic_max_mbps) {
    const double gbps = static_cast<double>(e.nic_max_mbps) * kMbpsToGBps;
    return Link{"network", gbps, Printf("the network (its fastest NIC port, %.0f Gb/s: %.1f GB/s)", e.nic_max_mbps * 1e-3, gbps),
                "fastest_nic"};
  }
  return Link{"network", kNetworkPerGpuGbps, Printf("the network (assumed %.0f GB/s per GPU)", kNetworkPerGpuGbps),
              "assumed"};
}

// The latency each large call pays (thresholds.h): the shortest small call, at least the floor.
double CallLatencyS(const CollectiveSizeFigures& cs) {
  return Seconds(std::max(cs.small_timed ? cs.min_call_ns : 0, kCollLatencyFloorNs));
}

std::optional<Finding> MeasureAgainst(const RankContext& c, const Link& link) {
  const CollectiveSizeFigures& cs = c.r.coll_sizes;
  if (!cs.large_timed || !cs.large_ns || cs.large_bus_bytes <= 0 || link.peak_gbps <= 0) return std::nullopt;
  const double large_s = Seconds(cs.large_ns);
  const double latency_s = CallLatencyS(cs) * static_cast<double>(cs.large_timed);
  // GB/s = bytes per ns: bytes / GB/s is ns.
  const double at_peak_s = latency_s + cs.large_bus_bytes / link.peak_gbps * 1e-9;
  if (large_s * kLinkFarBelowShare <= at_peak_s) return std::nullopt;
  const double expected_s = latency_s + cs.large_bus_bytes / (kLinkExpectedShare * link.peak_gbps) * 1e-9;
  // Only their exposed share is lost: the rest ran under compute.
  const double exposed_share = ExposedCommShare(c);
  const double lost = std::max(0.0, large_s - expected_s) * exposed_share;
  if (lost <= 0) return std::nullopt;
  Finding f = MakeFinding("link_bandwidth", lost, c.run_base);
  const DeviceStateFigures& d = c.r.device;
  const double busbw = cs.large_busbw_gbps();
  const double reachable = cs.large_bus_bytes / at_peak_s * 1e-9;
  f.evidence = {{"link", link.kind},
                {"link_peak_gbps", link.peak_gbps},
                {"peak_source", link.peak_source},
                {"busbw_gbps", busbw},
                {"reachable_busbw_gbps", reachable},
                {"share_of_reachable", busbw / reachable},
                {"latency_per_call_us", CallLatencyS(cs) * 1e6},
                {"expected_share", kLinkExpectedShare},
                {"large_collectives", cs.large_timed},
                {"large_collectives_s", large_s},
                {"at_expected_share_s", expected_s},
                {"exposed_share", exposed_share},
                {"nvlink_links", d.nvlink_links},
                {"nvlink_links_up", d.nvlink_links_up},
                {"nvlink_version", NvLinkVersionText(d.nvlink_version)},
                {"pcie_gen", d.pcie_gen},
                {"pcie_width", d.pcie_width}};
  f.summary = Printf("collectives over %s reached %.1f GB/s bus bandwidth, %.0f%% of the %.0f GB/s their sizes "
                     "could reach; at %.0f%% of the link they would have taken %s instead of %s",
                     link.name.c_str(), busbw, 100 * busbw / reachable, reachable, 100 * kLinkExpectedShare,
                     FmtDuration(expected_s).c_str(), FmtDuration(large_s).c_str());
  if (link.kind == std::string("network")) {
    const EnvFacts& e = c.r.env;
    f.evidence["nic_source"] = e.nic_source;
    f.evidence["nic_ports"] = e.nic_ports;
    f.evidence["host_gpus"] = e.host_gpus;
  }
  // What NVML measured crossing the NVLink during the run, when its counters gave a rate.
  if (link.kind == std::string("nvlink") && d.HasNvLinkRate()) {
    f.evidence["nvlink_tx_gbps_mean"] = d.NvLinkTxGbps();
    f.evidence["nvlink_rx_gbps_mean"] = d.NvLinkRxGbps();
    f.evidence["nvlink_tx_gbps_peak"] = d.nvlink_tx_peak_gbps;
    f.evidence["nvlink_rx_gbps_peak"] = d.nvlink_rx_peak_gbps;
    f.summary += Printf("; NVML measured %.1f GB/s sent over NVLink on average (%.1f at most)", d.NvLinkTxGbps(),
                        d.nvlink_tx_peak_gbps);
  }
  return f;
}

}  // namespace

std::optional<Finding> LinkBandwidth(const RankContext& c, const std::vector<Finding>&) {
  std::optional<Link> link = DeviceLink(c.r.device);
  if (!link) return std::nullopt;
  if (c.across_hosts) {
    Link network = NetworkLink(c.r.env);
    if (network.peak_gbps > 0 && link->peak_gbps > network.peak_gbps) link = std::move(network);
  }
  return MeasureAgainst(c, *link);
}

}  // namespace gpuwatch::collector
