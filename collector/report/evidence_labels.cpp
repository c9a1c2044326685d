// See evidence_labels.h. The table is sorted by key for reading; lookups are linear (a
// finding has a dozen keys, the table a few hundred entries).
#include "report/evidence_labels.h"

#include <cmath>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {

using U = EvidenceUnit;

struct Entry {
  std::string_view key;
  std::string_view label;
  U unit;
};

// Every evidence key the findings write (analyze/findings*.cpp, stragglers.cpp), and the
// keys of the objects inside them.
constexpr Entry kLabels[] = {
    {"all_waits_s_by_rank", "every wait for a later rank", U::kSeconds},
    {"assumed_slowdown", "slowdown assumed for memory on another NUMA node", U::kNumber},
    {"assumed_speedup", "speed-up assumed with tensor cores", U::kNumber},
    {"at_expected_share_s", "their time at the expected share of the link", U::kSeconds},
    {"blocked_in", "blocked in", U::kName},
    {"blocked_s", "host blocked in syncs", U::kSeconds},
    {"bubble_s", "pipeline bubble", U::kSeconds},
    {"busbw_gbps", "bus bandwidth", U::kGbps},
    {"busy", "busy", U::kShare},
    {"busy_samples", "NVML samples with the GPU busy", U::kNumber},
    {"by_api", "time by call", U::kSeconds},
    {"by_comm", "by communicator", U::kNumber},
    {"by_comm_figures", "", U::kHidden},
    {"bytes", "bytes", U::kBytes},
    {"calls", "calls", U::kNumber},
    {"calls_at_threshold", "calls if each carried the threshold's bytes", U::kNumber},
    {"cause", "cause", U::kText},
    {"caused_beyond_own_wait_s", "wait caused beyond its own", U::kSeconds},
    {"cgroup_version", "cgroup version", U::kNumber},
    {"clock_share", "SM clock against its maximum", U::kShare},
    {"collectives", "collectives", U::kNumber},
    {"collectives_compared", "collectives compared", U::kNumber},
    {"comm", "communicator", U::kNumber},
    {"comm_kernels_s", "NCCL kernel time", U::kSeconds},
    {"compared_every", "compared every", U::kNumber},
    {"copies_s", "copy time", U::kSeconds},
    {"count", "calls", U::kNumber},
    {"cpu_affinity", "CPUs the rank may run on", U::kName},
    {"cpu_cores_busy", "CPU cores busy", U::kCores},
    {"cpu_cores_busy_in_gaps", "CPU cores busy while the GPU waited", U::kCores},
    {"cpu_cores_busy_overall", "CPU cores busy over the run", U::kCores},
    {"cpu_cores_waiting_in_gaps", "cores' worth of threads waiting for a CPU while the GPU waited", U::kCores},
    {"cpu_quota_cores", "CPU quota", U::kCores},
    {"cpu_wait_s", "threads' wait for a CPU", U::kSeconds},
    {"cpus", "CPUs", U::kNumber},
    {"cpus_on_gpu_node", "of them on the GPU's NUMA node", U::kNumber},
    {"cuda_driver", "CUDA driver", U::kName},
    {"cuda_runtime", "CUDA runtime", U::kName},
    {"data_loading_share", "samples iterating a DataLoader", U::kShare},
    {"device_memory_bytes", "device memory", U::kBytes},
    {"effect", "effect", U::kName},
    {"expected_share", "share of the link expected", U::kShare},
    {"explained_by_other_findings_s", "of it explained by other findings", U::kSeconds},
    {"exposed_comm_s", "communication not hidden by compute", U::kSeconds},
    {"exposed_s", "exposed", U::kSeconds},
    {"exposed_s_per_rank", "exposed per rank", U::kSeconds},
    {"exposed_share", "share of it exposed", U::kShare},
    {"exposed_wait_s", "exposed wait", U::kSeconds},
    {"first_stall_step", "first stall at step", U::kNumber},
    {"fp32_matmul_kernels", "FP32 matrix-multiply kernels", U::kNumber},
    {"fp32_matmul_s", "FP32 matrix-multiply time", U::kSeconds},
    {"fp32_share_of_matmul", "FP32 share of matrix-multiply time", U::kShare},
    {"gaps_sampled_s", "GPU waits sampled", U::kSeconds},
    {"gbps", "rate", U::kGbps},
    {"gen", "PCIe generation", U::kNumber},
    {"gen_max", "PCIe generation possible", U::kNumber},
    {"gpu_idle_waiting_for_cpu_s", "GPU idle while the host waited for a CPU", U::kSeconds},
    {"gpu_idle_waiting_for_host_s", "GPU idle waiting for the host", U::kSeconds},
    {"gpu_idle_waiting_for_launches_s", "GPU idle waiting for launches", U::kSeconds},
    {"gpu_node_cpus", "CPUs of the GPU's NUMA node", U::kName},
    {"gpu_numa_node", "GPU's NUMA node", U::kNumber},
    {"gpu_s", "GPU time", U::kSeconds},
    {"gpu_timeline_sampled", "GPU timeline sampled", U::kNumber},
    {"gpu_utilization", "GPU busy (CUPTI)", U::kShare},
    {"graph_kernels", "kernels run by CUDA graphs", U::kNumber},
    {"half_bandwidth_bytes", "bytes a call needs to reach half the bandwidth", U::kBytes},
    {"host", "host", U::kName},
    {"host_gpus", "GPUs on the host", U::kNumber},
    {"host_s", "host time in the calls", U::kSeconds},
    {"host_samples", "host samples while the GPU waited", U::kNumber},
    {"hosts", "hosts", U::kNumber},
    {"hw_slowdown", "hardware slowdown", U::kNumber},
    {"identified", "identified", U::kNumber},
    {"idle_sm_s", "SM time left idle", U::kSeconds},
    {"issues", "settings", U::kNumber},
    {"kernel_s", "kernel time", U::kSeconds},
    {"kernels", "kernels", U::kNumber},
    {"kind", "kind", U::kText},
    {"large_busbw_gbps", "bus bandwidth of the large collectives", U::kGbps},
    {"large_collectives", "large collectives", U::kNumber},
    {"large_collectives_s", "large collectives' time", U::kSeconds},
    {"last_share", "share of collectives it came last to", U::kShare},
    {"latency_per_call_us", "latency per call", U::kMicros},
    {"latency_us", "latency per call", U::kMicros},
    {"launch_call_mean_us", "mean launch call", U::kMicros},
    {"launches", "launches", U::kNumber},
    {"link", "link", U::kName},
    {"link_peak_gbps", "link's peak", U::kGbps},
    {"link_share", "link speed against its maximum", U::kShare},
    {"links", "links", U::kNumber},
    {"mean_bytes", "mean bytes per call", U::kBytes},
    {"mean_wait_per_collective_ms", "mean wait per collective", U::kMillis},
    {"median_excess_s", "median stall beyond a normal step", U::kSeconds},
    {"median_step_s", "median step", U::kSeconds},
    {"members", "members", U::kNumber},
    {"memory_bytes", "memory", U::kBytes},
    {"memory_headroom_share", "device memory free", U::kShare},
    {"memory_peak_bytes", "peak device memory", U::kBytes},
    {"memory_total_bytes", "device memory", U::kBytes},
    {"method", "method", U::kText},
    {"name", "name", U::kName},
    {"nccl", "NCCL", U::kName},
    {"nic_ports", "network ports", U::kNumber},
    {"nic_source", "network ports from", U::kName},
    {"note", "note", U::kName},
    {"nvlink_links", "NVLink links", U::kNumber},
    {"nvlink_links_up", "NVLink links up", U::kNumber},
    {"nvlink_rx_gbps_mean", "NVLink received, mean", U::kGbps},
    {"nvlink_rx_gbps_peak", "NVLink received, peak", U::kGbps},
    {"nvlink_tx_gbps_mean", "NVLink sent, mean", U::kGbps},
    {"nvlink_tx_gbps_peak", "NVLink sent, peak", U::kGbps},
    {"nvlink_version", "NVLink version", U::kName},
    {"off_node_share", "CPUs off the GPU's NUMA node", U::kShare},
    {"others_busy", "other processes busy on the GPU", U::kShare},
    {"others_memory_bytes", "other processes' device memory", U::kBytes},
    {"pcie_gen", "PCIe generation", U::kNumber},
    {"pcie_width", "PCIe lanes", U::kNumber},
    {"peak_source", "peak from", U::kText},
    {"peers_wait_s", "its peers' wait", U::kSeconds},
    {"per_second", "per second", U::kNumber},
    {"per_step", "per step", U::kNumber},
    {"per_step_ms", "per step", U::kMillis},
    {"period_steps", "every", U::kNumber},
    {"periods", "CPU quota periods", U::kNumber},
    {"periods_in_gaps", "CPU quota periods while the GPU waited", U::kNumber},
    {"pid", "process", U::kNumber},
    {"power", "power cap", U::kNumber},
    {"power_limit_w", "power limit", U::kWatts},
    {"power_mean_w", "mean power", U::kWatts},
    {"processes", "processes", U::kNumber},
    {"rank", "rank", U::kRank},
    {"ranks", "ranks", U::kNumber},
    {"ranks_reporting", "ranks reporting", U::kNumber},
    {"reachable_busbw_gbps", "bus bandwidth the link allows", U::kGbps},
    {"read_mbps_in_gaps", "read while the GPU waited", U::kMbps},
    {"read_mbps_overall", "read over the run", U::kMbps},
    {"recv_wait_s", "wait in receives", U::kSeconds},
    {"run_wait_share", "wait for a CPU per second of each thread", U::kShare},
    {"sampled_s", "time sampled", U::kSeconds},
    {"samples", "samples", U::kNumber},
    {"send_wait_s", "wait in sends", U::kSeconds},
    {"setting", "setting", U::kName},
    {"severity", "severity", U::kText},
    {"share", "share", U::kShare},
    {"share_of_reachable", "share of what the link allows", U::kShare},
    {"short_kernel_fraction", "kernels shorter than their launch", U::kShare},
    {"slow_stage", "slow stage", U::kNumber},
    {"sm_clock_max_mhz", "SM clock maximum", U::kMhz},
    {"sm_count", "SMs", U::kNumber},
    {"sm_fill", "SM fill", U::kShare},
    {"small_bytes", "bytes in small collectives", U::kBytes},
    {"small_collectives", "small collectives", U::kNumber},
    {"small_gpu_s", "small collectives' GPU time", U::kSeconds},
    {"small_grid_kernels", "kernels with too few blocks for the SMs", U::kNumber},
    {"stage", "stage", U::kNumber},
    {"stages", "stages", U::kNumber},
    {"stalls", "stalls", U::kNumber},
    {"storage_read_mbps_in_gaps", "read from storage while the GPU waited", U::kMbps},
    {"straggler", "the straggler", U::kRank},
    {"straggler_explained", "the straggler it explains", U::kNumber},
    {"straggler_wait_s", "waits for a straggler", U::kSeconds},
    {"summary", "what was measured", U::kText},
    {"temperature_max_c", "highest temperature", U::kCelsius},
    {"thermal", "temperature", U::kNumber},
    {"threshold_bytes", "small below", U::kBytes},
    {"threshold_source", "threshold from", U::kText},
    {"throttled_periods", "CPU quota periods throttled", U::kNumber},
    {"throttled_periods_in_gaps", "CPU quota periods throttled while the GPU waited", U::kNumber},
    {"throttled_s", "throttled by the CPU quota", U::kSeconds},
    {"throttled_s_in_gaps", "throttled by the CPU quota while the GPU waited", U::kSeconds},
    {"throttled_samples", "NVML samples with the clocks held back", U::kNumber},
    {"throttled_share", "throttled by the CPU quota", U::kShare},
    {"throttled_share_in_gaps", "throttled while the GPU waited", U::kShare},
    {"time_lost", "", U::kHidden},
    {"time_lost_from", "", U::kHidden},
    {"time_lost_s", "time lost", U::kSeconds},
    {"top_api", "most time in", U::kName},
    {"top_fp32_kernels", "FP32 kernels, most time first", U::kName},
    {"top_kernels", "kernels, most time first", U::kName},
    {"unnamed_share", "samples without a frame of the user's code", U::kShare},
    {"verdict", "verdict", U::kText},
    {"wait_s", "wait", U::kSeconds},
    {"wait_s_by_straggler", "wait, by the rank waited for", U::kSeconds},
    {"waiting_rank", "waiting rank", U::kRank},
    {"waits_sum_s", "all the waits for it", U::kSeconds},
    {"where", "where", U::kName},
    {"width", "PCIe lanes", U::kNumber},
    {"width_max", "PCIe lanes possible", U::kNumber},
    {"windows", "windows", U::kNumber},
};

