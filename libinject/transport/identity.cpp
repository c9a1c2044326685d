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
  const char* local_rank;
  const char* world;
};

constexpr Source kSources[] = {
    {"RANK", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"PMI", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
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
    id.local_rank = EnvInt(s.local_rank);
    id.world_size = EnvInt(s.world);
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
