// Every view of one rank shows the same figures: the idle breakdown (one classification),
// GPU busy time and the per-step figures, in summary.json, summary.txt, report.html,
// Prometheus /metrics and the Perfetto trace, all read from the rank's one RankResult.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/format.h"
#include "fixtures.h"
#include "jobs/live_snapshot.h"
#include "live/prometheus.h"
#include "step_loop.h"
#include "test_trace_validator.h"

using namespace gwtest;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using gpuwatch::collector::test_loop::kMs;
using gpuwatch::collector::test_loop::kUs;
const char* const kKinds[] = {"host_wait", "launch_wait", "sync_wait", "other"};

void Api(wire::Batch& b, uint32_t corr, uint64_t t, uint64_t dur) { Work(&b, wire::ACTIVITY_API, t, t + dur, corr); }
void Kernel(wire::Batch& b, uint32_t corr, uint64_t start, uint64_t end) {
  Work(&b, wire::ACTIVITY_KERNEL, start, end, corr)->set_name_id(2);
}

// 30 NVTX steps of 3 ms, each with one gap of every kind: host work before the first
// kernel (host_wait), a launch that overlaps the GPU going idle (launch_wait), a sync the
// host sits in (sync_wait), work launched early that starts late (other).
wire::Batch Steps(uint64_t t0) {
  wire::Batch b;
  gpuwatch::collector::test_loop::StepNames(b);
  uint32_t corr = 0;
  for (uint64_t s = 0, t = t0; s < 30; ++s, t += 3 * kMs) {
    const uint64_t w = t + 1 * kMs;  // host work first
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w, 10 * kUs)->set_name_id(2);
    Api(b, ++corr, w, 10 * kUs);
    Kernel(b, corr, w + 10 * kUs, w + 600 * kUs);
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w + 590 * kUs, 40 * kUs)->set_name_id(2);
    Api(b, ++corr, w + 590 * kUs, 40 * kUs);
    Kernel(b, corr, w + 640 * kUs, w + 1000 * kUs);  // launch_wait 40 us
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w + 20 * kUs, 5 * kUs)->set_name_id(2);
    Api(b, ++corr, w + 20 * kUs, 5 * kUs);
    Kernel(b, corr, w + 1300 * kUs, w + 1400 * kUs);  // sync_wait 300 us (below)
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, w + 1000 * kUs, 300 * kUs);
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w + 30 * kUs, 5 * kUs)->set_name_id(2);
    Api(b, ++corr, w + 30 * kUs, 5 * kUs);
    Kernel(b, corr, w + 1600 * kUs, w + 1900 * kUs);  // other 200 us
    Add(&b, wire::NVTX_RANGE, t, 3 * kMs)->set_name_id(1);
  }
  b.set_settled_ns(t0 + 100 * kMs);
  return b;
}

// The value of the one sample of `family` whose labels contain `label`.
double Metric(const std::string& text, const std::string& family, const std::string& label) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(family + "{", 0) == 0 && line.find(label) != std::string::npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  FAIL("no " << family << " sample with " << label);
  return 0;
}

// report.html's data-value of the cell or bar with these attributes.
double HtmlValue(const std::string& html, const std::string& attrs) {
  const size_t at = html.find(attrs);
  REQUIRE(at != std::string::npos);
  const size_t v = html.find("data-value=\"", at);
  REQUIRE(v != std::string::npos);
  return std::stod(html.substr(v + 12));
}

}  // namespace

