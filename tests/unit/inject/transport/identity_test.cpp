// Rank detection from the launchers' variables: each launcher alone, then their precedence
// (torchrun, Open MPI, Slurm, PMI, PMIx), as a job started by nested launchers sees them.
// The end-to-end launcher tests (tests/e2e/launchers_test.cpp) run the real mpirun and srun.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <string>

#include "transport/identity.h"

namespace gi = gpuwatch::inject;

namespace {

// Every variable IdentityFromEnvironment reads for the rank; a test sets only its own.
constexpr const char* kRankVariables[] = {
    "RANK",         "LOCAL_RANK",    "WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
    "PMI_RANK",     "MPI_LOCALRANKID", "PMI_SIZE",
    "PMIX_RANK"};

// Sets exactly `vars` among the rank variables for one test, and restores the process's
// own values after it.
class LauncherEnv {
 public:
  explicit LauncherEnv(const std::map<std::string, std::string>& vars) {
    for (const char* name : kRankVariables) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  ~LauncherEnv() {
    for (const char* name : kRankVariables) unsetenv(name);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }
  LauncherEnv(const LauncherEnv&) = delete;
  LauncherEnv& operator=(const LauncherEnv&) = delete;

 private:
  std::map<std::string, std::string> saved_;
};

struct Named {
  int rank, local_rank, world_size;
  std::string source;
};

Named Detect(const std::map<std::string, std::string>& vars) {
  LauncherEnv env(vars);
  const gi::Identity id = gi::IdentityFromEnvironment();
  return {id.rank, id.local_rank, id.world_size, id.rank_source};
}

}  // namespace

TEST_CASE("identity: each launcher's variables name the rank, local rank and world size") {
  SECTION("torchrun") {
    const Named n = Detect({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}});
    CHECK(n.source == "RANK");
    CHECK((n.rank == 5 && n.local_rank == 1 && n.world_size == 8));
  }
  SECTION("Open MPI") {
    const Named n = Detect({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "4"}});
    CHECK(n.source == "OMPI");
    CHECK((n.rank == 3 && n.local_rank == 3 && n.world_size == 4));
  }
  SECTION("Slurm") {
    const Named n = Detect({{"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS", "16"}});
    CHECK(n.source == "SLURM");
    CHECK((n.rank == 6 && n.local_rank == 2 && n.world_size == 16));
  }
  SECTION("PMI (MPICH's Hydra, Intel MPI)") {
    const Named n = Detect({{"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "3"}});
    CHECK(n.source == "PMI");
    CHECK((n.rank == 2 && n.local_rank == 0 && n.world_size == 3));
  }
  SECTION("PMIx: the rank only, since PMIx puts no local rank or size in the environment") {
    const Named n = Detect({{"PMIX_RANK", "7"}});
    CHECK(n.source == "PMIX");
    CHECK((n.rank == 7 && n.local_rank == -1 && n.world_size == -1));
  }
  SECTION("none: the rank is left to the first NCCL communicator") {
    const Named n = Detect({});
    CHECK(n.source == "none");
    CHECK((n.rank == -1 && n.local_rank == -1 && n.world_size == -1));
  }
}

TEST_CASE("identity: precedence RANK, Open MPI, Slurm, PMI, PMIx, each with its own size") {
  // What Open MPI's mpirun sets (its PMIx server adds PMIX_RANK) inside a Slurm allocation.
  const std::map<std::string, std::string> all = {
      {"RANK", "1"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "2"},
      {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
      {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "6"},
      {"PMI_RANK", "4"}, {"MPI_LOCALRANKID", "2"}, {"PMI_SIZE", "8"},
      {"PMIX_RANK", "5"}};
  auto without = [&](std::initializer_list<const char*> names) {
    auto v = all;
    for (const char* n : names) v.erase(n);
    return v;
  };
  const Named torchrun = Detect(all);
  CHECK((torchrun.source == "RANK" && torchrun.rank == 1 && torchrun.world_size == 2));
  const Named ompi = Detect(without({"RANK"}));
  CHECK((ompi.source == "OMPI" && ompi.rank == 2 && ompi.local_rank == 0 && ompi.world_size == 4));
  const Named slurm = Detect(without({"RANK", "OMPI_COMM_WORLD_RANK"}));
  CHECK((slurm.source == "SLURM" && slurm.rank == 3 && slurm.local_rank == 1 && slurm.world_size == 6));
  const Named pmi = Detect(without({"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}));
  CHECK((pmi.source == "PMI" && pmi.rank == 4 && pmi.local_rank == 2 && pmi.world_size == 8));
  // PMIx last: the sizes other launchers set beside it are not mixed into its rank.
  const Named pmix = Detect(without({"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"}));
  CHECK((pmix.source == "PMIX" && pmix.rank == 5 && pmix.local_rank == -1 && pmix.world_size == -1));
}

TEST_CASE("identity: a rank variable that is not a number is passed over for the next launcher") {
  const Named n = Detect({{"RANK", "abc"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"},
                          {"PMIX_RANK", "-3"}});
  CHECK((n.source == "SLURM" && n.rank == 1 && n.world_size == 2));
  const Named empty = Detect({{"OMPI_COMM_WORLD_RANK", ""}, {"PMIX_RANK", "0"}});
  CHECK((empty.source == "PMIX" && empty.rank == 0));
}