bool Has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// A key outside the table: its unit from its name's last unit word, the words without it.
EvidenceLabel FromName(std::string_view key) {
  struct Suffix {
    std::string_view tail;
    U unit;
  };
  static constexpr Suffix kSuffixes[] = {
      {"_s", U::kSeconds},  {"_ms", U::kMillis},   {"_us", U::kMicros}, {"_bytes", U::kBytes},
      {"_gbps", U::kGbps},  {"_mbps", U::kMbps},   {"_mhz", U::kMhz},   {"_w", U::kWatts},
      {"_c", U::kCelsius},  {"_cores", U::kCores}, {"_share", U::kShare}, {"_fraction", U::kShare}};
  for (const Suffix& s : kSuffixes) {
    if (EndsWith(key, s.tail)) {
      const bool word = s.unit == U::kShare || s.unit == U::kCores;  // a word of the label too
      return {ReadableKey(word ? key : key.substr(0, key.size() - s.tail.size())), s.unit};
    }
    // "throttled_s_in_gaps": the unit inside the name.
    const std::string inside = std::string(s.tail) + "_";
    if (const size_t at = key.find(inside); at != std::string_view::npos && s.unit != U::kShare)
      return {ReadableKey(std::string(key.substr(0, at)) + std::string(key.substr(at + s.tail.size()))), s.unit};
  }
  return {ReadableKey(key), Has(key, "share") ? U::kShare : U::kNumber};
}

