// CUPTI's API records of the calls that enqueue work only (enrich/cupti_api_records.h), end to
// end on the simulated CUPTI: a launch loop that checks every launch with cudaGetLastError, as
// PyTorch does, recorded whole (GPUWATCH_CUPTI=full). The check's record is CUPTI's cost for
// nothing gpuwatch uses; the launches' records are what tie kernels to their launches
// (gpu.launch_delay counts the kernels tied). The simulator's truth sums what CUPTI added.
#include <catch2/catch.hpp>

#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

constexpr double kLaunches = 60 * 1000;
const char* kCheckedLaunches = R"({
  "name": "checked_launches", "description": "launches each checked with cudaGetLastError",
  "ranks": 1, "steps": 60, "nvtx": true, "gpu": {"launch_us": 4},
  "step": [{"op": "kernels", "count": 1000, "us": 2, "check": true}, {"op": "sync"}]
})";
// The simulator's CUPTI (docs/simulator.md): device records 1.7 us a launch, an API record 0.5 us.
constexpr double kDeviceCostS = 1.7e-6, kApiRecordCostS = 0.5e-6;

JobRun Run(const std::string& name, std::map<std::string, std::string> env) {
  env["GPUWATCH_CUPTI"] = "full";
  env["GPUWATCH_SAMPLE_HZ"] = "0";
  return RunScenario(name, kCheckedLaunches, {.truth = true, .env = env});
}

double Num(const json& j) { return j.get<double>(); }
double CuptiAdded(const JobRun& r) { return Num(r.Device(0)["cupti"]["added_s"]); }
double KernelsTied(const JobRun& r) { return Num(r.summary["ranks"][0]["gpu"]["launch_delay"]["count"]); }
std::string SourceDetail(const JobRun& r) { return r.summary["ranks"][0]["gpu"].value("source_detail", ""); }

}  // namespace

TEST_CASE("CUPTI API records: a framework's per-launch check costs no record, its launches keep theirs") {
  const JobRun chosen = Run("api-records-enqueue", {});
  const JobRun all = Run("api-records-all", {{"GPUWATCH_CUPTI_API_RECORDS", "all"}});
  INFO("CUPTI's truth: chosen " << chosen.Device(0)["cupti"].dump() << ", all " << all.Device(0)["cupti"].dump()
                                << "\ngpu: " << chosen.summary["ranks"][0]["gpu"].dump().substr(0, 800));
  // Each launch paid its device and API records, no check paid anything (whole kinds: 0.5 us
  // more a launch, for the check's record).
  CHECK(CuptiAdded(chosen) <= 1.25 * kLaunches * (kDeviceCostS + kApiRecordCostS));
  CHECK(CuptiAdded(all) - CuptiAdded(chosen) >= 0.8 * kLaunches * kApiRecordCostS);
  // Every kernel still tied to its launch, as with every call recorded.
  CHECK(KernelsTied(chosen) >= 0.99 * kLaunches);
  CHECK(KernelsTied(all) >= 0.99 * kLaunches);
  CHECK(SourceDetail(chosen).find("every call") == std::string::npos);
}

TEST_CASE("CUPTI API records: a CUPTI that cannot choose calls, or ignores the choice, gets whole kinds") {
  SECTION("without cuptiActivityEnableRuntimeApi (CUPTI before 12): whole kinds from the start") {
    const JobRun r = Run("api-records-none", {{"SIMGPU_CUPTI_API_CHOICE", "none"}});
    INFO("CUPTI's truth " << r.Device(0)["cupti"].dump());
    CHECK(KernelsTied(r) >= 0.99 * kLaunches);
    CHECK(CuptiAdded(r) >= 0.9 * kLaunches * (kDeviceCostS + 2 * kApiRecordCostS));  // the checks' records too
  }
  SECTION("runtime records not wanted (GPUWATCH_CUPTI_KINDS): launches through the runtime have none, and that is no sign") {
    const JobRun r = Run("api-records-driver-only", {{"GPUWATCH_CUPTI_KINDS", "kernel,driver"}});
    CHECK(SourceDetail(r).find("every call") == std::string::npos);
    CHECK(KernelsTied(r) == 0);  // no runtime record to tie them to
  }
  SECTION("a CUPTI that takes the choice and records none of the calls chosen: whole kinds once that shows") {
    const JobRun r = Run("api-records-ignored", {{"SIMGPU_CUPTI_API_CHOICE", "ignored"}});
    INFO("gpu: " << r.summary["ranks"][0]["gpu"].dump().substr(0, 800));
    CHECK(SourceDetail(r).find("API records of every call") != std::string::npos);
    CHECK(KernelsTied(r) >= 0.9 * kLaunches);
  }
}
