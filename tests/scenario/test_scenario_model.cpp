// Unit tests of scenario format v1: errors, defaults, expansion, expected totals.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <filesystem>

#include "scenario_model.h"

using namespace gpuwatch::scenario;
using nlohmann::json;

namespace {

json minimal() {
  return json::parse(R"({"name": "t", "ranks": 2, "steps": 3, "step": [{"op": "host", "ms": 1}]})");
}

// The error message a document produces ("" if it parses).
std::string error_of(const json& doc) {
  try {
    parse_scenario(doc, "s.json");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

std::string error_with_op(const json& op) {
  json doc = minimal();
  doc["step"].push_back(op);
  return error_of(doc);
}

}  // namespace

TEST_CASE("scenario: minimal scenario parses with defaults") {
  Scenario sc = parse_scenario(minimal(), "s.json");
  CHECK(sc.name == "t");
  CHECK(sc.ranks == 2);
  CHECK(sc.steps == 3);
  CHECK(sc.nvtx);
  CHECK(sc.description.empty());
  CHECK(sc.gpu.empty());
  CHECK(sc.every.empty());
  REQUIRE(sc.step.size() == 1);
  CHECK(sc.step[0].kind == OpKind::Host);
  CHECK(sc.step[0].ms == 1);
  CHECK(sc.step[0].where == "step[0]");
  CHECK(sc.step[0].wait == HostWait::Sleep);  // format v1 without "wait" means what it always meant
}

TEST_CASE("scenario: host op wait and read_mbps") {
  json doc = minimal();
  doc["step"] = json::parse(R"([{"op": "host", "ms": 1, "wait": "cpu"}, {"op": "host", "ms": 2, "wait": "read"},
                                {"op": "host", "ms": 3, "wait": "read", "read_mbps": 20}, {"op": "host", "ms": 4, "wait": "sleep"}])");
  Scenario sc = parse_scenario(doc, "s.json");
  CHECK(sc.step[0].wait == HostWait::Cpu);
  CHECK(sc.step[1].wait == HostWait::Read);
  CHECK(sc.step[1].read_mbps == 100);
  CHECK(sc.step[2].read_mbps == 20);
  CHECK(sc.step[3].wait == HostWait::Sleep);
  CHECK(error_with_op({{"op", "host"}, {"ms", 1}, {"wait", "disk"}}) ==
        "s.json: step[1].wait: expected \"sleep\", \"cpu\" or \"read\"");
  CHECK(error_with_op({{"op", "host"}, {"ms", 1}, {"read_mbps", 5}}) ==
        "s.json: step[1].read_mbps: only with \"wait\": \"read\"");
  CHECK(error_with_op({{"op", "host"}, {"ms", 1}, {"wait", "read"}, {"read_mbps", 0}}) ==
        "s.json: step[1].read_mbps: expected a number > 0");
}

TEST_CASE("scenario: op defaults") {
  json doc = minimal();
  doc["step"] = json::parse(R"([{"op": "h2d", "bytes": 16}, {"op": "d2h", "bytes": 8, "pinned": false, "async": false},
                                {"op": "kernels", "count": 2, "us": 5}, {"op": "sync"}, {"op": "item"},
                                {"op": "allgather", "bytes": 64}])");
  Scenario sc = parse_scenario(doc, "s.json");
  CHECK(sc.step[0].pinned);
  CHECK(sc.step[0].async);
  CHECK_FALSE(sc.step[1].pinned);
  CHECK_FALSE(sc.step[1].async);
  CHECK(sc.step[2].name.empty());
  CHECK(sc.step[2].via == Via::Runtime);  // format v1 without "via" means what it always meant
  CHECK(sc.step[3].what == SyncWhat::Stream);
  CHECK(sc.step[5].kind == OpKind::AllGather);
  CHECK(sc.step[5].bytes == 64);
}

