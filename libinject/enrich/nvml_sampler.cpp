// See nvml_sampler.h. NVML's C ABI, declared here (there is no nvml.h package): a handle
// is an opaque pointer, every call returns 0 on success, the structs below are NVML's own
// layouts (nvmlUtilization_t, nvmlMemory_t, nvmlProcessInfo_t (v2/v3),
// nvmlProcessUtilizationSample_t, nvmlFieldValue_t), stable since the functions' _v2/_v3 versions.
#include "enrich/nvml_sampler.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gpuwatch::inject {
namespace {

using Dev = void*;
struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_memory;
  unsigned int gpu_instance, compute_instance;
};
struct ProcessUtilization {
  unsigned int pid;
  unsigned long long timestamp_us;
  unsigned int sm, mem, enc, dec;
};
// nvmlFieldValue_t (nvmlDeviceGetFieldValues): the caller sets fieldId and scopeId (for the
// NVLink throughput fields, the link), NVML the rest; `value` is read by valueType
// (nvmlValueType_t) and only where nvmlReturn is 0.
struct FieldValue {
  unsigned int field_id, scope_id;
  long long timestamp_us, latency_us;
  int value_type, nvml_return;
  union {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
};
static_assert(sizeof(FieldValue) == 40 && offsetof(FieldValue, value) == 32, "nvmlFieldValue_t's layout");
constexpr unsigned kFieldNvLinkDataTx = 138, kFieldNvLinkDataRx = 139;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, KiB

// A field's value as a counter; none where NVML answered an error or a negative value.
std::optional<uint64_t> Counter(const FieldValue& f) {
  if (f.nvml_return != 0) return std::nullopt;
  switch (f.value_type) {
    case 0: return f.value.d >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(f.value.d)) : std::nullopt;
    case 1: return f.value.ui;
    case 2: return f.value.ul;
    case 3: return f.value.ull;
    case 4: return f.value.sll >= 0 ? std::optional<uint64_t>(f.value.sll) : std::nullopt;
    case 5: return f.value.si >= 0 ? std::optional<uint64_t>(f.value.si) : std::nullopt;
    case 6: return f.value.us;
    default: return std::nullopt;
  }
}

constexpr int kClockSm = 1, kClockMem = 2;
constexpr int kTemperatureGpu = 0;
constexpr int kPcieTx = 0, kPcieRx = 1;
constexpr int kEccUncorrected = 1, kEccVolatile = 0;
constexpr unsigned kNvlinkVersion4 = 6, kNvlinkVersion5 = 7;  // nvmlNvlinkVersion_t: 4.0, 5.0
constexpr unsigned kArchHopper = 9;                           // nvmlDeviceArchitecture_t

}  // namespace

struct NvmlSampler::Api {
  void* lib = nullptr;
  int (*init)();
  int (*shutdown)();
  int (*by_pci)(const char*, Dev*);
  int (*by_index)(unsigned, Dev*);
  int (*utilization)(Dev, Utilization*);
  int (*memory)(Dev, Memory*);
  int (*clock)(Dev, int, unsigned*);
  int (*max_clock)(Dev, int, unsigned*);
  int (*power)(Dev, unsigned*);
  int (*power_limit)(Dev, unsigned*);
  int (*temperature)(Dev, int, unsigned*);
  int (*reasons)(Dev, unsigned long long*);
  int (*pcie_gen)(Dev, unsigned*);
  int (*pcie_gen_max)(Dev, unsigned*);
  int (*pcie_width)(Dev, unsigned*);
  int (*pcie_width_max)(Dev, unsigned*);
  int (*pcie_throughput)(Dev, int, unsigned*);
  int (*processes)(Dev, unsigned*, ProcessInfo*);
  int (*process_util)(Dev, ProcessUtilization*, unsigned*, unsigned long long);
  int (*ecc)(Dev, int, int, unsigned long long*);
  int (*mig)(Dev, unsigned*, unsigned*);
  int (*nvlink_state)(Dev, unsigned, int*);  // nvmlEnableState_t: 1 = active
  int (*nvlink_version)(Dev, unsigned, unsigned*);
  int (*architecture)(Dev, unsigned*);  // nvmlDeviceArchitecture_t
  int (*field_values)(Dev, int, FieldValue*);

  template <typename F>
  void Bind(F& fn, const char* name, const char* older = nullptr) {
    void* p = dlsym(lib, name);
    if (!p && older) p = dlsym(lib, older);
    fn = reinterpret_cast<F>(p);
  }
};

NvmlSampler::~NvmlSampler() {
  if (!api_) return;
  if (api_->shutdown) api_->shutdown();
  delete api_;  // the library stays loaded: NVML's own threads may still run
}

