// The 2021 dialect of torch.profiler traces (categories Runtime, Kernel, Memcpy, Memset,
// Operator) reads as today's does.
#include <catch2/catch.hpp>

#include <fstream>

#include "import_fixture.h"
#include "procs.h"

using namespace gwtest;
using nlohmann::json;

TEST_CASE("collector: import reads the 2021 dialect: Runtime, Kernel, Memcpy, Memset, Operator") {
  TempDir tmp;
  const std::string path = tmp.path + "/old.json";
  std::ofstream(path) << R"JSON({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "ProfilerStep#0", "pid": 5, "tid": 5, "ts": 1000, "dur": 400},
    {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 5, "tid": 5, "ts": 1010, "dur": 50},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 1020, "dur": 10,
     "args": {"correlation": 11, "external id": 2}},
    {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": "stream 7", "ts": 1040, "dur": 100,
     "args": {"correlation": 11, "stream": 7, "device": 0, "grid": [8, 1, 1], "block": [256, 1, 1]}},
    {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 5, "tid": 5, "ts": 1200, "dur": 30,
     "args": {"correlation": 12}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": "stream 7", "ts": 1210, "dur": 15,
     "args": {"correlation": 12, "stream": 7, "device": 0, "bytes": 4096}},
    {"ph": "X", "cat": "Runtime", "name": "cudaMemsetAsync", "pid": 5, "tid": 5, "ts": 1300, "dur": 5,
     "args": {"correlation": 13}},
    {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 1310, "dur": 2,
     "args": {"correlation": 13, "stream": 7, "device": 0, "bytes": 64}},
    {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 5, "tid": 5, "ts": 1400, "dur": 400},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 1420, "dur": 10,
     "args": {"correlation": 14}},
    {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": "stream 7", "ts": 1440, "dur": 100,
     "args": {"correlation": 14, "stream": 7, "device": 0}}
  ]})JSON";
  const Imported got = ImportTraces({path});
  const json& r = got.summary["ranks"][0];
  CHECK(r["rank_source"] == "trace:file order");
  CHECK(r["kernels"]["launches"] == 2);
  CHECK(r["gpu"]["kernels"]["count"] == 2);
  CHECK(r["gpu"]["kernels"]["total_s"].get<double>() == Approx(200e-6));
  CHECK(r["memcpy"]["d2h"]["count"] == 1);
  CHECK(r["memcpy"]["d2h"]["bytes"] == 4096);
  CHECK(r["memcpy"]["d2h"]["pageable_count"] == 1);
  CHECK(r["memcpy"]["d2h"]["blocking_count"] == 1);  // async to pageable memory blocks the host
  CHECK(r["memset"]["count"] == 1);
  CHECK(r["memset"]["bytes"] == 64);
  CHECK(r["steps"]["source"] == "nvtx:ProfilerStep");
  CHECK(r["steps"]["count"] == 2);
  // Union of the kernels, the copy and the memset.
  CHECK(r["gpu"]["busy_s"].get<double>() == Approx(217e-6));
}
