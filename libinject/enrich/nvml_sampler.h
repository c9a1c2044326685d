// The rank's device as NVML sees it (issue 17): utilization, memory of every process on it,
// clocks against their maxima and why they are held back, power, temperature, the PCIe link
// as trained against what it could be, ECC errors, MIG. libnvidia-ml.so.1 is dlopen'ed (it
// ships with the driver, not the toolkit); its C ABI is declared in nvml_sampler.cpp.
//
// Why in the library and not the collector: a rank knows which device it drives (its PCI
// bus id), the collector may run on another host, and the simulated NVML can only see the
// device model of the process it is loaded in. Each rank samples only its own device, so a
// device has one sampler per rank that drives it (one in the usual one-rank-per-GPU job).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "enrich/nvlink_rate.h"

namespace gpuwatch::inject {

struct DeviceProcessSample {
  uint32_t pid = 0;
  uint64_t memory_bytes = 0;
  uint32_t sm_util_pct = 0;
};

// One sample; 0 where NVML could not say (wire DeviceSample).
struct DeviceSample {
  uint64_t t_ns = 0;
  uint32_t gpu_util_pct = 0, memory_util_pct = 0;
  uint64_t memory_used_bytes = 0, memory_total_bytes = 0;
  uint32_t sm_clock_mhz = 0, sm_clock_max_mhz = 0, memory_clock_mhz = 0, memory_clock_max_mhz = 0;
  uint32_t power_mw = 0, power_limit_mw = 0, temperature_c = 0;
  uint64_t throttle_reasons = 0;
  uint32_t pcie_gen = 0, pcie_gen_max = 0, pcie_width = 0, pcie_width_max = 0;
  uint32_t pcie_tx_kbps = 0, pcie_rx_kbps = 0;
  std::vector<DeviceProcessSample> processes;
  uint64_t ecc_uncorrected = 0;
  uint32_t mig_mode = 0;
  // NVLink: links whose state NVML reports (0: no NVLink), those up, and NVML's version
  // enum (nvmlNvlinkVersion_t: 6 = NVLink 4.0; 0 = not known).
  uint32_t nvlink_links = 0, nvlink_links_up = 0, nvlink_version = 0;
  // NVLink data throughput since the previous sample, summed over the links up whose counters
  // NVML gave at both (nvlink_rate.h); nvlink_rate_links 0: no rate.
  uint64_t nvlink_tx_bytes_per_s = 0, nvlink_rx_bytes_per_s = 0;
  uint32_t nvlink_rate_links = 0;
};

// Sender thread only. Loads NVML at the first due sample (once the rank's device is known),
// never on an application thread; a sample costs a few dozen NVML calls (tens of µs each
// on a real driver) at most every interval.
class NvmlSampler {
 public:
  static constexpr size_t kMaxProcesses = 64;
  static constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS

  explicit NvmlSampler(uint64_t interval_ns) : interval_ns_(interval_ns) {}
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  // A sample of the device with that PCI bus id ("00000000:BB:DD.0"; else the NVML index
  // `device`) when one is due, or at exit (`final`) unless the last one is recent.
  std::optional<DeviceSample> SampleIfDue(uint64_t now_ns, bool final, const std::string& pci_bus_id, int device);
  // Why there are no samples, once ("libnvidia-ml.so.1 not found"); empty otherwise.
  std::string TakeDetail();

 private:
  struct Api;
  bool Open(const std::string& pci_bus_id, int device);
  DeviceSample Take(uint64_t now_ns);
  void SampleNvLinkRate(const bool (&up)[kMaxNvLinks], uint64_t now_ns, DeviceSample& s);

  uint64_t interval_ns_;
  uint64_t next_ns_ = 0, last_ns_ = 0;
  bool tried_ = false;
  Api* api_ = nullptr;
  void* device_ = nullptr;
  std::string detail_;
  bool detail_sent_ = false;
  NvLinkRate nvlink_rate_;
};

}  // namespace gpuwatch::inject
