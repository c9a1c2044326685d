// See step_graphs.h.
#include "analyze/step_graphs.h"

#include <algorithm>

namespace gpuwatch::collector {

namespace {
// The sweep has passed a chunk's work once it is this far past the chunk's last end seen:
// work still queued behind it would have started by then.
constexpr uint64_t kSettleNs = 1'000'000;
}  // namespace

// Whether the calls arriving now can belong to a graph: the chunk being filled is sampled,
// or the next one will be (and these may be the step before its first, which it reads).
bool StepGraphs::Wanted() const {
  if (!open_.empty()) return open_sampled_ || (open_.size() + 1 >= kStepsPerGraph && Sampled(chunks_ + 1));
  return Sampled(chunks_);
}

void StepGraphs::OnHostCall(const HostCall& c) {
  if (c.captured) return;
  const bool p2p = c.api == wire::NCCL_SEND || c.api == wire::NCCL_RECV;
  uint64_t nth = 0;
  if (p2p) {  // every send and recv is numbered, sampled or not
    const auto key = std::make_tuple(c.comm_hash, c.peer, c.api == wire::NCCL_SEND);
    auto it = p2p_count_.find(key);
    if (it == p2p_count_.end() && p2p_count_.size() < kMaxP2pLinks) it = p2p_count_.emplace(key, 0).first;
    nth = it == p2p_count_.end() ? UINT64_MAX : it->second++;
  }
  // A sync or a range is ordered by its end: one that began in a chunk that took its calls
  // may still come.
  for (Chunk& k : closed_)
    if (k.taken && k.Reads(c, k.from_ns)) {
      k.calls.push_back(c);
      if (p2p) k.calls.back().seq = nth;
    }
  if (!Wanted()) return;
  calls_.push_back(c);
  if (p2p) calls_.back().seq = nth;
  if (calls_.size() > kMaxBuffered) Prune();
}

void StepGraphs::OnDeviceWork(const DeviceWork& w) {
  if (!IsDeviceWork(w.kind)) return;
  const GraphWork g = GraphWorkOf(w);
  // Kept when a sampled chunk may need it: launched in one (or the step before it), or
  // still running when one starts (a release), or launched while calls are wanted.
  const uint64_t launched = g.launched_ns();
  bool needed = (Wanted() && launched + lookback_ns_ >= last_end_) ||
                (!open_.empty() && open_sampled_ && g.end_ns + lookback_ns_ >= open_.front().start_ns);
  for (Chunk& c : closed_) {
    if (launched >= c.steps.back().end_ns || g.end_ns + lookback_ns_ < c.steps.front().start_ns) continue;
    needed = true;
    if (launched >= c.steps.front().start_ns) c.works_end = std::max(c.works_end, g.end_ns);
  }
  if (!needed) return;
  works_.push_back(g);
  if (works_.size() > kMaxBuffered) Prune();
}

void StepGraphs::OnStep(const StepMark& m) {
  last_end_ = std::max(last_end_, m.end_ns);
  lookback_ns_ = std::min(kMaxLookBackNs, m.end_ns - m.start_ns);
  if (!m.device_covered) {
    Close();
    Prune();
    return;
  }
  ++steps_seen_;
  if (open_.empty()) {
    open_sampled_ = Sampled(chunks_);
    sampled_chunks_ += open_sampled_;
  }
  sampled_steps_ += open_sampled_;
  open_.push_back(m);
  if (open_.size() >= kStepsPerGraph) Close();
  Prune();
}

void StepGraphs::OnStepsReset() {
  open_.clear();
  closed_.clear();
  graphs_.clear();
  chunks_ = 0;
  stride_ = 1;
  steps_seen_ = sampled_steps_ = sampled_chunks_ = 0;
}

void StepGraphs::OnDeviceSettled(uint64_t ns) { BuildSettled(ns); }

void StepGraphs::Close() {
  if (open_.empty()) return;
  if (open_sampled_) {
    const uint64_t end = open_.back().end_ns;
    Chunk c;
    c.steps = std::move(open_);
    c.works_end = end;
    closed_.push_back(std::move(c));
  }
  open_.clear();
  ++chunks_;
}

void StepGraphs::BuildSettled(uint64_t settled) {
  bool built = false;
  while (!closed_.empty() && settled > std::max(closed_.front().works_end, closed_.front().steps.back().end_ns) + kSettleNs) {
    Keep(BuildStepGraph(InputOf(closed_.front())));
    closed_.pop_front();
    built = true;
  }
  if (built) Prune();
}

void StepGraphs::TakeCalls() {
  for (Chunk& k : closed_) {
    if (k.taken || last_end_ < k.steps.back().end_ns + lookback_ns_) continue;
    k.from_ns = Back(k.steps.front().start_ns);
    k.calls = BufferedCallsOf(k, k.from_ns);
    k.taken = true;
  }
}

std::vector<HostCall> StepGraphs::BufferedCallsOf(const Chunk& c, uint64_t from) const {
  std::vector<HostCall> out;
  for (const HostCall& h : calls_) {
    if (h.t_ns >= c.steps.back().end_ns + lookback_ns_) break;  // (in order of start, but syncs' and ranges' by their end)
    if (c.Reads(h, from)) out.push_back(h);
  }
  return out;
}

GraphInput StepGraphs::InputOf(const Chunk& c) const {
  GraphInput in;
  in.steps = c.steps;
  const uint64_t t0 = c.steps.front().start_ns, t1 = c.steps.back().end_ns;
  // And the step before (Chunk::Reads): its last calls launched work, and recorded events,
  // the first step waits for.
  in.calls = c.taken ? c.calls : BufferedCallsOf(c, Back(t0));
  // The interpreter orders syncs and NVTX ranges by their end: the builder needs starts.
  std::stable_sort(in.calls.begin(), in.calls.end(), [](const HostCall& a, const HostCall& b) { return a.t_ns < b.t_ns; });
  for (const GraphWork& w : works_)
    if (w.launched_ns() < t1 && w.end_ns >= t0) in.works.push_back(w);
  return in;
}

bool StepGraphs::Usable(const StepGraph& g) { return !g.nodes.empty() && g.nodes.size() <= kMaxNodes; }

void StepGraphs::Keep(StepGraph g) {
  if (!Usable(g)) return;
  graphs_.push_back(std::make_shared<const StepGraph>(std::move(g)));
  if (graphs_.size() < kMaxGraphs) return;
  // Full: keep every other graph (still spread over the run) and build half as often.
  StepGraphList kept;
  for (size_t i = 0; i < graphs_.size(); i += 2) kept.push_back(graphs_[i]);
  graphs_ = std::move(kept);
  stride_ *= 2;
}

// Drops what no chunk still needs: work before the oldest chunk waiting (or being filled),
// calls before the oldest that has not taken its own, else before the latest step's end.
// Over the cap, the oldest go, and the chunks they belonged to with them.
void StepGraphs::Prune() {
  TakeCalls();
  // Work from the oldest chunk waiting (or being filled), else the latest step; calls from
  // the oldest that has not taken its own.
  const auto untaken = std::find_if(closed_.begin(), closed_.end(), [](const Chunk& k) { return !k.taken; });
  const uint64_t open_start = !open_.empty() && open_sampled_ ? open_.front().start_ns : last_end_;
  const uint64_t works_from = Back(closed_.empty() ? open_start : closed_.front().steps.front().start_ns);
  const uint64_t calls_from = Back(untaken != closed_.end() ? untaken->steps.front().start_ns : open_start);
  uint64_t lost_calls = 0, lost_works = 0;  // calls or work a chunk needed went before these
  while (!calls_.empty() && (calls_.front().end_ns() < calls_from || calls_.size() > kMaxBuffered)) {
    if (calls_.front().end_ns() >= calls_from) lost_calls = std::max(lost_calls, calls_.front().end_ns());
    calls_.pop_front();
  }
  while (!works_.empty() && (works_.front().end_ns < works_from || works_.size() > kMaxBuffered)) {
    if (works_.front().end_ns >= works_from) lost_works = std::max(lost_works, works_.front().end_ns);
    works_.pop_front();
  }
  if (!lost_calls && !lost_works) return;
  // The chunks that needed them go (a chunk that took its calls needs only its work).
  std::erase_if(closed_, [&](const Chunk& k) {
    const uint64_t start = k.steps.front().start_ns;
    return start <= lost_works || (!k.taken && start <= lost_calls);
  });
  if (!open_.empty() && open_.front().start_ns <= std::max(lost_calls, lost_works)) open_.clear();
}

StepGraphList StepGraphs::Graphs() const {
  StepGraphList out = graphs_;
  std::vector<const Chunk*> pending;
  for (const Chunk& c : closed_) pending.push_back(&c);
  Chunk open;
  open.steps = open_;
  if (!open_.empty() && open_sampled_) pending.push_back(&open);  // the run's last steps
  for (const Chunk* c : pending) {
    StepGraph g = BuildStepGraph(InputOf(*c));
    if (Usable(g)) out.push_back(std::make_shared<const StepGraph>(std::move(g)));
  }
  return out;
}

}  // namespace gpuwatch::collector
