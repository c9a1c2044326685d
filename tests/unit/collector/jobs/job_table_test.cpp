// Every figure of a rank's summary, from frames fed through the real Connection.
#include <catch2/catch.hpp>

#include "common/bus_factor.h"
#include "fixtures.h"
#include "report/summary.h"

using namespace gwtest;
using nlohmann::json;

namespace {

json Summary(col::JobTable& jobs, const std::string& job = "j") {
  const col::Job* j = jobs.Find(job);
  REQUIRE(j != nullptr);
  return SummaryJson(*j, "2000-01-01T00:00:00Z");
}

col::JobTable MakeTable() { return col::JobTable(col::JobTiming{}); }

}  // namespace

TEST_CASE("collector: sync and memcpy figures, pageable and blocking classification") {
  auto jobs = MakeTable();
  FakeRank r(jobs, Hello("j", 0, 1));
  wire::Batch b;
  const uint64_t ms = 1000000;
  // cudaMemcpy H2D, pageable, blocked the host: counts under memcpy and sync.
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 1000, 10 * ms, 1 * ms,
       wire::FLAG_PAGEABLE | wire::FLAG_BLOCKED_HOST);
  // cudaMemcpyAsync H2D from pinned memory: async, not a sync.
  Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_H2D, 2000, 12 * ms, ms / 10, 0);
  // cudaMemcpyAsync D2H into pageable memory: blocked the host.
  Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_D2H, 3000, 13 * ms, 2 * ms,
       wire::FLAG_PAGEABLE | wire::FLAG_BLOCKED_HOST);
  // A D2D copy: neither H2D nor D2H, and not blocking.
  Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_D2D, 4000, 16 * ms, 1, 0);
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 20 * ms, 5 * ms);
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 30 * ms, 5 * ms);
  Add(&b, wire::CUDA_DEVICE_SYNCHRONIZE, 40 * ms, 3 * ms);
  REQUIRE(r.SendBatch(b));
  r.Goodbye();
  r.Close();

  const json s = Summary(jobs);
  REQUIRE(s["schema"] == "gpuwatch.summary.v1");
  REQUIRE(s["ranks"].size() == 1);
  const json& k = s["ranks"][0];
  CHECK(k["wall_s"].get<double>() == Approx(0.033));  // 10 ms .. 43 ms
  CHECK(k["ended"] == "normal");

  const json& sync = k["sync"];
  CHECK(sync["count"] == 5);
  CHECK(sync["total_s"].get<double>() == Approx(0.016));
  CHECK(sync["by_api"].size() == 4);
  CHECK(sync["by_api"]["cudaStreamSynchronize"]["count"] == 2);
  CHECK(sync["by_api"]["cudaStreamSynchronize"]["total_s"].get<double>() == Approx(0.010));
  CHECK(sync["by_api"]["cudaDeviceSynchronize"]["count"] == 1);
  CHECK(sync["by_api"]["cudaMemcpy"]["count"] == 1);
  CHECK(sync["by_api"]["cudaMemcpy"]["total_s"].get<double>() == Approx(0.001));
  CHECK(sync["by_api"]["cudaMemcpyAsync"]["count"] == 1);
  CHECK(sync["by_api"]["cudaMemcpyAsync"]["total_s"].get<double>() == Approx(0.002));
  CHECK_FALSE(sync["by_api"].contains("cudaEventSynchronize"));

  const json& h2d = k["memcpy"]["h2d"];
  CHECK(h2d["count"] == 2);
  CHECK(h2d["bytes"] == 3000);
  CHECK(h2d["total_s"].get<double>() == Approx(0.0011));
  CHECK(h2d["gbps"].get<double>() == Approx(3000 / 0.0011 / 1e9));
  CHECK(h2d["pageable_count"] == 1);
  CHECK(h2d["pageable_bytes"] == 1000);
  CHECK(h2d["blocking_count"] == 1);
  const json& d2h = k["memcpy"]["d2h"];
  CHECK(d2h["count"] == 1);
  CHECK(d2h["bytes"] == 3000);
  CHECK(d2h["pageable_count"] == 1);
  CHECK(d2h["pageable_bytes"] == 3000);
  CHECK(d2h["blocking_count"] == 1);
  CHECK(d2h["gbps"].get<double>() == Approx(3000 / 0.002 / 1e9));
}

