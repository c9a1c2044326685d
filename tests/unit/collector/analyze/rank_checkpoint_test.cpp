// Rank checkpoints: a RankModel fed frames A, checkpointed, restored into a fresh model and
// fed frames B computes exactly the RankResult (the digest's bytes) of a model fed A + B,
// wherever the cut falls: mid-step, inside or outside a CUPTI window, with events held.
#include <catch2/catch.hpp>

#include "analyze/rank_checkpoint.h"
#include "analyze/state_out.h"
#include "analyze/rank_digest.h"
#include "rank_frames.h"

using namespace gwtest;

namespace {

void Feed(col::RankModel& m, const wire::Frame& f) {
  switch (f.body_case()) {
    case wire::Frame::kHello: m.OnHello(f.hello()); break;
    case wire::Frame::kBatch: m.OnBatch(f.batch()); break;
    case wire::Frame::kGoodbye: m.OnGoodbye(f.goodbye()); break;
    default: break;
  }
}

std::string FinalDigest(col::RankModel& m) {
  m.Flush();
  return col::EncodeRankResult(m.Result());
}

}  // namespace

TEST_CASE("collector: a rank restored from a checkpoint computes the figures of the rank never stopped") {
  const auto frames = RankFrames(60, 11);
  REQUIRE(frames.size() > 30);
  col::RankModel whole;
  for (const auto& f : frames) Feed(whole, f);
  const std::string expected = FinalDigest(whole);
  const col::RankResult& r = whole.Result();
  // The input exercises what a checkpoint must carry.
  REQUIRE(r.steps_total() == 60);
  REQUIRE(r.gpu.coverage.windows >= 3);
  uint64_t collectives = 0;
  for (const auto& op : r.collectives.ops) collectives += op.count;
  REQUIRE(collectives == 60);
  REQUIRE(r.memory.allocations == 60);
  REQUIRE(!r.findings.empty());

  // Every cut between two frames (mid-step: batches end every 11 ms of ~6.5 ms steps).
  for (size_t cut = 1; cut < frames.size(); ++cut) {
    DYNAMIC_SECTION("cut before frame " << cut) {
      col::RankModel first;
      for (size_t i = 0; i < cut; ++i) Feed(first, frames[i]);
      const std::string state = col::EncodeRankModel(first);
      // Written as the state is walked, the bytes are those of its tree written whole.
      const std::vector<uint8_t> whole_tree = nlohmann::json::to_msgpack(nlohmann::json::from_msgpack(state));
      CHECK(std::string(whole_tree.begin(), whole_tree.end()) == state);
      col::RankModel restored;
      std::string error;
      REQUIRE(col::DecodeRankModel(state, restored, &error));
      // The running figures agree at the cut, and the state encodes back to the same bytes.
      CHECK(col::EncodeRankResult(restored.Result()) == col::EncodeRankResult(first.Result()));
      const std::string again = col::EncodeRankModel(restored);
      INFO(nlohmann::json::diff(nlohmann::json::from_msgpack(state), nlohmann::json::from_msgpack(again)).dump().substr(0, 600));
      CHECK(again == state);
      for (size_t i = cut; i < frames.size(); ++i) Feed(restored, frames[i]);
      CHECK(FinalDigest(restored) == expected);
    }
  }
}

TEST_CASE("collector: a checkpoint restored twice over its own later state still agrees") {
  // Chained checkpoints, as a long run writes them: restore, feed, checkpoint again.
  const auto frames = RankFrames(45, 23);
  col::RankModel whole;
  for (const auto& f : frames) Feed(whole, f);
  const std::string expected = FinalDigest(whole);
  auto model = std::make_unique<col::RankModel>();
  for (size_t i = 0; i < frames.size(); ++i) {
    Feed(*model, frames[i]);
    if (i % 3 == 2) {
      auto next = std::make_unique<col::RankModel>();
      std::string error;
      REQUIRE(col::DecodeRankModel(col::EncodeRankModel(*model), *next, &error));
      model = std::move(next);
    }
  }
  CHECK(FinalDigest(*model) == expected);
}

TEST_CASE("collector: bytes that are not a checkpoint are refused with one line") {
  const auto frames = RankFrames(10, 20);
  col::RankModel m;
  for (const auto& f : frames) Feed(m, f);
  const std::string state = col::EncodeRankModel(m);
  for (const std::string& bad : {std::string("not msgpack"), state.substr(0, state.size() / 2),
                                 col::EncodeRankResult(m.Result())}) {
    col::RankModel into;
    std::string error;
    CHECK_FALSE(col::DecodeRankModel(bad, into, &error));
    CHECK_THAT(error, Catch::Contains("checkpoint"));
    CHECK(error.find('\n') == std::string::npos);
  }
}

TEST_CASE("collector: a checkpoint's arrays, written as they are walked, read back as nlohmann-json writes them") {
  // The header's three forms and their edges.
  for (const size_t n : {size_t{0}, size_t{15}, size_t{16}, size_t{0xffff}, size_t{0x10000}}) {
    INFO(n << " elements");
    nlohmann::json tree = nlohmann::json::array();
    col::StateOut out;
    out.Array(n);
    for (size_t i = 0; i < n; ++i) {
      const nlohmann::json e = i % 3 == 0 ? nlohmann::json(i) : i % 3 == 1 ? nlohmann::json(-0.5 * i) : nlohmann::json("s");
      tree.push_back(e);
      out.Leaf(e);
    }
    const std::vector<uint8_t> whole = nlohmann::json::to_msgpack(tree);
    CHECK(std::string(whole.begin(), whole.end()) == out.bytes());
    CHECK(nlohmann::json::from_msgpack(out.bytes()) == tree);
  }
}
