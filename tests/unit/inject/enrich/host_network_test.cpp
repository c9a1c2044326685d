// The host's NIC rates and GPU count (enrich/host_network.h) on recorded sysfs under a fixture
// root, as GPUWATCH_HOST_ROOT gives it: InfiniBand ports first, else physical interfaces that
// are up, else none.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "enrich/host_network.h"

namespace gi = gpuwatch::inject;
namespace fs = std::filesystem;

namespace {

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

fs::path FreshRoot(const std::string& name) {
  const fs::path root = fs::temp_directory_path() / ("gw-network-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

void Port(const fs::path& root, const std::string& dev, int port, const std::string& rate, const std::string& state) {
  const fs::path p = root / "sys/class/infiniband" / dev / "ports" / std::to_string(port);
  Write(p / "rate", rate);
  Write(p / "state", state);
}

void Iface(const fs::path& root, const std::string& name, bool physical, const std::string& operstate,
           const std::string& speed) {
  const fs::path p = root / "sys/class/net" / name;
  if (physical) fs::create_directories(p / "device");
  Write(p / "operstate", operstate);
  Write(p / "speed", speed);
}

void Pci(const fs::path& root, const std::string& id, const std::string& vendor, const std::string& cls) {
  Write(root / "sys/bus/pci/devices" / id / "vendor", vendor);
  Write(root / "sys/bus/pci/devices" / id / "class", cls);
}

}  // namespace

TEST_CASE("network: InfiniBand rate strings in Mb/s") {
  CHECK(gi::IbRateMbps("400 Gb/sec (4X NDR)") == 400000);
  CHECK(gi::IbRateMbps("200 Gb/sec (2X NDR)") == 200000);
  CHECK(gi::IbRateMbps("2.5 Gb/sec (1X SDR)") == 2500);
  CHECK(gi::IbRateMbps("") == 0);
  CHECK(gi::IbRateMbps("unknown") == 0);
  CHECK(gi::IbRateMbps("400 Mb/sec") == 0);  // not the unit sysfs writes
}

TEST_CASE("network: the active InfiniBand ports, and the NVIDIA GPUs on the host") {
  const fs::path root = FreshRoot("ib");
  for (int i = 0; i < 4; ++i) Port(root, "mlx5_" + std::to_string(i), 1, "400 Gb/sec (4X NDR)", "4: ACTIVE");
  Port(root, "mlx5_4", 1, "200 Gb/sec (2X NDR)", "4: ACTIVE");
  Port(root, "mlx5_5", 1, "400 Gb/sec (4X NDR)", "1: DOWN");  // not counted
  Iface(root, "eth0", true, "up", "100000");                  // ignored: InfiniBand was found
  Pci(root, "0000:18:00.0", "0x10de", "0x030200");  // H100 SXM: 3D controller
  Pci(root, "0000:2a:00.0", "0x10de", "0x030200");
  Pci(root, "0000:3a:00.0", "0x10de", "0x030000");  // VGA
  Pci(root, "0000:05:00.0", "0x10de", "0x068000");  // NVSwitch: a bridge, not a GPU
  Pci(root, "0000:06:00.0", "0x15b3", "0x020700");  // the ConnectX itself
  const gi::HostNetwork h = gi::ReadHostNetwork(root.string());
  CHECK(h.nic_source == "infiniband");
  CHECK(h.nic_ports == 5);
  CHECK(h.nic_max_mbps == 400000);
  CHECK(h.nic_total_mbps == 4 * 400000 + 200000);
  CHECK(h.host_gpus == 3);
  fs::remove_all(root);
}

TEST_CASE("network: without InfiniBand, the physical interfaces that are up") {
  const fs::path root = FreshRoot("net");
  Iface(root, "lo", false, "unknown", "");
  Iface(root, "docker0", false, "up", "10000");  // virtual (no device link)
  Iface(root, "eno1", true, "up", "25000");
  Iface(root, "eno2", true, "up", "100000");
  Iface(root, "eno3", true, "down", "-1");
  Iface(root, "eno4", true, "up", "-1");  // speed not known
  Port(root, "mlx5_0", 1, "100 Gb/sec (4X EDR)", "1: DOWN");
  const gi::HostNetwork h = gi::ReadHostNetwork(root.string());
  CHECK(h.nic_source == "net");
  CHECK(h.nic_ports == 2);
  CHECK(h.nic_max_mbps == 100000);
  CHECK(h.nic_total_mbps == 125000);
  CHECK(h.host_gpus == 0);
  fs::remove_all(root);
}

TEST_CASE("network: nothing to read gives no rate") {
  const fs::path root = FreshRoot("none");
  Iface(root, "lo", false, "unknown", "");
  const gi::HostNetwork h = gi::ReadHostNetwork(root.string());
  CHECK(h.nic_ports == 0);
  CHECK(h.nic_max_mbps == 0);
  CHECK(h.nic_total_mbps == 0);
  CHECK(h.nic_source.empty());
  fs::remove_all(root);
}

TEST_CASE("network: NCCL's device lists, as NCCL_IB_HCA and NCCL_SOCKET_IFNAME write them") {
  CHECK(gi::NcclListSelects("", "mlx5_3", 1));               // nothing said: every port
  CHECK(gi::NcclListSelects("mlx5", "mlx5_3", 1));           // a prefix
  CHECK_FALSE(gi::NcclListSelects("mlx5_1", "mlx5_3", 1));
  CHECK(gi::NcclListSelects("mlx5_1", "mlx5_10", 1));        // a prefix of it too
  CHECK_FALSE(gi::NcclListSelects("=mlx5_1", "mlx5_10", 1)); // whole names
  CHECK(gi::NcclListSelects("=mlx5_0,mlx5_1", "mlx5_1", 1));
  CHECK(gi::NcclListSelects("mlx5_0:1,mlx5_1:1", "mlx5_1", 1));
  CHECK_FALSE(gi::NcclListSelects("mlx5_0:1,mlx5_1:1", "mlx5_1", 2));  // another port
  CHECK_FALSE(gi::NcclListSelects("^mlx5_4", "mlx5_4", 1));  // excluded
  CHECK(gi::NcclListSelects("^mlx5_4", "mlx5_0", 1));
  CHECK_FALSE(gi::NcclListSelects("^=mlx5_4,mlx5_5", "mlx5_5", 1));
  CHECK(gi::NcclListSelects("^=mlx5_4", "mlx5_40", 1));
  CHECK(gi::NcclListSelects("^docker,lo", "eth0"));
  CHECK_FALSE(gi::NcclListSelects("^docker,lo", "docker1"));
}

TEST_CASE("network: the ports NCCL was told to use, storage NICs left out") {
  // Four 400G compute ports and a 200G storage port (mlx5_4): by default all five count;
  // told NCCL_IB_HCA=^=mlx5_4 (or the compute ones by name), only the compute ports do.
  const fs::path root = FreshRoot("nccl");
  for (int i = 0; i < 4; ++i) Port(root, "mlx5_" + std::to_string(i), 1, "400 Gb/sec (4X NDR)", "4: ACTIVE");
  Port(root, "mlx5_4", 1, "200 Gb/sec (2X NDR)", "4: ACTIVE");
  Iface(root, "eno1", true, "up", "25000");
  Iface(root, "ens9", true, "up", "100000");
  CHECK(gi::ReadHostNetwork(root.string()).nic_ports == 5);
  for (const char* hca : {"^=mlx5_4", "=mlx5_0,mlx5_1,mlx5_2,mlx5_3", "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"}) {
    gi::NcclNicChoice nccl;
    nccl.ib_hca = hca;
    const gi::HostNetwork h = gi::ReadHostNetwork(root.string(), nccl);
    INFO(hca);
    CHECK(h.nic_ports == 4);
    CHECK(h.nic_total_mbps == 4 * 400000);
  }
  // InfiniBand off: NCCL goes over sockets, on the interfaces NCCL_SOCKET_IFNAME names.
  gi::NcclNicChoice sockets;
  sockets.ib_disabled = true;
  sockets.socket_ifname = "=eno1";
  const gi::HostNetwork h = gi::ReadHostNetwork(root.string(), sockets);
  CHECK(h.nic_source == "net");
  CHECK(h.nic_ports == 1);
  CHECK(h.nic_max_mbps == 25000);
  fs::remove_all(root);
}
