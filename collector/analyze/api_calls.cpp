// See api_calls.h.
#include "analyze/api_calls.h"

namespace gpuwatch::collector {

void ApiCallFigures::Merge(const ApiCallFigures& o) {
  for (const auto& [api, a] : o.by_api) by_api[api].Add(a);
}

void ApiCallCounter::OnLaunchTally(const wire::LaunchTally& t) {
  ApiCallFigures::Api& a = f_.by_api[t.api()];
  a.count += t.launches();
  a.ns += t.ns();
}

void ApiCallCounter::OnHostCall(const HostCall& c) {
  // A range, not a call; a run of launches is counted by its tallies.
  if (c.api == wire::NVTX_RANGE || c.api == wire::CUDA_LAUNCH_RUN) return;
  ApiCallFigures::Api& a = f_.by_api[c.api];
  ++a.count;
  // A polling loop folded into its closing query (poll_folder.h) spans the queries before
  // it, which are counted themselves: only the closing query's own time is unknown, so
  // the loop adds nothing here (its wait is in sync).
  if (c.sync_kind != kSyncPoll) a.ns += c.dur_ns;
  a.captured += c.captured;
  a.not_ready += HasFlag(c.flags, wire::FLAG_NOT_READY);
}

}  // namespace gpuwatch::collector
