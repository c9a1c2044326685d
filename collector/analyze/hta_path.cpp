// See hta_path.h.
#include "analyze/hta_path.h"

#include <algorithm>

namespace gpuwatch::collector {

namespace {

using Spans = std::vector<std::pair<uint64_t, uint64_t>>;

void Merge(Spans& s) {
  std::sort(s.begin(), s.end());
  Spans out;
  for (const auto& [a, b] : s) {
    if (!out.empty() && a <= out.back().second) out.back().second = std::max(out.back().second, b);
    else out.push_back({a, b});
  }
  s = std::move(out);
}

int64_t Diff(uint64_t later, uint64_t earlier) { return static_cast<int64_t>(later) - static_cast<int64_t>(earlier); }
uint64_t NonNegative(int64_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v); }

}  // namespace

bool HtaHostTime::HtaBlocking(const HostCall& c) {
  return IsExplicitSync(c.api) || c.api == wire::CUDA_MEMCPY || c.api == wire::CUDA_EVENT_QUERY;
}

HtaHostTime::HtaHostTime(const std::vector<HostSpan>& top_level, const std::vector<HostCall>& calls) {
  for (const HostSpan& s : top_level) counted_[s.tid].push_back({s.start_ns, s.end_ns});
  for (const HostCall& c : calls)
    if (!c.captured && HtaBlocking(c) && c.dur_ns > 0) blocking_[c.tid].push_back({c.t_ns, c.end_ns()});
  for (auto& [tid, s] : counted_) Merge(s);
  for (auto& [tid, s] : blocking_) Merge(s);
}

uint64_t HtaHostTime::Overlap(const Spans& spans, uint64_t start_ns, uint64_t end_ns) {
  uint64_t sum = 0;
  // The first span that ends after `start_ns`, then on while they start before `end_ns`.
  auto it = std::upper_bound(spans.begin(), spans.end(), start_ns,
                             [](uint64_t t, const std::pair<uint64_t, uint64_t>& s) { return t < s.second; });
  for (; it != spans.end() && it->first < end_ns; ++it) {
    const uint64_t a = std::max(it->first, start_ns), b = std::min(it->second, end_ns);
    if (b > a) sum += b - a;
  }
  return sum;
}

uint64_t HtaHostTime::Weight(uint32_t tid, uint64_t start_ns, uint64_t end_ns) const {
  if (end_ns <= start_ns) return 0;
  const auto c = counted_.find(tid);
  if (c == counted_.end()) return 0;
  const uint64_t counted = Overlap(c->second, start_ns, end_ns);
  const auto b = blocking_.find(tid);
  const uint64_t blocked = b == blocking_.end() ? 0 : Overlap(b->second, start_ns, end_ns);
  return counted > blocked ? counted - blocked : 0;
}

HtaPath HtaComparablePath(const StepGraph& g, const HtaHostTime& host) {
  HtaPath out;
  const size_t N = g.nodes.size();
  if (!N) return out;
  // Whether a device node follows its launch (HTA's launch delay) rather than its stream's
  // previous work: the stream's previous work, and the work it waited for through an
  // event, had ended when the launching call began.
  auto follows_launch = [&](uint32_t i) {
    const GraphNode& n = g.nodes[i];
    int64_t call = -1;
    for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k)
      if (g.edges[k].kind == EdgeKind::kLaunch) call = g.edges[k].from;
    if (call < 0) return false;
    const uint64_t launched = g.nodes[call].start_ns;
    for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k) {
      const GraphEdge& e = g.edges[k];
      if ((e.kind == EdgeKind::kStream || e.kind == EdgeKind::kEvent) && g.nodes[e.from].end_ns >= launched) return false;
    }
    return true;
  };

  // Heaviest path to each node's start (ds) and end (de); `via`: the input edge it came by.
  std::vector<uint64_t> weight(N), ds(N, 0), de(N, 0);
  std::vector<int64_t> via(N, -1);
  for (uint32_t i = 0; i < N; ++i) {
    const GraphNode& n = g.nodes[i];
    // A blocking call's wait node (step_graph.h) runs from its enqueue's end; the path
    // reaches it by the thread (its enqueue) or by the work it waited for, and HTA weighs
    // the rest of the call's span from there (nothing, for a call HTA takes as blocking).
    uint64_t enqueued = n.start_ns;
    if (n.kind == NodeKind::kSyncWait)
      for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k)
        if (g.edges[k].kind == EdgeKind::kThread) enqueued = std::min(enqueued, g.nodes[g.edges[k].from].end_ns);
    auto weight_from = [&](uint64_t reached_ns) {
      if (n.kind != NodeKind::kSyncWait) return n.host() ? host.Weight(n.lane, n.start_ns, n.end_ns) : n.dur();
      return host.Weight(n.lane, std::min(std::max(reached_ns, enqueued), n.end_ns), n.end_ns);
    };
    const bool launch_bound = !n.host() && follows_launch(i);
    // The latest end of the work it waited for through an event: when that ended after
    // the stream's previous work, HTA draws the event's edge alone, no kernel-kernel gap.
    uint64_t event_end = 0;
    for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k)
      if (g.edges[k].kind == EdgeKind::kEvent) event_end = std::max(event_end, g.nodes[g.edges[k].from].end_ns);
    weight[i] = weight_from(enqueued);  // the path starts here
    for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k) {
      const GraphEdge& e = g.edges[k];
      const GraphNode& src = g.nodes[e.from];
      uint64_t at = 0;
      switch (e.kind) {
        case EdgeKind::kLaunch:  // from the call's start, as HTA draws it
          if (!launch_bound) continue;
          at = ds[e.from] + NonNegative(Diff(n.start_ns, src.start_ns));
          break;
        case EdgeKind::kStream: {
          const uint64_t gap = NonNegative(Diff(n.start_ns, src.end_ns));
          if (launch_bound || gap >= kHtaKernelGapLimitNs || event_end >= src.end_ns) continue;
          at = de[e.from] + gap;
          break;
        }
        default: at = de[e.from]; break;  // the thread's order, an event, a sync: no weight
      }
      const uint64_t w = weight_from(src.end_ns);
      // The heaviest way in; on a tie an input over starting here, and the first input (the
      // thread's: HTA reaches a call's end through the call).
      const uint64_t best = ds[i] + weight[i];
      if (at + w > best || (via[i] < 0 && at + w == best)) {
        ds[i] = at;
        weight[i] = w;
        via[i] = k;
      }
    }
    de[i] = ds[i] + weight[i];
  }
  uint32_t last = 0;
  for (uint32_t i = 0; i < N; ++i)
    if (de[i] > de[last]) last = i;
  out.length_ns = de[last];

  // Back along the path, each weight to its category. A launch edge leaves its call from
  // the call's start: the call's own weight is not on the path then.
  bool whole = true;  // the path runs through the node's own span
  for (int64_t at = last; at >= 0;) {
    const uint32_t i = static_cast<uint32_t>(at);
    const GraphNode& n = g.nodes[i];
    if (whole) (n.host() ? out.cpu_ns : out.gpu_ns) += weight[i];
    if (via[i] < 0) break;
    const GraphEdge& e = g.edges[via[i]];
    const GraphNode& src = g.nodes[e.from];
    whole = true;
    if (e.kind == EdgeKind::kLaunch) {
      out.launch_ns += NonNegative(Diff(n.start_ns, src.start_ns));
      whole = false;
    } else if (e.kind == EdgeKind::kStream) {
      out.kernel_gap_ns += NonNegative(Diff(n.start_ns, src.end_ns));
    }
    at = e.from;
  }
  return out;
}

}  // namespace gpuwatch::collector
