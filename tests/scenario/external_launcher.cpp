// See external_launcher.h.
#include "external_launcher.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace gpuwatch::scenario {
namespace {

int env_int(const char* name) {
  if (!name) return -1;
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (*end == '\0' && x >= 0 && x < (1 << 30)) ? int(x) : -1;
}

struct Variables {
  const char* rank;
  const char* local_rank;  // nullptr: the launcher sets none
  const char* world;       // nullptr: the launcher sets none
};

// The driver's own copy of the launchers' variables, not libgpuwatch.so's: the tests check
// the library's reading against it.
constexpr Variables kLaunchers[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"PMIX_RANK", nullptr, nullptr},  // PMIx puts only the rank (and namespace) in the environment
};

}  // namespace

std::optional<LauncherRank> rank_from_launcher() {
  for (const Variables& v : kLaunchers) {
    const int rank = env_int(v.rank);
    if (rank < 0) continue;
    return LauncherRank{rank, env_int(v.local_rank), env_int(v.world), v.rank};
  }
  return std::nullopt;
}

std::string launched_run_dir(const std::string& base) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  std::string key;
  if (!env("SLURM_JOB_ID").empty()) {
    key = "slurm-" + env("SLURM_JOB_ID") + "." + env("SLURM_STEP_ID");
  } else if (!env("PMIX_NAMESPACE").empty()) {
    key = "pmix-" + env("PMIX_NAMESPACE");
  } else if (!env("OMPI_MCA_ess_base_jobid").empty()) {
    key = "ompi-" + env("OMPI_MCA_ess_base_jobid");
  } else {
    key = "ppid-" + std::to_string(getppid());
  }
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  return base + "/gpuwatch-scenario-" + key;
}

int exec_launched_rank(const Scenario& sc, const LaunchOptions& opt, const std::string& run_dir) {
  const std::optional<LauncherRank> me = rank_from_launcher();
  if (!me) {
    std::fprintf(stderr, "gpuwatch-scenario: --from-launcher: no rank from a launcher (RANK, OMPI_COMM_WORLD_RANK, "
                         "SLURM_PROCID, PMI_RANK or PMIX_RANK)\n");
    return 2;
  }
  const int world = me->world_size >= 0 ? me->world_size : sc.ranks;
  if (world != sc.ranks || me->rank >= sc.ranks) {
    std::fprintf(stderr, "gpuwatch-scenario: --from-launcher: %s=%d of %d ranks does not fit the scenario's %d ranks\n",
                 me->source.c_str(), me->rank, world, sc.ranks);
    return 2;
  }
  // Without a local rank (PMIx), one host: the rank is its local rank.
  const int local_rank = me->local_rank >= 0 ? me->local_rank : me->rank;
  std::vector<std::string> args = {opt.rank_exe, "--run-dir", run_dir, "--rank", std::to_string(me->rank),
                                   "--local-rank", std::to_string(local_rank), "--world-size", std::to_string(world)};
  if (!opt.truth_dir.empty()) args.insert(args.end(), {"--truth", opt.truth_dir});
  args.push_back(opt.scenario_path);
  EnvVars set = sim_environment(sc, opt);
  if (opt.sim) set.emplace_back("SIMGPU_RANK", std::to_string(me->rank));  // names device-rank-R.json
  std::vector<std::string> env = environment_with(set);
  std::vector<char*> envp = c_strings(env), argv = c_strings(args);
  execve(argv[0], argv.data(), envp.data());
  std::fprintf(stderr, "gpuwatch-scenario: cannot start %s: %s\n", argv[0], std::strerror(errno));
  return 1;
}

}  // namespace gpuwatch::scenario
