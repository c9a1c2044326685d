// Two files of one job become one job with both ranks, their collectives matched across
// the files by communicator (the process group's name and members) and sequence number.
// Rank 1's file is rank 0's with distributedInfo.rank set to 1: two ranks that ran alike.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <sstream>

#include "import_fixture.h"
#include "procs.h"

using namespace gwtest;
using nlohmann::json;

namespace {

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

}  // namespace

TEST_CASE("collector: import joins two ranks' files into one job, collectives matched by communicator") {
  TempDir tmp;
  std::string text = Gunzip(KinetoTrace("nccl_data_a100_rank0.json.gz"));
  const std::string from = R"("distributedInfo": {"backend": "nccl", "rank": 0,)";
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), R"("distributedInfo": {"backend": "nccl", "rank": 1,)");
  const std::string rank1 = tmp.path + "/rank1.json";
  std::ofstream(rank1, std::ios::binary) << text;

  // Given in the other order: the ranks come from distributedInfo, not the order.
  const Imported got = ImportTraces({rank1, KinetoTrace("nccl_data_a100_rank0.json.gz")});
  const json& s = got.summary;
  REQUIRE(s["ranks"].size() == 2);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][1]["rank"] == 1);
  CHECK(s["job"]["world_size"] == 2);
  const json want = ExpectedCounts("nccl_data_a100_rank0.json.gz");
  const json& comms = s["job"]["collectives"]["by_comm"];
  REQUIRE(comms.size() == 1);  // one process group, the same id in both files
  CHECK(comms[0]["members"] == json::array({0, 1}));
  CHECK(comms[0]["ranks_reporting"] == 2);
  CHECK(comms[0]["kind"] == "world");
  CHECK(comms[0]["identified"] == true);
  CHECK(comms[0]["kernels"] == 2 * want["nccl_kernels"].get<int>());
  for (int r = 0; r < 2; ++r) {
    CHECK(s["ranks"][r]["collectives"]["by_comm"][0]["rank_in_comm"] == r);
    CHECK(s["ranks"][r]["gpu"]["comm_kernels"]["count"] == want["nccl_kernels"]);
  }
  // Ranks that ran alike: no straggler among them.
  for (const json& f : s["job"]["findings"]) CHECK(f["id"] != "straggler");
}

namespace {

// Ten 10 ms ProfilerSteps of one rank of a 2-rank job: a 5 ms compute kernel, then an
// all-reduce of 1 MiB launched at 6 ms + `late_us`, whose NCCL kernel ends at 10 ms (both
// ranks' kernels finish together: the early one waited inside its kernel).
std::string TwoRankStep(int rank, long late_us) {
  std::ostringstream t;
  t << R"({"distributedInfo": {"rank": )" << rank << R"(, "world_size": 2}, "traceEvents": [)";
  for (int k = 0; k < 10; ++k) {
    const long base = 1000000 + k * 10000L;
    const int corr = 2 * k + 1;
    if (k) t << ",";
    t << R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" << k << R"(", "pid": 9, "tid": 9, "ts": )"
      << base << R"(, "dur": 10000},)"
      << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": )" << base + 10
      << R"(, "dur": 10, "args": {"correlation": )" << corr << R"(}},)"
      << R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )" << base + 30
      << R"(, "dur": 5000, "args": {"correlation": )" << corr << R"(, "stream": 7}},)"
      << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 9, "tid": 9, "ts": )"
      << base + 6000 + late_us << R"(, "dur": 10, "args": {"correlation": )" << corr + 1 << R"(}},)"
      << R"({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 40, "ts": )"
      << base + 6020 + late_us << R"(, "dur": )" << 3980 - late_us << R"(, "args": {"correlation": )" << corr + 1
      << R"(, "stream": 40, "Collective name": "allreduce", "In msg nelems": 262144, "dtype": "Float",
            "Group size": 2, "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}})";
  }
  t << "]}";
  return t.str();
}

}  // namespace

TEST_CASE("collector: import finds the straggler across two ranks' files as a live run does") {
  TempDir tmp;
  const std::string r0 = tmp.path + "/r0.json", r1 = tmp.path + "/r1.json";
  std::ofstream(r0) << TwoRankStep(0, 0);
  std::ofstream(r1) << TwoRankStep(1, 3000);  // rank 1 comes 3 ms late to every all-reduce
  const json s = ImportTraces({r0, r1}).summary;
  const json* straggler = nullptr;
  for (const json& f : s["job"]["findings"])
    if (f["id"] == "straggler") straggler = &f;
  REQUIRE(straggler != nullptr);
  INFO(straggler->dump());
  CHECK((*straggler)["ranks"] == json::array({1}));
  // Rank 0 waited 3 ms inside each of its 10 all-reduces.
  CHECK((*straggler)["evidence"]["wait_s_by_rank"]["0"].get<double>() == Approx(0.030).epsilon(0.01));
  CHECK(s["job"]["collectives"]["allreduce"]["count"] == 20);
  CHECK(s["job"]["collectives"]["allreduce"]["bytes"] == 20 * 1048576);
}

TEST_CASE("collector: import joins two real ranks' files of a 128-rank job") {
  // Ranks 0 and 1 of HTA's sampled 128-rank A100 job (tests/data/kineto/README.md), given in
  // the other order.
  const json s = ImportTraces({KinetoTrace("sampled_rank1.json.gz"), KinetoTrace("sampled_rank0.json.gz")}).summary;
  REQUIRE(s["ranks"].size() == 2);
  CHECK(s["job"]["world_size"] == 128);
  for (int r = 0; r < 2; ++r) {
    const json& rank = s["ranks"][r];
    CHECK(rank["rank"] == r);
    const json& f = rank["findings"];
    REQUIRE(f.size() >= 2);
    // Right: each step's GPU idles ~180 ms while the main thread runs the Shampoo
    // optimizer's preconditioner step on the host (its frame holds the most gap samples on
    // both ranks; HTA puts stream 7's idle mostly in host_wait and `other`).
    CHECK(f[0]["id"] == "host_overhead");
    CHECK(f[0]["evidence"]["host_frames"][0]["where"] == "Optimizer.step#Shampoo.step");
    // Right: the NCCL kernels (all-to-all SendRecv, 10 a rank, ~30 ms each) run mostly with no
    // compute beside them (HTA's overlap: 11.8% and 20.1%); the trace names no collective
    // size for them, so their bandwidth is unknown, not zero.
    CHECK(f[1]["id"] == "communication");
    CHECK(f[1]["evidence"]["busbw_gbps"].is_null());
    CHECK(f[1]["summary"].get<std::string>().find("busbw") == std::string::npos);
  }
  // Their common findings are the job's, on both ranks.
  REQUIRE(s["job"]["findings"].size() >= 1);
  CHECK(s["job"]["findings"][0]["id"] == "host_overhead");
  CHECK(s["job"]["findings"][0]["ranks"] == json::array({0, 1}));
}
