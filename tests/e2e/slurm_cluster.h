// A one-node Slurm cluster of the test's own: Debian's slurmctld and slurmd, configured in
// a private temporary directory on free ports, run in the foreground as the test's children,
// stopped with everything they started when the object goes (the srun tests in
// launchers_test.cpp). Needs root (slurmd starts the tasks) and the munge, slurmctld,
// slurmd and slurm-client packages (scripts/setup.sh).
#pragma once
#include <map>
#include <string>

namespace gpuwatch::e2e {

class SlurmCluster {
 public:
  SlurmCluster() = default;
  // Cancels any job, stops every process that runs with this cluster's configuration
  // (daemons, step daemons, tasks: SIGTERM, then SIGKILL), removes the directory.
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Writes the configuration and starts munged, slurmctld and slurmd; true once the node is idle (within
  // 20 s). On false, `error` says what failed (with the daemons' logs). Call once.
  bool Start(std::string& error);

  // What srun, sinfo and scancel need to reach this cluster: SLURM_CONF.
  std::map<std::string, std::string> Env() const { return {{"SLURM_CONF", conf_}}; }

  // The end of both daemons' logs, for failure messages.
  std::string Logs() const;

 private:
  void Stop();

  std::string dir_, conf_;
  int munged_pid_ = -1, ctld_pid_ = -1, slurmd_pid_ = -1;
};

}  // namespace gpuwatch::e2e
