// See streams.h.
#include "analyze/streams.h"

#include <algorithm>

namespace gpuwatch::collector {

namespace {
// Bounds (streams.h): launches waiting to tie their handle, waits per stream not consumed
// yet, recent work per stream, events remembered.
constexpr size_t kMaxUntied = 4096, kMaxWaits = 256, kMaxRecent = 1024, kMaxEvents = 1 << 16;

// A hooked call that puts work on its stream (what a handle is tied to its CUPTI id by).
bool PutsWorkOnStream(const HostCall& c) { return EnqueuesWork(c.api) || IsCollective(c.api); }
}  // namespace

void StreamCounter::OnHostCall(const HostCall& c) {
  if (c.captured) return;  // recorded into a graph: no record, no wait, no work happened
  if (c.api == wire::CUDA_EVENT_RECORD) {
    if (events_.size() >= kMaxEvents && !events_.count(c.seq)) events_.clear();
    events_[c.seq] = {c.stream, c.t_ns};
  } else if (c.api == wire::CUDA_STREAM_WAIT_EVENT) {
    auto e = events_.find(c.seq);
    if (e == events_.end() || e->second.stream == c.stream) return;  // never recorded, or its own stream
    ++f_.waits;
    std::deque<Wait>& q = waits_[c.stream];
    q.push_back({e->second.stream, e->second.t_ns, c.t_ns});
    if (q.size() > kMaxWaits) q.pop_front();
  } else if (PutsWorkOnStream(c) && !stream_of_.count(c.stream)) {
    untied_.push_back({c.t_ns, c.end_ns(), c.stream});
    if (untied_.size() > kMaxUntied) untied_.pop_front();
  }
}

// The CUPTI API span of `w`'s launch lies inside the hooked call that launched it (the hook
// wraps the runtime, which CUPTI times): the first such call on a handle not tied yet.
void StreamCounter::TieHandle(const DeviceWork& w) {
  if (!w.api || handle_of_.count(w.stream)) return;
  for (auto it = untied_.begin(); it != untied_.end(); ++it) {
    if (it->t_ns > w.api->start_ns) break;  // in start order: later calls cannot hold it
    if (w.api->end_ns > it->end_ns || stream_of_.count(it->stream)) continue;
    stream_of_[it->stream] = w.stream;
    handle_of_[w.stream] = it->stream;
    const uint64_t tied = it->stream;
    untied_.erase(std::remove_if(untied_.begin(), untied_.end(), [&](const Launch& l) { return l.stream == tied; }),
                  untied_.end());
    return;
  }
}

// When the work queued on `stream` before `record_ns` ended: its latest work launched before.
uint64_t StreamCounter::AwaitedEnd(uint32_t stream, uint64_t record_ns) const {
  auto t = tracks_.find(stream);
  if (t == tracks_.end()) return 0;
  for (auto it = t->second.recent.rbegin(); it != t->second.recent.rend(); ++it)
    if (it->launch_ns <= record_ns) return it->end_ns;
  return 0;
}

void StreamCounter::OnDeviceWork(const DeviceWork& w) {
  if (!IsDeviceWork(w.kind)) return;
  TieHandle(w);
  auto tr = tracks_.find(w.stream);
  if (tr == tracks_.end()) {
    if (tracks_.size() >= StreamFigures::kMaxStreams) return;
    tr = tracks_.emplace(w.stream, Track{}).first;
  }
  Track& t = tr->second;
  StreamFigures::Stream& s = f_.by_stream[w.stream];
  // Unknown launch: taken as launched when it started (no host wait can be told).
  const uint64_t launch = w.api ? w.api->start_ns : w.start_ns;

  // The waits made on this stream before W's launch are behind W (and any gap before it).
  uint64_t awaited = 0;
  if (auto h = handle_of_.find(w.stream); h != handle_of_.end()) {
    if (auto q = waits_.find(h->second); q != waits_.end()) {
      while (!q->second.empty() && q->second.front().wait_ns <= launch) {
        const Wait& x = q->second.front();
        if (auto other = stream_of_.find(x.awaited); other != stream_of_.end()) {
          awaited = std::max(awaited, AwaitedEnd(other->second, x.record_ns));
          ++s.waits;
        } else {
          ++f_.waits_unresolved;
        }
        q->second.pop_front();
      }
    }
  }

  if (t.any && w.start_ns > t.last_end) {
    const uint64_t gap_start = t.last_end;
    const uint64_t waited_until = std::clamp(awaited, gap_start, w.start_ns);
    s.idle_ns[kStreamWait] += waited_until - gap_start;
    if (w.start_ns > waited_until) s.idle_ns[launch > waited_until ? kStreamHostWait : kStreamOther] += w.start_ns - waited_until;
  }
  ++s.work;
  s.busy_ns += w.end_ns > std::max(w.start_ns, t.last_end) ? w.end_ns - std::max(w.start_ns, t.last_end) : 0;
  t.any = true;
  t.last_end = std::max(t.last_end, w.end_ns);
  t.recent.push_back({launch, w.end_ns});
  if (t.recent.size() > kMaxRecent) t.recent.pop_front();
}

}  // namespace gpuwatch::collector
