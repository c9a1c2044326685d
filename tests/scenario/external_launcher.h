// One rank of a scenario started by someone else's launcher (mpirun, srun, torchrun):
// `gpuwatch-scenario --from-launcher`. The launcher starts one driver per rank; each finds
// its rank in the launcher's variables and becomes that rank's gpuwatch-scenario-rank.
#pragma once

#include <optional>
#include <string>

#include "launcher.h"
#include "scenario_model.h"

namespace gpuwatch::scenario {

struct LauncherRank {
  int rank = -1;
  int local_rank = -1;  // -1: the launcher does not say
  int world_size = -1;  // -1: the launcher does not say
  std::string source;   // the variable the rank came from, e.g. OMPI_COMM_WORLD_RANK
};

// The rank the launcher gave this process: RANK (torchrun), OMPI_COMM_WORLD_RANK (Open
// MPI), SLURM_PROCID (srun), PMI_RANK (Hydra), PMIX_RANK (any PMIx server), in that order
// (libgpuwatch.so's order), each with its launcher's local rank and size; nothing when none
// is set.
std::optional<LauncherRank> rank_from_launcher();

// Where the ranks of this launch rendezvous: BASE/gpuwatch-scenario-KEY, KEY naming the
// launch (Slurm's job.step, PMIx's namespace, Open MPI's job id, else the parent's pid, which
// every rank a launcher starts on one host shares), so that runs never see each other's files.
std::string launched_run_dir(const std::string& base);

// Replaces this process (execve: same pid, so the launcher's signals and exit status are the
// rank's) with gpuwatch-scenario-rank playing the launcher's rank, rendezvousing with the
// other ranks through `run_dir`. Adds the --sim variables and SIMGPU_RANK, and no RANK: the
// rank must be named by the launcher's own variables. Returns only on failure: 2 when the
// launcher's rank or size do not fit the scenario, 1 when the exec failed (one line on stderr).
int exec_launched_rank(const Scenario& sc, const LaunchOptions& opt, const std::string& run_dir);

}  // namespace gpuwatch::scenario