TEST_CASE("collector: bus factors follow nccl-tests") {
  CHECK(col::BusFactor(wire::NCCL_ALL_REDUCE, 2) == Approx(1.0));
  CHECK(col::BusFactor(wire::NCCL_ALL_REDUCE, 4) == Approx(1.5));
  CHECK(col::BusFactor(wire::NCCL_ALL_GATHER, 2) == Approx(0.5));
  CHECK(col::BusFactor(wire::NCCL_REDUCE_SCATTER, 4) == Approx(0.75));
  CHECK(col::BusFactor(wire::NCCL_BROADCAST, 4) == Approx(1.0));
  CHECK(col::BusFactor(wire::NCCL_SEND, 8) == Approx(1.0));
  CHECK(col::BusFactor(wire::NCCL_ALL_REDUCE, 1) == Approx(0.0));
}

TEST_CASE("collector: collective bytes and bandwidths for n=2 and n=4") {
  auto jobs = MakeTable();
  FakeRank r(jobs, Hello("j", 0, 4));
  wire::Batch b;
  Comm(&b, 7, 2, 0);  // a 2-rank communicator
  Comm(&b, 9, 4, 0);  // a 4-rank communicator
  const uint64_t ms = 1000000;
  // allreduce, n=2: S = 1 MB per call, 2 calls, 2 ms -> algbw 1 GB/s, busbw x1.
  Coll(&b, wire::NCCL_ALL_REDUCE, 7, 1000000, ms);
  Coll(&b, wire::NCCL_ALL_REDUCE, 7, 1000000, ms);
  // allgather, n=4: bytes is the per-rank count; S = 4 MB in 1 ms -> 4 GB/s, busbw x3/4.
  Coll(&b, wire::NCCL_ALL_GATHER, 9, 1000000, ms);
  // reducescatter, n=2: S = 2 MB in 1 ms -> 2 GB/s, busbw x1/2.
  Coll(&b, wire::NCCL_REDUCE_SCATTER, 7, 1000000, ms);
  // broadcast, n=4: S = bytes; 3 MB in 1 ms, factor 1.
  Coll(&b, wire::NCCL_BROADCAST, 9, 3000000, ms);
  // send/recv: factor 1.
  Coll(&b, wire::NCCL_SEND, 7, 500000, ms);
  Coll(&b, wire::NCCL_RECV, 7, 500000, ms / 2);
  REQUIRE(r.SendBatch(b));
  // A later batch: allreduce on n=4 communicator, and one without GPU time.
  wire::Batch b2;
  Coll(&b2, wire::NCCL_ALL_REDUCE, 9, 2000000, ms);
  Coll(&b2, wire::NCCL_ALL_REDUCE, 9, 5000000, 0, 1000, wire::FLAG_NO_GPU_TIME);
  REQUIRE(r.SendBatch(b2));
  r.Goodbye();
  r.Close();

  const json c = Summary(jobs)["ranks"][0]["collectives"];
  CHECK(c.size() == 7);  // six ops and by_comm
  CHECK(c["by_comm"].is_array());
  CHECK_FALSE(c.contains("reduce"));

  // allreduce: 2 x 1 MB on n=2 (bus 2 MB x 1.0) + 2 MB on n=4 (bus x1.5 = 3 MB), 3 ms
  // timed; plus 5 MB without GPU time: counted, not in the bandwidths.
  CHECK(c["allreduce"]["count"] == 4);
  CHECK(c["allreduce"]["bytes"] == 9000000);
  CHECK(c["allreduce"]["no_gpu_time_count"] == 1);
  CHECK(c["allreduce"]["total_s"].get<double>() == Approx(0.003));
  CHECK(c["allreduce"]["algbw_gbps"].get<double>() == Approx(4e6 / 0.003 / 1e9));
  CHECK(c["allreduce"]["busbw_gbps"].get<double>() == Approx(5e6 / 0.003 / 1e9));

  CHECK(c["allgather"]["bytes"] == 4000000);
  CHECK(c["allgather"]["algbw_gbps"].get<double>() == Approx(4.0));
  CHECK(c["allgather"]["busbw_gbps"].get<double>() == Approx(3.0));

  CHECK(c["reducescatter"]["bytes"] == 2000000);
  CHECK(c["reducescatter"]["algbw_gbps"].get<double>() == Approx(2.0));
  CHECK(c["reducescatter"]["busbw_gbps"].get<double>() == Approx(1.0));

  CHECK(c["broadcast"]["algbw_gbps"].get<double>() == Approx(3.0));
  CHECK(c["broadcast"]["busbw_gbps"].get<double>() == Approx(3.0));
  // The rank's send to itself meets its recv: the send's 0.5 ms beyond the recv's is its
  // wait for the recv, not transfer.
  CHECK(c["send"]["wait_s"].get<double>() == Approx(0.0005));
  CHECK(c["send"]["busbw_gbps"].get<double>() == Approx(1.0));
  CHECK(c["recv"]["wait_s"].get<double>() == 0.0);
  CHECK(c["recv"]["busbw_gbps"].get<double>() == Approx(1.0));
  CHECK(c["recv"]["no_gpu_time_count"] == 0);
}

