// device_state: the rank's device as NVML saw it (wire DeviceSample, about once a second,
// taken by the library's sender thread): utilization of the whole device, memory of every
// process on it, clocks against their maxima and why they were held back, power,
// temperature, the PCIe link, ECC, MIG, and the other processes on the same GPU. Bounded:
// counters, and at most kMaxOthers other processes and kMaxSeries series points.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "common/link_peaks.h"
#include "gpuwatch.pb.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

// nvmlClocksEventReason bits that slow a busy device (idle, application and sync-boost
// settings are not losses).
inline constexpr uint64_t kReasonSwPowerCap = 0x4, kReasonHwSlowdown = 0x8, kReasonSwThermal = 0x20,
                          kReasonHwThermal = 0x40, kReasonHwPowerBrake = 0x80;
inline constexpr uint64_t kPowerReasons = kReasonSwPowerCap | kReasonHwPowerBrake;
inline constexpr uint64_t kThermalReasons = kReasonSwThermal | kReasonHwThermal;

struct DeviceStateFigures {
  struct Other {
    uint64_t memory_bytes_max = 0;
    double busy_s = 0;      // its SM utilization integrated over the sampled time
    uint64_t samples = 0;   // samples it was seen in
    uint32_t sm_util_max_pct = 0;
  };
  static constexpr size_t kMaxOthers = 32;
  static constexpr size_t kMaxSeries = 512;

  uint64_t samples = 0;
  uint64_t first_ns = 0, last_ns = 0;
  double sampled_s = 0;               // time between the first and last sample
  double gpu_util_mean = 0, memory_util_mean = 0;  // 0..1, over samples
  uint64_t memory_used_max = 0, memory_total = 0;
  uint32_t sm_clock_max_mhz = 0, memory_clock_max_mhz = 0;
  double sm_clock_busy_mean_mhz = 0;  // over samples with the device busy
  uint64_t busy_samples = 0;
  double power_mean_w = 0, power_limit_w = 0;
  uint32_t temperature_max_c = 0;
  // Busy samples whose clocks were held back, by cause; the busy time they lost.
  uint64_t throttled_power = 0, throttled_thermal = 0, throttled_hw = 0;
  double throttled_busy_s = 0;         // busy time while held back
  double throttle_lost_s = 0;          // busy time x (1 - SM clock / max) while held back
  double throttled_clock_share = 0;    // mean SM clock / max over the held-back samples
  uint32_t pcie_gen = 0, pcie_width = 0, pcie_gen_max = 0, pcie_width_max = 0;  // the last sample's
  uint32_t pcie_gen_min = 0, pcie_width_min = 0;  // the lowest seen (a link can retrain)
  double pcie_tx_mbps = 0, pcie_rx_mbps = 0;      // mean
  // The latest sample's, for live views.
  double last_util = 0, last_power_w = 0;
  uint32_t last_sm_clock_mhz = 0, last_temperature_c = 0;
  uint64_t last_memory_used = 0;
  uint64_t ecc_uncorrected = 0;
  bool mig = false;
  // NVLink: the device's links (0: no NVLink), the fewest of them seen up while sampled, and
  // NVML's version enum (common/link_peaks.h; 0: not known, as with every link down).
  uint32_t nvlink_links = 0, nvlink_links_up = 0, nvlink_version = 0;
  // NVLink data throughput (NVML's per-link counters summed over the links up): the samples
  // that had a rate, the time they cover, the bytes each way over it, and the fastest sample's
  // rate in GB/s. No sample with a rate (no counters): nvlink_rate_samples 0 -- no rate, not 0.
  uint64_t nvlink_rate_samples = 0;
  double nvlink_rate_s = 0, nvlink_tx_bytes = 0, nvlink_rx_bytes = 0;
  double nvlink_tx_peak_gbps = 0, nvlink_rx_peak_gbps = 0;
  std::map<uint32_t, Other> others;  // pid -> what the other processes did
  double others_busy_s = 0;          // their busy shares summed (at most 1) over the sampled time
  // Utilization (0..1) of the whole device and SM clock per sample, for the views.
  std::vector<std::pair<uint64_t, double>> util_series;
  std::vector<std::pair<uint64_t, uint32_t>> clock_series;

  bool known() const { return samples > 0; }
  // The link's bandwidth as a share of what the device could train to (1: full).
  double PcieLinkShare() const;
  // The PCIe link as trained, each way (GB/s); NVLink's links up together (0: none up).
  double PcieGbps() const { return PcieLaneGbps(pcie_gen) * pcie_width; }
  double NvLinkGbps() const { return NvLinkLinkGbps(nvlink_version) * nvlink_links_up; }
  // What a collective on this device can move each way: its NVLink links up, else its PCIe
  // link (GB/s; 0 when NVML said neither).
  double LinkPeakGbps() const { return !known() ? 0.0 : nvlink_links_up ? NvLinkGbps() : PcieGbps(); }
  // The mean NVLink throughput over the samples with a rate, GB/s each way (0 without any).
  bool HasNvLinkRate() const { return nvlink_rate_samples > 0 && nvlink_rate_s > 0; }
  double NvLinkTxGbps() const { return HasNvLinkRate() ? nvlink_tx_bytes / nvlink_rate_s * 1e-9 : 0; }
  double NvLinkRxGbps() const { return HasNvLinkRate() ? nvlink_rx_bytes / nvlink_rate_s * 1e-9 : 0; }
};

class DeviceStateCounter final : public EventSink {
 public:
  void SetOwnPid(uint32_t pid) { own_pid_ = pid; }
  void OnDeviceSample(const wire::DeviceSample& s) override;
  const DeviceStateFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  DeviceStateFigures f_;
  uint32_t own_pid_ = 0;
  uint64_t prev_ns_ = 0;
  double util_sum_ = 0, mem_util_sum_ = 0, power_sum_ = 0, busy_clock_sum_ = 0, throttled_share_sum_ = 0;
  double tx_sum_ = 0, rx_sum_ = 0;
  uint64_t throttled_samples_ = 0;
  bool nvlink_seen_ = false;
};

}  // namespace gpuwatch::collector
