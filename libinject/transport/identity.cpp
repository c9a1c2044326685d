// The rank, local rank, world size and job id, from whichever launcher set them.
#include "transport/identity.h"

#include <unistd.h>

#include <cstdlib>

namespace gpuwatch::inject {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

int EnvInt(const char* name) {
  const char* v = Env(name);
  if (!v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (*end == '\0' && x >= 0 && x < (1 << 30)) ? static_cast<int>(x) : -1;
}

struct Source {
  const char* label;
  const char* rank;
  const char* local_rank;  // nullptr: the launcher sets none
  const char* world;       // nullptr: the launcher sets none
};

constexpr Source kSources[] = {
    {"RANK", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"PMI", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    // A PMIx server puts only PMIX_RANK and PMIX_NAMESPACE in its clients' environment;
    // local rank and job size are keys a client asks for (PMIx_Get "pmix.lrank",
    // "pmix.job.size"), so they stay unknown here. Last: mpirun and srun --mpi=pmix set it
    // next to their own variables, which name the size too.
    {"PMIX", "PMIX_RANK", nullptr, nullptr},
};

}  // namespace

Identity IdentityFromEnvironment() {
  Identity id;
  id.pid = getpid();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  id.host = host;
  // Containers often share one meaningless host name; GPUWATCH_HOST names the machine
  // (and lets tests play ranks of several hosts on one).
  if (const char* h = Env("GPUWATCH_HOST")) id.host = h;
  for (const Source& s : kSources) {
    if (EnvInt(s.rank) < 0) continue;
    id.rank = EnvInt(s.rank);
    id.local_rank = s.local_rank ? EnvInt(s.local_rank) : -1;
    id.world_size = s.world ? EnvInt(s.world) : -1;
    id.rank_source = s.label;
    break;
  }
  if (const char* j = Env("GPUWATCH_JOB_ID")) {
    id.job_id = j;
  } else if (const char* sj = Env("SLURM_JOB_ID")) {
    id.job_id = std::string("slurm-") + sj;
    if (const char* step = Env("SLURM_STEP_ID")) id.job_id += std::string(".") + step;
  } else if (const char* te = Env("TORCHELASTIC_RUN_ID"); te && std::string(te) != "none") {
    id.job_id = std::string("torchelastic-") + te;
  } else if (const char* om = Env("OMPI_MCA_ess_base_jobid")) {
    id.job_id = std::string("ompi-") + om;
  } else {
    id.job_id = id.host + "-" + std::to_string(getppid());
  }
  return id;
}

}  // namespace gpuwatch::inject
