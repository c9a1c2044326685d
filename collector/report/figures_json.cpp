// See figures_json.h. Keys are a public interface: docs/summary-schema.md.
#include "report/figures_json.h"

#include <algorithm>
#include <cmath>

#include "common/api_names.h"
#include "report/comms_json.h"
#include "report/critical_path_json.h"
#include "common/format.h"
#include "common/kernel_names.h"
#include "analyze/environment.h"
#include "analyze/contended_cost.h"
#include "analyze/host_placement.h"

namespace gpuwatch::collector {
namespace {

double Us(double ns) { return ns * 1e-3; }

// Busy share per window, rounded to 0.1% to keep summary.json small (512 windows at most).
nlohmann::json SeriesJson(const BusySeries& b) {
  if (b.empty()) return nullptr;
  nlohmann::json busy = nlohmann::json::array(), compute = nlohmann::json::array();
  for (size_t i = 0; i < b.size(); ++i) {
    busy.push_back(std::round(b.Fraction(i) * 1000) / 1000);
    compute.push_back(std::round(b.Fraction(i, true) * 1000) / 1000);
  }
  return {{"start_ns", b.origin_ns()},
          {"window_s", static_cast<double>(b.window_ns()) / 1e9},  // 0.01 exactly, not 1e7 * 1e-9
          {"busy", busy},
          {"compute_busy", compute}};
}

}  // namespace

nlohmann::json SyncJson(const SyncFigures& s) {
  nlohmann::json by_api = nlohmann::json::object();
  for (size_t i = 0; i < SyncFigures::kApis.size(); ++i)
    if (s.count[i]) by_api[ApiName(SyncFigures::kApis[i])] = {{"count", s.count[i]}, {"total_s", Seconds(s.ns[i])}};
  return {{"count", s.TotalCount()}, {"total_s", Seconds(s.TotalNs())}, {"by_api", by_api}};
}

nlohmann::json CopiesJson(const CopyFigures& c, const GpuFigures& gpu) {
  nlohmann::json out = nlohmann::json::object();
  for (int i = 0; i < kCopyDirections; ++i) {
    const Tally& d = c.dir[i].calls;
    const Tally& dev = gpu.copies[i].device;
    out[kCopyDirectionKeys[i]] = {
        {"count", d.count},
        {"bytes", d.bytes},
        {"total_s", Seconds(d.ns)},
        {"gbps", Gbps(static_cast<double>(d.bytes), Seconds(d.ns))},
        // The transfer's own rate: bytes over the device's copy time (CUPTI), else null.
        {"device_gbps", gpu.cupti() && dev.ns ? nlohmann::json(Gbps(static_cast<double>(dev.bytes), Seconds(dev.ns)))
                                             : nlohmann::json(nullptr)},
        {"pageable_count", c.dir[i].pageable.count},
        {"pageable_bytes", c.dir[i].pageable.bytes},
        {"blocking_count", c.dir[i].blocking_count}};
  }
  out["d2d"] = {{"count", c.d2d.count}, {"bytes", c.d2d.bytes}, {"total_s", Seconds(c.d2d.ns)}};
  return out;
}

nlohmann::json CollectivesJson(const CollectiveFigures& c, const RankWaits* waits) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const CollectiveFigures::Op& o = c.ops[i];
    if (o.count == 0) continue;
    nlohmann::json e = {{"count", o.count}, {"bytes", o.bytes}, {"total_s", Seconds(o.timed.ns)},
                        {"no_gpu_time_count", o.no_gpu_time()}};
    AddOpBandwidthJson(o, waits ? waits->op_ns[i] : 0, e);
    out[kCollOps[i].name] = std::move(e);
  }
  return out;
}

nlohmann::json LaunchesJson(const LaunchFigures& l) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [name, n] : l.Top(kTopN)) top.push_back({{"name", DemangleName(name)}, {"launches", n}});
  return {{"launches", l.launches}, {"driver_launches", l.driver_launches}, {"top_launched", top}};
}

