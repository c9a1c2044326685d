// The host-side findings (issue 6) on synthetic batches: `input_io` from process samples
// during the GPU's host-wait gaps, and `environment` from the library's Environment message.
#include <catch2/catch.hpp>

#include "findings_lookup.h"
#include "analyze/environment.h"
#include "analyze/findings.h"
#include "analyze/verdict.h"
#include "analyze/job_result.h"
#include "analyze/input_io.h"
#include "analyze/rank_model.h"
#include "report/figures_json.h"
#include "step_loop.h"

namespace wire = gpuwatch::wire;
namespace dg = gpuwatch::collector;

namespace {

using namespace gpuwatch::collector::test_loop;
constexpr uint64_t kT0 = 1000 * kMs;

// Process samples every 10 ms over [kT0, end]: `cores` of CPU and `mbps` of reads all along.
wire::Batch Samples(uint64_t end, double cores, double mbps, uint32_t procs = 3) {
  wire::Batch b;
  for (uint64_t t = kT0, i = 0; t <= end + 10 * kMs; t += 10 * kMs, ++i) {
    auto* s = b.add_proc_samples();
    s->set_t_ns(t);
    s->set_cpu_ns(static_cast<uint64_t>(cores * (t - kT0)));
    s->set_read_chars(static_cast<uint64_t>(mbps * 1e6 * (t - kT0) * 1e-9));
    s->set_processes(procs);
  }
  return b;
}

dg::RankResult Run(double cores, double mbps, bool samples_first) {
  dg::RankModel c;
  wire::Hello h;
  h.set_rank(0);
  c.OnHello(h);
  uint64_t end = 0;
  const wire::Batch loop = Loop(20, 40, 10, kT0, &end);
  const wire::Batch samples = Samples(end, cores, mbps);
  if (samples_first) c.OnBatch(samples);
  c.OnBatch(loop);
  if (!samples_first) c.OnBatch(samples);
  return c.Result();
}

using gpuwatch::collector::test::Find;

}  // namespace

TEST_CASE("collector: input_io says CPU-bound, waiting on reads, or neither") {
  struct Case {
    double cores, mbps;
    const char* verdict;
  };
  for (const Case& k : {Case{1.0, 0.0, "cpu_bound"}, Case{0.05, 100.0, "io_wait"}, Case{0.05, 0.0, "other"}}) {
    for (bool samples_first : {true, false}) {
      INFO(k.verdict << (samples_first ? ", samples first" : ", gaps first"));
      const dg::RankResult d = Run(k.cores, k.mbps, samples_first);
      const auto f = dg::RankFindings(d);
      REQUIRE(f.size() >= 2);
      CHECK(f[0].id == "data_loading");
      REQUIRE(f[1].id == "input_io");
      CHECK(f[1].time_lost_s == f[0].time_lost_s);
      CHECK(f[1].evidence["verdict"] == k.verdict);
      CHECK(f[1].evidence["cpu_cores_busy_in_gaps"].get<double>() == Approx(k.cores).epsilon(0.02));
      CHECK(f[1].evidence["read_mbps_in_gaps"].get<double>() == Approx(k.mbps).margin(0.5));
      CHECK(f[1].evidence["processes"] == 3);
      // Every host-wait gap (19 x 40 ms: the first step has no work before it) is sampled.
      CHECK(f[1].evidence["gaps_sampled_s"].get<double>() == Approx(d.gpu.run.idle[dg::kIdleHost] * 1e-9).epsilon(0.01));
      const std::string v = dg::Verdict(std::vector<dg::RankResult>{d}, f);
      INFO(v);
      CHECK(v.find("data loading (" + f[1].title + ")") != std::string::npos);
      CHECK(v.find(f[1].fix) != std::string::npos);
    }
  }
}

TEST_CASE("collector: no input_io without process samples") {
  dg::RankModel c;
  uint64_t end = 0;
  c.OnBatch(Loop(20, 40, 10, kT0, &end));
  const auto f = dg::RankFindings(c.Result());
  REQUIRE(!f.empty());
  CHECK(f[0].id == "data_loading");
  CHECK(Find(f, "input_io") == nullptr);
}