TEST_CASE("collector: a collective on an unknown communicator uses the world size") {
  auto jobs = MakeTable();
  FakeRank r(jobs, Hello("j", 0, 4));
  wire::Batch b;
  Coll(&b, wire::NCCL_ALL_REDUCE, 42, 1000000, 1000000);
  REQUIRE(r.SendBatch(b));
  const json c = Summary(jobs)["ranks"][0]["collectives"];
  CHECK(c["allreduce"]["busbw_gbps"].get<double>() == Approx(1.5));
}

TEST_CASE("collector: kernel launches and demangled top list") {
  auto jobs = MakeTable();
  FakeRank r(jobs, Hello("j", 0, 1));
  wire::Batch b;
  auto* k1 = b.add_kernel_names();
  k1->set_id(1);
  k1->set_name("_Z6kernelPfi");
  auto* k2 = b.add_kernel_names();
  k2->set_id(2);
  k2->set_name("plain_c_kernel");
  for (int i = 0; i < 3; ++i) Add(&b, wire::CUDA_LAUNCH_KERNEL, 100 + i, 1)->set_name_id(1);
  Add(&b, wire::CUDA_LAUNCH_KERNEL, 200, 1)->set_name_id(2);
  Add(&b, wire::CUDA_LAUNCH_KERNEL, 300, 1)->set_name_id(5);  // name never sent
  REQUIRE(r.SendBatch(b));

  const json k = Summary(jobs)["ranks"][0]["kernels"];
  CHECK(k["launches"] == 5);
  REQUIRE(k["top_launched"].size() == 3);
  CHECK(k["top_launched"][0]["name"] == "kernel(float*, int)");
  CHECK(k["top_launched"][0]["launches"] == 3);
  CHECK(k["top_launched"][1]["name"] == "kernel#5");
  CHECK(k["top_launched"][2]["name"] == "plain_c_kernel");
}

TEST_CASE("collector: top_launched keeps at most 10 and the kernel map is bounded") {
  auto jobs = MakeTable();
  FakeRank r(jobs, Hello("j", 0, 1));
  wire::Batch b;
  for (uint32_t id = 0; id < 12000; ++id) {
    auto* k = b.add_kernel_names();
    k->set_id(id);
    k->set_name("k" + std::to_string(id));
    Add(&b, wire::CUDA_LAUNCH_KERNEL, 1, 1)->set_name_id(id);
  }
  REQUIRE(r.SendBatch(b));
  const json k = Summary(jobs)["ranks"][0]["kernels"];
  CHECK(k["launches"] == 12000);
  CHECK(k["top_launched"].size() == 10);
}

