// See device_state.h. Each sample stands for the interval since the previous one (the first
// sample for none): busy and lost times are that interval times the sample's shares.
#include "analyze/device_state.h"

#include <algorithm>

namespace gpuwatch::collector {

double DeviceStateFigures::PcieLinkShare() const {
  if (!pcie_gen_max || !pcie_width_max || !pcie_gen || !pcie_width) return 1.0;
  const double full = PcieLaneGbps(pcie_gen_max) * pcie_width_max;
  return full > 0 ? std::min(1.0, PcieLaneGbps(pcie_gen) * pcie_width / full) : 1.0;
}

void DeviceStateCounter::OnDeviceSample(const wire::DeviceSample& s) {
  DeviceStateFigures& f = f_;
  const double dt = prev_ns_ && s.t_ns() > prev_ns_ ? static_cast<double>(s.t_ns() - prev_ns_) * 1e-9 : 0.0;
  prev_ns_ = std::max(prev_ns_, s.t_ns());
  if (f.samples++ == 0) f.first_ns = s.t_ns();
  f.last_ns = std::max(f.last_ns, s.t_ns());
  f.sampled_s += dt;
  const double util = std::min(100u, s.gpu_util_pct()) / 100.0;
  util_sum_ += util;
  mem_util_sum_ += std::min(100u, s.memory_util_pct()) / 100.0;
  f.gpu_util_mean = util_sum_ / f.samples;
  f.memory_util_mean = mem_util_sum_ / f.samples;
  f.memory_used_max = std::max<uint64_t>(f.memory_used_max, s.memory_used_bytes());
  if (s.memory_total_bytes()) f.memory_total = s.memory_total_bytes();
  if (s.sm_clock_max_mhz()) f.sm_clock_max_mhz = s.sm_clock_max_mhz();
  if (s.memory_clock_max_mhz()) f.memory_clock_max_mhz = s.memory_clock_max_mhz();
  power_sum_ += s.power_mw() * 1e-3;
  f.power_mean_w = power_sum_ / f.samples;
  if (s.power_limit_mw()) f.power_limit_w = s.power_limit_mw() * 1e-3;
  f.temperature_max_c = std::max(f.temperature_max_c, s.temperature_c());
  if (s.t_ns() >= f.last_ns) {
    f.last_util = std::min(100u, s.gpu_util_pct()) / 100.0;
    f.last_power_w = s.power_mw() * 1e-3;
    f.last_sm_clock_mhz = s.sm_clock_mhz();
    f.last_temperature_c = s.temperature_c();
    f.last_memory_used = s.memory_used_bytes();
  }
  const double clock_share = s.sm_clock_max_mhz() ? std::min(1.0, static_cast<double>(s.sm_clock_mhz()) / s.sm_clock_max_mhz()) : 1.0;
  if (util > 0) {
    busy_clock_sum_ += s.sm_clock_mhz();
    f.sm_clock_busy_mean_mhz = busy_clock_sum_ / ++f.busy_samples;
    const uint64_t r = s.throttle_reasons();
    if (r & (kPowerReasons | kThermalReasons | kReasonHwSlowdown)) {
      if (r & kPowerReasons) ++f.throttled_power;
      if (r & kThermalReasons) ++f.throttled_thermal;
      if (r & kReasonHwSlowdown) ++f.throttled_hw;
      f.throttled_busy_s += dt * util;
      f.throttle_lost_s += dt * util * (1 - clock_share);
      throttled_share_sum_ += clock_share;
      f.throttled_clock_share = throttled_share_sum_ / ++throttled_samples_;
    }
  }
  if (s.pcie_gen_max()) {
    f.pcie_gen = s.pcie_gen(), f.pcie_width = s.pcie_width();
    f.pcie_gen_max = s.pcie_gen_max(), f.pcie_width_max = s.pcie_width_max();
    f.pcie_gen_min = f.pcie_gen_min ? std::min(f.pcie_gen_min, s.pcie_gen()) : s.pcie_gen();
    f.pcie_width_min = f.pcie_width_min ? std::min(f.pcie_width_min, s.pcie_width()) : s.pcie_width();
  }
  tx_sum_ += s.pcie_tx_kbps() * 1e-3;
  rx_sum_ += s.pcie_rx_kbps() * 1e-3;
  f.pcie_tx_mbps = tx_sum_ / f.samples;
  f.pcie_rx_mbps = rx_sum_ / f.samples;
  f.ecc_uncorrected = std::max(f.ecc_uncorrected, s.ecc_uncorrected());
  f.mig = f.mig || s.mig_mode() == 1;
  if (s.nvlink_links()) {  // the fewest links up: a link that dropped slows every collective after
    f.nvlink_links = std::max(f.nvlink_links, s.nvlink_links());
    if (s.nvlink_version()) f.nvlink_version = s.nvlink_version();
    f.nvlink_links_up = nvlink_seen_ ? std::min(f.nvlink_links_up, s.nvlink_links_up()) : s.nvlink_links_up();
    nvlink_seen_ = true;
  }
  // A rate covers the time since the previous sample (the sampler's previous reading).
  if (s.nvlink_rate_links() && dt > 0) {
    ++f.nvlink_rate_samples;
    f.nvlink_rate_s += dt;
    f.nvlink_tx_bytes += static_cast<double>(s.nvlink_tx_bytes_per_s()) * dt;
    f.nvlink_rx_bytes += static_cast<double>(s.nvlink_rx_bytes_per_s()) * dt;
    f.nvlink_tx_peak_gbps = std::max(f.nvlink_tx_peak_gbps, s.nvlink_tx_bytes_per_s() * 1e-9);
    f.nvlink_rx_peak_gbps = std::max(f.nvlink_rx_peak_gbps, s.nvlink_rx_bytes_per_s() * 1e-9);
  }
  double others = 0;
  for (const auto& p : s.processes()) {
    if (p.pid() == own_pid_) continue;
    auto it = f.others.find(p.pid());
    if (it == f.others.end()) {
      if (f.others.size() >= DeviceStateFigures::kMaxOthers) continue;
      it = f.others.emplace(p.pid(), DeviceStateFigures::Other{}).first;
    }
    DeviceStateFigures::Other& o = it->second;
    const double busy = std::min(100u, p.sm_util_pct()) / 100.0;
    o.memory_bytes_max = std::max<uint64_t>(o.memory_bytes_max, p.memory_bytes());
    o.busy_s += dt * busy;
    o.samples++;
    o.sm_util_max_pct = std::max(o.sm_util_max_pct, p.sm_util_pct());
    others += busy;
  }
  f.others_busy_s += dt * std::min(1.0, others);
  if (f.util_series.size() < DeviceStateFigures::kMaxSeries) {
    f.util_series.emplace_back(s.t_ns(), util);
    f.clock_series.emplace_back(s.t_ns(), s.sm_clock_mhz());
  }
}

}  // namespace gpuwatch::collector
