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
// (unless "none"), Open MPI's job id, else kTreeJobIdVariable (handed down by the job
// tree's first process), else host + parent pid (ranks started by one launcher on one host
// share it).
Identity IdentityFromEnvironment();

// The variable through which the first process of a job tree that nobody named (no
// GPUWATCH_JOB_ID, no launcher's job id) hands its job id, host + its parent's pid, to
// every process it starts: a Python main's spawned workers, a shell's children, exec'd
// programs. Without it each child's parent pid would make it a job of its own.
inline constexpr const char* kTreeJobIdVariable = "GPUWATCH_TREE_JOB_ID";

// Sets kTreeJobIdVariable in this process's environment when the job has no other id and
// the process runs a single thread (setenv is unsafe beside another thread's getenv).
// Called by the library's constructor, before the program's own code runs.
void HandJobIdToChildren();

}  // namespace gpuwatch::inject
