// Waits for a communicator's last member on hand-made samples: the member with the shortest
// GPU time arrived last and its time is the transfer; the others' time beyond it is their
// wait, which the bandwidths leave out; send/recv are not lined up by sequence number; a
// one-member communicator has no bandwidth.
#include <catch2/catch.hpp>

#include "analyze/collective_waits.h"
#include "analyze/rank_result.h"
#include "report/comms_json.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

col::HostCall AllReduce(int nranks, uint64_t gpu_ns, uint64_t bytes = 16 << 20) {
  col::HostCall c{};
  c.api = wire::NCCL_ALL_REDUCE;
  c.comm_nranks = nranks;
  c.coll_bytes = bytes;
  c.gpu_ns = gpu_ns;
  c.timed = true;
  return c;
}

// 3 ranks, 20 all-reduces of 16 MiB: rank 2 calls 10 ms late; each call's transfer takes
// 1 ms, so ranks 0 and 1 spend 11 ms in it. `sends` adds a send per step from rank 0 to rank
// 1 on a communicator of their own, the recv 3 ms shorter.
std::vector<col::RankResult> Late(bool sends = false) {
  std::vector<col::RankResult> ranks(3);
  for (int r = 0; r < 3; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node1";
    for (uint64_t s = 0; s < 20; ++s) {
      const uint64_t gpu = (r == 2 ? 1 : 11) * kMs;
      ranks[r].collectives.ops[0].Count(AllReduce(3, gpu));
      ranks[r].collectives.sample.push_back({42, s, s * 30 * kMs + (r == 2 ? 10 * kMs : 0), gpu, false, false, 0});
      if (sends && r < 2)
        ranks[r].collectives.sample.push_back({43, s, s * 30 * kMs, (r == 0 ? 5 : 2) * kMs, false, false,
                                               static_cast<uint8_t>(r == 0 ? 5 : 6)});
    }
  }
  return ranks;
}

}  // namespace

TEST_CASE("collective waits: the last member's time is the transfer, the others' time beyond it their wait") {
  const std::vector<col::RankResult> ranks = Late();
  const col::CollectiveWaits w = col::MeasureCollectiveWaits(ranks);
  REQUIRE(w.comms.size() == 1);
  CHECK(w.comms[0].compared == 20);
  CHECK(w.comms[0].last[2] == 20);
  CHECK(w.comms[0].wait_s[0] == Approx(0.2));
  CHECK(w.comms[0].wait_s[2] == 0.0);
  REQUIRE(w.ranks.size() == 3);
  CHECK(w.ranks[0].op_ns[0] == 200 * kMs);
  CHECK(w.ranks[1].Comm(42)[0] == 200 * kMs);
  CHECK(w.ranks[2].TotalNs() == 0);
  CHECK(w.job.op_ns[0] == 400 * kMs);
  // busbw from the transfer: every rank reads what the link did (16 MiB x 4/3 per ms).
  const double link = (16 << 20) * 4.0 / 3.0 / 1e6;
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    const auto& op = ranks[r].collectives.ops[0];
    CHECK(op.busbw(w.ranks[r].op_ns[0]) == Approx(link));
    nlohmann::json e;
    col::AddOpBandwidthJson(op, w.ranks[r].op_ns[0], e);
    CHECK(e["busbw_gbps"].get<double>() == Approx(link));
    CHECK(e["transfer_s"].get<double>() == Approx(0.02));
    CHECK(e["wait_s"].get<double>() == Approx(r == 2 ? 0.0 : 0.2));
  }
  // Without the waits, the waiting ranks' GPU time reads an 11x slower link.
  CHECK(ranks[0].collectives.ops[0].busbw() == Approx(link / 11));
}

TEST_CASE("collective waits: sends and recvs are not lined up as a communicator's calls") {
  const col::CollectiveWaits w = col::MeasureCollectiveWaits(Late(true));
  REQUIRE(w.comms.size() == 1);  // only the all-reduces' communicator
  CHECK(w.comms[0].hash == 42);
  CHECK(w.comms[0].compared == 20);
  CHECK(w.ranks[0].op_ns[5] == 0);
  CHECK(w.ranks[1].op_ns[6] == 0);
  CHECK(w.ranks[0].op_ns[0] == 200 * kMs);
}

TEST_CASE("collective waits: a one-member communicator has no busbw, and says why") {
  col::CollectiveFigures::Op solo;
  for (int i = 0; i < 4; ++i) solo.Count(AllReduce(1, 60 * kUs));
  CHECK(solo.only_local());
  CHECK(solo.bus_bytes == 0.0);
  nlohmann::json e;
  col::AddOpBandwidthJson(solo, 0, e);
  CHECK(e["busbw_gbps"].is_null());
  CHECK(e["algbw_gbps"].is_null());
  CHECK(e["one_member_calls"] == 4);
  CHECK(e["bandwidth_note"].get<std::string>().find("one-member") != std::string::npos);
  // Beside calls that crossed a link, only those make the bandwidths.
  col::CollectiveFigures::Op mixed = solo;
  mixed.Count(AllReduce(2, 1 * kMs, 8 << 20));
  CHECK_FALSE(mixed.only_local());
  CHECK(mixed.algbw() == Approx((8 << 20) / 1e6));
  CHECK(mixed.busbw() == Approx((8 << 20) / 1e6));  // 2 ranks: factor 1
  nlohmann::json m;
  col::AddOpBandwidthJson(mixed, 0, m);
  CHECK(m["one_member_calls"] == 4);
  CHECK(m["bandwidth_note"].is_string());
}

TEST_CASE("collective waits: an algbw above what the device's links carry says so") {
  // 16 MiB in 0.1 ms: 168 GB/s, on a device whose PCIe gen 5 x16 carries 63 GB/s each way.
  col::CollectiveFigures::Op fast;
  fast.Count(AllReduce(2, 100 * kUs));
  nlohmann::json collectives;
  col::AddOpBandwidthJson(fast, 0, collectives["allreduce"]);
  col::DeviceStateFigures d;
  d.samples = 1, d.pcie_gen = 5, d.pcie_width = 16;
  CHECK(d.LinkPeakGbps() == Approx(63.0).epsilon(0.01));
  col::NoteAboveLinkPeak(d.LinkPeakGbps(), collectives);
  CHECK(collectives["allreduce"]["bandwidth_note"].get<std::string>().find("above the 63.0 GB/s") != std::string::npos);
  // 18 NVLink 4 links up carry 450 GB/s: nothing to say; no NVML samples: nothing known.
  d.nvlink_links = d.nvlink_links_up = 18, d.nvlink_version = 6;
  nlohmann::json quiet;
  col::AddOpBandwidthJson(fast, 0, quiet["allreduce"]);
  col::NoteAboveLinkPeak(d.LinkPeakGbps(), quiet);
  CHECK_FALSE(quiet["allreduce"].contains("bandwidth_note"));
  col::NoteAboveLinkPeak(col::DeviceStateFigures{}.LinkPeakGbps(), quiet);
  CHECK_FALSE(quiet["allreduce"].contains("bandwidth_note"));
}
