// The critical path of one recorded step as the trace draws it: the nodes the path went
// through in that step, at their measured times, so that its slices sit under the host
// calls and kernels they stand for (the per-step shares of critical_path.h say how much;
// this says where). Consecutive nodes of one part are one segment.
#pragma once
#include <cstdint>
#include <vector>

#include "analyze/step_graph.h"

namespace gpuwatch::collector {

struct PathSegment {
  uint64_t start_ns = 0, end_ns = 0;
  int part = 0;  // PathPart
};

// Step `step` (0-based) of `g`: its measured span, from the previous step's done (the
// graph's start for the first) to its own (step_graph.h: StepsSpan).
struct GraphStepSpan {
  uint64_t start_ns = 0, end_ns = 0;
};
std::vector<GraphStepSpan> MeasuredStepSpans(const StepGraph& g);

// The critical path (ReplayGraph's, unchanged graph) within `span`, in time order. A gap
// before a node is its bounding input's: a launch's latency, else the node's own part.
std::vector<PathSegment> PathSegmentsIn(const StepGraph& g, const GraphStepSpan& span);

// Of `graphs`' steps, the one of median measured length, and its path; empty when none.
struct ChosenStepPath {
  GraphStepSpan span;
  std::vector<PathSegment> segments;
};
ChosenStepPath MedianStepPath(const std::vector<const StepGraph*>& graphs);

}  // namespace gpuwatch::collector
