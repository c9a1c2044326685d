// The host placement probe (enrich/host_placement.h) on recorded sysfs and /proc files under
// a fixture root, as GPUWATCH_HOST_ROOT gives it: the GPU's NUMA node and its CPUs, cgroup v2
// and v1 quotas and throttling counters; and the affinity from the real sched_getaffinity.
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "enrich/host_placement.h"

namespace gi = gpuwatch::inject;
namespace fs = std::filesystem;

namespace {

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

fs::path FreshRoot(const std::string& name) {
  const fs::path root = fs::temp_directory_path() / ("gw-placement-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(root);
  return root;
}

}  // namespace

TEST_CASE("placement: cpulists of a CPU set") {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : {0, 1, 2, 3, 8, 10, 11}) CPU_SET(c, &set);
  CHECK(gi::CpuList(&set, sizeof set) == "0-3,8,10-11");
  CPU_ZERO(&set);
  CHECK(gi::CpuList(&set, sizeof set).empty());
}

TEST_CASE("placement: the GPU's NUMA node and a cgroup v2 quota with its throttling, from a fixture root") {
  const fs::path root = FreshRoot("v2");
  Write(root / "sys/bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
  Write(root / "sys/devices/system/node/node1/cpulist", "16-31\n");
  Write(root / "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "150000 100000\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat",
        "usage_usec 900\nnr_periods 40\nnr_throttled 12\nthrottled_usec 3500\n");
  gi::HostPlacementProbe probe(root.string());
  const gi::HostPlacement p = probe.Read("00000000:3B:00.0");  // NVML's spelling
  CHECK(p.device_numa_node == 1);
  CHECK(p.device_numa_cpus == "16-31");
  CHECK(p.cgroup_version == 2);
  CHECK(p.cpu_quota_us == 150000);
  CHECK(p.cpu_period_us == 100000);
  // The affinity is the process's own (this test's), whatever the root.
  cpu_set_t set;
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK(p.cpu_affinity == gi::CpuList(&set, sizeof set));
  const gi::CgroupCpuStat s = probe.CpuStat();
  CHECK(s.known);
  CHECK(s.nr_periods == 40);
  CHECK(s.nr_throttled == 12);
  CHECK(s.throttled_ns == 3'500'000);
  fs::remove_all(root);
}

TEST_CASE("placement: cgroup v1 without a quota, a node of -1, and nothing at all") {
  const fs::path root = FreshRoot("v1");
  Write(root / "sys/bus/pci/devices/0000:00:00.0/numa_node", "-1\n");
  Write(root / "proc/self/cgroup", "4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/job/cpu.stat", "nr_periods 7\nnr_throttled 0\nthrottled_time 0\n");
  gi::HostPlacementProbe probe(root.string());
  const gi::HostPlacement p = probe.Read("00000000:00:00.0");
  CHECK(p.device_numa_node == -1);
  CHECK(p.device_numa_cpus.empty());
  CHECK(p.cgroup_version == 1);
  CHECK(p.cpu_quota_us == 0);
  CHECK(p.cpu_period_us == 100000);
  CHECK(probe.CpuStat().nr_periods == 7);

  gi::HostPlacementProbe empty((root / "none").string());
  const gi::HostPlacement q = empty.Read("00000000:00:00.0");
  CHECK(q.cgroup_version == 0);
  CHECK(q.device_numa_node == -1);
  CHECK_FALSE(empty.CpuStat().known);
  fs::remove_all(root);
}
