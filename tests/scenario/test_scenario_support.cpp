// Unit tests of the rank's helpers that need no GPU: the truth file and the id rendezvous.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "rendezvous_file.h"
#include "truth.h"

using namespace gpuwatch::scenario;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("gpuwatch-scenario-test-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("scenario: truth file layout") {
  TruthRecorder t;
  t.add("host", 0.5);
  t.add("host", 0.25);
  t.add("kernels", 0.001, 0, 20);
  t.add("allreduce", 0.002, 4096);
  t.set("wall_s", 1.5);
  fs::path d = fresh_dir("truth");
  t.write(d.string(), 3);
  std::ifstream in(d / "truth-rank-3.json");
  auto j = nlohmann::json::parse(in);
  CHECK(j["rank"] == 3);
  CHECK(j["wall_s"] == 1.5);
  CHECK(j["ops"]["host"]["count"] == 2);
  CHECK(j["ops"]["host"]["total_s"].get<double>() == Approx(0.75));
  CHECK(j["ops"]["kernels"]["count"] == 20);
  CHECK(j["ops"]["allreduce"]["bytes"] == 4096);
  CHECK_FALSE(fs::exists(d / "truth-rank-3.json.tmp"));
  fs::remove_all(d);
}

TEST_CASE("scenario: unique id rendezvous through a file") {
  fs::path d = fresh_dir("uid");
  char id[128];
  for (int i = 0; i < 128; ++i) id[i] = char(i);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    publish_blob(d.string(), "nccl-unique-id", id, sizeof id);
  });
  auto got = wait_blob(d.string(), "nccl-unique-id", sizeof id, 5);
  writer.join();
  REQUIRE(got.size() == 128);
  CHECK(std::equal(got.begin(), got.end(), id));
  CHECK_FALSE(fs::exists(d / "nccl-unique-id.tmp"));

  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(wait_blob(d.string(), "missing", 4, 0.05), Catch::Contains("timed out") && Catch::Contains("missing"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  fs::remove_all(d);
}
