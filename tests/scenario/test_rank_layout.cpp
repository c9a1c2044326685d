// Unit tests of the TP x PP x DP layout (Megatron's order) and of the scenario keys that use
// it: "groups", a collective's "group" and "overlap", send/recv.
#include <catch2/catch.hpp>

#include "scenario_model.h"

using namespace gpuwatch::scenario;
using nlohmann::json;

TEST_CASE("layout: 16 ranks, tp 2, pp 4 as Megatron's docs lay them out") {
  const RankLayout l(16, {2, 4});
  CHECK(l.size(CommGroup::Dp) == 2);
  CHECK(l.members(CommGroup::Tp, 5) == std::vector<int>{4, 5});
  CHECK(l.members(CommGroup::Dp, 0) == std::vector<int>{0, 2});
  CHECK(l.members(CommGroup::Dp, 5) == std::vector<int>{5, 7});
  CHECK(l.members(CommGroup::Pp, 1) == std::vector<int>{1, 5, 9, 13});
  CHECK(l.members(CommGroup::World, 3).size() == 16);
  CHECK(l.coords(13).pp == 3);
  CHECK(l.coords(13).tp == 1);
  CHECK(l.coords(13).dp == 0);
  // Every rank is in exactly one group of each kind, at its own index, under one color.
  for (CommGroup g : {CommGroup::Dp, CommGroup::Tp, CommGroup::Pp})
    for (int r = 0; r < 16; ++r) {
      const auto m = l.members(g, r);
      REQUIRE(m.at(size_t(l.index(g, r))) == r);
      for (int peer : m) CHECK(l.color(g, peer) == l.color(g, r));
    }
  CHECK(l.color(CommGroup::Tp, 0) != l.color(CommGroup::Tp, 2));
}

TEST_CASE("scenario: groups, group, overlap, send and recv") {
  json doc = json::parse(R"({"name": "p", "ranks": 8, "steps": 2, "groups": {"tp": 2, "pp": 2},
    "step": [{"op": "recv", "bytes": 1024}, {"op": "kernels", "count": 2, "us": 10},
             {"op": "allreduce", "bytes": 4096, "group": "tp"},
             {"op": "allgather", "bytes": 64, "group": "dp", "overlap": true},
             {"op": "send", "bytes": 1024}]})");
  Scenario sc = parse_scenario(doc, "s.json");
  CHECK(sc.groups.tp == 2);
  CHECK(sc.groups.pp == 2);
  CHECK(sc.step[0].group == CommGroup::Pp);
  CHECK(sc.step[2].group == CommGroup::Tp);
  CHECK_FALSE(sc.step[2].overlap);
  CHECK(sc.step[3].overlap);
  CHECK(group_size(sc, sc.step[3]) == 2);
  // Stage 0 (ranks 0-3) only sends, stage 1 (ranks 4-7) only receives.
  auto first = expected_truth_ops(sc, 0), last = expected_truth_ops(sc, 7);
  CHECK(first.count("recv") == 0);
  CHECK(first.at("send").count == 2);
  CHECK(first.at("send").bytes == 2048);
  CHECK(last.count("send") == 0);
  CHECK(last.at("recv").count == 2);
  // AllGather's S is the group's size times the per-rank bytes, not the world's.
  CHECK(first.at("allgather").bytes == 2 * 2 * 64);
  CHECK(expected_device_kinds(sc, 7).at("recv").bytes == 2048);

  auto err = [&](const char* text) {
    try {
      parse_scenario(json::parse(text), "s.json");
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err(R"({"name": "p", "ranks": 6, "steps": 1, "groups": {"tp": 4}, "step": [{"op": "item"}]})") ==
        "s.json: groups: tp x pp (4) must divide ranks (6)");
  CHECK(err(R"({"name": "p", "ranks": 2, "steps": 1, "step": [{"op": "allreduce", "bytes": 4, "group": "pp"}]})") ==
        "s.json: step[0].group: expected \"world\", \"dp\" or \"tp\"");
  CHECK(err(R"({"name": "p", "ranks": 2, "steps": 1, "step": [{"op": "send", "bytes": 4, "overlap": true}]})") ==
        "s.json: step[0].overlap: unknown key for op \"send\"");
  CHECK(err(R"({"name": "p", "ranks": 2, "steps": 1, "groups": {"dp": 2}, "step": [{"op": "item"}]})") ==
        "s.json: groups.dp: unknown key");
}
