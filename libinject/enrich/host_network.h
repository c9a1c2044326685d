// The host's network as sysfs shows it (issue 17): the rates of its NIC ports, the peak the
// link_bandwidth finding compares collectives that cross hosts with, and the NVIDIA GPUs on
// the host that share them. Read once, on the sender thread, at the first environment probe.
//
// Ports: the active ports of /sys/class/infiniband/*/ports/* (InfiniBand and RoCE: "rate" is
// "400 Gb/sec (4X NDR)"); with none, the physical interfaces of /sys/class/net that are up
// ("speed" in Mb/s; lo, virtual interfaces -- no "device" link: bridges, bonds, veth,
// tunnels -- and those down or of unknown speed left out). Sysfs does not say which ports
// carry the job's traffic, so every port counts, storage ones included, unless the job told
// NCCL which to use: NCCL_IB_HCA then selects the InfiniBand ports, NCCL_SOCKET_IFNAME the
// interfaces, and NCCL_IB_DISABLE=1 leaves InfiniBand out (NCCL then goes over sockets).
#pragma once
#include <cstdint>
#include <string>

namespace gpuwatch::inject {

struct HostNetwork {
  uint64_t nic_max_mbps = 0;    // the fastest port, Mb/s (0: none read)
  uint64_t nic_total_mbps = 0;  // the counted ports together
  uint32_t nic_ports = 0;
  std::string nic_source;       // "infiniband", "net", or "" (none read)
  uint32_t host_gpus = 0;       // NVIDIA display/3D controllers in /sys/bus/pci/devices (0: none seen)
};

// What the job told NCCL about its NICs (empty: nothing, every port may carry it).
struct NcclNicChoice {
  std::string ib_hca;         // NCCL_IB_HCA
  std::string socket_ifname;  // NCCL_SOCKET_IFNAME
  bool ib_disabled = false;   // NCCL_IB_DISABLE=1
  static NcclNicChoice FromEnvironment();
};

// Under `root` ("" = the real files; GPUWATCH_HOST_ROOT in tests).
HostNetwork ReadHostNetwork(const std::string& root, const NcclNicChoice& nccl = {});

// Whether NCCL's device list `spec` selects device `dev` (port `port`, -1: any): names
// separated by commas, each a prefix ("mlx5" is every mlx5_*), or a whole name after a
// leading '='; a leading '^' (before the '=') turns the list into exclusions; an entry may
// name a port ("mlx5_0:1"). An empty spec selects everything.
bool NcclListSelects(const std::string& spec, const std::string& dev, int port = -1);

// An InfiniBand rate file's text in Mb/s: "400 Gb/sec (4X NDR)" -> 400000, "2.5 Gb/sec" ->
// 2500; 0 when it is not a rate.
uint64_t IbRateMbps(const std::string& text);

}  // namespace gpuwatch::inject
