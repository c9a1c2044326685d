// Where the ranks run on their host, end to end (issue 17): a job pinned with the real
// sched_setaffinity (what taskset does) to a CPU away from its GPU's NUMA node (the node from
// a recorded sysfs under GPUWATCH_HOST_ROOT: the simulated GPU has no sysfs entry of its own)
// is `cpu_affinity`; a job in a real cgroup (v1 cpu controller, made by the test) whose CPU
// quota throttles its CPU-bound input pipeline is `cpu_throttled`. The recorded sysfs also
// holds the host's NIC ports and GPUs, which summary.json's environment.network reports.
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;
namespace fs = std::filesystem;

namespace {

// CPU-bound host work each step (a data loader that keeps a core busy) against 4 ms of kernels.
const char* kCpuBound = R"({"name": "cpu_bound_input", "ranks": 1, "steps": 12,
  "step": [{"op": "host", "ms": 30, "wait": "cpu"}, {"op": "kernels", "count": 4, "us": 1000}, {"op": "sync"}]})";

// The same for 40 steps: a short job finishes before the quota's periods add up to throttling.
const char* kCpuBoundLonger = R"({"name": "cpu_bound_input", "ranks": 1, "steps": 40,
  "step": [{"op": "host", "ms": 30, "wait": "cpu"}, {"op": "kernels", "count": 4, "us": 1000}, {"op": "sync"}]})";

const json* Finding(const json& findings, const std::string& id) {
  for (const json& f : findings)
    if (f["id"] == id) return &f;
  return nullptr;
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// This process's cgroup of the v1 cpu controller ("/" at the top), from /proc/self/cgroup.
std::string CpuCgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    if (("," + line.substr(a + 1, b - a - 1) + ",").find(",cpu,") != std::string::npos) return line.substr(b + 1);
  }
  return "/";
}

// Moves this process (and so the job it starts) into the cgroup `dir` for its lifetime, then
// back where it was.
struct InCgroup {
  explicit InCgroup(const std::string& dir) : home("/sys/fs/cgroup/cpu" + CpuCgroup()) {
    std::ofstream(dir + "/cgroup.procs") << getpid() << "\n";
  }
  ~InCgroup() { std::ofstream(home + "/cgroup.procs") << getpid() << "\n"; }
  std::string home;
};

}  // namespace

TEST_CASE("placement: a job pinned to a CPU off its GPU's NUMA node is cpu_affinity") {
  cpu_set_t old_set;
  REQUIRE(sched_getaffinity(0, sizeof old_set, &old_set) == 0);
  REQUIRE(CPU_COUNT(&old_set) >= 2);  // the machine's CPUs: one for the job, one for the "GPU's node"
  int job_cpu = -1, node_cpu = -1;
  for (int c = 0; c < CPU_SETSIZE && node_cpu < 0; ++c)
    if (CPU_ISSET(c, &old_set)) (job_cpu < 0 ? job_cpu : node_cpu) = c;
  // The simulated device 0 is PCI 00000000:00:00.0: its node is 1, whose CPU the job may not use.
  const fs::path root = fs::temp_directory_path() / ("gw-e2e-placement-" + std::to_string(getpid()));
  fs::remove_all(root);
  Write(root / "sys/bus/pci/devices/0000:00:00.0/numa_node", "1\n");
  Write(root / "sys/devices/system/node/node1/cpulist", std::to_string(node_cpu) + "\n");
  // The host's network in the same recorded sysfs (enrich/host_network.h): two active 400 Gb/s
  // InfiniBand ports, one down, and two NVIDIA GPUs.
  for (const char* port : {"mlx5_0", "mlx5_1", "mlx5_2"}) {
    Write(root / "sys/class/infiniband" / port / "ports/1/rate", "400 Gb/sec (4X NDR)\n");
    Write(root / "sys/class/infiniband" / port / "ports/1/state", port == std::string("mlx5_2") ? "1: DOWN\n" : "4: ACTIVE\n");
  }
  for (const char* gpu : {"0000:18:00.0", "0000:2a:00.0"}) {
    Write(root / "sys/bus/pci/devices" / gpu / "vendor", "0x10de\n");
    Write(root / "sys/bus/pci/devices" / gpu / "class", "0x030200\n");
  }
  cpu_set_t pinned;
  CPU_ZERO(&pinned);
  CPU_SET(job_cpu, &pinned);
  REQUIRE(sched_setaffinity(0, sizeof pinned, &pinned) == 0);  // inherited by the job
  JobRun r = RunScenario("placement-affinity", kCpuBound, {.env = {{"GPUWATCH_HOST_ROOT", root.string()}}});
  sched_setaffinity(0, sizeof old_set, &old_set);
  INFO("driver stderr:\n" << r.job.err);
  const json& rank = r.summary["ranks"][0];
  const json& p = rank["placement"];
  INFO("placement " << p.dump() << "\nfindings " << rank["findings"].dump().substr(0, 3000));
  REQUIRE(p.is_object());
  CHECK(p["cpu_affinity"] == std::to_string(job_cpu));
  CHECK(p["cpus"] == 1);
  CHECK(p["gpu_numa_node"] == 1);
  CHECK(p["gpu_node_cpus"] == std::to_string(node_cpu));
  CHECK(p["cpus_on_gpu_node"] == 0);
  CHECK(p["off_node_share"].get<double>() == 1.0);
  const json* f = Finding(rank["findings"], "cpu_affinity");
  REQUIRE(f);
  const double host_wait = (*f)["evidence"]["gpu_idle_waiting_for_host_s"];
  CHECK(host_wait > 0.1);  // 12 steps of 30 ms of host work
  CHECK((*f)["time_lost_s"].get<double>() == Approx(host_wait * 0.25));
  // What the library read of the host's network reaches summary.json (link_bandwidth's peak).
  const json& net = rank["environment"]["network"];
  INFO("network " << net.dump());
  REQUIRE(net.is_object());
  CHECK(net["nic_source"] == "infiniband");
  CHECK(net["nic_ports"] == 2);
  CHECK(net["nic_max_gbps"].get<double>() == Approx(400));
  CHECK(net["nic_total_gbps"].get<double>() == Approx(800));
  CHECK(net["host_gpus"] == 2);
  fs::remove_all(root);
}

