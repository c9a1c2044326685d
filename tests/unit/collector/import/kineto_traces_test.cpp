// The three committed real-GPU traces through `gpuwatch import`'s path: every count equals
// what the trace holds (tests/data/kineto/expected_counts.json, counted from the JSON by
// expected_counts.py), kernel time and GPU busy within 0.1%.
#include <catch2/catch.hpp>

#include "import_fixture.h"
#include "procs.h"
#include "test_trace_validator.h"

using namespace gwtest;
using nlohmann::json;

namespace {

void CheckWithin(double got, double want, double rel) {
  INFO("got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= rel * std::abs(want));
}

}  // namespace

TEST_CASE("collector: import of real traces counts exactly what each trace holds") {
  for (const char* name : kRealTraces) {
    SECTION(name) {
      const json want = ExpectedCounts(name);
      const Imported got = ImportTraces({KinetoTrace(name)});
      const json& r = got.summary.at("ranks").at(0);
      CHECK(got.stats[0].kernels == want["kernels"].get<uint64_t>());
      CHECK(got.stats[0].memcpys == want["memcpys"].get<uint64_t>());
      CHECK(got.stats[0].memcpy_bytes == want["memcpy_bytes"].get<uint64_t>());
      CHECK(got.stats[0].memsets == want["memsets"].get<uint64_t>());
      CHECK(r["kernels"]["launches"] == want["launches"]);
      CHECK(r["gpu"]["kernels"]["count"] == want["compute_kernels"]);
      CHECK(r["gpu"]["comm_kernels"]["count"] == want["nccl_kernels"]);
      for (const char* dir : {"h2d", "d2h"}) {
        CHECK(r["memcpy"][dir]["count"] == want[std::string(dir) + "_calls"]);
        CHECK(r["memcpy"][dir]["bytes"] == want[std::string(dir) + "_bytes"]);
        CHECK(r["memcpy"][dir]["pageable_count"] == want[std::string(dir) + "_pageable"]);
      }
      CHECK(r["memcpy"]["d2d"]["count"] == want["d2d_calls"]);
      CHECK(r["memcpy"]["d2d"]["bytes"] == want["d2d_bytes"]);
      CHECK(r["memset"]["count"] == want["memset_api_calls"]);
      for (const auto& [api, n] : want["syncs"].items()) CHECK(r["sync"]["by_api"][api]["count"] == n);
      CHECK(r["sync"]["by_api"].size() >= want["syncs"].size());
      if (want["steps"].get<int>() > 0) {
        CHECK(r["steps"]["source"] == "nvtx:ProfilerStep");
        CHECK(r["steps"]["count"] == want["steps"]);
      }
      CheckWithin(r["gpu"]["kernels"]["total_s"].get<double>(), want["compute_kernel_ns"].get<double>() / 1e9, 1e-3);
      CheckWithin(r["gpu"]["comm_kernels"]["total_s"].get<double>(), want["nccl_kernel_ns"].get<double>() / 1e9, 1e-3);
      CheckWithin(r["gpu"]["busy_s"].get<double>(), want["busy_ns"].get<double>() / 1e9, 1e-3);
      CheckWithin(r["gpu"]["active_s"].get<double>(), want["active_ns"].get<double>() / 1e9, 1e-3);
      CHECK(r["gpu"]["stream_waits"]["count"] == want["cross_stream_waits"]);
      CHECK(r["gpu"]["source"] == "cupti");
      CHECK(r["gpu"]["late_records"] == 0);
      CHECK(r["gpu"]["unmatched_correlations"] == 0);
    }
  }
}

TEST_CASE("collector: import takes the device from deviceProperties and says what the trace cannot") {
  const Imported got = ImportTraces({KinetoTrace("ns_resolution_v100_rank0.json.gz")});
  const json& r = got.summary.at("ranks").at(0);
  CHECK(r["environment"]["device_name"] == "Tesla V100-SXM2-32GB");
  CHECK(r["environment"]["device_memory_bytes"] == 34079637504ull);
  CHECK(r["environment"]["device_compute_capability"] == "7.0");
  CHECK(r["device_state"]["sampler_detail"] == "a torch.profiler trace has no NVML samples");
  CHECK(r["host"] == "twshared39868.02.pnb3.facebook.com");
  CHECK(r["rank_source"] == "trace:distributedInfo");
}

TEST_CASE("collector: import sorts in runs on disk and gets the same summary") {
  const std::string file = KinetoTrace("nccl_data_a100_rank0.json.gz");
  const Imported whole = ImportTraces({file});
  col::JobTable jobs(col::JobTiming{std::chrono::milliseconds(0), std::chrono::milliseconds(0), 300});
  col::RankImportOptions o;
  o.max_in_memory = 1000;  // some 20 runs
  col::RankImportStats s;
  std::string error;
  REQUIRE(col::ImportRankTrace(file, o, jobs, &s, &error));
  CHECK(s.sorted_runs > 10);
  const json runs = SummaryJson(*jobs.Find("import"), "t");
  CHECK(runs["ranks"][0]["gpu"] == whole.summary["ranks"][0]["gpu"]);
  CHECK(runs["ranks"][0]["steps"] == whole.summary["ranks"][0]["steps"]);
  CHECK(runs["ranks"][0]["collectives"] == whole.summary["ranks"][0]["collectives"]);
}

TEST_CASE("gpuwatch: import writes a valid Perfetto trace of each real trace") {
  for (const char* name : kRealTraces) {
    SECTION(name) {
      TempDir tmp;
      const CmdResult r = RunCmd({GW_GPUWATCH_BIN, "import", KinetoTrace(name), "-o", tmp.path, "-q"}, tmp.path);
      INFO(r.err);
      REQUIRE(r.code == 0);
      const gwtrace::TraceReport rep = gwtrace::ValidateTrace(Slurp(tmp.path + "/trace.perfetto-trace"), false);
      INFO(rep.First());
      CHECK(rep.errors.empty());
      REQUIRE(rep.processes.size() == 1);
      const gwtrace::RankCounts& c = rep.processes.begin()->second;
      const json want = ExpectedCounts(name);
      CHECK(c.kernels == want["kernels"].get<uint64_t>());
      CHECK(c.memsets == want["memsets"].get<uint64_t>());
      if (want["steps"].get<int>() > 0) CHECK(c.steps == want["steps"].get<uint64_t>());  // else inferred
    }
  }
}