TEST_CASE("collector: InputIo shares a sample's increase by overlap, once, either order") {
  auto sample = [](uint64_t t, uint64_t cpu, uint64_t rchar) {
    wire::ProcSample s;
    s.set_t_ns(t);
    s.set_cpu_ns(cpu);
    s.set_read_chars(rchar);
    s.set_processes(1);
    return s;
  };
  // Intervals (0,100] and (100,200] ms with 50 ms and 100 ms of CPU; a gap [80, 130).
  dg::InputIo a, b;
  a.OnProcSample(sample(0, 0, 0));
  a.OnProcSample(sample(100 * kMs, 50 * kMs, 1000));
  a.OnGap(80 * kMs, 130 * kMs);
  a.OnProcSample(sample(200 * kMs, 150 * kMs, 1000));
  b.OnGap(80 * kMs, 130 * kMs);
  b.OnProcSample(sample(0, 0, 0));
  b.OnProcSample(sample(100 * kMs, 50 * kMs, 1000));
  b.OnProcSample(sample(200 * kMs, 150 * kMs, 1000));
  for (const dg::InputIo* io : {&a, &b}) {
    const auto& f = io->figures();
    CHECK(f.gap_s == Approx(0.050));
    CHECK(f.cpu_s == Approx(0.2 * 0.050 + 0.3 * 0.100));  // 20 ms of the first, 30 of the second
    CHECK(f.read_chars == Approx(200));
    CHECK(f.intervals == 2);
  }
  // A counter that goes down (a process left the tree) adds nothing.
  dg::InputIo c;
  c.OnProcSample(sample(0, 500, 0));
  c.OnProcSample(sample(100 * kMs, 100, 0));
  c.OnGap(0, 100 * kMs);
  CHECK(c.figures().cpu_s == 0);
}

TEST_CASE("collector: environment names settings that disable fast paths, after measured losses") {
  dg::RankModel c;
  uint64_t end = 0;
  c.OnBatch(Loop(20, 40, 10, kT0, &end));
  wire::Batch b;
  auto* e = b.mutable_environment();
  e->set_cuda_runtime_version(13000);
  e->set_cuda_driver_version(13010);
  e->set_nccl_version(21704);
  auto* v = e->add_settings();
  v->set_name("NCCL_P2P_DISABLE");
  v->set_value("1");
  v = e->add_settings();
  v->set_name("NCCL_SOCKET_IFNAME");
  v->set_value("eth0");
  c.OnBatch(b);
  dg::RankResult d = c.Result();
  CHECK(d.env.nccl == 21704);
  const nlohmann::json j = dg::EnvJson(d.env);
  CHECK(j["nccl"] == "2.17.4");
  CHECK(j["cuda_runtime"] == "13.0");
  CHECK(j["cuda_driver"] == "13.1");
  CHECK(j["settings"]["NCCL_SOCKET_IFNAME"] == "eth0");

  // No collectives: the NCCL settings cost nothing here, so low.
  auto f = dg::RankFindings(d);
  REQUIRE(f.size() >= 2);
  CHECK(f[0].id == "data_loading");
  CHECK(f.back().id == "environment");
  CHECK(f.back().severity == "low");
  CHECK(f.back().time_lost_s == 0);
  const auto& issues = f.back().evidence["issues"];
  REQUIRE(issues.size() == 2);  // P2P disabled, old NCCL; the interface name is no issue
  CHECK(issues[0]["setting"] == "NCCL_P2P_DISABLE=1");
  CHECK(issues[1]["setting"] == "NCCL 2.17.4");

  // With collectives it is medium, still listed last, and the verdict mentions it without
  // calling it the biggest loss.
  d.collectives.ops[0].count = 10;
  f = dg::RankFindings(d);
  d.findings = f;
  CHECK(f.back().id == "environment");
  CHECK(f.back().severity == "medium");
  const std::string verdict = dg::Verdict(std::vector<dg::RankResult>{d}, f);
  INFO(verdict);
  CHECK(verdict.find("Biggest loss: data loading") != std::string::npos);
  CHECK(verdict.find("Also: NCCL_P2P_DISABLE=1") != std::string::npos);
  const auto job = dg::JobFindings(std::vector<dg::RankResult>{d, d});
  CHECK(job.back().id == "environment");
  CHECK(job.back().severity == "medium");
  CHECK(job.back().title == "environment settings");
}

TEST_CASE("collector: environment versions and settings decode") {
  CHECK(dg::NcclVersionText(22800) == "2.28.0");
  CHECK(dg::NcclVersionText(2708) == "2.7.8");
  CHECK(dg::CudaVersionText(12040) == "12.4");
  dg::EnvFacts e;
  e.known = true;
  e.cuda_runtime = 11080;
  e.settings = {{"CUDA_LAUNCH_BLOCKING", "1"}, {"NCCL_NET", "Socket"}, {"NCCL_IB_DISABLE", "0"},
                {"NCCL_P2P_LEVEL", "NVL"}, {"NCCL_PROTO", "Simple"}};
  const auto issues = dg::EnvIssues(e);
  REQUIRE(issues.size() == 4);  // NCCL_IB_DISABLE=0 and P2P_LEVEL=NVL are fine
  CHECK(issues[0].what == "CUDA_LAUNCH_BLOCKING=1");
  CHECK(issues[0].severity == "high");
  CHECK(issues[1].what == "NCCL_NET=Socket");
  CHECK(issues[2].what == "NCCL_PROTO=Simple");
  CHECK(issues[3].what == "CUDA runtime 11.8");
  CHECK(dg::EnvJson(dg::EnvFacts{}).is_null());
}
