// See live_snapshot.h.
#include "jobs/live_snapshot.h"

namespace gpuwatch::collector {

LiveSnapshot TakeSnapshot(const JobTable& jobs, Clock::time_point now) {
  LiveSnapshot snap;
  snap.at = now;
  jobs.ForEach([&](const Job& job) {
    ++snap.jobs;
    for (const auto& [key, rank] : job.ranks()) {
      RankSample s = SampleOf(rank->result());
      s.job = job.id();
      s.host = rank->hello().host();
      s.rank = rank->hello().rank();
      s.pid = static_cast<int>(rank->hello().pid());
      s.connected = rank->open_connections() > 0;
      snap.ranks_connected += s.connected ? 1 : 0;
      snap.events += s.events;
      snap.dropped += s.dropped;
      snap.added_s += s.hooks_s + s.cupti_s;
      snap.elapsed_s += s.elapsed_s;
      if (s.has_gpu) {
        snap.gpu_busy_s += s.gpu_busy_s;
        snap.gpu_active_s += s.gpu_active_s;
      }
      snap.ranks.push_back(std::move(s));
    }
  });
  return snap;
}

}  // namespace gpuwatch::collector