nlohmann::json GraphsJson(const GraphFigures& g) {
  nlohmann::json per = nlohmann::json::array();
  for (const auto& [id, x] : g.by_graph)
    per.push_back({{"graph_id", id}, {"launches", x.launches}, {"kernels", x.kernels}, {"ops", x.ops},
                   {"device_s", Seconds(x.device_ns)}});
  return {{"launches", g.launches},
          {"launch_calls_s", Seconds(g.launch_ns)},
          {"kernels", g.device.kernels},
          {"ops", g.device.ops},
          {"device_s", Seconds(g.device.device_ns)},
          {"device_launches", g.device.launches},
          {"captures", g.captures},
          {"instantiations", g.instantiations},
          {"captured_calls", g.captured_calls},
          {"per_graph", per}};
}

nlohmann::json ApiCallsJson(const ApiCallFigures& a) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [api, x] : a.by_api)
    out[ApiName(api)] = {{"count", x.count}, {"total_s", Seconds(x.ns)}, {"captured", x.captured},
                         {"not_ready", x.not_ready}, {"failed", x.failed}};
  return out;
}

// Rank only: per device stream, with the cross-stream waits behind its idle time.
nlohmann::json StreamsJson(const StreamFigures& f) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [id, s] : f.by_stream) {
    nlohmann::json idle = nlohmann::json::object();
    for (int k = 0; k < kStreamIdleKinds; ++k) idle[StreamIdleKey(k)] = Seconds(s.idle_ns[k]);
    a.push_back({{"stream", id}, {"work", s.work}, {"busy_s", Seconds(s.busy_ns)},
                 {"idle_s", Seconds(s.IdleTotal())}, {"idle_breakdown_s", idle}, {"waits", s.waits}});
  }
  return a;
}

nlohmann::json GpuJson(const GpuFigures& s) {
  nlohmann::json g;
  g["source"] = s.source_name();
  g["source_detail"] = s.source_detail;
  g["comm_kernels"] = {{"count", s.comm_kernels + s.coll_events.count},
                       {"total_s", Seconds(s.run.comm + s.coll_events.ns)}};
  if (!s.cupti()) {
    for (const char* k : {"busy_s", "compute_busy_s", "compute_busy", "active_s", "utilization", "gaps", "idle_breakdown_s", "launch_delay", "kernels",
                          "memcpy", "utilization_series"})
      g[k] = nullptr;
    return g;
  }
  g["busy_s"] = Seconds(s.run.busy);
  g["compute_busy_s"] = Seconds(std::min(s.run.noncomm_busy, s.active_ns));
  g["compute_busy"] = s.compute_utilization();
  g["active_s"] = Seconds(s.active_ns);
  g["utilization"] = s.utilization();
  g["gaps"] = {{"count", s.gap_count},
               {"total_s", Seconds(s.run.IdleTotal())},
               {"p50_us", Us(s.gaps.Quantile(0.50))},
               {"p90_us", Us(s.gaps.Quantile(0.90))},
               {"p99_us", Us(s.gaps.Quantile(0.99))},
               {"max_us", Us(static_cast<double>(s.gaps.max()))}};
  nlohmann::json idle = nlohmann::json::object();
  for (int k = 0; k < kIdleKinds; ++k) idle[IdleKindKey(k)] = Seconds(s.run.idle[k]);
  g["idle_breakdown_s"] = idle;
  g["launch_delay"] = {{"count", s.launch_delay.count()},
                       {"p50_us", Us(s.launch_delay.Quantile(0.50))},
                       {"p99_us", Us(s.launch_delay.Quantile(0.99))}};
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [name, k] : s.TopByTime(kTopN))
    top.push_back({{"name", DemangleName(name)}, {"count", k.count}, {"total_s", Seconds(k.ns)},
                   {"in_graphs", k.in_graphs}});
  g["kernels"] = {{"count", s.kernel_count},
                  {"in_graphs", s.graph_kernels},
                  {"total_s", Seconds(s.run.compute)},
                  {"median_us", Us(s.kernel_dur.Quantile(0.50))},
                  {"short_fraction", s.short_fraction()},
                  {"top", top}};
  nlohmann::json mc;
  for (int i = 0; i < kCopyDirections; ++i) {
    const Tally& c = s.copies[i].device;
    mc[kCopyDirectionKeys[i]] = {
        {"count", c.count}, {"bytes", c.bytes}, {"device_s", Seconds(c.ns)}, {"pageable_count", s.copies[i].pageable}};
  }
  g["memcpy"] = mc;
  g["coverage"] = {{"sampled", s.coverage.sampled},
                   {"share", s.coverage_share()},
                   {"windows", s.coverage.windows},
                   {"covered_s", Seconds(s.coverage.sampled ? s.coverage.covered_ns : s.active_ns)},
                   {"enqueue_share", s.coverage.sampled ? s.coverage.WorkShare() : 1.0}};
  g["utilization_series"] = SeriesJson(s.series);
  g["late_records"] = s.late;
  g["window_overflows"] = s.overflow;
  g["unmatched_correlations"] = s.unmatched;
  return g;
}