TEST_CASE("scenario: errors name the key") {
  CHECK(error_with_op({{"op", "h2d"}, {"bytes", -5}}) == "s.json: step[1].bytes: expected a positive integer");
  CHECK(error_with_op({{"op", "h2d"}, {"bytes", 2.5}}) == "s.json: step[1].bytes: expected a positive integer");
  CHECK(error_with_op({{"op", "h2d"}, {"bytes", "8"}}) == "s.json: step[1].bytes: expected a positive integer");
  CHECK(error_with_op({{"op", "h2d"}}) == "s.json: step[1].bytes: missing (required)");
  CHECK(error_with_op({{"op", "h2d"}, {"bytes", 4}, {"pinned", 1}}) == "s.json: step[1].pinned: expected true or false");
  CHECK(error_with_op({{"op", "h2d"}, {"bytes", 4}, {"size", 1}}) == "s.json: step[1].size: unknown key for op \"h2d\"");
  CHECK(error_with_op({{"op", "teleport"}}).rfind("s.json: step[1].op: expected one of host, h2d", 0) == 0);
  CHECK(error_with_op({{"ms", 3}}) == "s.json: step[1].op: missing (required)");
  CHECK(error_with_op({{"op", "host"}, {"ms", -1}}) == "s.json: step[1].ms: expected a number >= 0");
  CHECK(error_with_op({{"op", "kernels"}, {"count", 0}, {"us", 1}}) == "s.json: step[1].count: expected a positive integer");
  CHECK(error_with_op({{"op", "kernels"}, {"count", 1}, {"us", 0}}) == "s.json: step[1].us: expected a number > 0");
  CHECK(error_with_op({{"op", "kernels"}, {"count", 1}, {"us", 1}, {"name", 3}}) == "s.json: step[1].name: expected a string");
  CHECK(error_with_op({{"op", "kernels"}, {"count", 1}, {"us", 1}, {"via", "driver"}}) ==
        "s.json: step[1].via: expected \"runtime\", \"library\" or \"triton\"");
  CHECK(error_with_op({{"op", "h2d"}, {"bytes", 8}, {"via", "library"}}) == "s.json: step[1].via: unknown key for op \"h2d\"");
  CHECK(error_with_op({{"op", "sync"}, {"what", "host"}}) == "s.json: step[1].what: expected \"stream\", \"device\" or \"event\"");
  CHECK(error_with_op({{"op", "allreduce"}, {"bytes", 6}}) == "s.json: step[1].bytes: expected a positive multiple of 4 (float32 elements)");
  CHECK(error_with_op({{"op", "item"}, {"bytes", 4}}) == "s.json: step[1].bytes: unknown key for op \"item\"");
  CHECK(error_with_op(json(3)) == "s.json: step[1]: expected an object like {\"op\": \"host\", ...}");
}

TEST_CASE("scenario: top-level errors") {
  json doc = minimal();
  doc["color"] = "red";
  CHECK(error_of(doc) == "s.json: color: unknown key");
  doc = minimal();
  doc.erase("name");
  CHECK(error_of(doc) == "s.json: name: missing (required)");
  doc = minimal();
  doc["ranks"] = 0;
  CHECK(error_of(doc) == "s.json: ranks: expected a positive integer");
  doc = minimal();
  doc["steps"] = "ten";
  CHECK(error_of(doc) == "s.json: steps: expected a positive integer");
  doc = minimal();
  doc["step"] = json::array();
  CHECK(error_of(doc) == "s.json: step: expected a non-empty array of ops");
  doc = minimal();
  doc["nvtx"] = "no";
  CHECK(error_of(doc) == "s.json: nvtx: expected true or false");
  doc = minimal();
  doc["format"] = 2;
  CHECK(error_of(doc) == "s.json: format: expected 1 (the only version this driver knows)");
  doc = minimal();
  doc["gpu"] = {{"warp_gbps", 3}};
  CHECK(error_of(doc) == "s.json: gpu.warp_gbps: unknown simulator key");
  doc["gpu"] = {{"busbw_gbps", 0}};
  CHECK(error_of(doc) == "s.json: gpu.busbw_gbps: expected a number > 0");
  doc["gpu"] = {{"launch_us", -1}};
  CHECK(error_of(doc) == "s.json: gpu.launch_us: expected a number >= 0");
  doc = minimal();
  doc["every"] = json::parse(R"([{"period": 0, "ops": [{"op": "item"}]}])");
  CHECK(error_of(doc) == "s.json: every[0].period: expected a positive integer");
  doc["every"] = json::parse(R"([{"period": 2, "ops": [{"op": "item", "x": 1}]}])");
  CHECK(error_of(doc) == "s.json: every[0].ops[0].x: unknown key for op \"item\"");
  doc["every"] = json::parse(R"([{"period": 2, "ops": [], "when": 1}])");
  CHECK(error_of(doc) == "s.json: every[0].when: unknown key");
  doc = minimal();
  doc["rank_scale"] = json::parse(R"({"2": {"host": 2}})");
  CHECK(error_of(doc) == "s.json: rank_scale.2: expected a rank number from 0 to 1");
  doc["rank_scale"] = json::parse(R"({"1": {"gpu": 2}})");
  CHECK(error_of(doc) == "s.json: rank_scale.1.gpu: unknown key");
  doc["rank_scale"] = json::parse(R"({"1": {"host": 0}})");
  CHECK(error_of(doc) == "s.json: rank_scale.1.host: expected a number > 0");
}

