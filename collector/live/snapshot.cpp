// See snapshot.h.
#include "live/snapshot.h"

#include "analyze/collectives.h"
#include "analyze/host_placement.h"
#include "common/format.h"

namespace gpuwatch::collector {

RankSample SampleOf(const RankResult& r) {
  RankSample s;
  s.events = r.host_calls;
  s.sync_s = Seconds(r.sync.TotalNs());
  s.h2d_bytes = r.copies.dir[0].calls.bytes;
  s.h2d_pageable_bytes = r.copies.dir[0].pageable.bytes;
  s.graph_launches = r.graphs.launches;
  s.graph_kernels = r.graphs.device.kernels;
  if (r.cupti()) {
    s.has_gpu = true;
    s.gpu_busy_s = Seconds(r.gpu.run.busy);
    s.gpu_active_s = Seconds(r.gpu.active_ns);
    for (int k = 0; k < kIdleKinds; ++k) s.gpu_idle_s[k] = Seconds(r.gpu.run.idle[k]);
  }
  for (size_t i = 0; i < r.collectives.ops.size(); ++i) {
    const CollectiveFigures::Op& o = r.collectives.ops[i];
    if (o.count) s.ops.push_back({kCollOps[i].name, o.count, o.bytes, Seconds(o.timed.ns), o.busbw() * 1e9});
  }
  s.steps = r.steps_total();
  s.per_step = r.per_step;
  s.critical_path = r.critical_path;
  for (const Finding& f : r.findings)
    if (f.what_if.known()) s.what_if.emplace_back(f.id, f.what_if);
  s.all_fixed = r.all_fixed;
  s.dropped = r.dropped_total;
  s.coverage = r.gpu.coverage_share();
  s.hooks_s = Seconds(r.overhead.hooks_added_ns);
  s.cupti_s = Seconds(r.overhead.cupti_added_ns);
  s.startup_s = Seconds(r.overhead.startup_ns);
  s.sampler_signals_s = Seconds(r.overhead.sampler_signals_ns);
  s.elapsed_s = Seconds(r.overhead.elapsed_ns);
  if ((s.has_memory = r.memory.known())) {
    s.memory_reserved = static_cast<double>(r.memory.reserved_bytes);
    s.memory_peak = static_cast<double>(r.memory.peak_bytes);
    s.memory_total = static_cast<double>(r.memory.total_bytes);
  }
  if ((s.has_device = r.device.known())) {
    const DeviceStateFigures& d = r.device;
    s.device_util = d.last_util;
    s.device_sm_clock_mhz = d.last_sm_clock_mhz;
    s.device_power_w = d.last_power_w;
    s.device_temperature_c = d.last_temperature_c;
    s.device_memory_used = static_cast<double>(d.last_memory_used);
    s.device_pcie_link_share = d.PcieLinkShare();
    s.device_throttled_s = d.throttled_busy_s;
    s.device_others_busy_s = d.others_busy_s;
    if ((s.has_nvlink = d.nvlink_links > 0)) s.device_nvlink_links_up = d.nvlink_links_up;
    if ((s.has_nvlink_rate = d.HasNvLinkRate())) {
      s.device_nvlink_tx_bytes = d.nvlink_tx_bytes;
      s.device_nvlink_rx_bytes = d.nvlink_rx_bytes;
    }
  }
  if ((s.has_sm_fill = r.sm_fill.known())) {
    s.sm_fill = r.sm_fill.fill();
    s.sm_idle_s = r.sm_fill.idle_sm_ns * 1e-9;
  }
  const PlacementFigures p = Placement(r.env);
  if ((s.has_numa = p.numa_known())) s.cpu_off_node_share = p.OffNodeShare();
  if ((s.has_cgroup = r.io.cgroup)) {
    s.cgroup_throttled_s = r.io.all_throttled_s;
    s.cpu_quota_cores = p.quota_cores;
  }
  return s;
}

}  // namespace gpuwatch::collector
