// The device-state findings (issue 17), from the rank's NVML samples (device_state.h):
// `gpu_shared` (other processes kept the GPU busy while the rank ran), `clocks_throttled`
// (power or heat held the SM clock back while busy), `pcie_link` (the link trained below its
// generation or width, so every host-device copy took longer). Shares of the sampled time
// are carried over to the rank's run (the samples span it, at most a second short at each end).
#include <algorithm>

#include "analyze/environment.h"
#include "analyze/findings.h"
#include "analyze/precision.h"
#include "common/kernel_names.h"
#include "common/format.h"

namespace gpuwatch::collector {
namespace {

// A share of the sampled time, as seconds of the rank's run.
double OverRun(const RankContext& c, double sampled_lost_s) {
  const DeviceStateFigures& d = c.r.device;
  return d.sampled_s > 0 ? sampled_lost_s / d.sampled_s * c.run_base : 0.0;
}

}  // namespace

// Time-slicing gives the others their busy share b of the GPU while this rank's kernels run,
// so its kernels take 1/(1-b) as long: of the kernel time measured, the share b is theirs.
// The others' busy time over the whole run would also count stretches where this rank had
// nothing to run (1.5x the extra time on the bundled scenario). Without a device timeline
// (GPUWATCH_CUPTI=off) that is all there is.

std::optional<Finding> GpuShared(const RankContext& c, const std::vector<Finding>&) {
  const DeviceStateFigures& d = c.r.device;
  if (d.others.empty() || d.others_busy_s <= 0) return std::nullopt;
  const double busy = d.sampled_s > 0 ? std::min(1.0, d.others_busy_s / d.sampled_s) : 0.0;
  const double kernel_s = static_cast<double>(c.r.gpu.run.compute) * 1e-9;
  const bool from_kernels = kernel_s > 0;
  const double lost = from_kernels ? kernel_s * std::min(busy, kMaxOthersBusy) : OverRun(c, d.others_busy_s);
  Finding f = MakeFinding("gpu_shared", lost, c.run_base);
  nlohmann::json procs = nlohmann::json::array();
  uint64_t memory = 0;
  for (const auto& [pid, o] : d.others) {
    procs.push_back({{"pid", pid},
                     {"memory_bytes", o.memory_bytes_max},
                     {"busy", d.sampled_s > 0 ? std::min(1.0, o.busy_s / d.sampled_s) : 0.0},
                     {"sm_util_max_pct", o.sm_util_max_pct}});
    memory += o.memory_bytes_max;
  }
  f.evidence = {{"processes", procs},
                {"time_lost_from", from_kernels ? "kernel_time" : "others_busy_over_run"},
                {"kernel_s", kernel_s},
                {"others_busy", busy},
                {"others_memory_bytes", memory},
                {"device_memory_bytes", d.memory_total},
                {"samples", d.samples}};
  f.summary = Printf("%zu other process%s on the GPU kept it %.0f%% busy and held %.1f GiB", d.others.size(),
                     d.others.size() == 1 ? "" : "es", 100 * busy, static_cast<double>(memory) / (1ull << 30));
  return f;
}

std::optional<Finding> ClocksThrottled(const RankContext& c, const std::vector<Finding>&) {
  const DeviceStateFigures& d = c.r.device;
  if (d.throttle_lost_s <= 0) return std::nullopt;
  Finding f = MakeFinding("clocks_throttled", OverRun(c, d.throttle_lost_s), c.run_base);
  const char* cause = d.throttled_thermal >= d.throttled_power && d.throttled_thermal >= d.throttled_hw ? "heat"
                      : d.throttled_power >= d.throttled_hw                                         ? "power"
                                                                                                     : "hardware slowdown";
  f.evidence = {{"cause", cause},
                {"busy_samples", d.busy_samples},
                {"throttled_samples", {{"power", d.throttled_power}, {"thermal", d.throttled_thermal},
                                       {"hw_slowdown", d.throttled_hw}}},
                {"clock_share", d.throttled_clock_share},
                {"sm_clock_max_mhz", d.sm_clock_max_mhz},
                {"temperature_max_c", d.temperature_max_c},
                {"power_mean_w", d.power_mean_w},
                {"power_limit_w", d.power_limit_w}};
  f.summary = Printf("SM clock held at %.0f%% of its %u MHz by %s while busy (%.0f%% of busy samples)",
                     100 * d.throttled_clock_share, d.sm_clock_max_mhz, cause,
                     d.busy_samples ? 100.0 * std::max({d.throttled_power, d.throttled_thermal, d.throttled_hw}) /
                                          d.busy_samples
                                    : 0.0);
  return f;
}

std::optional<Finding> PcieLink(const RankContext& c, const std::vector<Finding>&) {
  const DeviceStateFigures& d = c.r.device;
  const double share = d.PcieLinkShare();
  if (!d.known() || share >= 1.0) return std::nullopt;
  // The host-device copies' own time: CUPTI's, else the calls' (they include waiting).
  double copies_s = 0;
  for (int i = 0; i < kCopyDirections; ++i)
    copies_s += c.r.cupti() ? c.r.gpu.copies[i].device.ns * 1e-9 : c.r.copies.dir[i].calls.ns * 1e-9;
  Finding f = MakeFinding("pcie_link", copies_s * (1 - share), c.run_base);
  f.evidence = {{"gen", d.pcie_gen},
                {"width", d.pcie_width},
                {"gen_max", d.pcie_gen_max},
                {"width_max", d.pcie_width_max},
                {"link_share", share},
                {"copies_s", copies_s}};
  f.summary = Printf("PCIe link at gen %u x%u of gen %u x%u (%.0f%% of its bandwidth); copies took %.2f s", d.pcie_gen,
                     d.pcie_width, d.pcie_gen_max, d.pcie_width_max, 100 * share, copies_s);
  return f;
}

std::optional<Finding> MixedPrecision(const RankContext& c, const std::vector<Finding>&) {
  const GpuFigures& g = c.r.gpu;
  // BF16 and TF32 need compute capability 8.0 (A100 on); a V100's (7.x) tensor cores run
  // FP16 only, which needs a loss scaler; before 7.0 there are no tensor cores to move to.
  const int cc = c.r.env.device_compute_capability;
  if (!c.r.cupti() || (cc > 0 && cc < 70)) return std::nullopt;
  uint64_t fp32_ns = 0, matmul_ns = 0, fp32_count = 0;
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [name, k] : g.by_name) {
    const KernelMath m = MathOf(name);
    if (m == KernelMath::kNotMatmul) continue;
    matmul_ns += k.ns;
    if (m != KernelMath::kFp32) continue;
    fp32_ns += k.ns;
    fp32_count += k.count;
    top.emplace_back(k.ns, name);
  }
  if (fp32_ns == 0) return std::nullopt;
  // Kernel times are the timeline's (scaled to the run when CUPTI sampled windows of it).
  const double scale = g.coverage.sampled && g.coverage.WorkShare() > 0 ? 1.0 / g.coverage.WorkShare() : 1.0;
  const double fp32_s = static_cast<double>(fp32_ns) * 1e-9 * scale;
  Finding f = MakeFinding("mixed_precision", fp32_s * (1 - 1 / kTensorCoreSpeedup), c.run_base);
  std::sort(top.rbegin(), top.rend());
  nlohmann::json names = nlohmann::json::array();
  for (size_t i = 0; i < top.size() && i < 5; ++i)
    names.push_back({{"name", DemangleName(top[i].second)}, {"total_s", static_cast<double>(top[i].first) * 1e-9}});
  f.evidence = {{"fp32_matmul_s", fp32_s},
                {"fp32_matmul_kernels", fp32_count},
                {"fp32_share_of_matmul", matmul_ns ? static_cast<double>(fp32_ns) / matmul_ns : 0.0},
                {"assumed_speedup", kTensorCoreSpeedup},
                {"top_fp32_kernels", names}};
  f.summary = Printf("%.0f%% of the GEMM/convolution time (%.2f s) ran in FP32 on the CUDA cores",
                     matmul_ns ? 100.0 * fp32_ns / matmul_ns : 0.0, fp32_s);
  // Unknown capability: the table's fix, which names both.
  const std::string cc_text = ComputeCapabilityText(cc);
  f.evidence["compute_capability"] = cc ? nlohmann::json(cc_text) : nlohmann::json(nullptr);
  if (cc >= 70 && cc < 80)
    f.fix = "torch.autocast(\"cuda\", dtype=torch.float16) with torch.cuda.amp.GradScaler (AMP): this GPU "
            "(compute capability " + cc_text + ") runs FP16 on its tensor cores, but not BF16 or TF32";
  return f;
}

}  // namespace gpuwatch::collector
