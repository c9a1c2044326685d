// The device's state end to end (issue 17): the memory a rank's allocations hold against
// the simulator's account, every allocation API the library hooks, and the shape of the
// utilization curve on the bundled scenarios made to show one.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "scenario_run.h"
#include "test_trace_validator.h"

using namespace gpuwatch::e2e;

namespace {

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

// Each step keeps 64 MiB more (a leak, or a cache that only grows), on an 80 GiB device.
const char* kGrowing = R"({"name": "memory_growth", "ranks": 2, "steps": 12,
  "gpu": {"memory_gib": 80, "sm_count": 108},
  "step": [{"op": "host", "ms": 2}, {"op": "kernels", "count": 4, "us": 500},
           {"op": "alloc", "bytes": 67108864}, {"op": "allreduce", "bytes": 1048576}, {"op": "sync"}],
  "every": [{"period": 4, "ops": [{"op": "alloc", "bytes": 268435456}]}]})";

}  // namespace

TEST_CASE("memory: each rank's peak and its device's total match the simulator's truth") {
  JobRun r = RunScenario("memory-growth", kGrowing, {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  REQUIRE(r.summary["ranks"].size() == 2);
  for (const json& rank : r.summary["ranks"]) {
    const int id = rank["rank"];
    const json truth = r.Device(id)["memory"];
    const json& m = rank["memory"];
    INFO("rank " << id << " memory " << m.dump() << " truth " << truth.dump());
    REQUIRE(m.is_object());
    // The setup's buffer (the largest copy or collective) plus 12 x 64 MiB plus 3 x 256 MiB.
    CHECK(truth["peak_bytes"] == 1 * kMiB + 12 * 64 * kMiB + 3 * 256 * kMiB);
    CHECK(m["peak_bytes"] == truth["peak_bytes"]);
    CHECK(m["total_bytes"] == truth["total_bytes"]);
    CHECK(m["total_bytes"] == 80 * kGiB);
    CHECK(m["headroom_bytes"] == 80 * kGiB - truth["peak_bytes"].get<uint64_t>());
    CHECK(m["allocations"] == 1 + 12 + 3);
    CHECK(m["frees"] == 1 + 12 + 3);  // teardown frees everything
    CHECK(m["reserved_bytes"] == 0);
    // Reserved memory over time: it only grows during the steps, and reaches the peak.
    const json& series = m["reserved_series"]["peak_bytes"];
    REQUIRE(series.is_array());
    REQUIRE(!series.empty());
    uint64_t top = 0;
    for (const json& v : series) top = std::max(top, v.get<uint64_t>());
    CHECK(top == truth["peak_bytes"]);
    const json& env = rank["environment"];
    CHECK(env["device_memory_bytes"] == 80 * kGiB);
    CHECK(env["device_sm_count"] == 108);
    CHECK(env["device_name"] == "gpuwatch simulated GPU");
    CHECK(env["device_compute_capability"] == "9.0");  // the simulator says an H100
  }
}

TEST_CASE("memory: cudaMalloc, cudaMallocAsync, cudaMallocManaged, their frees and cudaMemGetInfo") {
  JobRun r = RunJob("memory-apis", {GPUWATCH_BIN_DIR "/gw_memory_app"},
                    {.env = {{"SIMGPU_CONFIG", "memory_gib=40,other_processes=8:0.5"}}});
  INFO("app stdout:\n" << r.job.out << "\nstderr:\n" << r.job.err);
  std::istringstream said(r.job.out);
  std::string word;
  uint64_t peak = 0, free_bytes = 0, total = 0;
  said >> word >> peak >> word >> free_bytes >> word >> total;
  REQUIRE(peak == 3328 * kMiB);
  // Another process holds 8 GiB; the app held 1.75 GiB when it asked.
  CHECK(free_bytes == 40 * kGiB - 8 * kGiB - 1792 * kMiB);
  CHECK(total == 40 * kGiB);
  const json& m = r.summary["ranks"][0]["memory"];
  INFO(m.dump());
  CHECK(m["peak_bytes"] == peak);
  CHECK(m["total_bytes"] == total);
  CHECK(m["min_free_bytes"] == free_bytes);
  CHECK(m["allocations"] == 4);
  CHECK(m["frees"] == 4);  // cudaFree(nullptr) is not a free
  CHECK(m["untracked_frees"] == 0);
  CHECK(m["reserved_bytes"] == 0);
}

TEST_CASE("memory: the driver's cuMemAlloc, cuMemCreate, cuMemAllocAsync and their frees, from entry points or dlsym") {
  // "driver": through cudaGetDriverEntryPointByVersion; "dlsym": from libcuda.so.1 itself.
  const std::string how = GENERATE(std::string("driver"), std::string("dlsym"));
  INFO(how);
  JobRun r = RunJob("memory-" + how, {GPUWATCH_BIN_DIR "/gw_memory_app", how});
  INFO("app stdout:\n" << r.job.out << "\nstderr:\n" << r.job.err);
  std::istringstream said(r.job.out);
  std::string word;
  uint64_t peak = 0;
  said >> word >> peak;
  REQUIRE(peak == 1792 * kMiB);
  const json& m = r.summary["ranks"][0]["memory"];
  INFO(m.dump());
  CHECK(m["peak_bytes"] == peak);
  CHECK(m["allocations"] == 3);
  CHECK(m["frees"] == 3);
  CHECK(m["untracked_frees"] == 0);
  CHECK(m["reserved_bytes"] == 0);
}

TEST_CASE("utilization shape: sawtooth, steady low and periodic drops on the scenarios that show them") {
  const struct {
    const char* scenario;
    const char* shape;
    const char* reading;
  } kCases[] = {
      {"dataloader_bound", "sawtooth", "Compute curve: a sawtooth: the GPU waits for input"},
      {"launch_bound", "steady_low", "Compute curve: steady and low"},
      {"checkpoint_stall", "periodic_drops", "Compute curve: periodic drops: the GPU idles"},
  };
  for (const auto& c : kCases) {
    JobRun r = RunScenario(std::string("shape-") + c.scenario, c.scenario);
    INFO(c.scenario << " verdict: " << r.summary["job"]["verdict"]);
    for (const json& rank : r.summary["ranks"]) {
      INFO("rank " << rank["rank"] << " evidence " << rank["gpu"]["utilization_shape_evidence"].dump());
      CHECK(rank["gpu"]["utilization_shape"] == c.shape);
    }
    CHECK(r.summary["job"]["verdict"].get<std::string>().find(c.reading) != std::string::npos);
  }
}

namespace {

// A bundled scenario with NVML sampled at 10 Hz (the default, 1 Hz, gives a 1-2 s run
// only a few samples).
JobRun RunSampled(const std::string& work, const std::string& scenario) {
  JobRun r = RunScenario(work, scenario, {.truth = true, .env = {{"GPUWATCH_NVML_MS", "100"}}});
  INFO("driver stderr:\n" << r.job.err);
  return r;
}

bool HasFinding(const json& findings, const std::string& id) {
  for (const json& f : findings)
    if (f["id"] == id) return true;
  return false;
}

const json& TopFinding(const JobRun& r) {
  const json& f = r.summary["job"]["findings"];
  REQUIRE(f.is_array());
  REQUIRE(!f.empty());
  return f[0];
}

}  // namespace

TEST_CASE("nvml: another process on the GPU is gpu_shared, with its memory and busy share") {
  JobRun r = RunSampled("nvml-gpu-shared", "gpu_shared");
  INFO("verdict: " << r.summary["job"]["verdict"]);
  CHECK(TopFinding(r)["id"] == "gpu_shared");
  for (const json& rank : r.summary["ranks"]) {
    const json truth = r.Device(rank["rank"])["device"];
    const json& d = rank["device_state"];
    INFO("device " << d.dump().substr(0, 2000));
    REQUIRE(d.is_object());
    CHECK(d["samples"].get<int>() >= 5);
    REQUIRE(d["other_processes"].size() == truth["other_processes"].size());
    const json& other = d["other_processes"][0];
    CHECK(other["memory_bytes"] == truth["other_processes"][0]["memory_bytes"]);
    CHECK(other["busy"].get<double>() == Approx(truth["other_processes"][0]["busy"].get<double>()).margin(0.05));
    // NVML's memory in use: the other process's and this rank's own.
    CHECK(d["memory_used_max_bytes"].get<uint64_t>() >= other["memory_bytes"].get<uint64_t>());
    CHECK(d["memory_total_bytes"] == r.Device(rank["rank"])["memory"]["total_bytes"]);
    const json f = rank["findings"][0];
    CHECK(f["id"] == "gpu_shared");
    CHECK(f["evidence"]["others_busy"].get<double>() == Approx(0.5).margin(0.05));
    // The other process time-shares the SMs: each kernel takes twice as long. The finding
    // takes the other's busy share of this rank's kernel time: the extra time the kernels
    // took, within 15% (NVML's busy share is sampled).
    CHECK(truth["kernel_slowdown"].get<double>() == Approx(2.0));
    const double extra = truth["kernel_slowdown_extra_s"];
    CHECK(extra > 0);
    CHECK(f["evidence"]["time_lost_from"] == "kernel_time");
    CHECK(f["time_lost_s"].get<double>() == Approx(extra).epsilon(0.15));
  }
}

TEST_CASE("nvml: clocks held at the power cap are clocks_throttled") {
  JobRun r = RunSampled("nvml-throttled", "clocks_throttled");
  INFO("verdict: " << r.summary["job"]["verdict"]);
  CHECK(TopFinding(r)["id"] == "clocks_throttled");
  for (const json& rank : r.summary["ranks"]) {
    CHECK(r.Device(rank["rank"])["device"]["throttle"] == "power");
    const json& d = rank["device_state"];
    INFO("device " << d.dump().substr(0, 2000));
    CHECK(d["throttled_samples"]["power"].get<int>() > 0);
    CHECK(d["throttled_samples"]["thermal"] == 0);
    CHECK(d["sm_clock_busy_mhz"].get<double>() < d["sm_clock_max_mhz"].get<double>());
    const json f = rank["findings"][0];
    CHECK(f["id"] == "clocks_throttled");
    CHECK(f["evidence"]["cause"] == "power");
    CHECK(f["evidence"]["clock_share"].get<double>() == Approx(0.75).margin(0.01));
    // The simulator runs each kernel 1/0.75 times longer: the finding's time lost (busy time
    // x (1 - clock share), from NVML's busy share every 100 ms carried over to the run) is
    // that extra time, within half (0.72 of it measured on the loaded 2-core machine).
    const json truth = r.Device(rank["rank"])["device"];
    CHECK(truth["kernel_slowdown"].get<double>() == Approx(1 / 0.75));
    const double extra = truth["kernel_slowdown_extra_s"];
    CHECK(extra > 0);
    CHECK(f["time_lost_s"].get<double>() >= 0.5 * extra);
    CHECK(f["time_lost_s"].get<double>() <= 1.5 * extra);
  }
}

TEST_CASE("nvml: a scenario whose gpu object holds only throttle runs on a throttled device") {
  // The driver once passed the gpu object to the simulator only when it held a number: this
  // one ran at full clocks.
  json sc = json::parse(ReadFile(GPUWATCH_SCENARIOS_DIR "/clocks_throttled.json"));
  sc["gpu"] = {{"throttle", "power"}};
  JobRun r = RunScenario("nvml-throttle-only", sc.dump(),
                         {.truth = true, .env = {{"GPUWATCH_NVML_MS", "100"}}});
  INFO("driver stderr:\n" << r.job.err << "\nverdict: " << r.summary["job"]["verdict"]);
  for (const json& rank : r.summary["ranks"]) {
    CHECK(r.Device(rank["rank"])["device"]["throttle"] == "power");
    CHECK(rank["device_state"]["throttled_samples"]["power"].get<int>() > 0);
  }
  CHECK(HasFinding(r.summary["job"]["findings"], "clocks_throttled"));
  CHECK(r.SummaryText().find("GPU clocks held back") != std::string::npos);
}

TEST_CASE("nvml: a PCIe link below gen 5 x16 is pcie_link, its time lost the copies' extra time") {
  JobRun r = RunSampled("nvml-pcie", "pcie_link");
  INFO("verdict: " << r.summary["job"]["verdict"]);
  CHECK(TopFinding(r)["id"] == "pcie_link");
  const json& rank = r.summary["ranks"][0];
  const json truth = r.Device(0);
  const json& pcie = rank["device_state"]["pcie"];
  CHECK(pcie["gen"] == truth["device"]["pcie_gen"]);
  CHECK(pcie["width"] == truth["device"]["pcie_width"]);
  CHECK(pcie["gen_max"] == 5);
  CHECK(pcie["width_max"] == 16);
  CHECK(pcie["link_share"].get<double>() == Approx(0.985 * 8 / (3.938 * 16)));
  // Gen 3 x8 makes each copy 1/share times longer; the time lost is the part beyond gen 5 x16.
  const double copies_s = truth["kinds"]["h2d"]["device_s"];
  const json f = rank["findings"][0];
  REQUIRE(f["id"] == "pcie_link");
  CHECK(f["time_lost_s"].get<double>() ==
        Approx(copies_s * (1 - pcie["link_share"].get<double>())).epsilon(0.05));
}

TEST_CASE("nvml: collectives far below the NVLink joining the ranks are link_bandwidth") {
  JobRun r = RunSampled("nvml-link", "link_bandwidth");
  INFO("verdict: " << r.summary["job"]["verdict"]);
  CHECK(TopFinding(r)["id"] == "link_bandwidth");
  const double busbw = r.scenario["gpu"]["busbw_gbps"];
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json truth = r.Device(k);
    CHECK(truth["device"]["nvlink_links"] == 18);
    const json& nv = rank["device_state"]["nvlink"];
    INFO("nvlink " << nv.dump());
    REQUIRE(nv.is_object());
    // The simulated driver answers NVLink 5.0 on its Hopper device: the sampler corrects it.
    CHECK(nv["version"] == truth["device"]["nvlink_version"]);
    CHECK(nv["version"] == "4.0");
    CHECK(nv["links"] == 18);
    CHECK(nv["links_up"] == truth["device"]["nvlink_links"]);
    CHECK(nv["peak_gbps"].get<double>() == Approx(18 * 25.0));  // NVLink 4.0: 25 GB/s each way per link
    // NVML's NVLink data counters advance by the bus bytes the simulated collectives moved
    // (sent and received, spread over their device time): their bytes over the run, the
    // sampled rates times the time they cover, match the truth's.
    REQUIRE(nv["tx_bytes"].is_number());
    CHECK(truth["device"]["nvlink_tx_bytes"].get<double>() > 0);
    CHECK(nv["tx_bytes"].get<double>() == Approx(truth["device"]["nvlink_tx_bytes"].get<double>()).epsilon(0.05));
    CHECK(nv["rx_bytes"].get<double>() == Approx(truth["device"]["nvlink_rx_bytes"].get<double>()).epsilon(0.05));
    // No sampled interval moves data faster than the collectives do (busbw_gbps).
    CHECK(nv["tx_gbps_mean"].get<double>() > 0);
    CHECK(nv["tx_gbps_peak"].get<double>() >= nv["tx_gbps_mean"].get<double>());
    CHECK(nv["tx_gbps_peak"].get<double>() <= busbw * 1.01);
    const json f = rank["findings"][0];
    INFO("finding " << f.dump());
    REQUIRE(f["id"] == "link_bandwidth");
    const json& e = f["evidence"];
    CHECK(e["link"] == "nvlink");
    CHECK(e["link_peak_gbps"] == nv["peak_gbps"]);
    CHECK(e["peak_source"] == "nvml");
    CHECK(e["nvlink_tx_gbps_mean"] == nv["tx_gbps_mean"]);  // what crossed the link, quoted
    // The simulator's all-reduces take latency + S / busbw after the last arrival, and more
    // when the other rank is late: the measured bus bandwidth is at most the configured one.
    CHECK(e["busbw_gbps"].get<double>() <= busbw * 1.01);
    CHECK(e["busbw_gbps"].get<double>() >= busbw * 0.5);
    // Time lost: the all-reduces' device time (the truth's) beyond, for each, the latency
    // floor (no small collective measured one) plus its 64 MiB of bus bytes (2 ranks: S) at
    // 70% of 450 GB/s, times the exposed share (they are waited for at once: nearly all).
    const double calls = truth["kinds"]["allreduce"]["count"];
    const double ideal_s = calls * (20e-6 + 67108864.0 / (0.7 * 450e9));
    const double device_s = truth["kinds"]["allreduce"]["device_s"];
    CHECK(e["large_collectives"] == calls);
    CHECK(e["latency_per_call_us"].get<double>() == Approx(20));
    CHECK(e["at_expected_share_s"].get<double>() == Approx(ideal_s).epsilon(0.001));
    CHECK(e["exposed_share"].get<double>() > 0.9);
    CHECK(f["time_lost_s"].get<double>() ==
          Approx((device_s - ideal_s) * e["exposed_share"].get<double>()).epsilon(0.05));
    // The exposed communication it explains is taken out of `communication`.
    for (const json& g : rank["findings"])
      if (g["id"] == "communication")
        CHECK(g["evidence"]["explained_by_other_findings_s"].get<double>() >= f["time_lost_s"].get<double>() * 0.99);
  }
}

// A bundled scenario's JSON with the device given `links` NVLink links up.
std::string WithNvLink(const std::string& name, int links) {
  std::ifstream in(std::string(GPUWATCH_SCENARIOS_DIR) + "/" + name + ".json");
  json scn = json::parse(in);
  scn["gpu"]["nvlink_links"] = links;
  return scn.dump();
}

TEST_CASE("nvml: collectives near a healthy NVLink, or waiting for a straggler, are not link_bandwidth") {
  // 4 links: 100 GB/s each way; the simulated all-reduces reach 80 GB/s.
  JobRun healthy = RunScenario("nvml-link-healthy", WithNvLink("healthy", 4), {.env = {{"GPUWATCH_NVML_MS", "100"}}});
  INFO("driver stderr:\n" << healthy.job.err);
  for (const json& rank : healthy.summary["ranks"]) {
    CHECK(rank["device_state"]["nvlink"]["peak_gbps"].get<double>() == Approx(100));
    CHECK_FALSE(HasFinding(rank["findings"], "link_bandwidth"));
  }
  CHECK_FALSE(HasFinding(healthy.summary["job"]["findings"], "link_bandwidth"));
  // Ranks 0 and 1 wait for rank 2 inside every all-reduce: their collectives look slow, but
  // the job's straggler takes their wait out of link_bandwidth (and communication), in each
  // rank's findings too.
  JobRun straggler = RunScenario("nvml-link-straggler", WithNvLink("straggler", 4), {.env = {{"GPUWATCH_NVML_MS", "100"}}});
  INFO("verdict: " << straggler.summary["job"]["verdict"]);
  CHECK(TopFinding(straggler)["id"] == "straggler");
  for (const json& rank : straggler.summary["ranks"]) {
    CHECK_FALSE(HasFinding(rank["findings"], "link_bandwidth"));
    if (rank["rank"] != 2) CHECK(HasFinding(rank["findings"], "straggler"));
  }
  CHECK_FALSE(HasFinding(straggler.summary["job"]["findings"], "link_bandwidth"));
}

TEST_CASE("nvml: the healthy scenario raises none of the device findings") {
  JobRun r = RunSampled("nvml-healthy", "healthy");
  for (const char* id : {"gpu_shared", "clocks_throttled", "pcie_link", "link_bandwidth"}) {
    INFO(id);
    CHECK_FALSE(HasFinding(r.summary["job"]["findings"], id));
    for (const json& rank : r.summary["ranks"]) CHECK_FALSE(HasFinding(rank["findings"], id));
  }
  for (const json& rank : r.summary["ranks"]) {
    const json& d = rank["device_state"];
    REQUIRE(d.is_object());
    CHECK(d["samples"].get<int>() >= 5);
    CHECK(d["other_processes"].empty());
    CHECK(d["pcie"]["link_share"] == 1.0);
    CHECK(d["nvlink"].is_null());  // no NVLink on the simulator's default device
    CHECK(d["utilization"].get<double>() > 0.5);
  }
  // Nor an NVLink track in the trace: a counter track is described at its first value.
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(ReadFile(r.out + "/trace.perfetto-trace"), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE_FALSE(rep.processes.empty());
  for (const auto& [name, counts] : rep.processes) {
    INFO(name);
    CHECK(counts.counter_tracks.count("NVML SM clock MHz") == 1);
    CHECK(counts.counter_tracks.count("NVML NVLink TX MB/s") == 0);
    CHECK(counts.counter_tracks.count("NVML NVLink RX MB/s") == 0);
  }
}