nlohmann::json DroppedJson(const std::map<std::string, uint64_t>& d) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [reason, n] : d) out[reason] = n;
  return out;
}

nlohmann::json PerStepMsJson(const PerStepMean& m) {
  if (!m.known) return nullptr;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [part, ms] : m.Parts()) j[part] = ms;
  return j;
}

// A median period in ms, null when not measured.
nlohmann::json OrNull(uint64_t ns) { return ns ? nlohmann::json(Millis(Seconds(ns))) : nlohmann::json(nullptr); }

nlohmann::json StepsJson(const RankResult& r) {
  nlohmann::json j = {{"count", r.steps_total()},
                      {"source", r.found.source},
                      {"median_ms", Millis(Seconds(r.StepPercentileNs(0.5)))},
                      {"p90_ms", Millis(Seconds(r.StepPercentileNs(0.9)))},
                      {"max_ms", Millis(Seconds(r.StepMaxNs()))},
                      {"total_s", r.StepsTotalS()},
                      {"host_range_ms", Millis(Seconds(r.HostRangeMedianNs()))},
                      {"host_period_ms", OrNull(r.HostPeriodMedianNs())},
                      {"device_period_ms", OrNull(r.DevicePeriodMedianNs())},
                      {"paced_by", r.steps_total() ? nlohmann::json(r.PacedBy()) : nlohmann::json(nullptr)}};
  if (r.steps_total() > r.steps.steps.size()) j["per_step_records"] = r.steps.steps.size();  // the first ones
  // Steps whose device figures are whole: in a window of a sampled timeline, or inferred
  // after the pattern was found.
  if (r.per_step.per_step && (r.gpu.coverage.sampled || r.per_step.steps < r.steps.steps.size()))
    j["per_step_recorded"] = r.per_step.steps;
  j["per_step_ms"] = PerStepMsJson(r.per_step);
  j["mean_ms"] = r.per_step.known ? nlohmann::json(r.per_step.step_ms) : nlohmann::json(nullptr);
  j["unattributed_ms"] = r.per_step.known ? nlohmann::json(r.per_step.UnattributedMs()) : nlohmann::json(nullptr);
  if (r.per_step.known) j["per_step_source"] = r.per_step.per_step ? "per step" : "run average";
  j["per_step_graphs"] = r.per_step.known ? nlohmann::json{{"launches", r.per_step.graph_launches},
                                                           {"kernels", r.per_step.graph_kernels}}
                                          : nlohmann::json(nullptr);
  return j;
}

