// What paces a step, and what each fix would buy (issue 52): the figures every view shows.
//
// The step's dependency graph (analyze/step_graph.h) is replayed as soon as each node's
// inputs allow; its longest path is the step's critical path. `CriticalPathFigures` is what
// that path is made of, per rank (over the steps CUPTI recorded whole) and for the job (the
// median rank's parts). A finding's `WhatIf` is the same replay with its cause removed or
// replaced by its fix (analyze/what_if.h says which fix each finding models).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpuwatch::collector {

// The kinds of time on a critical path. Keys (summary.json's `critical_path.parts`) are
// these names with "_ms".
enum PathPart : uint8_t {
  kPathHostCompute = 0,  // the host between hooked calls (Python, data loading, the optimizer)
  kPathLaunch = 1,       // inside launch calls, and from a launch's return to its work's start
  kPathHostSync = 2,     // a sync's own cost after the work it waited for ended
  kPathGpuCompute = 3,   // kernels (not NCCL's)
  kPathCopies = 4,       // copies and memsets
  kPathComm = 5,         // collectives' and send/recv's transfer
  kPathPeerWait = 6,     // a collective waiting for the last rank of its communicator
  kPathParts = 7,
};
inline const char* PathPartKey(int p) {
  static const char* const kKeys[kPathParts] = {"host_compute", "launch_overhead", "sync",
                                                "gpu_compute", "copies", "communication",
                                                "peer_wait"};
  return p >= 0 && p < kPathParts ? kKeys[p] : "?";
}
// How a person says it ("then the GPU's own work paces the step").
inline const char* PathPartWords(int p) {
  static const char* const kWords[kPathParts] = {"host work",   "launch overhead",
                                                 "syncs",       "the GPU's own work",
                                                 "copies",      "communication",
                                                 "waiting for other ranks"};
  return p >= 0 && p < kPathParts ? kWords[p] : "?";
}

// The part with the most time of `parts` (the first on a tie).
inline int LargestPart(const double (&parts)[kPathParts]) {
  int best = 0;
  for (int p = 1; p < kPathParts; ++p)
    if (parts[p] > parts[best]) best = p;
  return best;
}

struct PathStreamTime {
  uint32_t stream = 0;
  double ms = 0;  // GPU compute on the path, per step, on this stream
};

struct CriticalPathFigures {
  size_t steps = 0;     // the steps the path is over (0: not known: no recorded step)
  double step_ms = 0;   // their mean measured step (as the job paced it)
  double path_ms = 0;   // the replay's mean step: how well the graph holds (≈ step_ms)
  // The replay with NCCL kernels taking no time: this rank's own pace, communication aside
  // (the job adds the collectives' transfer to say who paces it: what_if.h).
  double alone_ms = 0;
  double part_ms[kPathParts] = {};  // per step; they sum to path_ms
  std::vector<PathStreamTime> gpu_streams;  // kPathGpuCompute by stream, largest first

  bool known() const { return steps > 0; }
  int Largest() const { return known() ? LargestPart(part_ms) : -1; }  // -1 when not known
  // The parts with time on the path, largest first (ties in PathPart order): the order every
  // view lists and draws them in.
  std::vector<int> PartsLargestFirst() const;
};

// GPU-compute time by stream (`ns_by_stream`), times `scale`, largest first.
std::vector<PathStreamTime> StreamsLargestFirst(const std::map<uint32_t, double>& ns_by_stream, double scale = 1.0);

// A finding's fix, replayed.
struct WhatIf {
  double step_ms = 0;   // the predicted step with the fix (0: not modelled)
  double speedup = 0;   // measured step / predicted step
  std::string assumes;  // one sentence: the fix modelled
  int then_paced_by = -1;  // the PathPart that is largest on the fixed path (-1: not known)

  bool known() const { return step_ms > 0; }
};

// Milliseconds as the what-if sentences write them: "48.6", "12.3", "0.85", "123".
std::string FmtStepMs(double ms);
// "3.9×", "1.25×".
std::string FmtSpeedup(double speedup);
// "then syncs pace the step"; empty when not known.
std::string ThenPacedText(int then_paced_by);

}  // namespace gpuwatch::collector
