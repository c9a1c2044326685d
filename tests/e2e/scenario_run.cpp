// A job under gpuwatch on the simulated GPU, from start to parsed summary (see scenario_run.h).
#include "scenario_run.h"

#include <catch2/catch.hpp>

#include <fstream>

namespace gpuwatch::e2e {
namespace {

// Runs argv in r.work with JobEnv(r.work, env); with options.expect_summary, waits for the
// summary and parses it.
JobRun Play(JobRun r, const std::vector<std::string>& argv,
            const std::map<std::string, std::string>& env, const JobOptions& options) {
  r.job = Run(argv, JobEnv(r.work, env), options.timeout_s);
  if (!options.expect_summary) return r;
  INFO(argv[0] << " stdout:\n" << r.job.out << "\nstderr:\n" << r.job.err);
  REQUIRE(r.job.exit_code == 0);
  REQUIRE(WaitForFile(r.out + "/summary.json", 30));
  r.summary = ReadSummary(r.out + "/summary.json");
  return r;
}

JobRun InFreshDir(const std::string& work_name) {
  JobRun r;
  r.work = FreshDir(work_name);
  r.out = r.work + "/out";
  r.truth_dir = r.work + "/truth";
  return r;
}

}  // namespace

std::map<std::string, std::string> JobEnv(const std::string& work,
                                          const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env = {{"LD_PRELOAD", TestPreload()},
                                            {"GPUWATCH_SOCKET_DIR", work + "/sock"},
                                            {"GPUWATCH_OUT", work + "/out"}};
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

json JobRun::Truth(int rank) const {
  return json::parse(ReadFile(truth_dir + "/truth-rank-" + std::to_string(rank) + ".json"));
}

json JobRun::Device(int rank) const {
  return json::parse(ReadFile(truth_dir + "/device-rank-" + std::to_string(rank) + ".json"));
}

std::string JobRun::SummaryText() const { return ReadFile(out + "/summary.txt"); }

JobRun RunScenario(const std::string& work_name, const std::string& scenario,
                   const JobOptions& options) {
  JobRun r = InFreshDir(work_name);
  if (!scenario.empty() && scenario.front() == '{') {
    r.file = r.work + "/scenario.json";
    std::ofstream(r.file) << scenario;
  } else if (scenario.find('/') != std::string::npos) {
    r.file = scenario;
  } else {
    r.file = std::string(GPUWATCH_SCENARIOS_DIR) + "/" + scenario + ".json";
  }
  r.scenario = json::parse(ReadFile(r.file));
  std::vector<std::string> argv = {GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim"};
  if (options.truth) argv.insert(argv.end(), {"--truth", r.truth_dir});
  argv.push_back(r.file);
  std::map<std::string, std::string> env = options.env;
  if (options.under_run) {
    argv.insert(argv.begin(), {GPUWATCH_BIN_DIR "/gpuwatch", "run", "-q", "-o", r.out, "--"});
    env.insert({{"LD_PRELOAD", ""}, {"GPUWATCH_SOCKET_DIR", ""}, {"GPUWATCH_OUT", ""}});  // run's own
  }
  return Play(std::move(r), argv, env, options);
}

JobRun RunJob(const std::string& work_name, const std::vector<std::string>& argv,
              const JobOptions& options) {
  std::map<std::string, std::string> env = {{"LD_LIBRARY_PATH", GPUWATCH_SIM_DIR}};
  for (const auto& [k, v] : options.env) env[k] = v;
  return Play(InFreshDir(work_name), argv, env, options);
}

json RebuildSummary(const std::string& out) {
  auto res = Run({GPUWATCH_BIN_DIR "/gpuwatch", "report", out}, {}, 60);
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  return ReadSummary(out + "/summary.json");
}

uint64_t H2dCount(const json& summary) {
  uint64_t n = 0;
  for (const json& r : summary["ranks"]) n += r["memcpy"]["h2d"]["count"].get<uint64_t>();
  return n;
}

}  // namespace gpuwatch::e2e