nlohmann::json FindingsJson(const std::vector<Finding>& f) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : f)
    a.push_back({{"id", x.id},
                 {"title", x.title},
                 {"severity", x.severity},
                 {"ranks", x.ranks},
                 {"time_lost_s", x.time_lost_s},
                 {"share", x.share},
                 {"summary", x.summary},
                 {"evidence", x.evidence},
                 {"fix", x.fix},
                 {"what_if", WhatIfJson(x.what_if)}});
  return a;
}

nlohmann::json EnvJson(const EnvFacts& e) {
  if (!e.known) return nullptr;
  nlohmann::json s = nlohmann::json::object();
  for (const auto& [k, v] : e.settings) s[k] = v;
  auto ver = [](int v, const std::string& t) { return v > 0 ? nlohmann::json(t) : nlohmann::json(nullptr); };
  return {{"cuda_runtime", ver(e.cuda_runtime, CudaVersionText(e.cuda_runtime))},
          {"cuda_driver", ver(e.cuda_driver, CudaVersionText(e.cuda_driver))},
          {"nccl", ver(e.nccl, NcclVersionText(e.nccl))},
          {"cuda_runtime_version", e.cuda_runtime},
          {"cuda_driver_version", e.cuda_driver},
          {"nccl_version", e.nccl},
          {"device_name", e.device_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.device_name)},
          {"device_memory_bytes", e.device_memory_bytes ? nlohmann::json(e.device_memory_bytes) : nlohmann::json(nullptr)},
          {"device_sm_count", e.device_sm_count ? nlohmann::json(e.device_sm_count) : nlohmann::json(nullptr)},
          {"device_compute_capability",
           ver(e.device_compute_capability, ComputeCapabilityText(e.device_compute_capability))},
          {"settings", s},
          {"network", e.nic_ports || e.host_gpus
                          ? nlohmann::json{{"nic_source", e.nic_source.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.nic_source)},
                                           {"nic_ports", e.nic_ports},
                                           {"nic_max_gbps", e.nic_max_mbps * 1e-3},
                                           {"nic_total_gbps", e.nic_total_mbps * 1e-3},
                                           {"host_gpus", e.host_gpus}}
                          : nlohmann::json(nullptr)}};
}

namespace {

// The sections a rank and the job both have (RankResult and JobResult name them alike).
template <class Figures>
void AddMeasured(const Figures& f, const RankWaits* waits, nlohmann::json& obj) {
  obj["sync"] = SyncJson(f.sync);
  obj["memcpy"] = CopiesJson(f.copies, f.gpu);
  obj["collectives"] = CollectivesJson(f.collectives, waits);
  obj["small_collectives"] = SmallCollectivesJson(f.coll_sizes);
  obj["pipeline"] = PipelineJson(f.pipeline);
  obj["kernels"] = LaunchesJson(f.launches);
  obj["graphs"] = GraphsJson(f.graphs);
  obj["api_calls"] = ApiCallsJson(f.api_calls);
  obj["memset"] = {{"count", f.copies.memset.count},
                   {"bytes", f.copies.memset.bytes},
                   {"total_s", Seconds(f.copies.memset.ns)}};
  obj["gpu"] = GpuJson(f.gpu);
  obj["dropped"] = DroppedJson(f.dropped);
  obj["dropped_total"] = f.dropped_total;
}

}  // namespace

namespace {

const char* CuptiModeName(int mode) {
  switch (mode) {
    case wire::CUPTI_MODE_BUDGET: return "budget";
    case wire::CUPTI_MODE_FULL: return "full";
    case wire::CUPTI_MODE_OFF: return "off";
    default: return "unknown";
  }
}

}  // namespace

