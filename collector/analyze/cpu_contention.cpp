// See cpu_contention.h. Thresholds: thresholds.h.
#include "analyze/cpu_contention.h"

#include <algorithm>
#include <set>

#include "analyze/host_placement.h"
#include "common/median.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

bool HostContention::Oversubscribed() const { return sampled() && WaitShare() >= kOversubscribedMinWaitShare; }

bool HostContention::ExplainsSpread(double spread_s) const {
  return Oversubscribed() && spread_s > 0 && wait_s >= kOversubscribedExplains * spread_s;
}

HostContention MeasureHost(const RankList& ranks, const std::string& host) {
  HostContention h;
  h.host = host;
  std::set<int> cpus;
  bool cpus_known = true;
  std::vector<double> sampled, run_wait, throttled, waits, gpu_lost;
  for (const RankResult& r : ranks) {
    if (r.host != host) continue;
    h.ranks.push_back(r.rank);
    const std::vector<int> own = ParseCpuList(r.env.cpu_affinity);
    cpus_known = cpus_known && !own.empty();
    cpus.insert(own.begin(), own.end());
    const InputIoFigures& io = r.io;
    const double s = io.all_s;
    const double wait = s > 0 ? io.all_run_wait_s / s : 0, held = s > 0 ? io.all_throttled_s / s : 0;
    if (s > 0) h.cores_busy += io.all_cpu_s / s;
    sampled.push_back(s);
    run_wait.push_back(wait);
    throttled.push_back(held);
    h.run_wait_share_by_rank.push_back(wait);
    waits.push_back(io.all_run_wait_s + io.all_throttled_s);
    // Summed over threads, the wait can exceed the gap it fell in: at most the gap's share in
    // which the tree's demand for CPU (on a core or waiting for one) went unmet.
    const double demand = io.cpu_s + io.run_wait_s;
    const double lost = demand > 0 ? std::min(io.run_wait_s, io.gap_s * io.run_wait_s / demand) : 0.0;
    gpu_lost.push_back(io.gap_s > 0 ? lost * (io.host_wait_s / io.gap_s) : 0.0);
  }
  if (h.ranks.empty()) return h;
  h.cpus = cpus_known ? cpus.size() : 0;
  h.sampled_s = Median(sampled);
  h.run_wait_share = Median(run_wait);
  h.throttled_share = Median(throttled);
  h.wait_s = Median(waits);
  h.gpu_idle_waiting_for_cpu_s = Median(gpu_lost);
  return h;
}

}  // namespace gpuwatch::collector
