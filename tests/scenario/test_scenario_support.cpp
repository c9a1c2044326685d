// Unit tests of the rank's helpers that need no GPU: the truth file, the id rendezvous, and
// the rank an external launcher gives (--from-launcher).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>
#include <unistd.h>

#include "external_launcher.h"
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

  // Once every rank has read it, rank 0 takes the id and the emptied folder away.
  unpublish_blob(d.string(), "nccl-unique-id");
  CHECK_FALSE(fs::exists(d));
}

namespace {
using Vars = std::vector<std::pair<std::string, std::string>>;

// Sets `vars` (an empty value unsets) for one test and restores the old values after it.
struct ScopedEnv {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  explicit ScopedEnv(const Vars& vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      if (v.empty()) unsetenv(k.c_str()); else setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved)
      if (v) setenv(k.c_str(), v->c_str(), 1); else unsetenv(k.c_str());
  }
};
const Vars kNoLauncher = {
    {"RANK", ""}, {"OMPI_COMM_WORLD_RANK", ""}, {"SLURM_PROCID", ""}, {"PMI_RANK", ""}, {"PMIX_RANK", ""},
    {"SLURM_JOB_ID", ""}, {"PMIX_NAMESPACE", ""}, {"OMPI_MCA_ess_base_jobid", ""}};
}  // namespace

TEST_CASE("scenario: --from-launcher takes the rank from the launcher's variables, in the library's order") {
  ScopedEnv clean(kNoLauncher);
  CHECK_FALSE(rank_from_launcher().has_value());
  {
    ScopedEnv slurm(Vars{{"SLURM_PROCID", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "4"}, {"PMIX_RANK", "2"},
                     {"SLURM_JOB_ID", "17"}, {"SLURM_STEP_ID", "0"}});
    const auto r = rank_from_launcher();
    REQUIRE(r.has_value());
    CHECK((r->source == "SLURM_PROCID" && r->rank == 2 && r->local_rank == 0 && r->world_size == 4));
    CHECK(launched_run_dir("/tmp") == "/tmp/gpuwatch-scenario-slurm-17.0");
  }
  {
    ScopedEnv ompi(Vars{{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                    {"OMPI_COMM_WORLD_SIZE", "4"}, {"PMIX_RANK", "3"}, {"PMIX_NAMESPACE", "4151/0"}});
    const auto r = rank_from_launcher();
    REQUIRE(r.has_value());
    CHECK((r->source == "OMPI_COMM_WORLD_RANK" && r->rank == 3 && r->world_size == 4));
    CHECK(launched_run_dir("/x") == "/x/gpuwatch-scenario-pmix-4151_0");  // no '/' from the key
  }
  {
    ScopedEnv pmix(Vars{{"PMIX_RANK", "1"}});
    const auto r = rank_from_launcher();
    REQUIRE(r.has_value());
    CHECK((r->source == "PMIX_RANK" && r->rank == 1 && r->local_rank == -1 && r->world_size == -1));
    CHECK(launched_run_dir("/x") == "/x/gpuwatch-scenario-ppid-" + std::to_string(getppid()));
  }
}