// The scenario's gpu.numa_node: the driver serves the GPU's node and two nodes' CPUs (node 0
// the first half of the machine's CPUs, node 1 the rest) as a recorded sysfs. The job pinned
// to a CPU of the first half runs on node 0: away from a GPU on node 1, beside one on node 0.
TEST_CASE("placement: the scenario's gpu.numa_node, a rank pinned to the other node's CPUs is cpu_affinity") {
  cpu_set_t old_set;
  REQUIRE(sched_getaffinity(0, sizeof old_set, &old_set) == 0);
  const long half = (sysconf(_SC_NPROCESSORS_CONF) + 1) / 2;
  REQUIRE(sysconf(_SC_NPROCESSORS_CONF) >= 2);  // a CPU for each simulated node
  int first = -1;  // a CPU of node 0 the test may use
  for (int c = 0; c < half && first < 0; ++c)
    if (CPU_ISSET(c, &old_set)) first = c;
  REQUIRE(first >= 0);
  cpu_set_t pinned;
  CPU_ZERO(&pinned);
  CPU_SET(first, &pinned);
  for (int node : {1, 0}) {
    INFO("GPU on node " << node);
    std::string scn = kCpuBound;
    scn.replace(scn.find("\"steps\""), 0, "\"gpu\": {\"numa_node\": " + std::to_string(node) + "}, ");
    REQUIRE(sched_setaffinity(0, sizeof pinned, &pinned) == 0);  // inherited by the job
    JobRun r = RunScenario("placement-numa-" + std::to_string(node), scn, {.truth = true});
    sched_setaffinity(0, sizeof old_set, &old_set);
    INFO("driver stderr:\n" << r.job.err);
    CHECK(r.Device(0)["device"]["numa_node"] == node);
    const json& rank = r.summary["ranks"][0];
    const json& p = rank["placement"];
    INFO("placement " << p.dump() << "\nfindings " << rank["findings"].dump().substr(0, 3000));
    REQUIRE(p.is_object());
    CHECK(p["gpu_numa_node"] == node);
    CHECK(p["cpu_affinity"] == std::to_string(first));
    CHECK(p["cpus_on_gpu_node"] == (node == 0 ? 1 : 0));
    const json* f = Finding(rank["findings"], "cpu_affinity");
    if (node == 0) {
      CHECK_FALSE(f);
      continue;
    }
    REQUIRE(f);
    CHECK((*f)["time_lost_s"].get<double>() ==
          Approx((*f)["evidence"]["gpu_idle_waiting_for_host_s"].get<double>() * 0.25));
  }
}

