// Taking the live snapshot (live/snapshot.h) of every job: on the server's thread only
// (ServerOptions::on_tick), the only thread that may read the JobTable.
#pragma once
#include <functional>

#include "jobs/job_table.h"
#include "live/snapshot.h"

namespace gpuwatch::collector {

// Reads every rank of every job of `jobs`.
LiveSnapshot TakeSnapshot(const JobTable& jobs, Clock::time_point now);

// A ServerOptions::on_tick that publishes a snapshot to `feed` (which must outlive it).
inline std::function<void(const JobTable&, Clock::time_point)> PublishTo(LiveFeed& feed) {
  return [&feed](const JobTable& jobs, Clock::time_point now) { feed.Publish(TakeSnapshot(jobs, now)); };
}

}  // namespace gpuwatch::collector
