// One rank's interpretation and analyses, wired together: the interpret stage feeds every
// analysis (and, through Subscribe, the trace); Result() is the rank's RankResult. A copy
// carries the state without the extra subscribers, so a running rank's result is finished
// on a copy and the live rank keeps waiting for what may still go before what it holds.
#pragma once
#include <cstdint>
#include <optional>

#include "analyze/api_calls.h"
#include "analyze/call_sites.h"
#include "analyze/collective_sizes.h"
#include "analyze/collectives.h"
#include "analyze/comm_overlap.h"
#include "analyze/communicators.h"
#include "analyze/copies.h"
#include "analyze/device_state.h"
#include "analyze/gpu.h"
#include "analyze/graphs.h"
#include "analyze/host_frames.h"
#include "analyze/input_io.h"
#include "analyze/launches.h"
#include "analyze/memory.h"
#include "analyze/pipeline.h"
#include "analyze/rank_result.h"
#include "analyze/sm_fill.h"
#include "analyze/step_figures.h"
#include "analyze/step_graphs.h"
#include "analyze/streams.h"
#include "analyze/sync.h"
#include "interpret/rank_interpreter.h"

namespace gpuwatch::collector {

class RankModel {
 public:
  RankModel() { SubscribeAnalyses(); }
  explicit RankModel(const DeviceSweep::Limits& limits) : interp_(limits) { SubscribeAnalyses(); }
  RankModel(const RankModel& o);
  RankModel& operator=(const RankModel&) = delete;

  // Another subscriber of the interpreted events (the trace), after the analyses.
  void Subscribe(EventSink* sink) { interp_.Subscribe(sink); }

  void OnHello(const wire::Hello& h);
  void OnBatch(const wire::Batch& b);
  void OnGoodbye(const wire::Goodbye& g);
  // What the collector spent on this rank (OverheadFacts::collector_cpu_ns), live only.
  void NoteCollectorCpu(uint64_t ns) {
    ++state_;
    interp_.NoteCollectorCpu(ns);
  }
  // Everything held is interpreted now (the rank's last connection closed).
  void Flush();

  // The figures as if the rank ended now, computed once per state (the summary's views and
  // the job's merge all ask for the same one). Valid until the next batch.
  const RankResult& Result() const;
  const RankInterpreter& interpreter() const { return interp_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  void SubscribeAnalyses();
  RankResult Compute() const;  // from a flushed state

  RankInterpreter interp_;
  SyncCounter sync_;
  CopyCounter copies_;
  CollectiveCounter collectives_;
  CollectiveSizeCounter coll_sizes_;
  PipelineCounter pipeline_;
  CommCounter comms_;
  CommOverlap overlap_;
  LaunchCounter launches_;
  GpuCounter gpu_;
  GraphCounter graphs_;
  ApiCallCounter api_calls_;
  StreamCounter streams_;
  StepCharger steps_;
  InputIo io_;
  SiteCounter sites_;
  MemoryCounter memory_;
  DeviceStateCounter device_;
  HostFrames host_frames_;
  SmFillCounter sm_fill_;
  StepGraphs step_graphs_;  // the steps' dependency graphs (what_if.h)
  int rank_ = -1;
  std::string host_;
  uint64_t state_ = 0;          // changes with every input
  bool flushed_ = false;        // nothing held since the last Flush
  mutable std::optional<RankResult> cached_;
  mutable uint64_t cached_state_ = 0;
};

}  // namespace gpuwatch::collector
