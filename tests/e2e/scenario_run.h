// The end-to-end tests' one fixture: a job under LD_PRELOAD on the simulated GPU, with the
// collector it autostarts, in a fresh work directory; then its summary.json, parsed, and the
// scenario driver's truth files.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema_check.h"
#include "subprocess.h"

namespace gpuwatch::e2e {

using json = nlohmann::json;

// The environment of a job under gpuwatch in `work`: LD_PRELOAD=libgpuwatch.so,
// GPUWATCH_SOCKET_DIR=WORK/sock (where a rank finds or starts the collector),
// GPUWATCH_OUT=WORK/out; then `extra`, which may replace those (an empty value removes one).
std::map<std::string, std::string> JobEnv(const std::string& work,
                                          const std::map<std::string, std::string>& extra = {});

struct JobOptions {
  bool truth = false;                           // scenarios: the driver writes WORK/truth (--truth)
  std::map<std::string, std::string> env = {};  // added to JobEnv(WORK)
  double timeout_s = 120;                       // then the job is killed
  // true: REQUIRE exit code 0 and OUT/summary.json within 30 s, and parse it.
  // false: only run the job; the test checks what came of it.
  bool expect_summary = true;
  // true: played under `gpuwatch run -q -o WORK/out --`, whose collector is up before the job
  // starts, instead of the one the library autostarts beside the job's first launches.
  bool under_run = false;
};

struct JobRun {
  std::string work, out, truth_dir;  // FreshDir(name), GPUWATCH_OUT = WORK/out, WORK/truth
  std::string file;                  // the scenario file played; empty for RunJob
  json scenario;                     // its JSON
  RunResult job;                     // the job's exit code, stdout and stderr
  json summary;                      // OUT/summary.json; null unless expect_summary

  json Truth(int rank) const;       // TRUTH/truth-rank-R.json: the driver's stopwatch
  json Device(int rank) const;      // TRUTH/device-rank-R.json: the device model's account
  std::string SummaryText() const;  // OUT/summary.txt as it is now (written after summary.json)
};

// Plays a scenario with gpuwatch-scenario --sim in FreshDir(work_name). `scenario`: a bundled
// scenario's name (tests/scenarios/NAME.json), a path, or a scenario's JSON text (starting
// with '{', written to WORK/scenario.json).
JobRun RunScenario(const std::string& work_name, const std::string& scenario,
                   const JobOptions& options = {});

// Runs any command the same way (a Python script, a test program), with the simulator's
// libraries on LD_LIBRARY_PATH, since such a command is not linked to them.
JobRun RunJob(const std::string& work_name, const std::vector<std::string>& argv,
              const JobOptions& options = {});

// `gpuwatch report OUT`: the summary rebuilt from what is on disk (journal, spools), parsed.
json RebuildSummary(const std::string& out);

// Host-to-device copies, all ranks of a summary together.
uint64_t H2dCount(const json& summary);

}  // namespace gpuwatch::e2e
