// The simulated NVML (libnvidia-ml.so.1): the few queries gpuwatch's sampler makes
// (libinject/enrich/nvml_sampler.cpp), answered from the device model of the process and
// the SIMGPU_CONFIG keys memory_gib, pcie_gen/pcie_width, throttle and other_processes.
// Real NVML sees every process on the device; this one sees its own process's device work
// and memory, plus the configured other processes. The ABI is declared here as gpuwatch's
// sampler declares it (no nvml.h on the build machine): plain C, stable across drivers.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "../simgpu.h"

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6,
                        kInsufficientSize = 7;

struct nvmlDevice_st {
  unsigned index;
  uint64_t last_now = 0, last_busy = 0;  // the previous utilization query's reading
  double last_util = 0;
};
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
};
struct nvmlFieldValue_t {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
  } value;
};
constexpr unsigned kFieldNvLinkDataTx = 138, kFieldNvLinkDataRx = 139;  // KiB, cumulative
constexpr int kValueTypeUnsignedLongLong = 3;

constexpr unsigned kMaxDevices = 64;
constexpr unsigned kNvLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr unsigned kSmClockMax = 1980, kSmClockIdle = 345, kMemClockMax = 3201;
constexpr unsigned kPowerLimitMw = 700000;
constexpr unsigned kOtherPidBase = 999000;  // the configured other processes' pids
// nvmlClocksEventReason bits.
constexpr unsigned long long kReasonIdle = 0x1, kReasonSwPowerCap = 0x4, kReasonSwThermal = 0x20,
                             kReasonHwThermal = 0x40;

std::mutex g_mu;
int g_inits = 0;
nvmlDevice_st g_devices[kMaxDevices];

unsigned DeviceCount() {
  const double n = simgpu_config_value("devices");
  return std::min<unsigned>(kMaxDevices, n < 1 ? 1 : static_cast<unsigned>(n));
}

bool Valid(nvmlDevice_t d) { return g_inits > 0 && d && d >= g_devices && d < g_devices + DeviceCount(); }

simgpu_device_state State() {
  simgpu_device_state s;
  simgpu_get_device_state(&s);
  return s;
}

// This process's busy share since the previous query of the device (the first query: 0),
// plus what the other processes keep busy, at most 1.
double Utilization(nvmlDevice_t d, const simgpu_device_state& s, double* own_share) {
  double own = d->last_util;
  if (d->last_now && s.now_ns > d->last_now)
    own = std::min(1.0, static_cast<double>(s.busy_ns - d->last_busy) / static_cast<double>(s.now_ns - d->last_now));
  if (s.now_ns > d->last_now) {
    d->last_now = s.now_ns;
    d->last_busy = s.busy_ns;
    d->last_util = own;
  }
  double all = own;
  for (int i = 0; i < s.other_processes; ++i) all += s.other_busy[i];
  if (own_share) *own_share = own;
  return std::min(1.0, all);
}

double BusyNow(nvmlDevice_t d, const simgpu_device_state& s) {
  double all = d->last_util;
  for (int i = 0; i < s.other_processes; ++i) all += s.other_busy[i];
  return std::min(1.0, all);
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_inits++ == 0)
    for (unsigned i = 0; i < kMaxDevices; ++i) g_devices[i] = nvmlDevice_st{i};
  return kSuccess;
}
NVML_EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_inits == 0) return kUninitialized;
  --g_inits;
  return kSuccess;
}

NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotFound: return "Not Found";
    case kInsufficientSize: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (g_inits == 0) return kUninitialized;
  if (!n) return kInvalidArgument;
  *n = DeviceCount();
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (g_inits == 0) return kUninitialized;
  if (!d || i >= DeviceCount()) return kInvalidArgument;
  *d = &g_devices[i];
  return kSuccess;
}

