// The pipeline counter on hand-made events: which NCCL kernels are recvs (launched inside an
// ncclRecv call), the bubble (recv time with no compute beside it), send/recv matched across
// ranks by communicator index; and the small-collectives split and its excess latency.
#include <catch2/catch.hpp>

#include "analyze/collective_sizes.h"
#include "analyze/pipeline.h"
#include "analyze/rank_result.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kUs = 1000;

col::HostCall P2p(wire::Api api, uint64_t t, uint64_t dur, int peer, uint64_t gpu_ns, uint32_t flags = 0) {
  col::HostCall c{};
  c.api = api;
  c.t_ns = t;
  c.dur_ns = dur;
  c.peer = peer;
  c.comm_id = 7;
  c.comm_hash = 0xabc;
  c.comm_nranks = 2;
  c.coll_bytes = 1 << 20;
  c.gpu_ns = gpu_ns;
  c.timed = gpu_ns > 0;
  c.flags = flags;
  return c;
}

col::DeviceWork Kernel(uint64_t start, uint64_t end, bool comm, const col::ApiSpan* api) {
  col::DeviceWork w{};
  w.start_ns = start;
  w.end_ns = end;
  w.comm = comm;
  w.api = api;
  w.kind = wire::ACTIVITY_KERNEL;
  return w;
}

}  // namespace

TEST_CASE("collector: a recv kernel with no compute beside it is pipeline bubble") {
  col::PipelineCounter p;
  // Compute 0-100 us; a recv called at 110 us, its kernel 120-400 us; compute again from 400 us.
  p.OnDeviceWork(Kernel(0, 100 * kUs, false, nullptr));
  p.OnHostCall(P2p(wire::NCCL_RECV, 110 * kUs, 5 * kUs, 0, 280 * kUs));
  const col::ApiSpan launch{111 * kUs, 113 * kUs};
  p.OnDeviceWork(Kernel(120 * kUs, 400 * kUs, true, &launch));
  // A send's kernel (launched outside any recv call) is not a recv.
  p.OnHostCall(P2p(wire::NCCL_SEND, 200 * kUs, 5 * kUs, 0, 10 * kUs));
  const col::ApiSpan send_launch{201 * kUs, 203 * kUs};
  p.OnDeviceWork(Kernel(250 * kUs, 260 * kUs, true, &send_launch));
  p.OnBusy(col::BusySpan{0, 100 * kUs, true});
  p.OnDeviceWork(Kernel(400 * kUs, 500 * kUs, false, nullptr));
  p.OnBusy(col::BusySpan{400 * kUs, 500 * kUs, true});
  const col::PipelineFigures f = p.Result(col::RankFacts{});
  CHECK(f.recv_kernels == 1);
  CHECK(f.recv_kernel_ns == 280 * kUs);
  CHECK(f.bubble_ns == 280 * kUs);
  REQUIRE(f.links.size() == 2);
  CHECK(f.links[0].send == false);
  CHECK(f.links[0].count == 1);
  CHECK(f.links[1].send == true);
  CHECK(f.grouped_calls == 0);
}

TEST_CASE("collector: recv time while compute runs is not bubble, grouped recvs are counted apart") {
  col::PipelineCounter p;
  p.OnHostCall(P2p(wire::NCCL_RECV, 0, 5 * kUs, 1, 100 * kUs));
  const col::ApiSpan launch{1 * kUs, 2 * kUs};
  p.OnDeviceWork(Kernel(10 * kUs, 110 * kUs, true, &launch));      // recv 10-110
  p.OnDeviceWork(Kernel(50 * kUs, 80 * kUs, false, nullptr));       // compute 50-80 beside it
  p.OnBusy(col::BusySpan{50 * kUs, 80 * kUs, true});
  p.OnHostCall(P2p(wire::NCCL_RECV, 200 * kUs, 5 * kUs, 1, 50 * kUs, wire::FLAG_IN_GROUP));
  const col::PipelineFigures f = p.Result(col::RankFacts{});
  CHECK(f.bubble_ns == 70 * kUs);  // 10-50 and 80-110
  CHECK(f.grouped_calls == 1);
  REQUIRE(f.links.size() == 1);
  CHECK(f.links[0].count == 2);
  CHECK(f.links[0].call_gpu_ns == std::vector<uint64_t>{100 * kUs, 50 * kUs});
}

TEST_CASE("collector: sends meet recvs across ranks by the communicator's members") {
  // Rank 4 is index 0 of communicator 0xabc, rank 9 index 1: 4 sends to 9.
  col::RankResult a, b;
  a.rank = 4;
  b.rank = 9;
  col::P2pLink send;
  send.comm_hash = 0xabc;
  send.comm_rank = 0;
  send.comm_size = 2;
  send.peer = 1;
  send.send = true;
  send.count = 3;
  send.bytes = 3 << 20;
  send.call_gpu_ns = {10 * kUs, 50 * kUs, 10 * kUs};  // the 2nd send waited for its recv
  col::P2pLink recv = send;
  recv.comm_rank = 1;
  recv.peer = 0;
  recv.send = false;
  recv.call_gpu_ns = {40 * kUs, 10 * kUs, 0};  // the 1st recv waited 30 us; the 3rd has no time
  a.pipeline.links = {send};
  a.pipeline.bubble_ns = 0;
  b.pipeline.links = {recv};
  b.pipeline.bubble_ns = 300 * kUs;
  const col::JobPipeline jp = col::MatchPipeline(col::RankList(std::vector<col::RankResult>{a, b}));
  REQUIRE(jp.links.size() == 1);
  CHECK(jp.links[0].from == 4);
  CHECK(jp.links[0].to == 9);
  CHECK(jp.links[0].sends == 3);
  CHECK(jp.links[0].recvs == 3);
  CHECK(jp.links[0].matched == 2);
  CHECK(jp.links[0].recv_wait_s == Approx(30e-6));
  REQUIRE(jp.stages.size() == 2);
  CHECK(jp.stages[0].ranks == std::vector<int>{4});
  CHECK(jp.stages[1].bubble_s == Approx(300e-6));
}

TEST_CASE("collector: small collectives and the latency fewer, larger calls would save") {
  col::CollectiveSizeCounter c;
  for (int i = 0; i < 40; ++i) {
    col::HostCall h{};
    h.api = wire::NCCL_ALL_REDUCE;
    h.coll_bytes = 64 << 10;
    h.comm_nranks = 2;
    h.gpu_ns = 31 * kUs;
    h.timed = true;
    c.OnHostCall(h);
  }
  col::HostCall big{};
  big.api = wire::NCCL_ALL_REDUCE;
  big.coll_bytes = 64 << 20;
  big.comm_nranks = 2;
  big.gpu_ns = 1000 * kUs;
  big.timed = true;
  c.OnHostCall(big);
  col::HostCall send = big;  // send/recv are not collectives of buckets
  send.api = wire::NCCL_SEND;
  send.coll_bytes = 1024;
  c.OnHostCall(send);
  const col::CollectiveSizeFigures& f = c.figures();
  CHECK(f.small_calls == 40);
  CHECK(f.large_calls == 1);
  CHECK(f.min_call_ns == 31 * kUs);
  // 40 x 64 KiB fit in 3 calls of 1 MiB: 37 latencies too many.
  CHECK(f.ExcessLatencyNs() == 37 * 31 * kUs);
  CHECK(f.large_busbw_gbps() == Approx(64.0 * (1 << 20) / 1e6));  // factor 2(n-1)/n = 1
}
