// gpuwatch-scenario: plays a training-loop scenario (docs/scenarios.md) with one process per
// rank, on a real GPU or, with --sim, on the simulated GPU of tests/sim. With --from-launcher
// it plays the one rank that mpirun or srun started it as (external_launcher.h).
//
// This process parses and validates the scenario and supervises the ranks; it never calls
// CUDA (it does not even link the runtime), so a profiler preloaded into it sees nothing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "external_launcher.h"
#include "launcher.h"
#include "scenario_model.h"

namespace fs = std::filesystem;
using namespace gpuwatch::scenario;

namespace {

// Directory of this executable: the rank executable and the default simulator folder
// (../sim) are found relative to it, so a build tree works wherever it is.
fs::path own_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Play a GPU training-loop scenario with one process per rank (see docs/scenarios.md)",
               "gpuwatch-scenario"};
  bool sim = false;
  std::string sim_dir, truth_dir, scenario_path;
  double timeout_s = 0;
  app.add_flag("--sim", sim, "Run on the simulated GPU: prepend the simulator folder to the ranks' LD_LIBRARY_PATH");
  app.add_option("--sim-dir", sim_dir, "Simulator folder (default: ../sim next to this executable)");
  app.add_option("--truth", truth_dir, "Write truth-rank-R.json (and, with --sim, device-rank-R.json) into DIR");
  app.add_option("--timeout", timeout_s, "Stop the ranks and fail after this many seconds (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  std::vector<std::string> rank_env;
  app.add_option("--rank-env", rank_env,
                 "R:NAME=VALUE: set NAME for rank R only (repeatable), e.g. to play the ranks "
                 "of several hosts on one machine (GPUWATCH_HOST, GPUWATCH_COLLECTOR, LOCAL_RANK)");
  bool from_launcher = false;
  std::string run_dir;
  app.add_flag("--from-launcher", from_launcher,
               "Play the one rank an external launcher (mpirun, srun) started this process as: rank and "
               "world size from its variables; needs --run-dir");
  app.add_option("--run-dir", run_dir,
                 "With --from-launcher: a directory all ranks can reach (default $TMPDIR or /tmp), where rank 0 "
                 "leaves NCCL's unique id for the others in a folder named after the launch");
  app.add_option("scenario", scenario_path, "Scenario file (JSON)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (from_launcher ? (!rank_env.empty() || timeout_s > 0) : !run_dir.empty()) {
    std::fprintf(stderr, "gpuwatch-scenario: --run-dir goes with --from-launcher, which takes neither --rank-env "
                         "nor --timeout (the launcher starts and stops the ranks)\n");
    return 2;
  }
  Scenario sc;
  try {
    sc = load_scenario(scenario_path);
  } catch (const ScenarioError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }

  LaunchOptions opt;
  for (const std::string& e : rank_env) {
    const size_t colon = e.find(':'), eq = e.find('=');
    int r = -1;
    try {
      if (colon != std::string::npos) r = std::stoi(e.substr(0, colon));
    } catch (const std::exception&) {
    }
    if (r < 0 || r >= sc.ranks || eq == std::string::npos || eq < colon + 2) {
      std::fprintf(stderr, "gpuwatch-scenario: --rank-env %s: want R:NAME=VALUE with 0 <= R < %d\n",
                   e.c_str(), sc.ranks);
      return 2;
    }
    opt.rank_env[r].emplace_back(e.substr(colon + 1, eq - colon - 1), e.substr(eq + 1));
  }
  opt.rank_exe = (own_dir() / "gpuwatch-scenario-rank").string();
  if (access(opt.rank_exe.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "gpuwatch-scenario: rank executable %s not found (build target gpuwatch-scenario-rank)\n",
                 opt.rank_exe.c_str());
    return 2;
  }
  opt.scenario_path = fs::absolute(scenario_path).string();
  opt.sim = sim || !sim_dir.empty();
  opt.timeout_s = timeout_s;
  if (opt.sim) {
    fs::path dir = sim_dir.empty() ? (own_dir().parent_path() / "sim") : fs::path(sim_dir);
    std::error_code ec;
    opt.sim_dir = fs::weakly_canonical(fs::absolute(dir), ec).string();
    if (!fs::exists(fs::path(opt.sim_dir) / "libcudart.so.13")) {
      std::fprintf(stderr, "gpuwatch-scenario: --sim: no libcudart.so.13 in %s (build the simulator, or pass --sim-dir)\n",
                   opt.sim_dir.c_str());
      return 2;
    }
  }
  if (!truth_dir.empty()) {
    std::error_code ec;
    fs::create_directories(truth_dir, ec);
    if (ec) {
      std::fprintf(stderr, "gpuwatch-scenario: --truth %s: %s\n", truth_dir.c_str(), ec.message().c_str());
      return 2;
    }
    opt.truth_dir = fs::canonical(truth_dir).string();
  }
  if (from_launcher) {
    if (run_dir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      run_dir = tmp && *tmp ? tmp : "/tmp";
    }
    const std::string dir = launched_run_dir(fs::absolute(run_dir).string());
    std::error_code ec;
    fs::create_directories(dir, ec);  // every rank tries: the first makes it
    if (ec) {
      std::fprintf(stderr, "gpuwatch-scenario: --run-dir: %s: %s\n", dir.c_str(), ec.message().c_str());
      return 2;
    }
    return exec_launched_rank(sc, opt, dir);
  }
  return launch_ranks(sc, opt);
}