TEST_CASE("placement: a CPU quota that throttles the input pipeline is cpu_throttled (real cgroup v1)") {
  const std::string dir = "/sys/fs/cgroup/cpu" + CpuCgroup() + "/gwtest-" + std::to_string(getpid());
  INFO("this test makes a cgroup under /sys/fs/cgroup/cpu (the CPU controller of cgroup v1) and needs to write there");
  REQUIRE(fs::create_directory(dir));
  std::ofstream(dir + "/cpu.cfs_period_us") << 100000 << "\n";
  std::ofstream(dir + "/cpu.cfs_quota_us") << 20000 << "\n";  // 0.2 cores for a loop that wants one
  JobRun r = [&] {
    InCgroup in(dir);
    return RunScenario("placement-throttled", kCpuBoundLonger);
  }();
  fs::remove(dir);
  INFO("driver stderr:\n" << r.job.err);
  const json& rank = r.summary["ranks"][0];
  const json& p = rank["placement"];
  INFO("placement " << p.dump() << "\nfindings " << rank["findings"].dump().substr(0, 3000));
  REQUIRE(p.is_object());
  CHECK(p["cgroup_version"] == 1);
  CHECK(p["cpu_quota_cores"].get<double>() == Approx(0.2));
  CHECK(p["cgroup_throttled_periods"].get<double>() > 0);
  CHECK(p["throttled_share_in_host_wait"].get<double>() > 0.3);
  const json* f = Finding(rank["findings"], "cpu_throttled");
  REQUIRE(f);
  CHECK((*f)["time_lost_s"].get<double>() > 0);
  CHECK((*f)["time_lost_s"].get<double>() <= (*f)["evidence"]["gpu_idle_waiting_for_host_s"].get<double>() + 1e-9);
}

namespace {

// The bundled cpu_oversubscribed scenario (symmetric ranks, CPU-bound input work each step)
// at `ranks` ranks, the job pinned to two of the machine's CPUs (what taskset does), so that
// its threads outnumber the cores on any machine.
JobRun RunOnTwoCpus(const std::string& work, int ranks) {
  cpu_set_t old_set;
  REQUIRE(sched_getaffinity(0, sizeof old_set, &old_set) == 0);
  REQUIRE(CPU_COUNT(&old_set) >= 2);
  cpu_set_t pinned;
  CPU_ZERO(&pinned);
  for (int c = 0, n = 0; c < CPU_SETSIZE && n < 2; ++c)
    if (CPU_ISSET(c, &old_set)) CPU_SET(c, &pinned), ++n;
  std::ifstream in(std::string(GPUWATCH_SCENARIOS_DIR) + "/cpu_oversubscribed.json");
  json scenario = json::parse(in);
  scenario["ranks"] = ranks;
  REQUIRE(sched_setaffinity(0, sizeof pinned, &pinned) == 0);  // inherited by the job
  JobRun r = RunScenario(work, scenario.dump());
  sched_setaffinity(0, sizeof old_set, &old_set);
  return r;
}

// Symmetric ranks on too few CPUs: no straggler, the host named with its ranks and CPUs.
void CheckOversubscribed(const JobRun& r, int ranks) {
  INFO("driver stderr:\n" << r.job.err);
  const json& job = r.summary["job"];
  INFO("findings " << job["findings"].dump().substr(0, 4000));
  CHECK(Finding(job["findings"], "straggler") == nullptr);
  const json* f = Finding(job["findings"], "cpu_oversubscribed");
  REQUIRE(f);
  CHECK((*f)["ranks"].size() == static_cast<size_t>(ranks));
  CHECK((*f)["evidence"]["cpus"] == 2);
  CHECK((*f)["evidence"]["ranks"].size() == static_cast<size_t>(ranks));
  CHECK((*f)["evidence"]["run_wait_share"].get<double>() >= 0.02);
  CHECK((*f)["time_lost_s"].get<double>() > 0);
  for (const json& rank : r.summary["ranks"]) CHECK(rank["placement"]["run_queue_wait_share"].get<double>() > 0);
}

}  // namespace

TEST_CASE("placement: 8 symmetric ranks on 2 CPUs are cpu_oversubscribed, not a straggler") {
  CheckOversubscribed(RunOnTwoCpus("placement-oversubscribed-8", 8), 8);
}

TEST_CASE("placement: 4 symmetric ranks on 2 CPUs are cpu_oversubscribed, not a straggler") {
  CheckOversubscribed(RunOnTwoCpus("placement-oversubscribed-4", 4), 4);
}

TEST_CASE("placement: 2 ranks that mostly sleep, cores to spare: neither cpu_oversubscribed nor a straggler") {
  JobRun r = RunScenario("placement-spare-cores", "healthy");
  INFO("driver stderr:\n" << r.job.err);
  const json& job = r.summary["job"];
  INFO("findings " << job["findings"].dump().substr(0, 4000));
  CHECK(Finding(job["findings"], "cpu_oversubscribed") == nullptr);
  CHECK(Finding(job["findings"], "straggler") == nullptr);
}
