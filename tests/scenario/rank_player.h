// Plays a scenario on one rank with the CUDA runtime and NCCL (see docs/scenarios.md).
#pragma once

#include <string>

#include "scenario_model.h"

namespace gpuwatch::scenario {

struct PlayerOptions {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  std::string run_dir;    // private directory shared by the ranks of one run (ncclUniqueId)
  std::string truth_dir;  // "" = write no truth file
};

// Returns the process exit status: 0 on success, 1 on a CUDA/NCCL/setup error (after
// printing one line that names the rank, the call and where in the scenario it failed).
int play_rank(const Scenario& sc, const PlayerOptions& opt);

}  // namespace gpuwatch::scenario