TEST_CASE("scenario: invalid JSON and missing file are one-line errors") {
  try {
    parse_scenario_text("{\"name\": ", "bad.json");
    FAIL("no error");
  } catch (const ScenarioError& e) {
    std::string m = e.what();
    CHECK(m.rfind("bad.json: invalid JSON: ", 0) == 0);
    CHECK(m.find('\n') == std::string::npos);
  }
  CHECK_THROWS_WITH(load_scenario("/nonexistent/x.json"), "/nonexistent/x.json: cannot open the file");
}

TEST_CASE("scenario: every runs after the step ops on step % period == period - 1") {
  json doc = minimal();
  doc["steps"] = 10;
  doc["every"] = json::parse(R"([{"period": 4, "ops": [{"op": "item"}]}, {"period": 5, "ops": [{"op": "sync"}]}])");
  Scenario sc = parse_scenario(doc, "s.json");
  for (int s = 0; s < 10; ++s) {
    auto ops = sc.ops_for_step(s);
    REQUIRE(ops[0]->kind == OpKind::Host);
    size_t expect = 1 + (s % 4 == 3) + (s % 5 == 4);
    CHECK(ops.size() == expect);
  }
  auto ops = sc.ops_for_step(3);
  CHECK(ops.back()->kind == OpKind::Item);
  ops = sc.ops_for_step(4);
  CHECK(ops.back()->kind == OpKind::Sync);
}

TEST_CASE("scenario: expected totals per op, every and rank_scale included") {
  json doc = json::parse(R"({
    "name": "t", "ranks": 4, "steps": 20,
    "step": [{"op": "host", "ms": 8}, {"op": "h2d", "bytes": 1000, "pinned": false},
             {"op": "kernels", "count": 20, "us": 150, "name": "fwd"}, {"op": "allreduce", "bytes": 400},
             {"op": "allgather", "bytes": 100}, {"op": "reducescatter", "bytes": 8}, {"op": "broadcast", "bytes": 12},
             {"op": "item"}, {"op": "sync", "what": "device"}],
    "every": [{"period": 10, "ops": [{"op": "host", "ms": 200}, {"op": "d2h", "bytes": 64}, {"op": "sync", "what": "event"}]}],
    "rank_scale": {"1": {"host": 1.5, "kernels": 2}}})");
  Scenario sc = parse_scenario(doc, "s.json");

  auto t0 = expected_truth_ops(sc, 0);
  CHECK(t0["host"].count == 22);
  CHECK(t0["host"].seconds == Approx(20 * 0.008 + 2 * 0.2));
  CHECK(t0["h2d"].count == 20);
  CHECK(t0["h2d"].bytes == 20000);
  CHECK(t0["d2h"].count == 2);
  CHECK(t0["d2h"].bytes == 128);
  CHECK(t0["kernels"].count == 400);
  CHECK(t0["kernels"].seconds == Approx(400 * 150e-6));
  CHECK(t0["item"].count == 20);
  CHECK(t0["item"].bytes == 80);
  CHECK(t0["sync"].count == 22);
  CHECK(t0["sync_device"].count == 20);
  CHECK(t0["sync_event"].count == 2);
  CHECK(t0.count("sync_stream") == 0);
  CHECK(t0["allreduce"].bytes == 20 * 400);
  CHECK(t0["allgather"].bytes == 20 * 4 * 100);  // nccl-tests: S = ranks x per-rank bytes
  CHECK(t0["reducescatter"].bytes == 20 * 4 * 8);
  CHECK(t0["broadcast"].bytes == 20 * 12);

  auto t1 = expected_truth_ops(sc, 1);
  CHECK(t1["host"].seconds == Approx(1.5 * (20 * 0.008 + 2 * 0.2)));
  CHECK(t1["kernels"].seconds == Approx(2 * 400 * 150e-6));
  CHECK(t1["kernels"].count == 400);

  auto d0 = expected_device_kinds(sc, 0);
  CHECK(d0["kernel"].count == 400);
  CHECK(d0["kernel"].seconds == Approx(0.06));
  CHECK(d0["d2h"].count == 22);  // item's 4-byte copies are D2H copies on the device
  CHECK(d0["d2h"].bytes == 128 + 80);
  CHECK(d0["h2d"].bytes == 20000);
  CHECK(d0["allgather"].count == 20);
  CHECK(d0.count("host") == 0);
  CHECK(d0.count("sync") == 0);

  CHECK(device_buffer_bytes(sc) == 1000);
  CHECK(host_buffer_bytes(sc, false) == 1000);
  CHECK(host_buffer_bytes(sc, true) == 64);
}

