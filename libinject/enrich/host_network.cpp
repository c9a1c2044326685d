// See host_network.h.
#include "enrich/host_network.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "enrich/host_placement.h"

namespace gpuwatch::inject {
namespace {

// The entries of a directory, as "dir/name", in no order (only sums and maxima are kept);
// none when it cannot be read. Bounded: a host has a few dozen ports, PCI functions in the
// hundreds.
template <typename F>
void ForEachEntry(const std::string& dir, F&& f) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  int n = 0;
  for (const dirent* e; n < 4096 && (e = readdir(d)); ++n)
    if (e->d_name[0] != '.') f(dir + "/" + e->d_name, std::string(e->d_name));
  closedir(d);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void Count(HostNetwork& h, uint64_t mbps) {
  h.nic_max_mbps = std::max(h.nic_max_mbps, mbps);
  h.nic_total_mbps += mbps;
  ++h.nic_ports;
}

void ReadInfiniband(const std::string& root, const std::string& hca, HostNetwork& h) {
  ForEachEntry(root + "/sys/class/infiniband", [&](const std::string& dev, const std::string& dev_name) {
    ForEachEntry(dev + "/ports", [&](const std::string& port, const std::string& port_name) {
      if (!NcclListSelects(hca, dev_name, std::atoi(port_name.c_str()))) return;
      // "4: ACTIVE"; a port without a state file is taken as it is.
      const std::string state = FirstLine(port + "/state");
      if (!state.empty() && state.find("ACTIVE") == std::string::npos) return;
      if (const uint64_t mbps = IbRateMbps(FirstLine(port + "/rate"))) Count(h, mbps);
    });
  });
}

void ReadNet(const std::string& root, const std::string& ifname, HostNetwork& h) {
  ForEachEntry(root + "/sys/class/net", [&](const std::string& dev, const std::string& name) {
    if (name == "lo" || !Exists(dev + "/device")) return;  // virtual
    if (!NcclListSelects(ifname, name)) return;
    if (FirstLine(dev + "/operstate") != "up") return;
    const std::string speed = FirstLine(dev + "/speed");  // -1 or unreadable: unknown
    char* end = nullptr;
    const long long mbps = std::strtoll(speed.c_str(), &end, 10);
    if (!speed.empty() && *end == '\0' && mbps > 0) Count(h, static_cast<uint64_t>(mbps));
  });
}

// PCI class 0x0300xx (VGA) or 0x0302xx (3D controller: every data-centre GPU) of vendor
// 0x10de; NVSwitches (0x0680xx) and NVIDIA's audio functions are not GPUs.
uint32_t CountGpus(const std::string& root) {
  uint32_t n = 0;
  ForEachEntry(root + "/sys/bus/pci/devices", [&](const std::string& dev, const std::string&) {
    if (FirstLine(dev + "/vendor") != "0x10de") return;
    const std::string cls = FirstLine(dev + "/class");
    if (cls.rfind("0x0300", 0) == 0 || cls.rfind("0x0302", 0) == 0) ++n;
  });
  return n;
}

}  // namespace

bool NcclListSelects(const std::string& spec, const std::string& dev, int port) {
  if (spec.empty()) return true;
  size_t at = 0;
  const bool exclude = spec[0] == '^';
  at += exclude;
  const bool exact = at < spec.size() && spec[at] == '=';
  at += exact;
  bool listed = false;
  while (at <= spec.size() && !listed) {
    size_t end = spec.find(',', at);
    if (end == std::string::npos) end = spec.size();
    std::string name = spec.substr(at, end - at);
    int want_port = -1;
    if (const size_t colon = name.find(':'); colon != std::string::npos) {
      want_port = std::atoi(name.c_str() + colon + 1);
      name.resize(colon);
    }
    const bool named = exact ? dev == name : !name.empty() && dev.rfind(name, 0) == 0;
    listed = named && (want_port < 0 || port < 0 || want_port == port);
    at = end + 1;
  }
  return listed != exclude;
}

NcclNicChoice NcclNicChoice::FromEnvironment() {
  NcclNicChoice c;
  if (const char* v = std::getenv("NCCL_IB_HCA")) c.ib_hca = v;
  if (const char* v = std::getenv("NCCL_SOCKET_IFNAME")) c.socket_ifname = v;
  const char* off = std::getenv("NCCL_IB_DISABLE");
  c.ib_disabled = off && std::atoi(off) == 1;
  return c;
}

uint64_t IbRateMbps(const std::string& text) {
  char* end = nullptr;
  const double gbps = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(gbps > 0) || std::string(end).rfind(" Gb/sec", 0) != 0) return 0;
  return static_cast<uint64_t>(gbps * 1000 + 0.5);
}

HostNetwork ReadHostNetwork(const std::string& root, const NcclNicChoice& nccl) {
  const std::string& r = root;  // "" + "/sys/..." is the real file
  HostNetwork h;
  if (!nccl.ib_disabled) ReadInfiniband(r, nccl.ib_hca, h);
  if (h.nic_ports) h.nic_source = "infiniband";
  else {
    ReadNet(r, nccl.socket_ifname, h);
    if (h.nic_ports) h.nic_source = "net";
  }
  h.host_gpus = CountGpus(r);
  return h;
}

}  // namespace gpuwatch::inject
