// Who this process is within its job: rank, host, job id, where the summary goes.
#pragma once
#include <cstdint>
#include <string>

namespace gpuwatch::inject {

struct Identity {
  std::string job_id;
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  std::string rank_source = "none";  // RANK, OMPI, SLURM, PMI, PMIX, NCCL, none
  std::string host;
  int pid = 0;
};

// From the launcher's variables: RANK/LOCAL_RANK/WORLD_SIZE (torchrun), else Open MPI,
// else Slurm, else PMI, else PMIx (rank only). Job id: GPUWATCH_JOB_ID, Slurm job.step, TORCHELASTIC_RUN_ID
// (unless "none"), Open MPI's job id, else host + parent pid (ranks started by one
// launcher on one host share it).
Identity IdentityFromEnvironment();

}  // namespace gpuwatch::inject