TEST_CASE("scenario: library kernels have their own truth key and count as device kernels") {
  json doc = minimal();
  doc["steps"] = 10;
  doc["step"] = json::parse(R"([{"op": "kernels", "count": 3, "us": 100},
                                {"op": "kernels", "count": 2, "us": 1000, "via": "library"},
                                {"op": "kernels", "count": 1, "us": 50, "via": "runtime"},
                                {"op": "kernels", "count": 1, "us": 200, "via": "triton"}])");
  doc["rank_scale"] = json::parse(R"({"1": {"kernels": 2}})");
  Scenario sc = parse_scenario(doc, "s.json");
  CHECK(sc.step[1].via == Via::Library);
  CHECK(sc.step[2].via == Via::Runtime);
  CHECK(sc.step[3].via == Via::Triton);
  auto t = expected_truth_ops(sc, 1);
  CHECK(t["kernels"].count == 40);
  CHECK(t["kernels"].seconds == Approx(2 * 10 * (300e-6 + 50e-6)));
  CHECK(t["kernels_library"].count == 30);  // library and triton: both driver launches
  CHECK(t["kernels_library"].seconds == Approx(2 * 10 * (2e-3 + 200e-6)));
  auto d = expected_device_kinds(sc, 1);
  CHECK(d["kernel"].count == 70);
  CHECK(d["kernel"].seconds == Approx(2 * 10 * (300e-6 + 50e-6 + 2e-3 + 200e-6)));
  CHECK(d.count("kernels_library") == 0);
}

TEST_CASE("scenario: simulator config string") {
  json doc = minimal();
  doc["gpu"] = {{"h2d_pinned_gbps", 24}, {"coll_latency_us", 30.5}};
  Scenario sc = parse_scenario(doc, "s.json");
  CHECK(simgpu_config(sc) == "coll_latency_us=30.5,h2d_pinned_gbps=24");
  CHECK(simgpu_config(parse_scenario(minimal(), "s.json")).empty());
}

TEST_CASE("scenario: every bundled scenario is valid and described") {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GPUWATCH_SCENARIOS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    Scenario sc = load_scenario(entry.path().string());
    CHECK(sc.name == entry.path().stem().string());
    CHECK_FALSE(sc.description.empty());
    // Multi-rank, except dataloader_bound: its ranks spin on the CPU, and two of them on a
    // two-core test machine delay each other's collectives (docs/scenarios.md).
    CHECK(sc.ranks >= (sc.name == "dataloader_bound" ? 1 : 2));
    ++n;
  }
  CHECK(n >= 8);
}

TEST_CASE("scenario: graph and memset ops, their truth keys and device kinds") {
  json doc = minimal();
  doc["ranks"] = 1;
  doc["steps"] = 4;
  doc["step"] = json::parse(R"([{"op": "graph", "kernels": 10, "us": 20, "replays": 3},
                                {"op": "kernels", "count": 5, "us": 10},
                                {"op": "memset", "bytes": 4096}])");
  doc["every"] = json::parse(R"([{"period": 2, "ops": [{"op": "graph", "kernels": 2, "us": 100, "replays": 1}]}])");
  const Scenario sc = parse_scenario(doc, "s.json");
  REQUIRE(sc.step[0].kind == OpKind::Graph);
  CHECK(sc.step[0].count == 10);
  CHECK(sc.step[0].replays == 3);
  CHECK(sc.step[2].kind == OpKind::Memset);
  REQUIRE(graph_ops(sc).size() == 2);
  CHECK(graph_ops(sc)[1]->count == 2);
  const auto ops = expected_truth_ops(sc, 0);
  CHECK(ops.at("graph").count == 4 * 3 + 2);
  CHECK(ops.at("graph_kernels").count == 4 * 30 + 2 * 2);
  CHECK(ops.at("kernels").count == 20);
  CHECK(ops.at("memset").count == 4);
  CHECK(ops.at("memset").bytes == 4 * 4096);
  const auto dev = expected_device_kinds(sc, 0);
  CHECK(dev.at("kernel").count == 4 * 30 + 2 * 2 + 20);
  CHECK(dev.at("kernel").seconds == Approx(4 * 30 * 20e-6 + 2 * 2 * 100e-6 + 20 * 10e-6));
  CHECK(dev.at("memset").count == 4);
  const GraphTotals g = expected_graphs(sc, 0);
  CHECK(g.launches == 14);
  CHECK(g.kernels == 124);
  CHECK(g.kernel_seconds == Approx(4 * 30 * 20e-6 + 2 * 2 * 100e-6));
  CHECK(device_buffer_bytes(sc) >= 4096);
  // Every key is required, and no other is allowed.
  CHECK(error_with_op({{"op", "graph"}, {"kernels", 2}, {"us", 1}}).find("step[1].replays: missing") != std::string::npos);
  CHECK(error_with_op({{"op", "graph"}, {"kernels", 2}, {"us", 1}, {"replays", 1}, {"count", 2}})
            .find("step[1].count: unknown key") != std::string::npos);
  CHECK(error_with_op({{"op", "memset"}}).find("step[1].bytes: missing") != std::string::npos);
}
