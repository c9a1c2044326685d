// Diagnoses from imported traces. Synthetic traces for the host-frames evidence (the
// committed real traces have no DataLoader spans and no Python stacks); the real traces'
// findings, each with why it is right.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "import_fixture.h"
#include "procs.h"

using namespace gwtest;
using nlohmann::json;

namespace {

// Six 10 ms ProfilerSteps on one thread: the host spends the first 6 ms of each in a span
// named `host_span` (category `cat`), then launches one kernel that runs 6.05-9.9 ms.
std::string StepsWithHostWork(const std::string& cat, const std::string& host_span) {
  std::ostringstream t;
  t << R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";
  for (int k = 0; k < 6; ++k) {
    const long base = 1000000 + k * 10000L;  // µs
    if (k) t << ",";
    t << R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" << k << R"(", "pid": 1, "tid": 1, "ts": )"
      << base << R"(, "dur": 10000},)"
      << R"({"ph": "X", "cat": ")" << cat << R"(", "name": ")" << host_span << R"(", "pid": 1, "tid": 1, "ts": )" << base
      << R"(, "dur": 6000},)"
      << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" << base + 6000
      << R"(, "dur": 10, "args": {"correlation": )" << k + 1 << R"(, "cbid": 211}},)"
      << R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )" << base + 6050
      << R"(, "dur": 3850, "args": {"correlation": )" << k + 1 << R"(, "stream": 7, "device": 0}})";
  }
  t << "]}";
  return t.str();
}

json FirstFinding(const std::string& trace_text, const TempDir& tmp) {
  const std::string path = tmp.path + "/t.json";
  std::ofstream(path) << trace_text;
  const Imported got = ImportTraces({path});
  const json& findings = got.summary["ranks"][0]["findings"];
  REQUIRE_FALSE(findings.empty());
  return findings[0];
}

}  // namespace

TEST_CASE("collector: import diagnoses a GPU idle while the host iterates the DataLoader as data loading") {
  TempDir tmp;
  const json f = FirstFinding(
      StepsWithHostWork("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), tmp);
  CHECK(f["id"] == "data_loading");
  // Samples every 1 ms in the ~6.15 ms gaps: the DataLoader span is open in all but the last.
  CHECK(f["evidence"]["data_loading_share"].get<double>() > 0.8);
  CHECK(f["evidence"]["host_samples"].get<int>() >= 25);
}

TEST_CASE("collector: import names the Python frame the host ran while the GPU waited") {
  TempDir tmp;
  const json f = FirstFinding(StepsWithHostWork("python_function", "train.py(42): augment"), tmp);
  CHECK(f["id"] == "host_overhead");
  CHECK(f["evidence"]["host_frames"][0]["where"] == "train.py:42 in augment");
  CHECK(f["evidence"]["data_loading_share"].get<double>() == 0);
}

TEST_CASE("collector: import's findings on the real traces") {
  const auto findings = [](const char* name) {
    return ImportTraces({KinetoTrace(name)}).summary["ranks"][0]["findings"];
  };
  SECTION("V100, GPU-bound") {
    const json f = findings("ns_resolution_v100_rank0.json.gz");
    REQUIRE(f.size() == 1);
    // Right: the GPU is busy 98% of the time and its convolutions and GEMMs are cuDNN's and
    // cuBLAS's float kernels (dgrad_engine<float>, sgemm): FP32 math, the one large loss.
    CHECK(f[0]["id"] == "mixed_precision");
    CHECK(f[0]["evidence"]["fp32_share_of_matmul"].get<double>() > 0.95);
    // Right in its fix: a V100 (compute capability 7.0, from deviceProperties) has FP16
    // tensor cores, no BF16 or TF32: AMP in float16 with a loss scaler.
    CHECK(f[0]["evidence"]["compute_capability"] == "7.0");
    const std::string fix = f[0]["fix"];
    CHECK(fix.find("torch.float16") != std::string::npos);
    CHECK(fix.find("GradScaler") != std::string::npos);
    CHECK(fix.find("bfloat16") == std::string::npos);
  }
  SECTION("A100, rank 0 of a 2-rank DDP job") {
    const json f = findings("nccl_data_a100_rank0.json.gz");
    REQUIRE(f.size() == 2);
    // Right that the GPU waits for the host: in the largest gaps (15.7 ms) the main thread is
    // inside DistributedDataParallel.forward's host work and nothing is queued; HTA's idle
    // breakdown (hta_check_test.cpp) puts 99% of stream 7's idle time in host_wait too.
    // Right in its cause: the trace has no DataLoader span, and the gaps' samples are the
    // main thread's, whose launches end them (the autograd thread makes the most CUDA calls
    // but idles in the forward): host work, DDP's forward first, then the optimizer's step.
    CHECK(f[0]["id"] == "host_overhead");
    CHECK(f[0]["evidence"]["host_frames"][0]["where"] == "DistributedDataParallel.forward");
    CHECK(f[0]["evidence"]["host_frames"][0]["share"].get<double>() > 0.7);
    CHECK(f[0]["evidence"]["host_frames"][1]["where"] == "Optimizer.step#SGD.step");
    CHECK(f[0]["evidence"]["data_loading_share"].get<double>() == 0);
    CHECK(f[0]["evidence"]["per_step_ms"].get<double>() == Approx(147.6).epsilon(0.01));
    // Right: 39.6 of the 46.9 ms of NCCL kernels ran with no compute beside them (HTA's
    // comm/comp overlap: 14.3%), 13 ms a step of communication not hidden.
    CHECK(f[1]["id"] == "communication");
    CHECK(f[1]["evidence"]["exposed_comm_s"].get<double>() == Approx(0.0392).epsilon(0.01));
  }
  SECTION("A100, a DataLoader that keeps up") {
    const json f = findings("control_a100_rank3.json.gz");
    REQUIRE(f.size() >= 3);
    // Right: the DataLoader's __next__ takes ~70 µs of each ~77 ms step (its workers
    // prefetch), so no GPU gap waits for it: never data_loading. The largest loss is the
    // all-to-all NCCL kernels with no compute beside them (sizes not in the trace), then
    // .item()-like small blocking copies, then host work in the sharding's input setup.
    for (const json& x : f) CHECK(x["id"] != "data_loading");
    CHECK(f[0]["id"] == "communication");
    CHECK(f[1]["id"] == "sync_stall");
    CHECK(f[2]["id"] == "host_overhead");
    CHECK(f[2]["evidence"]["data_loading_share"].get<double>() == 0);
  }
}
