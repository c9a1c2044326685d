// Builds a StepGraph (step_graph.h) from a few consecutive steps' host calls and device work.
//
// Host: each thread's hooked calls in order, the time between them a kHostGap; a call that
// blocks the host is its enqueue (kCall) then its wait (kSyncWait). Device: each piece of
// work is tied to the call that launched it (the call whose span holds CUPTI's API span of
// the work: the hooks time a little more than CUPTI does), follows the previous work of its
// stream, and the first work after a cudaStreamWaitEvent follows the work queued before the
// awaited cudaEventRecord. A blocking call waits for its own work (a copy), else for the
// work before its event's record (a cudaEventSynchronize that names its event, as an
// imported trace's does), else for the work queued before it on its stream
// (cudaStreamSynchronize, a polling loop) or on every stream (cudaDeviceSynchronize, a
// cudaEventSynchronize that does not name its event).
// Streams and events are the hooks' handles throughout: a work's handle is its launching
// call's, so no CUPTI stream id has to be tied to a handle.
#pragma once
#include <cstdint>
#include <vector>

#include "analyze/step_graph.h"
#include "interpret/events.h"

namespace gpuwatch::collector {

// A piece of device work as the graph needs it (DeviceWork's launching span copied: it is
// valid only during the call).
struct GraphWork {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t api_start_ns = 0, api_end_ns = 0;  // its launching call's CUPTI span; 0: unknown
  uint64_t bytes = 0;
  uint32_t stream = 0;  // CUPTI's id (a lane of the graph)
  bool copy = false;    // a copy or memset
  bool comm = false;    // an NCCL kernel
  bool pageable = false;
  // When it was asked for: its launching call's start, else its own.
  uint64_t launched_ns() const { return api_start_ns ? api_start_ns : start_ns; }
};

// A DeviceWork as the graph keeps it.
GraphWork GraphWorkOf(const DeviceWork& w);

struct GraphInput {
  std::vector<StepMark> steps;  // consecutive, recorded whole
  std::vector<HostCall> calls;  // in start order: the steps' calls (and some before them)
  std::vector<GraphWork> works;  // in start order: their work (and some launched before)
};

// The graph of `in.steps`; empty (no nodes) when they hold no call.
StepGraph BuildStepGraph(const GraphInput& in);

}  // namespace gpuwatch::collector
