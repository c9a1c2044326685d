// Unit tests of the scenario's device-state keys (device_keys.h) and the `alloc` op.
#include <catch2/catch.hpp>

#include "device_keys.h"
#include "launcher.h"
#include "scenario_model.h"

using namespace gpuwatch::scenario;
using nlohmann::json;

namespace {

json with_gpu(const json& gpu) {
  json doc = json::parse(R"({"name": "t", "ranks": 1, "steps": 4, "step": [{"op": "host", "ms": 1}]})");
  doc["gpu"] = gpu;
  return doc;
}

std::string error_of(const json& doc) {
  try {
    parse_scenario(doc, "s.json");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("scenario: device keys go to SIMGPU_CONFIG as the simulator reads them") {
  const Scenario sc = parse_scenario(
      with_gpu(json::parse(R"({"memory_gib": 80, "sm_count": 108, "pcie_gen": 4, "pcie_width": 8,
                              "nvlink_links": 12, "numa_node": 1, "throttle": "thermal",
                              "other_processes": [{"memory_gib": 20, "busy": 0.5}, {"memory_gib": 1.5}]})")),
      "s.json");
  CHECK(simgpu_config(sc) ==
        "memory_gib=80,numa_node=1,nvlink_links=12,pcie_gen=4,pcie_width=8,sm_count=108,other_processes=20:0.5;1.5:0,throttle=thermal");
  CHECK(pcie_link_fraction(sc) == Approx(1.969 * 8 / (3.938 * 16)));
  CHECK(pcie_link_fraction(parse_scenario(with_gpu(json::object()), "s.json")) == 1.0);
  // Thermal throttling (clock at 60%) and another process half busy: kernels take 1/(0.6 x 0.5).
  CHECK(kernel_slowdown(sc) == Approx(1 / (0.6 * 0.5)));
  CHECK(kernel_slowdown(parse_scenario(with_gpu(json::object()), "s.json")) == 1.0);
}

TEST_CASE("scenario: a gpu object with only text keys still configures the simulator") {
  LaunchOptions opt;
  opt.sim = true;
  opt.sim_dir = "/sim";
  auto config_of = [&](const json& gpu) -> std::string {
    for (const auto& [k, v] : sim_environment(parse_scenario(with_gpu(gpu), "s.json"), opt))
      if (k == "SIMGPU_CONFIG") return v;
    return "(none)";
  };
  CHECK(config_of(json::parse(R"({"throttle": "power"})")) == "throttle=power");
  CHECK(config_of(json::parse(R"({"other_processes": [{"memory_gib": 2, "busy": 0.25}]})")) ==
        "other_processes=2:0.25");
  CHECK(config_of(json::object()) == "(none)");
}

TEST_CASE("scenario: bad device keys are refused, naming the key") {
  CHECK(error_of(with_gpu({{"memory_gib", 0}})) == "s.json: gpu.memory_gib: expected a number > 0");
  CHECK(error_of(with_gpu({{"sm_count", 1.5}})) == "s.json: gpu.sm_count: expected an integer from 1 to 1024");
  CHECK(error_of(with_gpu({{"pcie_gen", 6}})) == "s.json: gpu.pcie_gen: expected an integer from 1 to 5");
  CHECK(error_of(with_gpu({{"pcie_width", 12}})) == "s.json: gpu.pcie_width: expected 1, 2, 4, 8 or 16 lanes");
  CHECK(error_of(with_gpu({{"nvlink_links", 19}})) == "s.json: gpu.nvlink_links: expected an integer from 0 to 18");
  CHECK(error_of(with_gpu({{"numa_node", 2}})) == "s.json: gpu.numa_node: expected an integer from 0 to 1");
  CHECK(error_of(with_gpu({{"throttle", "hot"}})) == "s.json: gpu.throttle: expected \"none\", \"power\" or \"thermal\"");
  CHECK(error_of(with_gpu(json::parse(R"({"other_processes": [{"busy": 2}]})"))) ==
        "s.json: gpu.other_processes[0].busy: expected a fraction from 0 to 1");
  CHECK(error_of(with_gpu(json::parse(R"({"other_processes": [{"pid": 2}]})"))) ==
        "s.json: gpu.other_processes[0].pid: unknown key");
}

TEST_CASE("scenario: alloc ops keep their memory to the end") {
  json doc = with_gpu(json::object());
  doc["step"].push_back({{"op", "alloc"}, {"bytes", 1024}});
  doc["every"] = json::parse(R"([{"period": 2, "ops": [{"op": "alloc", "bytes": 4096}]}])");
  const Scenario sc = parse_scenario(doc, "s.json");
  CHECK(expected_memory_peak(sc) == 4 + 4 * 1024 + 2 * 4096);  // the setup's 4-byte buffer
  const auto ops = expected_truth_ops(sc, 0);
  CHECK(ops.at("alloc").count == 6);
  CHECK(ops.at("alloc").bytes == 4 * 1024 + 2 * 4096);
  CHECK(expected_device_kinds(sc, 0).count("alloc") == 0);  // no device work
  doc["step"].push_back({{"op", "alloc"}, {"bytes", 0}});
  CHECK(error_of(doc) == "s.json: step[2].bytes: expected a positive integer");
}
