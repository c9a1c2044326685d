// See device_text.h.
#include "report/device_text.h"

#include <algorithm>

#include "analyze/host_placement.h"
#include "common/format.h"

namespace gpuwatch::collector {

namespace {

// "  host: 8 CPUs (0-7), 2 on the GPU's NUMA node 1" and "  cgroup v2: quota 4.0 cores, throttled 1.500 s"
void PlacementText(const RankResult& r, std::string& out) {
  const PlacementFigures p = Placement(r.env);
  if (p.affinity_known) {
    std::string line = Printf("  host: %zu CPUs (%s)", p.cpus, r.env.cpu_affinity.c_str());
    if (p.numa_known()) line += Printf(", %zu on the GPU's NUMA node %d", p.cpus_on_node, p.numa_node);
    out += Clip(line, kTextWidth) + "\n";
  }
  if (p.quota_cores <= 0 && r.io.all_throttled_s <= 0) return;  // no CPU limit: nothing to say
  std::string line = p.cgroup_version ? Printf("  cgroup v%d: ", p.cgroup_version) : std::string("  cgroup: ");
  line += p.quota_cores > 0 ? Printf("quota %.1f cores", p.quota_cores) : std::string("no CPU quota");
  if (r.io.cgroup) line += ", throttled " + FmtDuration(r.io.all_throttled_s);
  out += Clip(line, kTextWidth) + "\n";
}

}  // namespace

void DeviceStateText(const RankResult& r, std::string& out) {
  if (const char* shape = r.gpu_shape.key())
    out += Printf("  utilization curve (compute): %s (mean %.0f%%, %zu windows)\n", shape, 100 * r.gpu_shape.mean,
                  r.gpu_shape.windows);
  const MemoryFigures& m = r.memory;
  if (m.known()) {
    std::string line = "  memory: peak " + FmtBytes(m.peak_bytes);
    if (m.total_bytes)
      line += Printf(" of %s (%.1f%%), headroom %s", FmtBytes(m.total_bytes).c_str(), 100 * m.peak_share(),
                     FmtBytes(m.headroom_bytes()).c_str());
    line += Printf(", %llu allocations", static_cast<unsigned long long>(m.allocations));
    out += Clip(line, kTextWidth) + "\n";
  }
  const SmFillFigures& s = r.sm_fill;
  if (s.known())
    out += Clip(Printf("  SM fill: %.0f%% of %d SMs, %llu of %llu kernels with fewer blocks than SMs", 100 * s.fill(),
                       s.sm_count, static_cast<unsigned long long>(s.small_grid_kernels),
                       static_cast<unsigned long long>(s.kernels)),
                kTextWidth) +
           "\n";
  PlacementText(r, out);
  const DeviceStateFigures& d = r.device;
  if (!d.known()) {
    if (!r.device_sampler_detail.empty()) out += Clip("  device (NVML): " + r.device_sampler_detail, kTextWidth) + "\n";
    return;
  }
  out += Printf("  device (NVML, %llu samples): utilization %.0f%%, memory used %s of %s\n",
                static_cast<unsigned long long>(d.samples), 100 * d.gpu_util_mean, FmtBytes(d.memory_used_max).c_str(),
                FmtBytes(d.memory_total).c_str());
  const uint64_t held = std::max({d.throttled_power, d.throttled_thermal, d.throttled_hw});
  out += Clip(Printf("    SM clock %.0f/%u MHz when busy (held back %.0f%%), power %.0f/%.0f W, max %u C",
                     d.sm_clock_busy_mean_mhz, d.sm_clock_max_mhz, d.busy_samples ? 100.0 * held / d.busy_samples : 0.0,
                     d.power_mean_w, d.power_limit_w, d.temperature_max_c),
              kTextWidth) +
         "\n";
  out += Printf("    PCIe gen %u x%u of gen %u x%u (%.0f%%)%s%s\n", d.pcie_gen, d.pcie_width, d.pcie_gen_max,
                d.pcie_width_max, 100 * d.PcieLinkShare(), d.ecc_uncorrected ? ", uncorrected ECC errors" : "",
                d.mig ? ", MIG on" : "");
  if (d.nvlink_links)
    out += Printf("    NVLink %s: %u of %u links up (%.0f GB/s each way)\n", NvLinkVersionText(d.nvlink_version),
                  d.nvlink_links_up, d.nvlink_links, d.NvLinkGbps());
  if (d.HasNvLinkRate())
    out += Printf("      NVLink traffic: TX %.1f GB/s mean (%.1f peak), RX %.1f GB/s mean (%.1f peak)\n",
                  d.NvLinkTxGbps(), d.nvlink_tx_peak_gbps, d.NvLinkRxGbps(), d.nvlink_rx_peak_gbps);
  for (const auto& [pid, o] : d.others)
    out += Printf("    other process %u: %s, %.0f%% busy\n", pid, FmtBytes(o.memory_bytes_max).c_str(),
                  d.sampled_s > 0 ? 100 * std::min(1.0, o.busy_s / d.sampled_s) : 0.0);
}

}  // namespace gpuwatch::collector