// "0000:BB:00.0": the simulated runtime gives device i PCI bus i (cudaGetDeviceProperties).
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* id, nvmlDevice_t* d) {
  if (g_inits == 0) return kUninitialized;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (!id || !d || std::sscanf(id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return kInvalidArgument;
  if (bus >= DeviceCount()) return kNotFound;
  *d = &g_devices[bus];
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  if (!Valid(d) || !u) return g_inits ? kInvalidArgument : kUninitialized;
  std::lock_guard<std::mutex> lk(g_mu);
  const double all = Utilization(d, State(), nullptr);
  u->gpu = static_cast<unsigned>(all * 100 + 0.5);
  u->memory = static_cast<unsigned>(all * 40 + 0.5);
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  if (!Valid(d) || !m) return g_inits ? kInvalidArgument : kUninitialized;
  const simgpu_device_state s = State();
  uint64_t used = s.memory_held;
  for (int i = 0; i < s.other_processes; ++i) used += s.other_memory[i];
  m->total = s.memory_total;
  m->used = std::min<uint64_t>(used, s.memory_total);
  m->free = m->total - m->used;
  return kSuccess;
}

// Clocks: boosted while busy, held back by the configured throttle, low while idle.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* reasons) {
  if (!Valid(d) || !reasons) return g_inits ? kInvalidArgument : kUninitialized;
  std::lock_guard<std::mutex> lk(g_mu);
  const simgpu_device_state s = State();
  if (BusyNow(d, s) == 0) *reasons = kReasonIdle;
  else if (s.throttle == 1) *reasons = kReasonSwPowerCap;
  else if (s.throttle == 2) *reasons = kReasonSwThermal | kReasonHwThermal;
  else *reasons = 0;
  return kSuccess;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(d, reasons);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (!Valid(d) || !mhz) return g_inits ? kInvalidArgument : kUninitialized;
  if (type == 2) {  // NVML_CLOCK_MEM
    *mhz = kMemClockMax;
    return kSuccess;
  }
  std::lock_guard<std::mutex> lk(g_mu);
  const simgpu_device_state s = State();
  const double share = s.throttle == 1 ? 0.75 : s.throttle == 2 ? 0.6 : 1.0;
  *mhz = BusyNow(d, s) == 0 ? kSmClockIdle : static_cast<unsigned>(kSmClockMax * share + 0.5);
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (!Valid(d) || !mhz) return g_inits ? kInvalidArgument : kUninitialized;
  *mhz = type == 2 ? kMemClockMax : kSmClockMax;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  if (!Valid(d) || !mw) return g_inits ? kInvalidArgument : kUninitialized;
  std::lock_guard<std::mutex> lk(g_mu);
  const simgpu_device_state s = State();
  const double busy = BusyNow(d, s);
  *mw = s.throttle == 1 && busy > 0 ? kPowerLimitMw : 90000 + static_cast<unsigned>(busy * 450000);
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int* mw) {
  if (!Valid(d) || !mw) return g_inits ? kInvalidArgument : kUninitialized;
  *mw = kPowerLimitMw;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int* c) {
  if (!Valid(d) || !c || sensor != 0) return g_inits ? kInvalidArgument : kUninitialized;
  std::lock_guard<std::mutex> lk(g_mu);
  const simgpu_device_state s = State();
  *c = s.throttle == 2 ? 88 : 35 + static_cast<unsigned>(BusyNow(d, s) * 30);
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int* v) {
  if (!Valid(d) || !v) return g_inits ? kInvalidArgument : kUninitialized;
  *v = static_cast<unsigned>(State().pcie_gen);
  return kSuccess;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int* v) {
  if (!Valid(d) || !v) return g_inits ? kInvalidArgument : kUninitialized;
  *v = 5;
  return kSuccess;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int* v) {
  if (!Valid(d) || !v) return g_inits ? kInvalidArgument : kUninitialized;
  *v = static_cast<unsigned>(State().pcie_width);
  return kSuccess;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int* v) {
  if (!Valid(d) || !v) return g_inits ? kInvalidArgument : kUninitialized;
  *v = 16;
  return kSuccess;
}
// Not modelled: no PCIe counters (0 KB/s).
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int* kbps) {
  if (!Valid(d) || !kbps || counter < 0 || counter > 1) return g_inits ? kInvalidArgument : kUninitialized;
  *kbps = 0;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long* n) {
  if (!Valid(d) || !n) return g_inits ? kInvalidArgument : kUninitialized;
  (void)type, (void)counter;
  *n = 0;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int* current, unsigned int* pending) {
  if (!Valid(d) || !current || !pending) return g_inits ? kInvalidArgument : kUninitialized;
  *current = *pending = 0;
  return kSuccess;
}

// NVLink 4.0 (Hopper's) links 0..nvlink_links-1 up, the rest of the 18 down; no NVLink:
// NOT_SUPPORTED. The version answered is 7 (5.0), as some drivers answer on Hopper: the
// library's sampler must correct it with the architecture.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int* active) {
  if (!Valid(d) || !active) return g_inits ? kInvalidArgument : kUninitialized;
  const double links = simgpu_config_value("nvlink_links");
  if (links <= 0) return kNotSupported;
  if (link >= kNvLinks) return kInvalidArgument;
  *active = link < links ? 1 : 0;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned int link, unsigned int* version) {
  if (!Valid(d) || !version) return g_inits ? kInvalidArgument : kUninitialized;
  if (simgpu_config_value("nvlink_links") <= 0) return kNotSupported;
  if (link >= kNvLinks) return kInvalidArgument;
  *version = 7;  // NVML_NVLINK_VERSION_5_0: the Hopper quirk
  return kSuccess;
}

