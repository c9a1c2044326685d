// Device-model configuration from SIMGPU_CONFIG="key=value,key=value".
#pragma once

#include <string>

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
  double launch_us = 4;           // host cost of every kernel launch call
  double default_kernel_us = 5;   // kernels whose name has no "spin"
  double devices = 8;             // cudaGetDeviceCount (ranks call cudaSetDevice(LOCAL_RANK))
  // What the version queries answer (cudaRuntimeGetVersion, cudaDriverGetVersion,
  // ncclGetVersion), in the APIs' own encodings: 13000 = CUDA 13.0, 22800 = NCCL 2.28.0.
  double cuda_version = 13000;
  double driver_version = 13000;
  double nccl_version = 22800;

  // Parses `text`; on an unknown key or a bad value returns false and sets `error` to one
  // line naming the key.
  bool parse(const std::string& text, std::string& error);

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
