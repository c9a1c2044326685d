// The rank processes a scenario driver started (its children, by their RANK variable):
// tests that stop or kill one rank of a job.
#pragma once
#include <map>
#include <sstream>
#include <string>

#include "scenario_run.h"

namespace gpuwatch::e2e {
// The rank processes the scenario driver started, by rank.
inline std::map<int, int> RankPids(int driver_pid) {
  std::map<int, int> out;
  std::istringstream kids(ReadFile("/proc/" + std::to_string(driver_pid) + "/task/" +
                                        std::to_string(driver_pid) + "/children"));
  for (int pid; kids >> pid;) {
    const std::string env = ReadFile("/proc/" + std::to_string(pid) + "/environ");
    for (size_t at = 0; at < env.size(); at = env.find('\0', at) + 1) {
      if (env.compare(at, 5, "RANK=") == 0) out[std::atoi(env.c_str() + at + 5)] = pid;
      if (env.find('\0', at) == std::string::npos) break;
    }
  }
  return out;
}

}  // namespace gpuwatch::e2e