TEST_CASE("collector: every view shows the same idle, busy and per-step figures") {
  const fs::path dir = fs::temp_directory_path() / ("gw-views-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace_path = (dir / "trace.perfetto-trace").string();
  col::JobTable jobs(col::JobTiming{});
  jobs.set_trace_factory([&](const wire::Hello&) {
    std::string error;
    return col::JobTrace::Open(trace_path, col::TraceOptions{}, &error);
  });
  {
    FakeRank r(jobs, Hello("views", 0, 1));
    REQUIRE(r.SendBatch(Steps(1000 * kMs)));
    r.Goodbye();
    r.Close();
  }
  const col::Job& job = *jobs.Find("views");
  const std::string metrics = col::FormatPrometheus(col::TakeSnapshot(jobs, col::Clock::now()));
  const col::RenderedSummary rs = col::SummarizeJob(job);
  const json doc = json::parse(rs.json);
  const json& rank = doc["ranks"][0];
  const json& gpu = rank["gpu"];
  const json& per = rank["steps"]["per_step_ms"];

  // The figures themselves, as designed: 30 steps, one gap of each kind per step.
  REQUIRE(rank["steps"]["count"] == 30);
  CHECK(gpu["idle_breakdown_s"]["launch_wait"].get<double>() == Approx(30 * 40e-6));
  CHECK(gpu["idle_breakdown_s"]["sync_wait"].get<double>() == Approx(30 * 300e-6));
  CHECK(gpu["idle_breakdown_s"]["other"].get<double>() == Approx(30 * 200e-6));
  CHECK(gpu["idle_breakdown_s"]["host_wait"].get<double>() == Approx(29 * 1.11e-3));  // between steps
  CHECK(gpu["busy_s"].get<double>() == Approx(30 * 1.35e-3));

  // summary.txt: the same numbers, formatted.
  CHECK(rs.text.find("busy " + col::FmtDuration(gpu["busy_s"].get<double>()) + " of") != std::string::npos);
  for (const char* k : kKinds) {
    INFO(k);
    CHECK(rs.text.find(col::FmtDuration(gpu["idle_breakdown_s"][k].get<double>())) != std::string::npos);
  }
  CHECK(rs.text.find("GPU idle: host_wait " + col::FmtDuration(per["gpu_idle_waiting_for_host"].get<double>() * 1e-3)) !=
        std::string::npos);
  CHECK(rs.text.find("compute " + col::FmtDuration(per["gpu_compute"].get<double>() * 1e-3)) != std::string::npos);

  // report.html: the idle table and the per-step bars.
  CHECK(HtmlValue(rs.html, "data-rank=\"0\" data-gpu=\"busy_s\"") == Approx(gpu["busy_s"].get<double>()));
  for (const char* k : kKinds) {
    INFO(k);
    CHECK(HtmlValue(rs.html, std::string("data-rank=\"0\" data-gpu=\"") + k + "\"") ==
          Approx(gpu["idle_breakdown_s"][k].get<double>()));
  }
  for (const auto& [part, v] : per.items()) {
    INFO(part);
    CHECK(HtmlValue(rs.html, "data-chart=\"steps\" data-rank=\"0\" data-part=\"" + part + "\"") ==
          Approx(v.get<double>()).epsilon(1e-5));
  }

  // Prometheus.
  CHECK(Metric(metrics, "gpuwatch_gpu_busy_seconds_total", "rank=\"0\"") == Approx(gpu["busy_s"].get<double>()));
  for (const char* k : kKinds) {
    INFO(k);
    CHECK(Metric(metrics, "gpuwatch_gpu_idle_seconds_total", std::string("kind=\"") + k + "\"") ==
          Approx(gpu["idle_breakdown_s"][k].get<double>()));
  }
  for (const auto& [part, v] : per.items()) {
    INFO(part);
    CHECK(Metric(metrics, "gpuwatch_step_part_seconds", "part=\"" + part + "\"") == Approx(v.get<double>() * 1e-3));
  }
  CHECK(Metric(metrics, "gpuwatch_step_seconds", "rank=\"0\"") == Approx(rank["steps"]["mean_ms"].get<double>() * 1e-3));

  // The trace: idle slices by kind, the busy counter, the steps' figures.
  std::ifstream in(trace_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(ss.str(), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  for (const char* k : kKinds) {
    INFO(k);
    const auto it = c.idle_ns.find(std::string("idle: ") + k);
    const double trace_s = it == c.idle_ns.end() ? 0.0 : it->second * 1e-9;
    CHECK(trace_s == Approx(gpu["idle_breakdown_s"][k].get<double>()));
  }
  // The counter is in whole percent of 10 ms windows: within half a percent of each.
  const auto& busy = c.counter_samples.at("GPU busy % (10 ms)");
  double busy_s = 0;
  for (size_t i = 0; i < busy.size(); ++i) {
    const uint64_t until = i + 1 < busy.size() ? busy[i + 1].first : busy[i].first + 10 * kMs;
    busy_s += busy[i].second / 100 * (until - busy[i].first) * 1e-9;
  }
  const double windows = (gpu["active_s"].get<double>() / 0.01) + 2;
  CHECK(std::abs(busy_s - gpu["busy_s"].get<double>()) <= windows * 0.005 * 0.01);
  REQUIRE(c.steps == 30);
  const std::pair<const char*, const char*> parts[] = {
      {"gpu_compute_ms", "gpu_compute"},
      {"comm_not_overlapped_ms", "comm_not_overlapped"},
      {"idle_host_wait_ms", "gpu_idle_waiting_for_host"},
      {"idle_launch_wait_ms", "gpu_idle_waiting_for_launches"},
      {"idle_sync_wait_ms", "gpu_idle_in_syncs"},
      {"idle_other_ms", "gpu_idle_other"},
      {"host_blocked_in_syncs_ms", "host_blocked_in_syncs"},
      {"copies_ms", "copies"}};
  for (const auto& [arg, part] : parts) {
    INFO(arg);
    const auto it = c.step_args.find(arg);
    CHECK((it == c.step_args.end() ? 0.0 : it->second) / 30 == Approx(per[part].get<double>()).margin(1e-9));
  }
  fs::remove_all(dir);
}