std::string Number(double v, const char* unit = "") {
  const bool whole = std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15;
  return (whole ? Printf("%.0f", v) : Printf("%.4g", v)) + unit;
}

}  // namespace

std::string ReadableKey(std::string_view key) {
  std::string out(key);
  for (char& c : out)
    if (c == '_') c = ' ';
  return out;
}

EvidenceLabel LabelOfEvidence(std::string_view key) {
  constexpr std::string_view kByRank = "_by_rank";
  for (const Entry& e : kLabels)
    if (e.key == key) return {std::string(e.label), e.unit};
  if (EndsWith(key, kByRank)) {
    EvidenceLabel l = LabelOfEvidence(key.substr(0, key.size() - kByRank.size()));
    l.label += ", by rank";
    return l;
  }
  return FromName(key);
}

std::string EvidenceValueText(const nlohmann::json& v, EvidenceUnit unit) {
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    return unit == U::kName ? s : ReadableKey(s);
  }
  if (!v.is_number()) return "\xe2\x80\xa6";
  const double x = v.get<double>();
  switch (unit) {
    case U::kSeconds: return FmtDuration(x);
    case U::kMillis: return FmtDuration(x * 1e-3);
    case U::kMicros: return FmtDuration(x * 1e-6);
    case U::kBytes: return x >= 0 ? FmtBytes(static_cast<uint64_t>(x)) : Number(x);
    case U::kGbps: return Printf("%.1f GB/s", x);
    case U::kMbps: return Printf("%.1f MB/s", x);
    case U::kShare: return x != 0 && std::fabs(x) < 0.01 ? Printf("%.2f%%", 100 * x) : Printf("%.0f%%", 100 * x);
    case U::kMhz: return Printf("%.0f MHz", x);
    case U::kWatts: return Printf("%.0f W", x);
    case U::kCelsius: return Printf("%.0f \xc2\xb0""C", x);
    case U::kCores: return Printf("%.2f cores", x);
    case U::kRank: return "rank " + Number(x);
    default: return Number(x);
  }
}

}  // namespace gpuwatch::collector