nlohmann::json OverheadJson(const RankResult& r) {
  const OverheadFacts& o = r.overhead;
  if (!o.known) return nullptr;
  const uint64_t added = o.AddedNs();
  const ContendedCost contended = MeasureContendedCost(r);
  return {{"cupti_mode", CuptiModeName(o.cupti_mode)},
          {"budget", o.budget},
          {"added_s", Seconds(added)},
          {"hooks_s", Seconds(o.hooks_added_ns)},
          {"cupti_s", Seconds(o.cupti_added_ns)},
          {"startup_s", Seconds(o.startup_ns)},
          {"sampler_signals_s", Seconds(o.sampler_signals_ns)},
          {"sampler_s", Seconds(o.sampler_ns)},
          {"share_of_wall", o.elapsed_ns ? static_cast<double>(added) / o.elapsed_ns : 0.0},
          {"hook_ns_per_call", o.hook_ns},
          {"hook_ns_timed_in_place", o.hook_samples > 0},
          {"hook_calls", o.hook_calls},
          {"cupti_us_per_call", o.cupti_ns * 1e-3},
          {"cupti_cost_measured", o.cupti_ns_measured},
          {"cupti_calls", o.cupti_calls},
          {"cupti_graph_launches", o.cupti_graph_launches},
          {"cupti_us_per_graph_launch", o.cupti_graph_ns * 1e-3},
          {"cupti_graph_cost_measured", o.cupti_graph_ns_measured},
          {"cupti_hw_trace", o.hw_trace},
          {"cupti_detaches", o.cupti_detaches},
          {"cupti_detach_s", Seconds(o.cupti_detach_ns)},
          {"cupti_linger_calls", o.cupti_linger_calls},
          {"cupti_linger_us_per_call", o.cupti_linger_ns * 1e-3},
          {"cupti_linger_cost_measured", o.cupti_linger_ns_measured},
          {"windows", o.windows},
          {"window_s", Seconds(o.window_ns)},
          {"elapsed_s", Seconds(o.elapsed_ns)},
          {"sender_cpu_s", Seconds(o.sender_cpu_ns)},
          {"collector_cpu_s", o.collector_cpu_ns ? nlohmann::json(Seconds(o.collector_cpu_ns)) : nlohmann::json(nullptr)},
          {"beside_cpu_s", contended.beside_cpu_s},
          {"contended", contended.known ? nlohmann::json{{"added_s", contended.added_s},
                                               {"cores_busy_share", contended.busy_share},
                                               {"stretch", contended.stretch},
                                               {"cpus", contended.cpus}}
                                        : nlohmann::json(nullptr)}};
}

nlohmann::json JobOverheadJson(const RankList& ranks) {
  uint64_t hooks = 0, cupti = 0, startup = 0, signals = 0, sampler = 0, elapsed = 0, sender_cpu = 0;
  double max_share = 0, budget = 0;
  bool any = false;
  for (const RankResult& r : ranks) {
    const OverheadFacts& o = r.overhead;
    if (!o.known) continue;
    any = true;
    hooks += o.hooks_added_ns;
    cupti += o.cupti_added_ns;
    startup += o.startup_ns;
    signals += o.sampler_signals_ns;
    sampler += o.sampler_ns;
    elapsed += o.elapsed_ns;
    sender_cpu += o.sender_cpu_ns;
    budget = std::max(budget, o.budget);
    if (o.elapsed_ns) max_share = std::max(max_share, static_cast<double>(o.AddedNs()) / o.elapsed_ns);
  }
  if (!any) return nullptr;
  const uint64_t added = hooks + cupti + startup + signals;
  return {{"budget", budget},
          {"added_s", Seconds(added)},
          {"hooks_s", Seconds(hooks)},
          {"cupti_s", Seconds(cupti)},
          {"startup_s", Seconds(startup)},
          {"sampler_signals_s", Seconds(signals)},
          {"sampler_s", Seconds(sampler)},
          {"share_of_wall", elapsed ? static_cast<double>(added) / elapsed : 0.0},
          {"max_share_of_wall", max_share},
          {"sender_cpu_s", Seconds(sender_cpu)}};
}

