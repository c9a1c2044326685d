// See poll_folder.h.
#include "interpret/poll_folder.h"

#include "common/thresholds.h"

namespace gpuwatch::collector {

void PollFolder::Fold(HostCall& c) {
  auto it = loops_.find(c.tid);
  if (!IsQuery(c.api)) {  // the thread did something else: a loop it had open is over
    if (it != loops_.end()) it->second.open = false;
    return;
  }
  if (it == loops_.end()) {
    if (loops_.size() >= kMaxThreads) return;
    it = loops_.emplace(c.tid, Loop{}).first;
  }
  Loop& l = it->second;
  if (l.open && (c.api != l.api || c.stream != l.stream || c.t_ns > l.last_end + kPollGapNs)) l.open = false;
  if (HasFlag(c.flags, wire::FLAG_NOT_READY)) {
    if (!l.open) l = Loop{c.t_ns, c.end_ns(), c.stream, c.api, true};
    l.last_end = c.end_ns();
    return;
  }
  if (!l.open) return;  // a query that found the work done at once: no wait
  l.open = false;
  const uint64_t end = c.end_ns();
  c.t_ns = l.start;
  c.dur_ns = end - l.start;
  c.blocks_host = true;
  c.sync_kind = kSyncPoll;
}

}  // namespace gpuwatch::collector
