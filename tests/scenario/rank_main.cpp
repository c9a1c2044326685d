// gpuwatch-scenario-rank: one rank of a scenario, started by gpuwatch-scenario.
//
// It is a separate executable (not the driver re-executing itself) because nvcc-built code
// registers its kernels with the CUDA runtime from static constructors; keeping all CUDA in
// this binary lets the parent process stay free of any CUDA call, as a preloaded profiler
// must observe.
//
// Usage (internal): gpuwatch-scenario-rank --run-dir DIR [--truth DIR]
//                    [--rank R --local-rank L --world-size W] SCENARIO.json
// The rank: --rank/--local-rank/--world-size (gpuwatch-scenario --from-launcher, which read
// them from mpirun's or srun's variables), else RANK, LOCAL_RANK, WORLD_SIZE as torchrun and
// gpuwatch-scenario set them.
// Exit status: 0 done, 1 CUDA/NCCL/setup error, 2 invalid scenario or usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rank_player.h"
#include "scenario_model.h"

using namespace gpuwatch::scenario;

namespace {

int parse_int(const char* what, const char* v) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x >= (1 << 30)) {
    std::fprintf(stderr, "gpuwatch-scenario-rank: %s=%s: expected a non-negative integer\n", what, v);
    std::exit(2);
  }
  return int(x);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return (!v || !*v) ? fallback : parse_int(name, v);
}

}  // namespace

int main(int argc, char** argv) {
  PlayerOptions opt;
  std::string scenario_path;
  int given_rank = -1, given_local_rank = -1, given_world = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--run-dir" || a == "--truth") && i + 1 < argc) {
      (a == "--run-dir" ? opt.run_dir : opt.truth_dir) = argv[++i];
    } else if ((a == "--rank" || a == "--local-rank" || a == "--world-size") && i + 1 < argc) {
      (a == "--rank" ? given_rank : a == "--local-rank" ? given_local_rank : given_world) = parse_int(argv[i], argv[i + 1]);
      ++i;
    } else if (!a.empty() && a[0] != '-' && scenario_path.empty()) {
      scenario_path = a;
    } else {
      std::fprintf(stderr, "usage: gpuwatch-scenario-rank --run-dir DIR [--truth DIR] [--rank R --local-rank L "
                           "--world-size W] SCENARIO.json (started by gpuwatch-scenario)\n");
      return 2;
    }
  }
  if (scenario_path.empty() || opt.run_dir.empty()) {
    std::fprintf(stderr, "gpuwatch-scenario-rank: needs --run-dir and a scenario (started by gpuwatch-scenario)\n");
    return 2;
  }
  opt.rank = given_rank >= 0 ? given_rank : env_int("RANK", 0);
  opt.local_rank = given_local_rank >= 0 ? given_local_rank : env_int("LOCAL_RANK", opt.rank);
  opt.world_size = given_world >= 0 ? given_world : env_int("WORLD_SIZE", 1);

  Scenario sc;
  try {
    sc = load_scenario(scenario_path);
  } catch (const ScenarioError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (opt.world_size != sc.ranks || opt.rank >= opt.world_size) {
    std::fprintf(stderr, "gpuwatch-scenario-rank: RANK=%d WORLD_SIZE=%d does not fit the scenario's %d ranks\n",
                 opt.rank, opt.world_size, sc.ranks);
    return 2;
  }
  return play_rank(sc, opt);
}
