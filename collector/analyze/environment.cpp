// See environment.h. Version thresholds are in thresholds.h; the settings' rules are here,
// each with where its effect is documented.
#include "analyze/environment.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// NCCL treats a set integer variable as its value; "1", "2", ... disable.
bool Truthy(const std::string& v) { return !v.empty() && v != "0"; }

}  // namespace

std::string CudaVersionText(int v) {
  if (v <= 0) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%d.%d", v / 1000, (v % 1000) / 10);
  return b;
}

std::string NcclVersionText(int v) {
  if (v <= 0) return "";
  char b[32];
  // NCCL_VERSION_CODE: 1000 x major + 100 x minor + patch up to 2.8, 10000 x major + ... since 2.9.
  if (v >= 10000) std::snprintf(b, sizeof b, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
  else std::snprintf(b, sizeof b, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
  return b;
}

std::string ComputeCapabilityText(int cc) {
  if (cc <= 0) return "";
  return std::to_string(cc / 10) + "." + std::to_string(cc % 10);
}

// Sources: NCCL user guide, "Environment Variables" (docs.nvidia.com/deeplearning/nccl),
// and the CUDA C++ Programming Guide, "Asynchronous Concurrent Execution".
std::vector<EnvIssue> EnvIssues(const EnvFacts& e) {
  std::vector<EnvIssue> out;
  for (const auto& [name, value] : e.settings) {
    const std::string what = name + "=" + value, v = Upper(value);
    auto add = [&](const char* effect, const char* sev, bool transport, const std::string& fix) {
      out.push_back({what, effect, sev, transport, fix});
    };
    if (name == "CUDA_LAUNCH_BLOCKING" && Truthy(value))
      add("every kernel launch waits for the kernel to finish (a debugging aid: the host can "
          "never run ahead of the GPU)", "high", false, "unset CUDA_LAUNCH_BLOCKING");
    else if (name == "NCCL_P2P_DISABLE" && Truthy(value))
      add("direct GPU-to-GPU transport (NVLink, PCIe P2P) disabled: traffic between GPUs goes "
          "through host memory", "medium", true,
          "unset NCCL_P2P_DISABLE (if P2P hangs, fix ACS/IOMMU settings instead)");
    else if (name == "NCCL_P2P_LEVEL" && (v == "LOC" || v == "0"))
      add("P2P transport never used (LOC): traffic between GPUs goes through host memory", "medium",
          true, "unset NCCL_P2P_LEVEL and let NCCL choose");
    else if (name == "NCCL_SHM_DISABLE" && Truthy(value))
      add("shared-memory transport disabled: where P2P is not possible, GPUs talk through the "
          "network (IB or sockets)", "medium", true, "unset NCCL_SHM_DISABLE");
    else if (name == "NCCL_IB_DISABLE" && Truthy(value))
      add("InfiniBand/RoCE disabled: traffic between nodes uses TCP sockets", "medium", true,
          "unset NCCL_IB_DISABLE where the nodes have IB/RoCE");
    else if (name == "NCCL_NET" && v == "SOCKET")
      add("network transport forced to TCP sockets", "medium", true,
          "unset NCCL_NET (or name the IB / plugin transport)");
    else if (name == "NCCL_NET_GDR_LEVEL" && (v == "LOC" || v == "0"))
      add("GPUDirect RDMA disabled: network traffic is staged through host memory", "medium", true,
          "unset NCCL_NET_GDR_LEVEL");
    else if (name == "NCCL_ALGO" || name == "NCCL_PROTO")
      add("NCCL's choice of algorithm/protocol per message size is overridden (the NCCL guide "
          "advises setting it only to work around a suspected bug)", "low", true,
          "unset " + name + " unless it works around a known NCCL problem");
    else if (name == "NCCL_MAX_NCHANNELS" && !value.empty() && std::atoi(value.c_str()) > 0 &&
             std::atoi(value.c_str()) <= kFewNcclChannels)
      add("few NCCL channels: fewer SMs and links move data, lower bandwidth", "low", true,
          "unset NCCL_MAX_NCHANNELS");
    else if (name == "NCCL_NVLS_ENABLE" && v == "0")
      add("NVLink SHARP (NVSwitch in-network reductions) disabled", "low", true, "unset NCCL_NVLS_ENABLE");
  }
  if (e.nccl > 0 && e.nccl < kOldNcclVersion)
    out.push_back({"NCCL " + NcclVersionText(e.nccl),
                   "old NCCL: newer releases are faster on current GPUs and networks", "low", true,
                   "use a newer NCCL (a newer PyTorch wheel brings one)"});
  if (e.cuda_runtime > 0 && e.cuda_runtime < kOldCudaRuntime)
    out.push_back({"CUDA runtime " + CudaVersionText(e.cuda_runtime),
                   "old CUDA runtime: newer GPUs' features and libraries need a newer one", "low", false,
                   "use a build for a current CUDA (e.g. a cu12x/cu13x PyTorch wheel)"});
  return out;
}

}  // namespace gpuwatch::collector