namespace {

nlohmann::json MemoryJson(const MemoryFigures& m) {
  if (!m.known()) return nullptr;
  nlohmann::json series = nullptr;
  if (!m.series.empty()) {
    nlohmann::json peak = nlohmann::json::array();
    for (size_t i = 0; i < m.series.size(); ++i) peak.push_back(m.series.Peak(i));
    series = {{"start_ns", m.series.origin_ns()},
              {"window_s", static_cast<double>(m.series.window_ns()) / 1e9},
              {"peak_bytes", peak}};
  }
  auto or_null = [](uint64_t v) { return v ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"peak_bytes", m.peak_bytes},
          {"total_bytes", or_null(m.total_bytes)},
          {"headroom_bytes", m.total_bytes ? nlohmann::json(m.headroom_bytes()) : nlohmann::json(nullptr)},
          {"peak_share", m.total_bytes ? nlohmann::json(m.peak_share()) : nlohmann::json(nullptr)},
          {"reserved_bytes", m.reserved_bytes},
          {"allocations", m.allocations},
          {"allocated_bytes", m.allocated_bytes},
          {"frees", m.frees},
          {"untracked_frees", m.untracked},
          {"min_free_bytes", m.mem_get_info_calls ? nlohmann::json(m.min_free_bytes) : nlohmann::json(nullptr)},
          {"reserved_series", series}};
}

