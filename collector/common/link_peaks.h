// What the links that connect a rank's GPU to its peers can carry, in GB/s (1e9 bytes/s)
// each way: the peaks a collective's bus bandwidth (nccl-tests' busbw, which does not
// depend on the number of ranks) is compared with by the link_bandwidth finding.
//
// Sources: PCI-SIG base specifications (per-lane transfer rate and line coding); NVIDIA's
// NVLink generations (H100/H200 SXM: NVLink 4, 18 links, 900 GB/s both ways together);
// NVIDIA DGX H100/H200 (one 400 Gb/s ConnectX-7 NIC per GPU).
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>

namespace gpuwatch::collector {

// PCIe per lane, each way, after line coding: gens 1-2 8b/10b at 2.5 and 5 GT/s; gens 3-5
// 128b/130b at 8, 16, 32 GT/s; gen 6 64 GT/s (PAM4, FLIT: about 7.56 GB/s usable).
inline double PcieLaneGbps(uint32_t gen) {
  static constexpr double kGbps[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  return kGbps[std::min<uint32_t>(gen, 6)];
}

// nvmlDeviceGetNvLinkVersion answers NVML's enum nvmlNvlinkVersion_t, not the generation:
// 1 = 1.0 (P100), 2 = 2.0 (V100), 3 = 2.2, 4 = 3.0, 5 = 3.1 (A100 answers 5), 6 = 4.0 (H100,
// H200), 7 = 5.0 (B200). (Some drivers answer 7 on Hopper: the library's sampler sends 6 there.)
//
// Per link, each way: NVLink 1.0 20 GB/s; 2.x, 3.x and 4.0 25 GB/s (V100 6 links = 300
// GB/s both ways, A100 12 = 600, H100 18 = 900); 5.0 50 GB/s (B200 18 links = 1.8 TB/s).
// 0 for a version not known.
inline double NvLinkLinkGbps(uint32_t nvml_version) {
  static constexpr double kGbps[] = {0, 20, 25, 25, 25, 25, 25, 50};
  return nvml_version < std::size(kGbps) ? kGbps[nvml_version] : 0.0;
}

// "4.0" for NVML's enum 6; "" for one not known.
inline const char* NvLinkVersionText(uint32_t nvml_version) {
  static constexpr const char* kText[] = {"", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};
  return nvml_version < std::size(kText) ? kText[nvml_version] : "";
}

// Between hosts, when the rank's library could read no NIC rate in sysfs (a container without
// /sys/class/infiniband, only virtual interfaces): the DGX H100/H200 design, one 400 Gb/s
// (InfiniBand NDR or RoCE) NIC per GPU. Inferred for other clusters.
inline constexpr double kNetworkPerGpuGbps = 50;

}  // namespace gpuwatch::collector
