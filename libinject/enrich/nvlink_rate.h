// NVLink throughput from NVML's cumulative per-link data counters (NVML_FI_DEV_NVLINK_
// THROUGHPUT_DATA_TX/RX, KiB since the driver loaded): bytes per second between two readings,
// summed over the links. Kept apart from the NVML calls so that the arithmetic -- which links
// count, what a failed field or a counter that went back does -- is tested without a driver.
#pragma once
#include <cstdint>

namespace gpuwatch::inject {

class NvLinkRate {
 public:
  static constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

  // One link's counters at a reading; `ok` false where the link was not asked (down) or NVML
  // answered an error for either field.
  struct LinkCounters {
    bool ok = false;
    uint64_t tx_kib = 0, rx_kib = 0;
  };
  struct Rate {
    uint64_t tx_bytes_per_s = 0, rx_bytes_per_s = 0;
    uint32_t links = 0;  // links that gave it; 0: no rate (never a zero rate for want of counters)
  };

  // A reading of every link at `t_ns`; the rate since the previous reading over the links read
  // at both. A link whose counter went back (a driver reload, a reset) is left out once.
  Rate Update(uint64_t t_ns, const LinkCounters (&now)[kMaxLinks]);
  // The device has no rate now (no link up, the call missing): the next reading starts afresh.
  void Forget() { t_ns_ = 0; }

 private:
  LinkCounters prev_[kMaxLinks];
  uint64_t t_ns_ = 0;
};

}  // namespace gpuwatch::inject
