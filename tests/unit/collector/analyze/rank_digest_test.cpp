// The rank digest (issue #21): a rank's RankResult survives encode/decode whole, and a
// root that receives digests writes the summary a root that received the raw frames writes.
#include <catch2/catch.hpp>

#include "analyze/rank_digest.h"
#include "fixtures.h"
#include "ingest/clock_shift.h"
#include "report/figures_json.h"
#include "step_loop.h"

using namespace gwtest;
using nlohmann::json;
namespace loop = gpuwatch::collector::test_loop;

namespace {

constexpr int64_t kOffset = 5'000'000'000;  // the root's clock minus the rank host's

// A rank with a bit of everything: NVTX steps with kernels and syncs, copies,
// collectives on a communicator of 2, a drop, memory calls.
wire::Batch Busy(int rank) {
  uint64_t end = 0;
  wire::Batch b = loop::Loop(40, 2 + rank, 3, 1000 * loop::kMs, &end);
  Comm(&b, 7, 2, rank);
  for (int i = 0; i < 40; ++i) {
    auto* c = Coll(&b, wire::NCCL_ALL_REDUCE, 7, 1 << 20, 400'000 + 1000 * rank, 1000 * loop::kMs + i * 5 * loop::kMs);
    c->set_seq(i);
    Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 4096, 1001 * loop::kMs + i * 5 * loop::kMs, 20'000, 0);
  }
  auto* m = Add(&b, wire::CUDA_MALLOC, 1000 * loop::kMs, 1000);
  m->set_bytes(1 << 30);
  m->set_address(0x1000);
  Drop(&b, "ring_full", 3);
  b.set_settled_ns(end);
  return b;
}

wire::Frame HelloOf(int rank, int64_t offset, bool digests) {
  wire::Frame f = Hello("digest-job", rank, 2);
  f.mutable_hello()->set_host(rank == 0 ? "ha" : "hb");
  f.mutable_hello()->set_clock_offset_ns(offset);
  f.mutable_hello()->set_upstream_digests(digests);
  return f;
}

// The rank as its host collector sees it (its own clock), ended normally.
const col::RankResult& Host(col::JobTable& jobs, int rank) {
  FakeRank r(jobs, HelloOf(rank, 0, false));
  REQUIRE(r.SendBatch(Busy(rank)));
  r.Goodbye();
  r.Close();
  for (const auto& [key, state] : jobs.Find("digest-job")->ranks())
    if (std::get<0>(key) == rank) return state->result();
  FAIL("no rank " << rank);
  throw;
}

json Figures(const col::RankResult& r) {
  json j = json::object();
  col::AddRankFigures(r, j);
  return j;
}

json WithoutStorage(json s) {
  for (json& r : s["ranks"]) r.erase("storage");
  return s;
}

}  // namespace

TEST_CASE("collector: a rank's figures survive the digest whole") {
  col::JobTable jobs(col::JobTiming{});
  const col::RankResult& r = Host(jobs, 1);
  REQUIRE(r.steps_total() == 40);
  REQUIRE(r.collectives.sample.size() == 40);
  REQUIRE(!r.findings.empty());

  const std::string bytes = col::EncodeRankResult(r);
  col::RankResult back;
  std::string error;
  REQUIRE(col::DecodeRankResult(bytes, &back, &error));
  CHECK(error.empty());
  // Every field: the decoded result encodes to the same bytes, and every view of a rank
  // (summary.json's ranks[] figures) reads the same from it.
  CHECK(col::EncodeRankResult(back) == bytes);
  CHECK(Figures(back) == Figures(r));
  CHECK(back.StepPercentileNs(0.9) == r.StepPercentileNs(0.9));
  CHECK(back.gpu.gaps.Quantile(0.5) == r.gpu.gaps.Quantile(0.5));
  CHECK(back.gpu.series.size() == r.gpu.series.size());

  // The shift moves the absolute times only.
  col::ShiftRankResult(back, kOffset);
  CHECK(back.host_first_ns == r.host_first_ns + kOffset);
  CHECK(back.steps.steps.front().start == r.steps.steps.front().start + kOffset);
  CHECK(back.collectives.sample.front().t_ns == r.collectives.sample.front().t_ns + kOffset);
  CHECK(back.gpu.series.origin_ns() == r.gpu.series.origin_ns() + kOffset);
  CHECK(back.WallS() == r.WallS());
  CHECK(back.StepMedianS() == r.StepMedianS());
}

TEST_CASE("collector: bytes that are not a digest are refused with a reason") {
  col::RankResult back;
  std::string error;
  CHECK_FALSE(col::DecodeRankResult("not msgpack at all", &back, &error));
  CHECK(error.find("digest") != std::string::npos);
  error.clear();
  CHECK_FALSE(col::DecodeRankResult(col::EncodeRankResult(col::RankResult{}).substr(0, 20), &back, &error));
  CHECK_FALSE(error.empty());

  // A root drops a connection whose digest it cannot read, and says why.
  col::JobTable root(col::JobTiming{});
  FakeRank r(root, HelloOf(0, 0, true));
  wire::Frame f;
  f.mutable_rank_digest()->set_format(col::kRankDigestFormat + 1);
  f.mutable_rank_digest()->set_result(col::EncodeRankResult(col::RankResult{}));
  CHECK_FALSE(r.Send(f));
  CHECK(r.conn->error().find("format") != std::string::npos);
}

TEST_CASE("collector: a root merging digests writes the summary a root interpreting the frames writes") {
  // Two hosts' collectors, one rank each.
  col::JobTable ha(col::JobTiming{}), hb(col::JobTiming{});
  const col::RankResult* host[2] = {&Host(ha, 0), &Host(hb, 1)};

  // Root A gets every frame (--upstream-raw), root B each rank's digest; both with the
  // offset in the Hello, B's digest shifted by the collector that forwarded it.
  col::JobTable raw(col::JobTiming{}), agg(col::JobTiming{});
  for (int rank = 0; rank < 2; ++rank) {
    FakeRank a(raw, HelloOf(rank, kOffset, false));
    REQUIRE(a.SendBatch(Busy(rank)));
    a.Goodbye();
    a.Close();

    FakeRank b(agg, HelloOf(rank, kOffset, true));
    wire::Frame d;
    d.mutable_rank_digest()->set_format(col::kRankDigestFormat);
    d.mutable_rank_digest()->set_result(col::EncodeRankResult(*host[rank]));
    d.mutable_rank_digest()->set_final(true);
    REQUIRE(b.Send(d));
    b.Goodbye();
    b.Close();
  }
  const json from_raw = WithoutStorage(SummaryJson(*raw.Find("digest-job")));
  const json from_digests = WithoutStorage(SummaryJson(*agg.Find("digest-job")));
  INFO(json::diff(from_raw, from_digests).dump(1));
  CHECK(from_raw == from_digests);
  // The job view: the straggler comparison and the merge ran on the digests.
  CHECK(from_digests["ranks"].size() == 2);
  CHECK(from_digests["job"]["collectives"]["allreduce"]["count"] == 80);
  CHECK(SummaryText(*raw.Find("digest-job")) == SummaryText(*agg.Find("digest-job")));
}

TEST_CASE("collector: the clock shift of a digest travels with it") {
  wire::Frame f;
  f.mutable_rank_digest()->set_shift_ns(-3);
  col::ShiftFrame(f, 10);
  col::ShiftFrame(f, 5);
  CHECK(f.rank_digest().shift_ns() == 12);
}
