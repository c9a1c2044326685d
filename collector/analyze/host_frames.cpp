// See host_frames.h.
#include "analyze/host_frames.h"

#include <algorithm>
#include <map>

#include "common/wire_vocab.h"
#include "interpret/native_frames.h"
#include "interpret/python_frames.h"

namespace gpuwatch::collector {

void HostFrames::OnHostCall(const HostCall& c) {
  if (calls_by_tid_.size() < 4096 || calls_by_tid_.count(c.tid)) calls_by_tid_[c.tid] += c.calls;
  if (!EnqueuesWork(c.api) || c.captured) return;
  if (launches_.size() >= kMaxLaunches) launches_.pop_front();
  launches_.push_back({c.t_ns, c.t_ns + c.dur_ns, c.tid});
}

// The thread of the call whose span holds the CUPTI API record's start: the hook's span
// encloses the runtime's record (the import's are the same record). Calls of other threads
// may overlap it, so a few before it are looked at.
uint32_t HostFrames::LaunchingThread(uint64_t launch_ns) const {
  if (launch_ns == 0) return 0;
  auto it = std::upper_bound(launches_.begin(), launches_.end(), launch_ns + kLaunchSlackNs,
                             [](uint64_t t, const Launch& l) { return t < l.start_ns; });
  for (int looked = 0; it != launches_.begin() && looked < 64; ++looked) {
    --it;
    if (it->end_ns + kLaunchSlackNs >= launch_ns) return it->tid;
  }
  return 0;
}

void HostFrames::OnThreadSample(const ThreadSample& s) {
  if (samples_.size() >= kMaxKept) samples_.pop_front();
  samples_.push_back(s);
  newest_sample_ns_ = std::max(newest_sample_ns_, s.t_ns);
  Match();
}

void HostFrames::OnIdle(const IdleGap& g) {
  if (g.kind != kIdleHost) return;
  if (gaps_.size() >= kMaxKept) {
    Count(gaps_.front(), tally_);
    gaps_.pop_front();
  }
  gaps_.push_back({g.start_ns, g.end_ns, LaunchingThread(g.launch_ns)});
  Match();
}

void HostFrames::OnDeviceSettled(uint64_t mark) {
  // No gap from now on starts before `mark`, and the waiting ones start where they start.
  const uint64_t keep_from = gaps_.empty() ? mark : std::min(mark, gaps_.front().a);
  while (!samples_.empty() && samples_.front().t_ns < keep_from) samples_.pop_front();
  // A later gap's launching call starts after the gap does.
  while (!launches_.empty() && launches_.front().end_ns + kLaunchSlackNs < keep_from) launches_.pop_front();
}

// Gaps whose end a sample has passed have all their samples (each batch's are in order).
void HostFrames::Match() {
  while (!gaps_.empty() && gaps_.front().b <= newest_sample_ns_) {
    Count(gaps_.front(), tally_);
    gaps_.pop_front();
  }
}

void HostFrames::Count(const Gap& g, Tallies& into) const {
  auto it = std::lower_bound(samples_.begin(), samples_.end(), g.a,
                             [](const ThreadSample& s, uint64_t t) { return s.t_ns < t; });
  for (; it != samples_.end() && it->t_ns < g.b; ++it) {
    if (g.tid && it->tid != g.tid) continue;
    ++(g.tid ? into.known : into.unknown)[(uint64_t{it->tid} << 32) | it->stack_id];
  }
}

HostFramesFigures HostFrames::Result(const RankFacts& facts) const {
  HostFramesFigures f;
  Tallies tallies = tally_;
  for (const Gap& g : gaps_) Count(g, tallies);
  // The training thread: the one that made the most CUDA calls.
  uint32_t tid = 0;
  uint64_t most = 0;
  for (const auto& [t, n] : calls_by_tid_)
    if (n > most || (n == most && t < tid)) tid = t, most = n;
  f.tid = tid;
  Tally all = std::move(tallies.known);
  for (const auto& [key, n] : tallies.unknown)
    if (static_cast<uint32_t>(key >> 32) == tid) all[key] += n;
  // By (where, blocked_in); ordered: ties come out the same every time.
  std::map<std::pair<std::string, std::string>, uint64_t> by_where;
  const std::string none(facts.sampling().native_samples > 0 ? kNoFrame : kNoPythonFrame);
  uint64_t loading = 0, unnamed = 0;
  for (const auto& [key, n] : all) {
    f.samples += n;
    const auto id = static_cast<uint32_t>(key);
    const std::vector<std::string>* stack = facts.Stack(id);
    if (!stack || stack->empty()) {
      by_where[{none, ""}] += n;
      unnamed += n;
      continue;
    }
    if (const std::string* blocked_in = facts.NativeBlockedIn(id)) {
      const std::string where = UserNativeFrame(*stack);
      by_where[{where, *blocked_in}] += n;
      if (!BlockedCause(*blocked_in).empty()) loading += n;
      else if (IsSystemFrame(where)) unnamed += n;
      continue;
    }
    by_where[{UserFrame(*stack), ""}] += n;
    if (IsDataLoading(*stack)) loading += n;
  }
  if (f.samples == 0) return f;
  f.data_loading_share = static_cast<double>(loading) / static_cast<double>(f.samples);
  f.unnamed_share = static_cast<double>(unnamed) / static_cast<double>(f.samples);
  for (const auto& [where, n] : by_where)
    f.frames.push_back({where.first, where.second, n, static_cast<double>(n) / static_cast<double>(f.samples)});
  std::stable_sort(f.frames.begin(), f.frames.end(),
                   [](const HostFrame& a, const HostFrame& b) { return a.samples > b.samples; });
  if (f.frames.size() > kMaxHostFramesShown) f.frames.resize(kMaxHostFramesShown);
  return f;
}

}  // namespace gpuwatch::collector