// The NVLink data counters: the bytes this process's collectives moved over the device's links
// (their bus bytes, simgpu_external_desc), in KiB, split evenly over the links up (link i of n
// holds floor(K(i+1)/n) - floor(Ki/n) of the K KiB: the links sum to K exactly); a link down
// counts nothing; scopeId UINT_MAX: all links together, as real NVML answers it. Without
// NVLink, or any other field: NOT_SUPPORTED in the field, the call itself succeeds.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t* values) {
  if (!Valid(d) || count < 0 || (count > 0 && !values)) return g_inits ? kInvalidArgument : kUninitialized;
  const simgpu_device_state s = State();
  const double links = simgpu_config_value("nvlink_links");
  const unsigned up = links > 0 ? std::min(kNvLinks, static_cast<unsigned>(links)) : 0;
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = static_cast<long long>(s.now_ns / 1000);
    f.latencyUsec = 0;
    f.valueType = kValueTypeUnsignedLongLong;
    const bool tx = f.fieldId == kFieldNvLinkDataTx;
    if ((!tx && f.fieldId != kFieldNvLinkDataRx) || up == 0) {
      f.nvmlReturn = kNotSupported;
      continue;
    }
    const unsigned long long kib = (tx ? s.link_tx_bytes : s.link_rx_bytes) / 1024;
    f.nvmlReturn = kSuccess;
    if (f.scopeId == 0xffffffffu) f.value.ullVal = kib;
    else if (f.scopeId >= kNvLinks) f.nvmlReturn = kInvalidArgument;
    else if (f.scopeId >= up) f.value.ullVal = 0;
    else f.value.ullVal = kib * (f.scopeId + 1) / up - kib * f.scopeId / up;
  }
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int* arch) {
  if (!Valid(d) || !arch) return g_inits ? kInvalidArgument : kUninitialized;
  *arch = 9;  // NVML_DEVICE_ARCH_HOPPER: the simulated device is an H200
  return kSuccess;
}

// This process (when it holds device memory) and the configured other processes.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int* count,
                                                                  nvmlProcessInfo_t* infos) {
  if (!Valid(d) || !count) return g_inits ? kInvalidArgument : kUninitialized;
  const simgpu_device_state s = State();
  nvmlProcessInfo_t all[SIMGPU_MAX_OTHER_PROCESSES + 1];
  unsigned n = 0;
  if (s.memory_held) all[n++] = {static_cast<unsigned>(getpid()), s.memory_held, 0xffffffffu, 0xffffffffu};
  for (int i = 0; i < s.other_processes; ++i)
    all[n++] = {kOtherPidBase + static_cast<unsigned>(i), s.other_memory[i], 0xffffffffu, 0xffffffffu};
  const unsigned room = *count;
  *count = n;
  if (!infos || room < n) return n == 0 ? kSuccess : kInsufficientSize;
  std::memcpy(infos, all, n * sizeof all[0]);
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t* samples,
                                                         unsigned int* count, unsigned long long last_seen) {
  if (!Valid(d) || !count) return g_inits ? kInvalidArgument : kUninitialized;
  (void)last_seen;
  std::lock_guard<std::mutex> lk(g_mu);
  const simgpu_device_state s = State();
  nvmlProcessUtilizationSample_t all[SIMGPU_MAX_OTHER_PROCESSES + 1];
  unsigned n = 0;
  const unsigned long long now_us = s.now_ns / 1000;
  all[n++] = {static_cast<unsigned>(getpid()), now_us, static_cast<unsigned>(d->last_util * 100 + 0.5), 0, 0, 0};
  for (int i = 0; i < s.other_processes; ++i)
    all[n++] = {kOtherPidBase + static_cast<unsigned>(i), now_us, static_cast<unsigned>(s.other_busy[i] * 100 + 0.5), 0,
                0, 0};
  const unsigned room = *count;
  *count = n;
  if (!samples || room < n) return kInsufficientSize;
  std::memcpy(samples, all, n * sizeof all[0]);
  return kSuccess;
}