// The rank's device as NVML saw it; null without samples (sampler_detail says why).
nlohmann::json DeviceJson(const DeviceStateFigures& d, const std::string& detail) {
  if (!d.known()) return detail.empty() ? nlohmann::json(nullptr) : nlohmann::json({{"sampler_detail", detail}});
  nlohmann::json others = nlohmann::json::array();
  for (const auto& [pid, o] : d.others)
    others.push_back({{"pid", pid},
                      {"memory_bytes", o.memory_bytes_max},
                      {"busy", d.sampled_s > 0 ? std::min(1.0, o.busy_s / d.sampled_s) : 0.0},
                      {"samples", o.samples}});
  // NVLink throughput: null without a sample that had a rate (no counters), never 0.
  auto rate = [&d](double v) { return d.HasNvLinkRate() ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json series = nlohmann::json::array();
  for (size_t i = 0; i < d.util_series.size(); ++i)
    series.push_back({d.util_series[i].first, std::round(d.util_series[i].second * 1000) / 1000, d.clock_series[i].second});
  const double throttled = d.busy_samples ? static_cast<double>(std::max({d.throttled_power, d.throttled_thermal,
                                                                          d.throttled_hw})) / d.busy_samples
                                          : 0.0;
  return {{"samples", d.samples},
          {"sampled_s", d.sampled_s},
          {"utilization", d.gpu_util_mean},
          {"memory_utilization", d.memory_util_mean},
          {"memory_used_max_bytes", d.memory_used_max},
          {"memory_total_bytes", d.memory_total},
          {"sm_clock_busy_mhz", d.sm_clock_busy_mean_mhz},
          {"sm_clock_max_mhz", d.sm_clock_max_mhz},
          {"memory_clock_max_mhz", d.memory_clock_max_mhz},
          {"power_mean_w", d.power_mean_w},
          {"power_limit_w", d.power_limit_w},
          {"temperature_max_c", d.temperature_max_c},
          {"throttled_share", throttled},
          {"throttled_samples", {{"power", d.throttled_power}, {"thermal", d.throttled_thermal},
                                 {"hw_slowdown", d.throttled_hw}}},
          {"pcie", {{"gen", d.pcie_gen}, {"width", d.pcie_width}, {"gen_max", d.pcie_gen_max},
                    {"width_max", d.pcie_width_max}, {"link_share", d.PcieLinkShare()},
                    {"tx_mbps", d.pcie_tx_mbps}, {"rx_mbps", d.pcie_rx_mbps}, {"peak_gbps", d.PcieGbps()}}},
          {"nvlink", d.nvlink_links ? nlohmann::json{{"version", NvLinkVersionText(d.nvlink_version)},
                                                     {"links", d.nvlink_links},
                                                     {"links_up", d.nvlink_links_up},
                                                     {"peak_gbps", d.NvLinkGbps()},
                                                     {"tx_gbps_mean", rate(d.NvLinkTxGbps())},
                                                     {"rx_gbps_mean", rate(d.NvLinkRxGbps())},
                                                     {"tx_gbps_peak", rate(d.nvlink_tx_peak_gbps)},
                                                     {"rx_gbps_peak", rate(d.nvlink_rx_peak_gbps)},
                                                     {"tx_bytes", rate(d.nvlink_tx_bytes)},
                                                     {"rx_bytes", rate(d.nvlink_rx_bytes)},
                                                     {"rate_s", rate(d.nvlink_rate_s)}}
                                    : nlohmann::json(nullptr)},
          {"ecc_uncorrected", d.ecc_uncorrected},
          {"mig", d.mig},
          {"other_processes", others},
          {"series", {{"columns", {"t_ns", "utilization", "sm_clock_mhz"}}, {"rows", series}}},
          {"sampler_detail", detail.empty() ? nlohmann::json(nullptr) : nlohmann::json(detail)}};
}

// How much of the device the kernels' grids occupied; null without launch geometry.
nlohmann::json SmFillJson(const SmFillFigures& s) {
  if (!s.known()) return nullptr;
  nlohmann::json top = nlohmann::json::array();
  for (const SmFillFigures::Shape& k : s.top) top.push_back(ShapeJson(k));
  return {{"sm_count", s.sm_count},
          {"kernels", s.kernels},
          {"kernel_s", Seconds(s.kernel_ns)},
          {"small_grid_kernels", s.small_grid_kernels},
          {"fill", s.fill()},
          {"idle_sm_s", s.idle_sm_ns * 1e-9},
          {"top_small_grids", top}};
}

// Where the rank ran on its host; null when the library sent none of it.
nlohmann::json PlacementJson(const EnvFacts& env, const InputIoFigures& io) {
  const PlacementFigures p = Placement(env);
  if (!p.affinity_known && p.cgroup_version == 0 && !io.cgroup) return nullptr;
  auto or_null = [](bool known, auto v) { return known ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"cpu_affinity", or_null(p.affinity_known, env.cpu_affinity)},
          {"cpus", p.cpus},
          {"gpu_numa_node", or_null(p.numa_node >= 0, p.numa_node)},
          {"gpu_node_cpus", or_null(p.numa_node >= 0, env.device_numa_cpus)},
          {"cpus_on_gpu_node", or_null(p.numa_known(), p.cpus_on_node)},
          {"off_node_share", or_null(p.numa_known(), p.OffNodeShare())},
          {"cgroup_version", p.cgroup_version},
          {"cpu_quota_cores", or_null(p.quota_cores > 0, p.quota_cores)},
          {"cgroup_periods", io.all_periods},
          {"cgroup_throttled_periods", io.all_throttled_periods},
          {"cgroup_throttled_s", io.all_throttled_s},
          {"throttled_share_in_host_wait", or_null(io.periods > 0, io.ThrottledShareInGaps())},
          {"cpu_cores_busy", or_null(io.all_s > 0, io.all_s > 0 ? io.all_cpu_s / io.all_s : 0.0)},
          {"run_queue_wait_share", or_null(io.all_s > 0, io.all_s > 0 ? io.all_run_wait_s / io.all_s : 0.0)}};
}

nlohmann::json ShapeEvidenceJson(const UtilizationShape& s) {
  if (s.kind == UtilizationShape::kUnknown) return nullptr;
  return {{"windows", s.windows},       {"mean", s.mean},             {"high", s.high},
          {"idle_share", s.idle_share}, {"idle_runs", s.idle_runs},
          {"drops", s.drops},           {"first_third", s.first_third},
          {"last_third", s.last_third}};
}

}  // namespace

