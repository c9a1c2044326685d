#include "live/prometheus.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>

namespace gpuwatch::collector {
namespace {

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // %.17g round-trips a double; integers below 2^53 print without an exponent.
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Family {
  const char* name;
  const char* type;  // counter or gauge
  const char* help;
};

// Appends one family: its header, then one sample per rank for which `value` says so.
// `value` may add several samples (one per op) through `emit(extra_labels, v)`.
using Emit = std::function<void(const std::string& extra_labels, double v)>;
void Write(std::string& out, const Family& f, const LiveSnapshot& snap,
           const std::vector<std::string>& labels,
           const std::function<void(const RankSample&, const Emit&)>& value) {
  std::string body;
  for (size_t i = 0; i < snap.ranks.size(); ++i) {
    const RankSample& r = snap.ranks[i];
    value(r, [&](const std::string& extra, double v) {
      body += f.name;
      body += '{';
      body += labels[i];
      if (!extra.empty()) body += "," + extra;
      body += "} " + Num(v) + "\n";
    });
  }
  if (body.empty()) return;  // no sample: no family (promtool accepts both, this is tidier)
  out += std::string("# HELP ") + f.name + " " + f.help + "\n";
  out += std::string("# TYPE ") + f.name + " " + f.type + "\n";
  out += body;
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatPrometheus(const LiveSnapshot& snap) {
  // Label sets, made unique: a second process claiming the same (job, host, rank) gets pid.
  std::vector<std::string> labels;
  std::map<std::tuple<std::string, std::string, int>, int> seen;
  for (const RankSample& r : snap.ranks) {
    std::string l = "job_id=\"" + EscapeLabelValue(r.job) + "\",host=\"" +
                    EscapeLabelValue(r.host) + "\",rank=\"" + (r.rank < 0 ? "all" : std::to_string(r.rank)) + "\"";
    if (!r.outlier.empty()) l += ",outlier=\"" + EscapeLabelValue(r.outlier) + "\"";
    if (seen[{r.job, r.host, r.rank}]++ > 0) l += ",pid=\"" + std::to_string(r.pid) + "\"";
    labels.push_back(std::move(l));
  }
  auto one = [](double (*get)(const RankSample&)) {
    return [get](const RankSample& r, const Emit& emit) { emit("", get(r)); };
  };
  auto gpu = [](double (*get)(const RankSample&)) {
    return [get](const RankSample& r, const Emit& emit) {
      if (r.has_gpu) emit("", get(r));
    };
  };
  auto per_op = [](double (*get)(const OpSample&)) {
    return [get](const RankSample& r, const Emit& emit) {
      for (const OpSample& o : r.ops) emit("op=\"" + EscapeLabelValue(o.op) + "\"", get(o));
    };
  };

  std::string out;
  Write(out, {"gpuwatch_rank_connected", "gauge", "1 while the rank has a connection to the collector"},
        snap, labels, one([](const RankSample& r) { return r.connected ? 1.0 : 0.0; }));
  Write(out, {"gpuwatch_events_received_total", "counter", "Events received from the rank"},
        snap, labels, one([](const RankSample& r) { return double(r.events); }));
  Write(out, {"gpuwatch_gpu_busy_ratio", "gauge",
              "GPU busy time over active time so far (device timeline from CUPTI only)"},
        snap, labels, gpu([](const RankSample& r) {
          return r.gpu_active_s > 0 ? r.gpu_busy_s / r.gpu_active_s : 0.0;
        }));
  Write(out, {"gpuwatch_gpu_busy_seconds_total", "counter",
              "Time the GPU ran kernels, copies or memsets (union over streams)"},
        snap, labels, gpu([](const RankSample& r) { return r.gpu_busy_s; }));
  Write(out, {"gpuwatch_gpu_active_seconds_total", "counter",
              "First to last device work of the rank; rate(busy)/rate(active) is busy now"},
        snap, labels, gpu([](const RankSample& r) { return r.gpu_active_s; }));
  Write(out, {"gpuwatch_gpu_idle_seconds_total", "counter",
              "GPU idle time between busy spans, by why (host_wait, launch_wait, sync_wait, other)"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          if (!r.has_gpu) return;
          for (int k = 0; k < kIdleKinds; ++k) emit(std::string("kind=\"") + IdleKindKey(k) + "\"", r.gpu_idle_s[k]);
        });
  Write(out, {"gpuwatch_gpu_timeline_coverage_ratio", "gauge",
              "Share of the GPU's active span that CUPTI recorded (below 1: the overhead budget's windows; "
              "the GPU figures are then scaled from them)"},
        snap, labels, gpu([](const RankSample& r) { return r.coverage; }));
  Write(out, {"gpuwatch_overhead_seconds_total", "counter",
              "Time gpuwatch itself added to the rank, by part: hooks (calls x measured cost), cupti "
              "(its instrumented calls x measured cost), startup (its load and ring set-up on the rank's threads), "
              "sampler_signals (the host sampler's signal handlers on the rank's threads)"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          if (r.elapsed_s <= 0) return;
          emit("part=\"hooks\"", r.hooks_s);
          emit("part=\"cupti\"", r.cupti_s);
          emit("part=\"startup\"", r.startup_s);
          emit("part=\"sampler_signals\"", r.sampler_signals_s);
        });
  Write(out, {"gpuwatch_sync_stall_seconds_total", "counter",
              "Host time blocked in CUDA synchronizing calls"},
        snap, labels, one([](const RankSample& r) { return r.sync_s; }));
  Write(out, {"gpuwatch_h2d_bytes_total", "counter", "Bytes copied host to device"}, snap,
        labels, one([](const RankSample& r) { return double(r.h2d_bytes); }));
  Write(out, {"gpuwatch_h2d_pageable_bytes_total", "counter",
              "Bytes copied host to device from pageable (not pinned) memory"},
        snap, labels, one([](const RankSample& r) { return double(r.h2d_pageable_bytes); }));
  Write(out, {"gpuwatch_graph_launches_total", "counter", "CUDA graph launches (cudaGraphLaunch)"}, snap, labels,
        one([](const RankSample& r) { return double(r.graph_launches); }));
  Write(out, {"gpuwatch_graph_kernels_total", "counter",
              "Kernels CUDA graph launches ran on the GPU (CUPTI only)"},
        snap, labels, gpu([](const RankSample& r) { return double(r.graph_kernels); }));
  Write(out, {"gpuwatch_collective_calls_total", "counter", "NCCL collective calls, by op"},
        snap, labels, per_op([](const OpSample& o) { return double(o.calls); }));
  Write(out, {"gpuwatch_collective_bytes_total", "counter",
              "NCCL collective payload bytes, by op"},
        snap, labels, per_op([](const OpSample& o) { return double(o.bytes); }));
  Write(out, {"gpuwatch_collective_seconds_total", "counter",
              "GPU time of NCCL collectives, by op"},
        snap, labels, per_op([](const OpSample& o) { return o.seconds; }));
  Write(out, {"gpuwatch_collective_busbw_bytes_per_second", "gauge",
              "Bus bandwidth of NCCL collectives so far (nccl-tests definition), by op"},
        snap, labels, per_op([](const OpSample& o) { return o.busbw_bps; }));
  Write(out, {"gpuwatch_steps_total", "counter", "Training steps recognized so far"}, snap,
        labels, one([](const RankSample& r) { return double(r.steps); }));
  Write(out, {"gpuwatch_step_seconds", "gauge",
              "Mean step time so far, as the job paced it (summary.json steps.mean_ms, in seconds)"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          if (r.per_step.known && r.per_step.step_ms > 0) emit("", r.per_step.step_ms * 1e-3);
        });
  Write(out, {"gpuwatch_step_part_seconds", "gauge",
              "Mean per step so far, by part (as summary.json steps.per_step_ms, in seconds)"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          if (!r.per_step.known) return;
          for (const auto& [part, ms] : r.per_step.Parts()) emit(std::string("part=\"") + part + "\"", ms * 1e-3);
        });
  // The critical path and the what-ifs: gauges of the latest analysis, absent while not known.
  Write(out, {"gpuwatch_critical_path_part_seconds", "gauge",
              "Time per step on the step's critical path, by part (summary.json critical_path.parts, in seconds)"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          if (!r.critical_path.known()) return;
          for (int p = 0; p < kPathParts; ++p)
            emit(std::string("part=\"") + PathPartKey(p) + "\"", r.critical_path.part_ms[p] * 1e-3);
        });
  Write(out, {"gpuwatch_what_if_step_seconds", "gauge",
              "Predicted step time with a finding's fix applied (summary.json findings[].what_if.step_ms, in seconds); "
              "finding=\"all\": with every fix (what_if_all)"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          for (const auto& [id, w] : r.what_if) emit("finding=\"" + EscapeLabelValue(id) + "\"", w.step_ms * 1e-3);
          if (r.all_fixed.known()) emit("finding=\"all\"", r.all_fixed.step_ms * 1e-3);
        });
  auto memory = [](double (*get)(const RankSample&)) {
    return [get](const RankSample& r, const Emit& emit) {
      if (r.has_memory) emit("", get(r));
    };
  };
  auto device = [](double (*get)(const RankSample&)) {
    return [get](const RankSample& r, const Emit& emit) {
      if (r.has_device) emit("", get(r));
    };
  };
  Write(out, {"gpuwatch_memory_reserved_bytes", "gauge", "Device memory the rank's allocations hold now (cudaMalloc...)"},
        snap, labels, memory([](const RankSample& r) { return r.memory_reserved; }));
  Write(out, {"gpuwatch_memory_peak_bytes", "gauge", "The most device memory the rank's allocations held at once"},
        snap, labels, memory([](const RankSample& r) { return r.memory_peak; }));
  Write(out, {"gpuwatch_memory_total_bytes", "gauge", "The rank's device's memory"},
        snap, labels, memory([](const RankSample& r) { return r.memory_total; }));
  Write(out, {"gpuwatch_device_utilization_ratio", "gauge", "NVML: the device's utilization (any process), latest sample"},
        snap, labels, device([](const RankSample& r) { return r.device_util; }));
  Write(out, {"gpuwatch_device_memory_used_bytes", "gauge", "NVML: device memory in use by every process, latest sample"},
        snap, labels, device([](const RankSample& r) { return r.device_memory_used; }));
  Write(out, {"gpuwatch_device_sm_clock_mhz", "gauge", "NVML: SM clock, latest sample"},
        snap, labels, device([](const RankSample& r) { return r.device_sm_clock_mhz; }));
  Write(out, {"gpuwatch_device_power_watts", "gauge", "NVML: power draw, latest sample"},
        snap, labels, device([](const RankSample& r) { return r.device_power_w; }));
  Write(out, {"gpuwatch_device_temperature_celsius", "gauge", "NVML: GPU temperature, latest sample"},
        snap, labels, device([](const RankSample& r) { return r.device_temperature_c; }));
  Write(out, {"gpuwatch_device_pcie_link_ratio", "gauge",
              "NVML: the PCIe link's bandwidth as trained over its maximum generation and width"},
        snap, labels, device([](const RankSample& r) { return r.device_pcie_link_share; }));
  Write(out, {"gpuwatch_device_throttled_seconds_total", "counter",
              "NVML: busy time with the clocks held back by power, heat or a hardware slowdown"},
        snap, labels, device([](const RankSample& r) { return r.device_throttled_s; }));
  Write(out, {"gpuwatch_device_other_processes_busy_seconds_total", "counter",
              "NVML: time other processes kept the rank's GPU busy"},
        snap, labels, device([](const RankSample& r) { return r.device_others_busy_s; }));
  auto when = [](bool RankSample::*known, double RankSample::*v) {
    return [known, v](const RankSample& r, const Emit& emit) {
      if (r.*known) emit("", r.*v);
    };
  };
  Write(out, {"gpuwatch_device_nvlink_links_up", "gauge", "NVML: NVLink links up (fewest seen); devices with NVLink only"},
        snap, labels, when(&RankSample::has_nvlink, &RankSample::device_nvlink_links_up));
  Write(out, {"gpuwatch_device_nvlink_bytes_total", "counter",
              "NVML: data bytes sent (tx) and received (rx) over the GPU's NVLink links while sampled; devices "
              "whose NVLink counters NVML gives only"},
        snap, labels, [](const RankSample& r, const Emit& emit) {
          if (!r.has_nvlink_rate) return;
          emit("direction=\"tx\"", r.device_nvlink_tx_bytes);
          emit("direction=\"rx\"", r.device_nvlink_rx_bytes);
        });
  Write(out, {"gpuwatch_sm_fill_ratio", "gauge",
              "The kernels' mean share of the SMs their grids gave a block, weighted by kernel time (CUPTI)"},
        snap, labels, when(&RankSample::has_sm_fill, &RankSample::sm_fill));
  Write(out, {"gpuwatch_sm_idle_seconds_total", "counter",
              "Kernel time x the share of SMs the kernel's grid left without a block (CUPTI)"},
        snap, labels, when(&RankSample::has_sm_fill, &RankSample::sm_idle_s));
  Write(out, {"gpuwatch_cpu_off_gpu_node_ratio", "gauge",
              "Share of the CPUs the rank may run on that sit away from its GPU's NUMA node"},
        snap, labels, when(&RankSample::has_numa, &RankSample::cpu_off_node_share));
  Write(out, {"gpuwatch_cgroup_throttled_seconds_total", "counter",
              "Time the rank's cgroup was held throttled by its CPU quota (cpu.stat)"},
        snap, labels, when(&RankSample::has_cgroup, &RankSample::cgroup_throttled_s));
  Write(out, {"gpuwatch_cgroup_cpu_quota_cores", "gauge", "The rank's cgroup's CPU quota in cores (0: no quota)"},
        snap, labels, when(&RankSample::has_cgroup, &RankSample::cpu_quota_cores));
  Write(out, {"gpuwatch_dropped_records_total", "counter",
              "Records the library could not send (ring full, buffer cap, ...)"},
        snap, labels, one([](const RankSample& r) { return double(r.dropped); }));
  // Collector-wide, no rank labels: scrapes of an idle collector still say it is there.
  out += "# HELP gpuwatch_collector_jobs Jobs the collector holds\n"
         "# TYPE gpuwatch_collector_jobs gauge\n"
         "gpuwatch_collector_jobs " + Num(snap.jobs) + "\n";
  out += "# HELP gpuwatch_collector_ranks_connected Ranks now connected\n"
         "# TYPE gpuwatch_collector_ranks_connected gauge\n"
         "gpuwatch_collector_ranks_connected " + Num(snap.ranks_connected) + "\n";
  return out;
}

}  // namespace gpuwatch::collector
