// The simulated CUPTI (libcupti.so.13): an nvcc-built program enables activity records and
// checks each one itself (sim_cupti_probe); these tests run it in its three modes.
#include <catch2/catch.hpp>

#include <string>

#include "support.h"

using namespace simtest;

namespace {
std::map<std::string, std::string> sim_env() { return {{"LD_LIBRARY_PATH", SIM_DIR}}; }
}  // namespace

TEST_CASE("sim: CUPTI records every kernel, copy, memset and API call the model executed", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "records"}, sim_env());
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["kernels"] == 6);
  CHECK(kv["copies"] == 3);
  CHECK(kv["memsets"] == 1);
  CHECK(kv["runtime_api"] == 9);
  CHECK(kv["driver_api"] == 2);
}

TEST_CASE("sim: CUPTI records carry the configured clock offset", "[sim]") {
  auto env = sim_env();
  env["SIMGPU_CUPTI_CLOCK_OFFSET_NS"] = "7000000000000";
  Result r = run({SIM_CUPTI_PROBE, "records"}, env);
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  CHECK(r.status == 0);
}

TEST_CASE("sim: CUPTI held by another profiler refuses cuptiSubscribe", "[sim]") {
  auto env = sim_env();
  env["SIMGPU_CUPTI_TAKEN"] = "1";
  Result r = run({SIM_CUPTI_PROBE, "taken"}, env);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("subscribe_name=CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") != std::string::npos);
}

TEST_CASE("sim: CUPTI drops and counts records when the consumer has no buffer", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "drops"}, sim_env());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["delivered"] == 8);
  CHECK(kv["dropped"] == 12);
}
