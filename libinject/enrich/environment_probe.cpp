// Versions and watched settings, read on the sender thread.
#include "enrich/environment_probe.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime_api.h>

#include "record/real.h"

namespace gpuwatch::inject {

// Why each one matters is in collector/analyze/environment.cpp, with its source.
const char* const kWatchedVariables[] = {
    "CUDA_LAUNCH_BLOCKING", "NCCL_P2P_DISABLE",   "NCCL_P2P_LEVEL",      "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",      "NCCL_NET",           "NCCL_NET_GDR_LEVEL",  "NCCL_ALGO",
    "NCCL_PROTO",           "NCCL_MAX_NCHANNELS", "NCCL_NVLS_ENABLE",    "NCCL_SOCKET_IFNAME",
    "NCCL_DEBUG",
};
const size_t kWatchedVariableCount = sizeof(kWatchedVariables) / sizeof(kWatchedVariables[0]);

std::vector<std::pair<std::string, std::string>> WatchedSettings() {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < kWatchedVariableCount; ++i)
    if (const char* v = std::getenv(kWatchedVariables[i]))
      out.emplace_back(kWatchedVariables[i], std::string(v).substr(0, 128));
  return out;
}

namespace {

using VersionFn = int (*)(int*);  // cudaError_t / ncclResult_t: 0 is success for both

// ncclGetVersion if NCCL is already in the process: in the global scope, else a libnccl
// loaded with RTLD_LOCAL (RTLD_NOLOAD never loads it). Nothing is kept open.
int NcclVersion() {
  auto fn = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  void* handle = nullptr;
  if (!fn)
    if ((handle = LoadedLibrary("libnccl.so"))) fn = reinterpret_cast<VersionFn>(dlsym(handle, "ncclGetVersion"));
  int v = 0;
  if (fn && fn(&v) != 0) v = 0;
  if (handle) dlclose(handle);
  return v;
}

}  // namespace

bool EnvironmentProbe::Probe(uint64_t now_ns, int device) {
  bool changed = false;
  if (!cuda_done_) {
    cuda_done_ = true;
    // The runtime the application uses (the next definition after this library).
    if (auto rt = Real<VersionFn>("cudaRuntimeGetVersion")) rt(&info_.cuda_runtime);
    if (auto drv = Real<VersionFn>("cudaDriverGetVersion")) drv(&info_.cuda_driver);
    // A device attribute query: no context is created, nothing the application set changes.
    static const auto props = Real<decltype(&cudaGetDeviceProperties)>("cudaGetDeviceProperties");
    cudaDeviceProp p{};
    if (device >= 0 && props && props(&p, device) == cudaSuccess) {
      info_.device_memory_bytes = p.totalGlobalMem;
      info_.device_sm_count = p.multiProcessorCount;
      info_.device_compute_capability = 10 * p.major + p.minor;
      info_.device_name.assign(p.name, strnlen(p.name, sizeof p.name));
      char bus[32];
      std::snprintf(bus, sizeof bus, "%08x:%02x:%02x.0", static_cast<unsigned>(p.pciDomainID),
                    static_cast<unsigned>(p.pciBusID), static_cast<unsigned>(p.pciDeviceID));
      info_.device_pci_bus_id = bus;
    }
    info_.settings = WatchedSettings();
    info_.network = ReadHostNetwork(HostPlacementProbe::RootFromEnvironment(), NcclNicChoice::FromEnvironment());
    changed = true;
  }
  if (now_ns >= next_placement_ns_) {
    next_placement_ns_ = now_ns + 1'000'000'000ull;
    HostPlacement p = placement_.Read(info_.device_pci_bus_id);
    if (!(p == info_.placement)) {
      info_.placement = std::move(p);
      changed = true;
    }
  }
  if (info_.nccl == 0 && now_ns >= next_nccl_try_ns_) {
    next_nccl_try_ns_ = now_ns + 1'000'000'000ull;
    if ((info_.nccl = NcclVersion()) != 0) {
      // NCCL reads its variables when it initialises, which may be after our first look.
      info_.settings = WatchedSettings();
      changed = true;
    }
  }
  return changed;
}

}  // namespace gpuwatch::inject