void AddRankFigures(const RankResult& r, nlohmann::json& obj, const JobResult* job) {
  const RankWaits* waits = job ? job->WaitsOf(r) : nullptr;
  AddMeasured(r, waits, obj);
  NoteAboveLinkPeak(r.device.LinkPeakGbps(), obj["collectives"]);
  obj["collectives"]["by_comm"] = RankCommsJson(r, waits);
  obj["comm_overlap"] = RankOverlapJson(r);
  const char* shape = r.gpu_shape.key();
  obj["gpu"]["utilization_shape"] = shape ? nlohmann::json(shape) : nlohmann::json(nullptr);
  obj["gpu"]["utilization_shape_evidence"] = ShapeEvidenceJson(r.gpu_shape);
  obj["gpu"]["sm_fill"] = SmFillJson(r.sm_fill);
  obj["gpu"]["streams"] = StreamsJson(r.streams);
  obj["gpu"]["stream_waits"] = {{"count", r.streams.waits}, {"unresolved", r.streams.waits_unresolved}};
  obj["memory"] = MemoryJson(r.memory);
  // Beside the rank's `device` (its CUDA ordinal, from the Hello): the device as NVML saw it.
  obj["device_state"] = DeviceJson(r.device, r.device_sampler_detail);
  obj["placement"] = PlacementJson(r.env, r.io);
  obj["overhead"] = OverheadJson(r);
  // The host sampler (issue 16): its CPU and its signals' handlers are overhead.sampler_s.
  if (r.sampling.known && obj["overhead"].is_object())
    obj["overhead"]["host_sampler"] = {{"hz", r.sampling.hz},
                                       {"samples", r.sampling.samples},
                                       {"cpu_s", Seconds(r.sampling.cpu_ns)},
                                       {"dropped", r.sampling.dropped},
                                       {"native_samples", r.sampling.native_samples},
                                       {"timer_captures", r.sampling.timer_captures},
                                       {"handler_s", Seconds(r.sampling.handler_ns)},
                                       {"native_signal", r.sampling.native_signal},
                                       {"held_samples", r.sampling.held_samples}};
  obj["steps"] = StepsJson(r);
  obj["critical_path"] = CriticalPathJson(r.critical_path);
  obj["what_if_all"] = WhatIfJson(r.all_fixed);
  obj["findings"] = FindingsJson(job ? job->FindingsOf(r) : r.findings);
  obj["environment"] = EnvJson(r.env);
}

void AddJobFigures(const JobResult& j, nlohmann::json& obj) {
  AddMeasured(j, &j.waits.job, obj);
  obj["pipeline"] = JobPipelineJson(j.pipeline, j.pipeline_links);
  obj["collectives"]["by_comm"] = JobCommsJson(j);
  obj["comm_overlap"] = JobOverlapJson(j);
  obj["overhead"] = JobOverheadJson(j.ranks);
  auto ms_or_null = [](double s) { return s > 0 ? nlohmann::json(Millis(s)) : nlohmann::json(nullptr); };
  obj["steps"] = {{"count", j.steps_count},
                  {"source", j.steps_source},
                  {"median_ms", Millis(j.steps_median_s)},
                  {"host_period_ms", ms_or_null(j.steps_host_period_s)},
                  {"device_period_ms", ms_or_null(j.steps_device_period_s)},
                  {"paced_by", j.steps_paced_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(j.steps_paced_by)}};
  obj["critical_path"] = CriticalPathJson(j.critical_path);
  if (obj["critical_path"].is_object()) {  // the joined path's ranks; null: the median rank's path
    nlohmann::json ranks = nullptr;
    for (const auto& [rank, ms] : j.critical_path_ranks) ranks.push_back({{"rank", rank}, {"ms", ms}});
    obj["critical_path"]["ranks"] = std::move(ranks);
  }
  obj["what_if_all"] = WhatIfJson(j.all_fixed);
  obj["findings"] = FindingsJson(j.findings);
  obj["verdict"] = j.verdict;
}

}  // namespace gpuwatch::collector
