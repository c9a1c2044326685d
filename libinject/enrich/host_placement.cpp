// Affinity, NUMA and cgroup CPU files, read on the sender thread.
#include "enrich/host_placement.h"

#include <sched.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuwatch::inject {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

namespace {

uint64_t ToU64(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

// sysfs names a PCI device "0000:bb:dd.f": NVML's bus id has 8 domain digits, upper case.
std::string SysfsBusId(const std::string& bus_id) {
  std::string id = bus_id;
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

}  // namespace

std::string CpuList(const void* set, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(set);
  std::string out;
  const size_t n = bytes * 8;
  for (size_t i = 0; i < n;) {
    if (!(b[i / 8] >> (i % 8) & 1)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < n && (b[(j + 1) / 8] >> ((j + 1) % 8) & 1)) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(i);
    if (j > i) out += "-" + std::to_string(j);
    i = j + 1;
  }
  return out;
}

std::string HostPlacementProbe::RootFromEnvironment() {
  const char* r = std::getenv("GPUWATCH_HOST_ROOT");
  return r ? r : "";
}

HostPlacement HostPlacementProbe::Read(const std::string& pci_bus_id) {
  HostPlacement p;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) p.cpu_affinity = CpuList(&set, sizeof set);
  if (!pci_bus_id.empty()) {
    const std::string node = FirstLine(root_ + "/sys/bus/pci/devices/" + SysfsBusId(pci_bus_id) + "/numa_node");
    // -1: a machine with one node (or firmware that does not say).
    if (!node.empty() && node[0] != '-') {
      p.device_numa_node = std::atoi(node.c_str());
      p.device_numa_cpus = FirstLine(root_ + "/sys/devices/system/node/node" + node + "/cpulist");
    }
  }
  // /proc/self/cgroup: "0::/path" (v2), "N:cpu,cpuacct:/path" (v1).
  cgroup_dir_.clear();
  cgroup_version_ = 0;
  std::ifstream in(root_ + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty() && line.compare(0, a, "0") == 0) {
      const std::string dir = root_ + "/sys/fs/cgroup" + (path == "/" ? "" : path);
      const std::string max = FirstLine(dir + "/cpu.max");  // "max 100000" or "50000 100000"
      if (max.empty()) continue;
      cgroup_dir_ = dir, cgroup_version_ = 2;
      std::istringstream words(max);
      std::string quota, period;
      words >> quota >> period;
      if (quota != "max") p.cpu_quota_us = ToU64(quota);
      p.cpu_period_us = ToU64(period);
      break;
    }
    const std::string list = "," + controllers + ",";
    if (list.find(",cpu,") == std::string::npos) continue;
    for (const std::string& mount : {controllers, std::string("cpu")}) {
      const std::string dir = root_ + "/sys/fs/cgroup/" + mount + (path == "/" ? "" : path);
      const std::string quota = FirstLine(dir + "/cpu.cfs_quota_us");  // -1: none
      if (quota.empty()) continue;
      cgroup_dir_ = dir, cgroup_version_ = 1;
      if (quota[0] != '-') p.cpu_quota_us = ToU64(quota);
      p.cpu_period_us = ToU64(FirstLine(dir + "/cpu.cfs_period_us"));
      break;
    }
    if (cgroup_version_) break;
  }
  p.cgroup_version = cgroup_version_;
  return p;
}

CgroupCpuStat HostPlacementProbe::CpuStat() const {
  CgroupCpuStat s;
  if (cgroup_dir_.empty()) return s;
  std::ifstream in(cgroup_dir_ + "/cpu.stat");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    s.known = true;
    if (key == "nr_periods") s.nr_periods = value;
    else if (key == "nr_throttled") s.nr_throttled = value;
    else if (key == "throttled_usec") s.throttled_ns = value * 1000;  // v2
    else if (key == "throttled_time") s.throttled_ns = value;         // v1, ns
  }
  return s;
}

}  // namespace gpuwatch::inject
