// Live views of a running collector (the `gpuwatch run` status line, Prometheus /metrics):
// a snapshot of every rank's figures (its RankResult as it stands), taken on the server's
// thread (jobs/live_snapshot.h) and handed to other threads by a pointer swap under a
// mutex. Readers never touch the aggregation; the ingest never waits on them.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <string>
#include <vector>

#include "analyze/rank_result.h"
#include "ingest/rank_sink.h"

namespace gpuwatch::collector {

struct OpSample {
  std::string op;        // "allreduce", ...
  uint64_t calls = 0, bytes = 0;
  double seconds = 0;    // GPU time of the calls that have one
  double busbw_bps = 0;  // bus bandwidth, bytes per second
};

// One rank, with the same figures its summary.json would have now.
struct RankSample {
  std::string job, host;
  int rank = -1, pid = 0;  // rank -1: the whole job (its ranks summed; a large job's live view)
  // In a large job's live view, why this rank is shown: "straggler", "lost_time", "hang".
  std::string outlier;
  bool connected = false;
  uint64_t events = 0;
  bool has_gpu = false;  // a device timeline (CUPTI): the gpu_* figures below mean something
  double gpu_busy_s = 0, gpu_active_s = 0;
  double gpu_idle_s[kIdleKinds] = {};  // idle gaps by IdleKind
  double sync_s = 0;     // host blocked in sync calls
  uint64_t h2d_bytes = 0, h2d_pageable_bytes = 0;
  uint64_t graph_launches = 0, graph_kernels = 0;  // CUDA graphs: hooked launches, kernels they ran (CUPTI)
  std::vector<OpSample> ops;
  uint64_t steps = 0;
  PerStepMean per_step;
  uint64_t dropped = 0;
  double coverage = 1;  // share of the active span the GPU timeline recorded (the budget's windows)
  // gpuwatch's own cost so far: hooks, CUPTI, over the time the library ran.
  double hooks_s = 0, cupti_s = 0, startup_s = 0, sampler_signals_s = 0, elapsed_s = 0;
  // Device memory the rank's allocations hold (has_memory), and its GPU's latest NVML sample
  // (has_device).
  bool has_memory = false, has_device = false;
  double memory_reserved = 0, memory_peak = 0, memory_total = 0;
  double device_util = 0, device_sm_clock_mhz = 0, device_power_w = 0, device_temperature_c = 0;
  double device_memory_used = 0, device_pcie_link_share = 1, device_throttled_s = 0, device_others_busy_s = 0;
  double device_nvlink_links_up = 0;  // has_device and the device has NVLink (has_nvlink)
  bool has_nvlink = false;
  // NVLink data moved each way, from NVML's counters (has_nvlink_rate: a sample had a rate).
  bool has_nvlink_rate = false;
  double device_nvlink_tx_bytes = 0, device_nvlink_rx_bytes = 0;
  // How much of the SMs the kernels' grids occupied (has_sm_fill: launch geometry seen).
  bool has_sm_fill = false;
  double sm_fill = 0, sm_idle_s = 0;
  // Where the rank ran (has_numa: its CPUs and its GPU's node known; has_cgroup: cpu.stat read).
  bool has_numa = false, has_cgroup = false;
  double cpu_off_node_share = 0, cgroup_throttled_s = 0, cpu_quota_cores = 0;
  // What paces the rank's step (its critical path, when known), and each finding's
  // predicted step with its fix (id, prediction; the modelled ones) and with every fix.
  CriticalPathFigures critical_path;
  std::vector<std::pair<std::string, WhatIf>> what_if;
  WhatIf all_fixed;
};

// The figures of `r` a live view shows, the same numbers summary.json has.
RankSample SampleOf(const RankResult& r);

struct LiveSnapshot {
  Clock::time_point at{};
  std::vector<RankSample> ranks;  // job, then rank key order
  // Sums over ranks, for the status line.
  int ranks_connected = 0;
  int ranks_total = 0;  // every rank (`ranks` has a large job's sums and outliers only)
  uint64_t events = 0, dropped = 0;
  double gpu_busy_s = 0, gpu_active_s = 0;
  double added_s = 0, elapsed_s = 0;  // gpuwatch's own cost, over the ranks' time
  int jobs = 0;
};

// Latest snapshot, shared between the server thread (Publish) and readers (Latest).
class LiveFeed {
 public:
  void Publish(LiveSnapshot s) {
    auto p = std::make_shared<const LiveSnapshot>(std::move(s));
    std::lock_guard<std::mutex> lock(mu_);
    latest_.swap(p);
  }
  // Null before the first Publish.
  std::shared_ptr<const LiveSnapshot> Latest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const LiveSnapshot> latest_;
};

}  // namespace gpuwatch::collector
