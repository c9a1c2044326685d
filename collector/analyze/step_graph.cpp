// See step_graph.h.
#include "analyze/step_graph.h"

#include <algorithm>
#include <map>

namespace gpuwatch::collector {

int PathPartOf(const GraphNode& n) {
  switch (n.kind) {
    case NodeKind::kHostGap: return kPathHostCompute;
    case NodeKind::kCall: return n.enqueue ? kPathLaunch : kPathHostCompute;
    case NodeKind::kSyncWait: return kPathHostSync;
    case NodeKind::kKernel: return kPathGpuCompute;
    case NodeKind::kCopy: return kPathCopies;
    case NodeKind::kComm: return kPathComm;
  }
  return kPathHostCompute;
}

uint64_t CommTransferNs(const StepGraph& g, uint32_t node) {
  const GraphNode& n = g.nodes[node];
  if (n.kind != NodeKind::kComm || n.signature < 0 || static_cast<size_t>(n.signature) >= g.comm_min_ns.size())
    return n.dur();
  return std::min(n.dur(), g.comm_min_ns[n.signature]);
}

// Each step done at its nodes' latest end; the steps' span from the first one's done.
uint64_t StepsSpan(const StepGraph& g, const std::vector<uint64_t>& end, uint64_t* from_out, uint32_t* steps_out,
                   std::vector<uint64_t>* done_out) {
  std::vector<uint64_t> done(g.steps ? g.steps : 1, 0);
  for (uint32_t i = 0; i < g.nodes.size(); ++i) {
    const uint32_t s = std::min<uint32_t>(g.nodes[i].step, static_cast<uint32_t>(done.size() - 1));
    done[s] = std::max(done[s], end[i]);
  }
  for (size_t s = 1; s < done.size(); ++s) done[s] = std::max(done[s], done[s - 1]);
  const uint64_t from = done.size() > 1 ? done[0] : g.start_ns;
  if (from_out) *from_out = from;
  if (steps_out) *steps_out = done.size() > 1 ? static_cast<uint32_t>(done.size() - 1) : 1;
  const uint64_t last = done.back();
  if (done_out) *done_out = std::move(done);
  return last > from ? last - from : 0;
}

uint64_t MeasuredSpan(const StepGraph& g) {
  std::vector<uint64_t> end(g.nodes.size());
  for (size_t i = 0; i < end.size(); ++i) end[i] = g.nodes[i].end_ns;
  return StepsSpan(g, end, nullptr, nullptr);
}

PathReplay ReplayGraph(const StepGraph& g, const ReplayFix& fix, bool alone, std::vector<PathNode>* path) {
  PathReplay out;
  const size_t N = g.nodes.size();
  if (!N) return out;
  std::vector<uint64_t> start(N), end(N), dur(N);
  std::vector<int64_t> bound_by(N, -1);  // the edge index that set the start; -1: its release
  for (uint32_t i = 0; i < N; ++i) {
    const GraphNode& n = g.nodes[i];
    uint64_t d = fix.duration ? fix.duration(g, i) : n.dur();
    if (alone && n.kind == NodeKind::kComm) d = 0;
    dur[i] = d;
    uint64_t s = n.release_ns;
    for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k) {
      const GraphEdge& e = g.edges[k];
      if (fix.keeps && !fix.keeps(g, i, e)) continue;
      const int64_t at = static_cast<int64_t>(end[e.from]) + e.lag_ns;
      const uint64_t t = at < 0 ? 0 : static_cast<uint64_t>(at);
      if (t >= s) {  // an input over the release on a tie: the path goes on through it
        s = t;
        bound_by[i] = k;
      }
    }
    start[i] = s;
    end[i] = s + d;
  }
  // Each step is done when its last node ends (its host calls, the work they launched). The
  // graph's steps run from the first one's done to the last one's, as the job paces steps
  // (analyze/step_pace.h): the work an earlier step left queued delays the first step alone.
  uint64_t from = 0;
  out.span_ns = StepsSpan(g, end, &from, &out.steps);
  uint32_t last = 0;
  for (uint32_t i = 0; i < N; ++i)
    if (end[i] >= end[last]) last = i;

  // The critical path, back from the last end to `from`: each node's own time, and the lag
  // of the input that bound it (a launch's latency); a node its release bound started it.
  std::map<uint32_t, double> streams;
  auto add = [&](int part, uint64_t s, uint64_t e, uint32_t lane) {  // [s, e) clipped to after `from`
    s = std::max(s, from);
    if (e <= s) return;
    out.part_ns[part] += static_cast<double>(e - s);
    if (part == kPathGpuCompute) streams[lane] += static_cast<double>(e - s);
  };
  int64_t at = last;
  while (at >= 0) {
    const uint32_t i = static_cast<uint32_t>(at);
    const GraphNode& n = g.nodes[i];
    if (path) path->push_back({i, bound_by[i] < 0 ? int8_t{-1} : static_cast<int8_t>(g.edges[bound_by[i]].kind)});
    const int part = PathPartOf(n);
    if (n.kind == NodeKind::kComm) {
      const uint64_t transfer = std::min(dur[i], CommTransferNs(g, i));
      add(kPathPeerWait, start[i], start[i] + (dur[i] - transfer), n.lane);
      add(kPathComm, start[i] + (dur[i] - transfer), end[i], n.lane);
    } else {
      add(part, start[i], end[i], n.lane);
    }
    if (start[i] <= from) break;
    if (bound_by[i] < 0) {
      // Before its release: an earlier step's work (device) or the host before the steps.
      add(part, from, start[i], n.lane);
      break;
    }
    const GraphEdge& e = g.edges[bound_by[i]];
    if (start[i] > end[e.from]) add(e.kind == EdgeKind::kLaunch ? kPathLaunch : part, end[e.from], start[i], n.lane);
    else if (e.kind == EdgeKind::kLaunch) {  // the work began before its launch returned
      const uint64_t lo = std::max(start[i], from), hi = std::max(end[e.from], from);
      if (hi > lo) out.part_ns[kPathLaunch] -= static_cast<double>(hi - lo);
    }
    at = e.from;
  }
  for (double& p : out.part_ns) p = std::max(p, 0.0);
  out.streams = StreamsLargestFirst(streams);
  return out;
}

}  // namespace gpuwatch::collector
