// See host_fixture.h.
#include "host_fixture.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

namespace gpuwatch::scenario {
namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

std::string cpu_list(const std::vector<int>& cpus, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
  return out;
}

}  // namespace

std::string write_host_fixture(const Scenario& sc, const std::string& dir) {
  const auto node = sc.gpu.find("numa_node");
  if (node == sc.gpu.end()) return "";
  const std::filesystem::path root(dir);
  // Every device a rank may use (one per rank at most): the same node.
  for (int d = 0; d < std::max(sc.ranks, 1); ++d) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", d);
    write_file(root / "sys/bus/pci/devices" / bus / "numa_node", std::to_string(static_cast<int>(node->second)));
  }
  // The machine's CPUs, not this process's affinity: a test pins the driver (and so the ranks)
  // to one CPU to place them on a node.
  std::vector<int> cpus;
  for (long c = 0, n = sysconf(_SC_NPROCESSORS_CONF); c < std::max(n, 1L); ++c) cpus.push_back(static_cast<int>(c));
  const size_t half = (cpus.size() + 1) / 2;
  write_file(root / "sys/devices/system/node/node0/cpulist", cpu_list(cpus, 0, half));
  write_file(root / "sys/devices/system/node/node1/cpulist",
             cpus.size() > 1 ? cpu_list(cpus, half, cpus.size()) : cpu_list(cpus, 0, 1));
  return dir;
}

}  // namespace gpuwatch::scenario
