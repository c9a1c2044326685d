// Real launchers: Open MPI's mpirun and Slurm's srun (a one-node cluster the test starts and
// stops itself) start the 4 ranks of a scenario on the simulated GPU, through `gpuwatch run`
// and through the bare LD_PRELOAD form. The commands are read from docs/launchers.md (the
// launchers and the bare LD_PRELOAD form), so the document shows what is tested: only the repository's
// paths become this build's. Every rank must be named by its launcher's own variables
// (gpuwatch-scenario --from-launcher sets no RANK), end normally and match its own truth
// files (the driver's and the simulator's, which the rank wrote under the launcher's rank).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <set>
#include <sstream>

#include "scenario_run.h"
#include "slurm_cluster.h"

using namespace gpuwatch::e2e;

namespace {

void Replace(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// The docs/launchers.md line that starts with `start`, its continuation lines joined, with
// the repository's paths made this build's: the commands the document shows are run.
std::string LaunchersDocCommand(const std::string& start) {
  std::istringstream readme(ReadFile(GPUWATCH_SOURCE_DIR "/docs/launchers.md"));
  std::string line, cmd;
  bool in = false;
  while (std::getline(readme, line)) {
    if (!in && line.rfind(start, 0) != 0) continue;
    in = true;
    const size_t first = line.find_first_not_of(' ');
    cmd += line.substr(first == std::string::npos ? line.size() : first);
    if (cmd.empty() || cmd.back() != '\\') break;
    cmd.back() = ' ';
  }
  INFO("docs/launchers.md has no command starting with: " << start);
  REQUIRE(!cmd.empty());
  Replace(cmd, "$PWD/build/lib/libgpuwatch.so", GPUWATCH_LIB);
  Replace(cmd, "build/bin/", GPUWATCH_BIN_DIR "/");
  Replace(cmd, "tests/scenarios/", GPUWATCH_SCENARIOS_DIR "/");
  return cmd;
}

struct Launch {
  std::string work, out;  // the command runs in `work`; the summary lands in `out`
  RunResult result;
  double seconds = 0;
};

// Runs the document's command in a fresh directory with `env`, then waits for its summary
// (the bare form's collector writes it once the last rank has gone).
Launch RunLaunchersDocCommand(const std::string& work_name, const std::string& start, const std::string& out_name,
                        std::map<std::string, std::string> env, const SlurmCluster* slurm = nullptr) {
  Launch l;
  l.work = FreshDir(work_name);
  l.out = l.work + "/" + out_name;
  const std::string cmd = LaunchersDocCommand(start);
  // A private socket folder (no collector of another test is found), no inherited target.
  env["GPUWATCH_SOCKET_DIR"] = l.work + "/sock";
  for (const char* v : {"GPUWATCH_OUT", "GPUWATCH_COLLECTOR", "GPUWATCH_JOB_ID", "LD_PRELOAD"}) env[v] = "";
  const auto t0 = std::chrono::steady_clock::now();
  l.result = Run({"/bin/sh", "-c", "cd '" + l.work + "' && " + cmd}, env, 50);
  l.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("command: " << cmd << "\nexit " << l.result.exit_code << "\nstdout:\n" << l.result.out << "\nstderr:\n"
                   << l.result.err);
  INFO((slurm ? "Slurm's logs:\n" + slurm->Logs() : std::string()));
  REQUIRE(l.result.exit_code == 0);
  REQUIRE(WaitForFile(l.out + "/summary.json", 20));
  return l;
}

uint64_t Count(const json& j, const char* key) { return j.contains(key) ? j[key].get<uint64_t>() : 0; }

// A rank's summary against its own truth files (truth-rank-R.json, device-rank-R.json):
// counts and bytes exactly, the GPU's busy and kernel time within 3%. Not the host times
// that truth_check.cpp also compares: with 4 ranks on 2 busy cores the driver's stopwatch
// around a call takes in preemption (measured: 20 async copies, 1.6 ms hooked, 4.0 ms on the
// stopwatch), which says nothing about which rank is which.
void CheckRankTruth(const json& rank, const std::string& truth_dir) {
  const std::string r = std::to_string(rank["rank"].get<int>());
  INFO("rank " << r);
  const json truth = json::parse(ReadFile(truth_dir + "/truth-rank-" + r + ".json"));
  const json device = json::parse(ReadFile(truth_dir + "/device-rank-" + r + ".json"));
  CHECK(truth["rank"] == rank["rank"]);
  CHECK(truth["world_size"] == rank["world_size"]);
  CHECK(device["rank"] == rank["rank"]);
  const json& ops = truth["ops"];
  CHECK(Count(rank["kernels"], "launches") == Count(ops["kernels"], "count"));
  CHECK(Count(rank["memcpy"]["h2d"], "count") == Count(ops["h2d"], "count"));
  CHECK(Count(rank["memcpy"]["h2d"], "bytes") == Count(ops["h2d"], "bytes"));
  CHECK(Count(rank["memcpy"]["d2h"], "count") == Count(ops["item"], "count"));  // item: a 4-byte D2H
  CHECK(Count(rank["collectives"]["allreduce"], "count") == Count(ops["allreduce"], "count"));
  CHECK(Count(rank["collectives"]["allreduce"], "bytes") == Count(ops["allreduce"], "bytes"));
  CHECK(Count(ops["allreduce"], "count") == 20);
  CHECK(rank["gpu"]["kernels"]["count"] == device["kinds"]["kernel"]["count"]);
  const double busy = rank["gpu"]["busy_s"], device_busy = device["busy_s"];
  CHECK(std::abs(busy - device_busy) <= 0.03 * device_busy);
  const double kernel_s = rank["gpu"]["kernels"]["total_s"], device_kernel_s = device["kinds"]["kernel"]["device_s"];
  CHECK(std::abs(kernel_s - device_kernel_s) <= 0.03 * device_kernel_s);
  CHECK(Count(rank, "dropped_total") == 0);
}

// Ranks 0..3 each once, of 4, named by `source`, ended normally, and the truth per rank.
void CheckRanks(const Launch& l, const std::string& source) {
  const json summary = ReadSummary(l.out + "/summary.json");
  INFO("summary.json ranks: " << summary["ranks"].dump());
  REQUIRE(summary["ranks"].size() == 4);
  CHECK(summary["job"]["world_size"] == 4);
  CHECK(summary["job"]["abnormal_ranks"].empty());
  std::set<int> ranks, pids;
  for (const json& r : summary["ranks"]) {
    ranks.insert(r["rank"].get<int>());
    pids.insert(r["pid"].get<int>());
    CHECK(r["world_size"] == 4);
    CHECK(r["local_rank"] == r["rank"]);  // one host
    CHECK(r["rank_source"] == source);
    CHECK(r["ended"] == "normal");
  }
  CHECK(ranks == std::set<int>{0, 1, 2, 3});
  CHECK(pids.size() == 4);
  for (const json& r : summary["ranks"]) CheckRankTruth(r, l.out + "/truth");
  // Each launcher test within a minute in CI (the issue), daemons included.
  CHECK(l.seconds < 45);
}

// The document's srun command against a Slurm cluster of the test's own, which is gone
// (every process of it) when this returns, whatever happened.
Launch RunUnderSlurm(const std::string& work_name, const std::string& start, const std::string& out_name) {
  SlurmCluster slurm;
  std::string error;
  const bool up = slurm.Start(error);
  INFO(error);
  REQUIRE(up);
  return RunLaunchersDocCommand(work_name, start, out_name, slurm.Env(), &slurm);
}

}  // namespace

TEST_CASE("launchers: gpuwatch run -- mpirun -np 4: every rank named from OMPI_COMM_WORLD_RANK") {
  const Launch l = RunLaunchersDocCommand("launchers-mpirun-run", "build/bin/gpuwatch run -o gpuwatch-mpi -- mpirun",
                                    "gpuwatch-mpi", {});
  CheckRanks(l, "OMPI");
}

TEST_CASE("launchers: LD_PRELOAD=libgpuwatch.so mpirun -np 4: every rank named, one autostarted collector") {
  const Launch l = RunLaunchersDocCommand("launchers-mpirun-bare", "LD_PRELOAD=$PWD/build/lib/libgpuwatch.so mpirun",
                                    "gpuwatch-out", {});
  CheckRanks(l, "OMPI");
  // Open MPI's job id groups the ranks (no GPUWATCH_JOB_ID in the bare form).
  const json summary = ReadSummary(l.out + "/summary.json");
  CHECK(summary["job_id"].get<std::string>().rfind("ompi-", 0) == 0);
}

TEST_CASE("launchers: gpuwatch run -- srun --ntasks=4 on a one-node Slurm: every rank named from SLURM_PROCID") {
  const Launch l = RunUnderSlurm("launchers-srun-run", "build/bin/gpuwatch run -o gpuwatch-srun -- srun",
                                 "gpuwatch-srun");
  CheckRanks(l, "SLURM");
}

TEST_CASE("launchers: LD_PRELOAD=libgpuwatch.so srun --ntasks=4: every rank named, the job id is Slurm's") {
  const Launch l = RunUnderSlurm("launchers-srun-bare", "LD_PRELOAD=$PWD/build/lib/libgpuwatch.so srun",
                                 "gpuwatch-out");
  CheckRanks(l, "SLURM");
  const json summary = ReadSummary(l.out + "/summary.json");
  CHECK(summary["job_id"].get<std::string>().rfind("slurm-", 0) == 0);
}
