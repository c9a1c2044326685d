// The device's state in every view (issue 17): a rank's allocations and NVML samples, fed
// through the collector's own Connection, give the same memory and device figures in
// summary.json, summary.txt, report.html, Prometheus and the trace; and the device findings
// (gpu_shared, clocks_throttled, pcie_link) read them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/format.h"
#include "fixtures.h"
#include "jobs/live_snapshot.h"
#include "live/prometheus.h"
#include "test_trace_validator.h"

using namespace gwtest;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMs = 1'000'000, kGiB = 1ull << 30;

wire::Event* Memory(wire::Batch* b, wire::Api api, uint64_t t, uint64_t address, uint64_t bytes = 0) {
  wire::Event* e = Add(b, api, t, 10'000);
  e->set_address(address);
  e->set_bytes(bytes);
  return e;
}

// 11 samples 100 ms apart: busy 90%, SM clock at 75% of 2000 MHz by the power cap, a gen 4
// x8 link of a gen 5 x16 device, another process (pid 77) with 10 GiB 40% busy; 18 NVLink 4.0
// links up whose counters gave, from the second sample on, i GB/s sent and 0.5 GB/s received.
void Samples(wire::Batch* b, uint64_t t0, uint32_t own_pid) {
  for (int i = 0; i <= 10; ++i) {
    wire::DeviceSample* s = b->add_device_samples();
    s->set_t_ns(t0 + i * 100 * kMs);
    s->set_gpu_util_pct(90);
    s->set_memory_used_bytes(13 * kGiB);
    s->set_memory_total_bytes(80 * kGiB);
    s->set_sm_clock_mhz(1500);
    s->set_sm_clock_max_mhz(2000);
    s->set_power_mw(700'000);
    s->set_power_limit_mw(700'000);
    s->set_temperature_c(70 + i);
    s->set_throttle_reasons(0x4);
    s->set_pcie_gen(4);
    s->set_pcie_gen_max(5);
    s->set_pcie_width(8);
    s->set_pcie_width_max(16);
    s->set_nvlink_links(18);
    s->set_nvlink_links_up(18);
    s->set_nvlink_version(6);
    if (i > 0) {
      s->set_nvlink_tx_bytes_per_s(i * 1'000'000'000ull);
      s->set_nvlink_rx_bytes_per_s(500'000'000);
      s->set_nvlink_rate_links(18);
    }
    wire::DeviceProcess* own = s->add_processes();
    own->set_pid(own_pid);
    own->set_memory_bytes(3 * kGiB);
    own->set_sm_util_pct(50);
    wire::DeviceProcess* other = s->add_processes();
    other->set_pid(77);
    other->set_memory_bytes(10 * kGiB);
    other->set_sm_util_pct(40);
  }
}

double Metric(const std::string& text, const std::string& family) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(family + "{", 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  FAIL("no " << family);
  return 0;
}

}  // namespace

TEST_CASE("collector: memory and device state in every view, and the device findings") {
  const fs::path dir = fs::temp_directory_path() / ("gw-device-views-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace_path = (dir / "trace.perfetto-trace").string();
  col::JobTable jobs(col::JobTiming{});
  jobs.set_trace_factory([&](const wire::Hello&) {
    std::string error;
    return col::JobTrace::Open(trace_path, col::TraceOptions{}, &error);
  });
  const uint64_t t0 = 1000 * kMs;
  {
    const wire::Frame hello = Hello("device", 0, 1);
    FakeRank r(jobs, hello);
    wire::Batch b;
    Memory(&b, wire::CUDA_MALLOC, t0, 0x1000, 2 * kGiB);
    Memory(&b, wire::CUDA_MALLOC_ASYNC, t0 + 100 * kMs, 0x2000, kGiB);
    Memory(&b, wire::CUDA_FREE_ASYNC, t0 + 200 * kMs, 0x2000);
    Memory(&b, wire::CUDA_MALLOC, t0 + 300 * kMs, 0x3000, 512ull << 20);
    Memory(&b, wire::CUDA_MEM_GET_INFO, t0 + 400 * kMs, 0, 60 * kGiB)->set_total_bytes(80 * kGiB);
    // A second of H2D copies through the 1/4 link (no CUPTI: the calls' time counts).
    for (int i = 0; i < 10; ++i)
      Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 64 << 20, t0 + i * 100 * kMs, 80 * kMs, wire::FLAG_BLOCKED_HOST);
    Samples(&b, t0, hello.hello().pid());
    b.set_settled_ns(t0 + 2000 * kMs);
    REQUIRE(r.SendBatch(b));
    r.Goodbye();
    r.Close();
  }
  const col::Job& job = *jobs.Find("device");
  const std::string metrics = col::FormatPrometheus(col::TakeSnapshot(jobs, col::Clock::now()));
  const col::RenderedSummary rs = col::SummarizeJob(job);
  const json doc = json::parse(rs.json);
  const json& rank = doc["ranks"][0];

  // summary.json: memory.
  const json& m = rank["memory"];
  INFO(m.dump());
  CHECK(m["peak_bytes"] == 3 * kGiB);
  CHECK(m["total_bytes"] == 80 * kGiB);
  CHECK(m["headroom_bytes"] == 77 * kGiB);
  CHECK(m["reserved_bytes"] == 2 * kGiB + (512ull << 20));
  CHECK(m["min_free_bytes"] == 60 * kGiB);
  CHECK(m["allocations"] == 3);
  CHECK(m["frees"] == 1);
  // summary.json: the device.
  const json& d = rank["device_state"];
  INFO(d.dump().substr(0, 1500));
  CHECK(d["samples"] == 11);
  CHECK(d["sampled_s"].get<double>() == Approx(1.0));
  CHECK(d["utilization"].get<double>() == Approx(0.9));
  CHECK(d["sm_clock_busy_mhz"].get<double>() == Approx(1500));
  CHECK(d["throttled_share"].get<double>() == Approx(1.0));
  CHECK(d["throttled_samples"]["power"] == 11);
  CHECK(d["temperature_max_c"] == 80);
  CHECK(d["pcie"]["link_share"].get<double>() == Approx(1.969 * 8 / (3.938 * 16)));
  // NVLink: 100 ms at each of 1..10 GB/s sent, 0.5 GB/s received.
  const json& nv = d["nvlink"];
  CHECK(nv["tx_bytes"].get<double>() == Approx(5.5e9));
  CHECK(nv["rx_bytes"].get<double>() == Approx(0.5e9));
  CHECK(nv["rate_s"].get<double>() == Approx(1.0));
  CHECK(nv["tx_gbps_mean"].get<double>() == Approx(5.5));
  CHECK(nv["tx_gbps_peak"].get<double>() == Approx(10));
  CHECK(nv["rx_gbps_mean"].get<double>() == Approx(0.5));
  CHECK(nv["rx_gbps_peak"].get<double>() == Approx(0.5));
  REQUIRE(d["other_processes"].size() == 1);  // the rank's own process is not "other"
  CHECK(d["other_processes"][0]["pid"] == 77);
  CHECK(d["other_processes"][0]["memory_bytes"] == 10 * kGiB);
  CHECK(d["other_processes"][0]["busy"].get<double>() == Approx(0.4));

  // The findings read the same figures.
  auto finding = [&](const std::string& id) {
    for (const json& f : rank["findings"])
      if (f["id"] == id) return f;
    FAIL("no finding " << id);
    return json();
  };
  const json shared = finding("gpu_shared");
  CHECK(shared["evidence"]["others_busy"].get<double>() == Approx(0.4));
  CHECK(shared["evidence"]["others_memory_bytes"] == 10 * kGiB);
  const json throttled = finding("clocks_throttled");
  CHECK(throttled["evidence"]["cause"] == "power");
  CHECK(throttled["evidence"]["clock_share"].get<double>() == Approx(0.75));
  const json pcie = finding("pcie_link");
  CHECK(pcie["evidence"]["copies_s"].get<double>() == Approx(0.8));
  CHECK(pcie["time_lost_s"].get<double>() == Approx(0.8 * (1 - d["pcie"]["link_share"].get<double>())));

  // summary.txt, report.html, Prometheus, the trace.
  CHECK(rs.text.find("memory: peak " + col::FmtBytes(3 * kGiB) + " of " + col::FmtBytes(80 * kGiB)) != std::string::npos);
  CHECK(rs.text.find("device (NVML, 11 samples): utilization 90%") != std::string::npos);
  CHECK(rs.text.find("PCIe gen 4 x8 of gen 5 x16") != std::string::npos);
  CHECK(rs.text.find("NVLink traffic: TX 5.5 GB/s mean (10.0 peak), RX 0.5 GB/s mean (0.5 peak)") != std::string::npos);
  CHECK(rs.text.find("other process 77: " + col::FmtBytes(10 * kGiB) + ", 40% busy") != std::string::npos);
  CHECK(rs.html.find("<section id=\"memory\">") != std::string::npos);
  CHECK(rs.html.find("<section id=\"device\">") != std::string::npos);
  CHECK(rs.html.find("1500 / 2000 MHz") != std::string::npos);
  CHECK(rs.html.find("gen 4 x8 of 5 x16") != std::string::npos);
  CHECK(rs.html.find("18 of 18 up (450 GB/s), TX 5.5 / RX 0.5 GB/s mean") != std::string::npos);
  CHECK(Metric(metrics, "gpuwatch_memory_peak_bytes") == Approx(3.0 * kGiB));
  CHECK(Metric(metrics, "gpuwatch_device_sm_clock_mhz") == Approx(1500));
  CHECK(Metric(metrics, "gpuwatch_device_temperature_celsius") == Approx(80));
  auto nvlink_bytes = [&](const std::string& direction) {
    std::istringstream in(metrics);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("gpuwatch_device_nvlink_bytes_total{", 0) == 0 && line.find(direction) != std::string::npos)
        return std::stod(line.substr(line.rfind(' ') + 1));
    return -1.0;
  };
  CHECK(nvlink_bytes("direction=\"tx\"") == Approx(5.5e9));
  CHECK(nvlink_bytes("direction=\"rx\"") == Approx(0.5e9));
  CHECK(Metric(metrics, "gpuwatch_device_pcie_link_ratio") == Approx(d["pcie"]["link_share"].get<double>()));
  std::ifstream in(trace_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(ss.str(), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  REQUIRE(c.counter_samples.count("NVML SM clock MHz"));
  CHECK(c.counter_samples.at("NVML SM clock MHz").front().second == 1500);
  CHECK(c.counter_samples.at("NVML temperature C").back().second == 80);
  // NVLink from the second sample (the first has no rate), in MB/s.
  REQUIRE(c.counter_samples.count("NVML NVLink TX MB/s"));
  CHECK(c.counter_samples.at("NVML NVLink TX MB/s").front().second == 1000);
  CHECK(c.counter_samples.at("NVML NVLink TX MB/s").back().second == 10000);
  CHECK(c.counter_samples.at("NVML NVLink RX MB/s").back().second == 500);
  // The memory the allocations held, at each allocation and free: 2 GiB, 3 GiB, 2 GiB, 2.5 GiB.
  REQUIRE(c.counter_samples.count("memory reserved MiB"));
  const auto& mem = c.counter_samples.at("memory reserved MiB");
  REQUIRE(mem.size() == 4);
  CHECK(mem[1].second == 3072);
  CHECK(mem.back().second == 2560);
  fs::remove_all(dir);
}
