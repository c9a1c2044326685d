// See path_segments.h.
#include "analyze/path_segments.h"

#include <algorithm>

namespace gpuwatch::collector {

std::vector<GraphStepSpan> MeasuredStepSpans(const StepGraph& g) {
  std::vector<uint64_t> end(g.nodes.size()), done;
  for (size_t i = 0; i < end.size(); ++i) end[i] = g.nodes[i].end_ns;
  StepsSpan(g, end, nullptr, nullptr, &done);
  std::vector<GraphStepSpan> spans;
  uint64_t from = g.start_ns;
  for (uint64_t d : done) {
    spans.push_back({from, std::max(from, d)});
    from = std::max(from, d);
  }
  return spans;
}

std::vector<PathSegment> PathSegmentsIn(const StepGraph& g, const GraphStepSpan& span) {
  std::vector<PathNode> path;
  ReplayGraph(g, {}, false, &path);
  std::reverse(path.begin(), path.end());  // time order
  std::vector<PathSegment> out;
  uint64_t at = span.start_ns;  // where the last segment ended: segments never overlap
  const auto add = [&](uint64_t s, uint64_t e, int part) {
    s = std::max({s, at, span.start_ns});
    e = std::min(e, span.end_ns);
    if (e <= s) return;
    if (!out.empty() && out.back().part == part && out.back().end_ns == s) out.back().end_ns = e;
    else out.push_back({s, e, part});
    at = e;
  };
  for (const PathNode& p : path) {
    const GraphNode& n = g.nodes[p.node];
    if (n.end_ns <= span.start_ns) continue;
    const int part = PathPartOf(n);
    // The stretch before it: what held its start (ReplayGraph's accounting of the same).
    add(at, n.start_ns, p.via == static_cast<int8_t>(EdgeKind::kLaunch) ? kPathLaunch : part);
    if (n.start_ns >= span.end_ns) break;
    if (n.kind == NodeKind::kComm) {
      const uint64_t wait = n.dur() - std::min(n.dur(), CommTransferNs(g, p.node));
      add(n.start_ns, n.start_ns + wait, kPathPeerWait);
      add(n.start_ns + wait, n.end_ns, kPathComm);
    } else {
      add(n.start_ns, n.end_ns, part);
    }
  }
  return out;
}

ChosenStepPath MedianStepPath(const std::vector<const StepGraph*>& graphs) {
  struct Candidate {
    const StepGraph* g;
    GraphStepSpan span;
  };
  std::vector<Candidate> steps;
  for (const StepGraph* g : graphs) {
    if (!g || g->nodes.empty()) continue;
    const std::vector<GraphStepSpan> spans = MeasuredStepSpans(*g);
    // The first step of a graph of several holds work queued before it (the replay counts
    // steps from the first one's done): its successors are the graph's steps.
    for (size_t k = spans.size() > 1 ? 1 : 0; k < spans.size(); ++k)
      if (spans[k].end_ns > spans[k].start_ns) steps.push_back({g, spans[k]});
  }
  ChosenStepPath out;
  if (steps.empty()) return out;
  const auto mid = steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2);
  std::nth_element(steps.begin(), mid, steps.end(), [](const Candidate& a, const Candidate& b) {
    return a.span.end_ns - a.span.start_ns < b.span.end_ns - b.span.start_ns;
  });
  out.span = mid->span;
  out.segments = PathSegmentsIn(*mid->g, mid->span);
  return out;
}

}  // namespace gpuwatch::collector
