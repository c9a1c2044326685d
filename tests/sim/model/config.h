// Device-model configuration from SIMGPU_CONFIG="key=value,key=value".
#pragma once

#include <string>
#include <vector>

namespace simgpu {

struct Config {
  double h2d_pinned_gbps = 24;    // GB/s = 1e9 bytes/s; 0 means "instantaneous"
  double h2d_pageable_gbps = 6;
  double d2h_gbps = 24;           // pinned D2H
  double d2h_pageable_gbps = 6;
  double d2d_gbps = 1000;
  double memset_gbps = 1000;
  double busbw_gbps = 80;         // NCCL bus bandwidth
  double coll_latency_us = 30;    // per collective / send-recv
  // Host time an NCCL call spends before its kernel is launched (the group's plan, proxy
  // work; a real ncclAllReduce call took 4.5-11.8 us on the H200), once per launch: per
  // call outside a group, per stream at ncclGroupEnd.
  double nccl_launch_us = 0;
  double launch_us = 4;           // host cost of every kernel launch call
  double default_kernel_us = 5;   // kernels whose name has no "spin"
  double devices = 8;             // cudaGetDeviceCount (ranks call cudaSetDevice(LOCAL_RANK))
  // What the version queries answer (cudaRuntimeGetVersion, cudaDriverGetVersion,
  // ncclGetVersion), in the APIs' own encodings: 13000 = CUDA 13.0, 22800 = NCCL 2.28.0.
  double cuda_version = 13000;
  double driver_version = 13000;
  double nccl_version = 22800;
  // The device (docs/simulator.md, "Device memory"): what cudaGetDeviceProperties and
  // cudaMemGetInfo answer, and the limit allocations fail beyond.
  double memory_gib = 141;
  double sm_count = 132;
  // What the simulated NVML answers (libnvidia-ml.so.1): the PCIe link as trained (its
  // maximum is always gen 5 x16), clocks held back by power or heat while busy, and other
  // processes on the device (their memory counts against memory_gib).
  double pcie_gen = 5;
  double pcie_width = 16;
  // NVLink links up (NVLink 4, 25 GB/s each way per link, as on H100/H200); 0: no NVLink,
  // NVML answers NOT_SUPPORTED. The NCCL model's speed stays busbw_gbps whatever the link.
  double nvlink_links = 0;
  // The GPU's NUMA node (0 or 1; -1: not set): the scenario driver serves it, and the CPUs of
  // the two simulated nodes, as a recorded sysfs (GPUWATCH_HOST_ROOT); recorded in the truth.
  double numa_node = -1;
  enum Throttle { kThrottleNone = 0, kThrottlePower = 1, kThrottleThermal = 2 };
  int throttle = kThrottleNone;  // throttle=none|power|thermal
  struct OtherProcess {
    double memory_gib = 0, busy = 0;
  };
  std::vector<OtherProcess> other_processes;  // other_processes=GIB:BUSY;GIB:BUSY

  // The link's bandwidth as a share of gen 5 x16 (per-lane rates of gens 1-5: 2.5, 5, 8,
  // 16, 32 GT/s with 8b/10b coding up to gen 2, 128b/130b after). H2D/D2H copies scale by it.
  double pcie_link_fraction() const {
    static const double kLaneGbps[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938};
    const int gen = pcie_gen < 1 ? 1 : pcie_gen > 5 ? 5 : static_cast<int>(pcie_gen);
    return kLaneGbps[gen] * pcie_width / (kLaneGbps[5] * 16);
  }

  // The SM clock's share of its maximum while busy (what the simulated NVML reports), and how
  // much longer each compute kernel runs for it and for the other processes' time share
  // (their `busy` summed, at most 0.9): 1 / (clock share x (1 - busy)).
  double clock_share() const {
    return throttle == kThrottlePower ? 0.75 : throttle == kThrottleThermal ? 0.6 : 1.0;
  }
  double kernel_slowdown() const {
    double busy = 0;
    for (const OtherProcess& p : other_processes) busy += p.busy;
    return 1.0 / (clock_share() * (1.0 - (busy < 0.9 ? busy : 0.9)));
  }

  unsigned long long other_processes_bytes() const {
    double gib = 0;
    for (const OtherProcess& p : other_processes) gib += p.memory_gib;
    return static_cast<unsigned long long>(gib * (1ull << 30));
  }

  unsigned long long memory_bytes() const { return static_cast<unsigned long long>(memory_gib * (1ull << 30)); }

  // Parses `text`; on an unknown key or a bad value returns false and sets `error` to one
  // line naming the key.
  bool parse(const std::string& text, std::string& error);

  // throttle and other_processes, the keys whose values are not one number.
  bool parse_text_key(const std::string& key, const std::string& value, std::string& error);

  // Looks a key up by name; nullptr when unknown.
  const double* find(const std::string& key) const;
};

// The process-wide configuration, parsed from the environment on first use. A bad
// SIMGPU_CONFIG cannot be reported through a CUDA error code at load time, so the first
// call that needs it prints one line to stderr and ends the process with status 2.
const Config& config();

// Nanoseconds to move `bytes` at `gbps` (1 GB/s = 1 byte/ns); 0 bandwidth = no time.
inline unsigned long long transfer_ns(unsigned long long bytes, double gbps) {
  return gbps > 0 ? static_cast<unsigned long long>(static_cast<double>(bytes) / gbps + 0.5) : 0;
}

}  // namespace simgpu
