// The rank, local rank, world size and job id, from whichever launcher set them.
#include "transport/identity.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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

// The job id the launcher's variables give, else the one the job tree's first process
// handed down, else host + parent pid (`*fallback` true: nobody named the job).
std::string JobIdFromEnvironment(const std::string& host, bool* fallback) {
  if (fallback) *fallback = false;
  if (const char* j = Env("GPUWATCH_JOB_ID")) return j;
  if (const char* sj = Env("SLURM_JOB_ID")) {
    std::string id = std::string("slurm-") + sj;
    if (const char* step = Env("SLURM_STEP_ID")) id += std::string(".") + step;
    return id;
  }
  if (const char* te = Env("TORCHELASTIC_RUN_ID"); te && std::string(te) != "none")
    return std::string("torchelastic-") + te;
  if (const char* om = Env("OMPI_MCA_ess_base_jobid")) return std::string("ompi-") + om;
  if (const char* tree = Env(kTreeJobIdVariable)) return tree;
  if (fallback) *fallback = true;
  return host + "-" + std::to_string(getppid());
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // Containers often share one meaningless host name; GPUWATCH_HOST names the machine
  // (and lets tests play ranks of several hosts on one).
  if (const char* h = Env("GPUWATCH_HOST")) return h;
  return host;
}

// True when this process runs one thread: /proc/self/task has ".", ".." and one entry.
bool SingleThreaded() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return false;
  int entries = 0;
  while (readdir(d) && entries <= 3) ++entries;
  closedir(d);
  return entries == 3;
}

}  // namespace

void HandJobIdToChildren() {
  bool fallback = false;
  const std::string job_id = JobIdFromEnvironment(HostName(), &fallback);
  // Only a job nobody named needs it: a launcher's variables reach its ranks' children too.
  // setenv is not safe beside another thread's getenv; at load time a program has no other
  // thread, but a library dlopen'ed later may find some: then it leaves the environment be
  // (its children start their own job id, as before).
  if (fallback && SingleThreaded()) setenv(kTreeJobIdVariable, job_id.c_str(), 0);
}

Identity IdentityFromEnvironment() {
  Identity id;
  id.pid = getpid();
  id.host = HostName();
  for (const Source& s : kSources) {
    if (EnvInt(s.rank) < 0) continue;
    id.rank = EnvInt(s.rank);
    id.local_rank = s.local_rank ? EnvInt(s.local_rank) : -1;
    id.world_size = s.world ? EnvInt(s.world) : -1;
    id.rank_source = s.label;
    break;
  }
  id.job_id = JobIdFromEnvironment(id.host, nullptr);
  return id;
}

}  // namespace gpuwatch::inject