bool NvmlSampler::Open(const std::string& pci_bus_id, int device) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    detail_ = "libnvidia-ml.so.1 not found";
    return false;
  }
  auto* a = new Api;
  a->lib = lib;
  a->Bind(a->init, "nvmlInit_v2");
  a->Bind(a->shutdown, "nvmlShutdown");
  a->Bind(a->by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  a->Bind(a->by_index, "nvmlDeviceGetHandleByIndex_v2");
  a->Bind(a->utilization, "nvmlDeviceGetUtilizationRates");
  a->Bind(a->memory, "nvmlDeviceGetMemoryInfo");
  a->Bind(a->clock, "nvmlDeviceGetClockInfo");
  a->Bind(a->max_clock, "nvmlDeviceGetMaxClockInfo");
  a->Bind(a->power, "nvmlDeviceGetPowerUsage");
  a->Bind(a->power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  a->Bind(a->temperature, "nvmlDeviceGetTemperature");
  a->Bind(a->reasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
  a->Bind(a->pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  a->Bind(a->pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  a->Bind(a->pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
  a->Bind(a->pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  a->Bind(a->pcie_throughput, "nvmlDeviceGetPcieThroughput");
  a->Bind(a->processes, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2");
  a->Bind(a->process_util, "nvmlDeviceGetProcessUtilization");
  a->Bind(a->ecc, "nvmlDeviceGetTotalEccErrors");
  a->Bind(a->mig, "nvmlDeviceGetMigMode");
  a->Bind(a->nvlink_state, "nvmlDeviceGetNvLinkState");
  a->Bind(a->nvlink_version, "nvmlDeviceGetNvLinkVersion");
  a->Bind(a->architecture, "nvmlDeviceGetArchitecture");
  a->Bind(a->field_values, "nvmlDeviceGetFieldValues");
  if (!a->init || !a->utilization || a->init() != 0) {
    detail_ = "NVML did not initialize";
    delete a;
    return false;
  }
  api_ = a;
  Dev d = nullptr;
  if (!pci_bus_id.empty() && a->by_pci && a->by_pci(pci_bus_id.c_str(), &d) == 0) device_ = d;
  else if (device >= 0 && a->by_index && a->by_index(static_cast<unsigned>(device), &d) == 0) device_ = d;
  if (!device_) detail_ = "NVML does not know the rank's device " + pci_bus_id;
  return device_ != nullptr;
}

std::optional<DeviceSample> NvmlSampler::SampleIfDue(uint64_t now_ns, bool final, const std::string& pci_bus_id,
                                                     int device) {
  if (interval_ns_ == 0 || (device < 0 && pci_bus_id.empty())) return std::nullopt;
  // At exit, one more unless the last is recent: the samples then span the whole run.
  constexpr uint64_t kMinGapNs = 10'000'000;
  if (now_ns < next_ns_ && !(final && now_ns >= last_ns_ + kMinGapNs)) return std::nullopt;
  if (!tried_) {
    tried_ = true;
    Open(pci_bus_id, device);
  }
  if (!device_) return std::nullopt;
  next_ns_ = now_ns + interval_ns_;
  last_ns_ = now_ns;
  return Take(now_ns);
}

std::string NvmlSampler::TakeDetail() {
  if (detail_sent_ || detail_.empty()) return {};
  detail_sent_ = true;
  return detail_;
}

DeviceSample NvmlSampler::Take(uint64_t now_ns) {
  const Api& a = *api_;
  Dev d = device_;
  DeviceSample s;
  s.t_ns = now_ns;
  Utilization u{};
  if (a.utilization(d, &u) == 0) s.gpu_util_pct = u.gpu, s.memory_util_pct = u.memory;
  Memory m{};
  if (a.memory && a.memory(d, &m) == 0) s.memory_used_bytes = m.used, s.memory_total_bytes = m.total;
  unsigned v = 0;
  if (a.clock && a.clock(d, kClockSm, &v) == 0) s.sm_clock_mhz = v;
  if (a.max_clock && a.max_clock(d, kClockSm, &v) == 0) s.sm_clock_max_mhz = v;
  if (a.clock && a.clock(d, kClockMem, &v) == 0) s.memory_clock_mhz = v;
  if (a.max_clock && a.max_clock(d, kClockMem, &v) == 0) s.memory_clock_max_mhz = v;
  if (a.power && a.power(d, &v) == 0) s.power_mw = v;
  if (a.power_limit && a.power_limit(d, &v) == 0) s.power_limit_mw = v;
  if (a.temperature && a.temperature(d, kTemperatureGpu, &v) == 0) s.temperature_c = v;
  unsigned long long bits = 0;
  if (a.reasons && a.reasons(d, &bits) == 0) s.throttle_reasons = bits;
  if (a.pcie_gen && a.pcie_gen(d, &v) == 0) s.pcie_gen = v;
  if (a.pcie_gen_max && a.pcie_gen_max(d, &v) == 0) s.pcie_gen_max = v;
  if (a.pcie_width && a.pcie_width(d, &v) == 0) s.pcie_width = v;
  if (a.pcie_width_max && a.pcie_width_max(d, &v) == 0) s.pcie_width_max = v;
  if (a.pcie_throughput && a.pcie_throughput(d, kPcieTx, &v) == 0) s.pcie_tx_kbps = v;
  if (a.pcie_throughput && a.pcie_throughput(d, kPcieRx, &v) == 0) s.pcie_rx_kbps = v;
  if (a.ecc && a.ecc(d, kEccUncorrected, kEccVolatile, &bits) == 0) s.ecc_uncorrected = bits;
  unsigned pending = 0;
  if (a.mig && a.mig(d, &v, &pending) == 0) s.mig_mode = v;
  // A device without NVLink answers NOT_SUPPORTED for link 0; stop at the first link NVML
  // does not know (a device with fewer links: INVALID_ARGUMENT). The version is the
  // device's; NVML may refuse it for a link that is down, so every link is asked until one answers.
  bool up[kMaxNvLinks] = {};
  for (unsigned link = 0; a.nvlink_state && link < kMaxNvLinks; ++link) {
    int active = 0;
    if (a.nvlink_state(d, link, &active) != 0) break;
    ++s.nvlink_links;
    if (active == 1) ++s.nvlink_links_up, up[link] = true;
    if (!s.nvlink_version && a.nvlink_version && a.nvlink_version(d, link, &v) == 0) s.nvlink_version = v;
  }
  // Some drivers answer NVLink 5.0 on Hopper, whose NVLink is 4.0 (half 5.0's rate per link).
  if (s.nvlink_version == kNvlinkVersion5 && a.architecture && a.architecture(d, &v) == 0 && v == kArchHopper)
    s.nvlink_version = kNvlinkVersion4;
  SampleNvLinkRate(up, now_ns, s);
  if (a.processes) {
    ProcessInfo infos[kMaxProcesses];
    unsigned n = kMaxProcesses;
    if (a.processes(d, &n, infos) == 0)
      for (unsigned i = 0; i < std::min<unsigned>(n, kMaxProcesses); ++i)
        s.processes.push_back({infos[i].pid, infos[i].used_memory, 0});
  }
  if (a.process_util && !s.processes.empty()) {
    ProcessUtilization util[kMaxProcesses];
    unsigned n = kMaxProcesses;
    // Samples of the last interval (NVML keeps a short history per process, stamped in
    // wall-clock microseconds).
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    const uint64_t wall_us = static_cast<uint64_t>(wall.tv_sec) * 1000000 + static_cast<uint64_t>(wall.tv_nsec) / 1000;
    const unsigned long long since_us = wall_us - std::min<uint64_t>(wall_us, interval_ns_ / 1000);
    if (a.process_util(d, util, &n, since_us) == 0)
      for (unsigned i = 0; i < std::min<unsigned>(n, kMaxProcesses); ++i)
        for (DeviceProcessSample& p : s.processes)
          if (p.pid == util[i].pid) p.sm_util_pct = std::max(p.sm_util_pct, util[i].sm);
  }
  return s;
}

// The TX and RX data counters of every link up, in one call. A field NVML answers with an
// error leaves its link out; no link up, no nvmlDeviceGetFieldValues, or a failed call: no rate.
void NvmlSampler::SampleNvLinkRate(const bool (&up)[kMaxNvLinks], uint64_t now_ns, DeviceSample& s) {
  static_assert(kMaxNvLinks == NvLinkRate::kMaxLinks);
  FieldValue fields[2 * kMaxNvLinks] = {};
  unsigned links[kMaxNvLinks];
  int n = 0;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    if (!up[link]) continue;
    links[n / 2] = link;
    for (unsigned field : {kFieldNvLinkDataTx, kFieldNvLinkDataRx}) {  // TX at even indices, RX after it
      fields[n].field_id = field;
      fields[n++].scope_id = link;
    }
  }
  if (n == 0 || !api_->field_values || api_->field_values(device_, n, fields) != 0) {
    nvlink_rate_.Forget();
    return;
  }
  NvLinkRate::LinkCounters read[NvLinkRate::kMaxLinks];
  for (int i = 0; i < n; i += 2) {
    const std::optional<uint64_t> tx = Counter(fields[i]), rx = Counter(fields[i + 1]);
    if (tx && rx) read[links[i / 2]] = {true, *tx, *rx};
  }
  const NvLinkRate::Rate r = nvlink_rate_.Update(now_ns, read);
  s.nvlink_tx_bytes_per_s = r.tx_bytes_per_s;
  s.nvlink_rx_bytes_per_s = r.rx_bytes_per_s;
  s.nvlink_rate_links = r.links;
}

}  // namespace gpuwatch::inject
