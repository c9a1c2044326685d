// The host's network as sysfs shows it (issue 17): the rates of its NIC ports, the peak the
// link_bandwidth finding compares collectives that cross hosts with, and the NVIDIA GPUs on
// the host that share them. Read once, on the sender thread, at the first environment probe.
//
// Ports: the active ports of /sys/class/infiniband/*/ports/* (InfiniBand and RoCE: "rate" is
// "400 Gb/sec (4X NDR)"); with none, the physical interfaces of /sys/class/net that are up
// ("speed" in Mb/s; lo, virtual interfaces -- no "device" link: bridges, bonds, veth,
// tunnels -- and those down or of unknown speed left out). Every port counts, storage ones
// included: sysfs does not say which carry the job's traffic.
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

// Under `root` ("" = the real files; GPUWATCH_HOST_ROOT in tests).
HostNetwork ReadHostNetwork(const std::string& root);

// An InfiniBand rate file's text in Mb/s: "400 Gb/sec (4X NDR)" -> 400000, "2.5 Gb/sec" ->
// 2500; 0 when it is not a rate.
uint64_t IbRateMbps(const std::string& text);

}  // namespace gpuwatch::inject