TEST_CASE("collector: dropped totals are cumulative per reason, summed over ranks") {
  auto jobs = MakeTable();
  FakeRank r0(jobs, Hello("j", 0, 2));
  FakeRank r1(jobs, Hello("j", 1, 2));
  wire::Batch b;
  Drop(&b, "ring_full", 5);
  REQUIRE(r0.SendBatch(b));
  b.clear_dropped();
  Drop(&b, "ring_full", 7);
  REQUIRE(r0.SendBatch(b));
  wire::Goodbye g;
  auto* d = g.add_dropped();
  d->set_reason("ring_full");
  d->set_count(9);
  d = g.add_dropped();
  d->set_reason("too_many_threads");
  d->set_count(2);
  r0.Goodbye(g);
  r0.Close();
  wire::Batch b1;
  Drop(&b1, "ring_full", 1);
  REQUIRE(r1.SendBatch(b1));
  r1.Goodbye();
  r1.Close();

  const json s = Summary(jobs);
  CHECK(s["ranks"][0]["dropped"]["ring_full"] == 9);
  CHECK(s["ranks"][0]["dropped"]["too_many_threads"] == 2);
  CHECK(s["ranks"][0]["dropped_total"] == 11);
  CHECK(s["ranks"][1]["dropped_total"] == 1);
  CHECK(s["job"]["dropped"]["ring_full"] == 10);
  CHECK(s["job"]["dropped_total"] == 12);
}

TEST_CASE("collector: a rank that closes without Goodbye ended abnormally") {
  auto jobs = MakeTable();
  FakeRank r0(jobs, Hello("j", 0, 2));
  FakeRank r1(jobs, Hello("j", 1, 2));
  wire::Batch b;
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1000, 500);
  REQUIRE(r1.SendBatch(b));
  r0.Goodbye();
  r0.Close();
  r1.Close();  // killed: no Goodbye
  const json s = Summary(jobs);
  CHECK(s["ranks"][0]["ended"] == "normal");
  CHECK(s["ranks"][1]["ended"] == "abnormal");
  CHECK(s["ranks"][1]["sync"]["count"] == 1);  // what it sent is kept
  CHECK(s["job"]["abnormal_ranks"] == json::array({1}));
  CHECK(s["job"]["ranks"] == 2);
  CHECK(s["job"]["sync"]["count"] == 1);
}

TEST_CASE("collector: ranks are sorted by rank and job totals add up") {
  auto jobs = MakeTable();
  FakeRank r1(jobs, Hello("j", 1, 2));
  FakeRank r0(jobs, Hello("j", 0, 2));
  for (FakeRank* r : {&r0, &r1}) {
    wire::Batch b;
    Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 100, 0, 1000, wire::FLAG_BLOCKED_HOST);
    Add(&b, wire::CUDA_LAUNCH_KERNEL, 10, 1);
    REQUIRE(r->SendBatch(b));
  }
  const json s = Summary(jobs);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][1]["rank"] == 1);
  CHECK(s["ranks"][1]["host"] == "node1");
  CHECK(s["ranks"][1]["pid"] == 1001);
  CHECK(s["ranks"][1]["rank_source"] == "RANK");
  CHECK(s["job"]["memcpy"]["h2d"]["bytes"] == 200);
  CHECK(s["job"]["kernels"]["launches"] == 2);
  CHECK(s["job"]["world_size"] == 2);
  CHECK(s["job"]["hosts"] == 1);
}

TEST_CASE("collector: a job ends after the linger, later when ranks are missing") {
  using namespace std::chrono_literals;
  col::JobTable jobs(col::JobTiming{100ms, 1000ms});
  auto hello = Hello("j", 0, 2);
  std::string err;
  col::RankSink* r = jobs.Attach(hello.hello(), &err);
  REQUIRE(r);
  const auto t0 = col::Clock::now();
  CHECK(jobs.Due(t0 + 10s).empty());  // still connected
  jobs.Detach("j", r, true, t0);
  // 1 of 2 ranks seen: linger + the wait for the missing rank.
  CHECK(jobs.Due(t0 + 500ms).empty());
  REQUIRE(jobs.Due(t0 + 1100ms).size() == 1);
  // The second rank arrives and leaves: the plain linger applies.
  auto h1 = Hello("j", 1, 2);
  r = jobs.Attach(h1.hello(), &err);
  REQUIRE(r);
  jobs.Detach("j", r, true, t0);
  CHECK(jobs.Due(t0 + 50ms).empty());
  auto due = jobs.Due(t0 + 100ms);
  REQUIRE(due.size() == 1);
  jobs.MarkWritten(due[0]);
  CHECK(jobs.Due(t0 + 10s).empty());
  CHECK(jobs.AllWritten());
}
