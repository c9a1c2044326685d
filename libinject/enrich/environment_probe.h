// The `environment` facts: CUDA runtime and driver versions, NCCL's version, and the settings
// in the environment that change NCCL's transports or CUDA's launches.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "enrich/host_network.h"
#include "enrich/host_placement.h"

namespace gpuwatch::inject {

struct EnvironmentInfo {
  int cuda_runtime = 0;  // cudaRuntimeGetVersion, 0 = unknown
  int cuda_driver = 0;   // cudaDriverGetVersion
  int nccl = 0;          // ncclGetVersion, 0 = NCCL not in the process (yet)
  uint64_t device_memory_bytes = 0;  // the rank's device (cudaGetDeviceProperties); 0 = unknown
  int device_sm_count = 0;
  int device_compute_capability = 0;  // 10 x major + minor; 0 = unknown
  std::string device_name;
  std::string device_pci_bus_id;  // "00000000:BB:DD.0", as NVML names devices
  std::vector<std::pair<std::string, std::string>> settings;  // set variables of kWatchedVariables
  HostPlacement placement;  // CPU affinity, the GPU's NUMA node, the cgroup's CPU quota
  HostNetwork network;      // the NIC ports' rates and the GPUs on the host (read once)
};

// The variables reported when set (the collector judges them: collector/analyze/environment.cpp).
extern const char* const kWatchedVariables[];
extern const size_t kWatchedVariableCount;

// The watched variables that are set, in list order, values cut at 128 bytes. getenv runs on
// the sender thread: NCCL's own threads read the environment the same way.
std::vector<std::pair<std::string, std::string>> WatchedSettings();

// Sender thread only, and only once the application has made its first CUDA call: the
// version queries then touch nothing the application has not already initialised (neither
// creates a context), and NCCL is never loaded for this -- ncclGetVersion is looked up among
// the objects already in the process, at most once a second until NCCL shows up.
class EnvironmentProbe {
 public:
  // Looks again; true when something new became known since the last call (info() is then
  // due on the wire). `device`: the rank's device (the application thread's cudaGetDevice at
  // its first call), -1 when unknown.
  bool Probe(uint64_t now_ns, int device);
  const EnvironmentInfo& info() const { return info_; }
  // The cgroup's throttling counters now (for the process samples).
  CgroupCpuStat CgroupStat() const { return placement_.CpuStat(); }

 private:
  EnvironmentInfo info_;
  // Affinity can change (taskset -p, a launcher binding late): looked at once a second.
  HostPlacementProbe placement_{HostPlacementProbe::RootFromEnvironment()};
  uint64_t next_placement_ns_ = 0;
  bool cuda_done_ = false;
  uint64_t next_nccl_try_ns_ = 0;
};

}  // namespace gpuwatch::inject
