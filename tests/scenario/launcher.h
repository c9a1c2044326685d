// Starts one process per rank and supervises them (the parent side of gpuwatch-scenario).
//
// The parent makes no CUDA call: it only builds each rank's environment, fork+execs the
// rank executable and waits. A preloaded profiler therefore sees an idle parent.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scenario_model.h"

namespace gpuwatch::scenario {

struct LaunchOptions {
  std::string rank_exe;       // gpuwatch-scenario-rank
  std::string scenario_path;  // passed to every rank, which parses it again
  bool sim = false;
  std::string sim_dir;        // prepended to LD_LIBRARY_PATH when sim
  std::string truth_dir;      // absolute, existing; "" = none
  double timeout_s = 0;       // 0 = wait forever
  double grace_s = 2;         // after a failure, how long the others may finish alone
  // --rank-env: variables for one rank only (rank -> NAME=VALUE pairs), set last, so they
  // replace the launcher's own (LOCAL_RANK) too: ranks of several "hosts" on one machine.
  std::map<int, std::vector<std::pair<std::string, std::string>>> rank_env;
};

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// With opt.sim, what puts a rank on the simulator: the simulator folder first in
// LD_LIBRARY_PATH, SIMGPU_CONFIG from the scenario's `gpu` object, SIMGPU_TRUTH; else none.
EnvVars sim_environment(const Scenario& sc, const LaunchOptions& opt);

// This process's environment with `set` replacing (or adding) those variables, as execve
// takes it once passed through c_strings (which points into `v`: keep it alive).
std::vector<std::string> environment_with(const EnvVars& set);
std::vector<char*> c_strings(std::vector<std::string>& v);

// Returns 0 when every rank exited 0, 1 otherwise (after one line per failed rank on
// stderr and stopping the others).
int launch_ranks(const Scenario& sc, const LaunchOptions& opt);

}  // namespace gpuwatch::scenario
