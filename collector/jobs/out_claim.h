// One job per output folder at a time: several jobs that name the same folder (one
// GPUWATCH_OUT or --out for jobs that run at once) never overwrite each other's summary,
// trace or journals. The first job takes the folder; a job that finds it held by another
// job still running writes to FOLDER/job-<name>/ instead (wire::JobFileStem). A job gives
// the folder back once its summary is written, so the next run writes there again.
#pragma once
#include <string>

namespace gpuwatch::collector {

// The hold is an flock on FOLDER/.gpuwatch-owner.lock, so a collector that dies gives it
// back, and two jobs of one collector (separate open files) exclude each other too.
class OutClaim {
 public:
  OutClaim() = default;
  OutClaim(OutClaim&& o) noexcept : dir_(std::move(o.dir_)), fd_(o.fd_) { o.fd_ = -1; }
  OutClaim& operator=(OutClaim&& o) noexcept;
  OutClaim(const OutClaim&) = delete;
  OutClaim& operator=(const OutClaim&) = delete;
  ~OutClaim() { Release(); }

  // Claims `folder` (absolute, or made so) for `job_id`; dir() is where the job writes.
  // A folder that cannot be created or locked is used as it is (the writers say why).
  static OutClaim Take(const std::string& folder, const std::string& job_id);

  const std::string& dir() const { return dir_; }
  void Release();

  static constexpr const char* kLockFileName = ".gpuwatch-owner.lock";

 private:
  std::string dir_;
  int fd_ = -1;
};

}  // namespace gpuwatch::collector
