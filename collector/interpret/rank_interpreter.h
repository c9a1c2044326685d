// The interpret stage of one rank: everything a rank sends goes in here once, and comes
// out as facts (rank_facts.h), steps (step_finder.h) and one stream of typed events
// (events.h) to the subscribers (event_sink.h): host calls in order, device work joined
// with its launching call in start order, busy spans and classified idle gaps.
// docs/ARCHITECTURE.md describes the stream and where a new kind of event goes.
#pragma once
#include <cstdint>
#include <vector>

#include "gpuwatch.pb.h"
#include "interpret/coverage.h"
#include "interpret/device_sweep.h"
#include "interpret/event_sink.h"
#include "interpret/host_order.h"
#include "interpret/poll_folder.h"
#include "interpret/rank_facts.h"
#include "interpret/step_finder.h"

namespace gpuwatch::collector {

class RankInterpreter {
 public:
  RankInterpreter() = default;
  explicit RankInterpreter(const DeviceSweep::Limits& limits) : sweep_(limits) {}
  // A copy carries the state, not the subscribers (a result is finished on a copy).
  RankInterpreter(const RankInterpreter& o);
  RankInterpreter& operator=(const RankInterpreter&) = delete;

  // Subscribers get every event from now on, in the order they subscribed.
  void Subscribe(EventSink* sink) { fanout_.sinks.push_back(sink); }

  void OnHello(const wire::Hello& h);
  void OnBatch(const wire::Batch& b);
  // The process said goodbye: nothing more comes that could go before what is held.
  void OnGoodbye(const wire::Goodbye& g);
  void NoteCollectorCpu(uint64_t ns) { facts_.NoteCollectorCpu(ns); }
  // Everything held goes out: host calls, then device work, the last idle gap and the open
  // busy spans. The rank is done (or this is a copy being finished for a result).
  void Flush();

  const RankFacts& facts() const { return facts_; }
  StepsFound steps() const { return steps_.Result(); }
  const DeviceSweep& sweep() const { return sweep_; }
  const Coverage& coverage() const { return coverage_; }
  size_t held_host_calls() const { return host_.held(); }
  // Host calls received, and the span of their times (first start, last end).
  uint64_t host_calls() const { return host_calls_; }
  uint64_t host_first_ns() const { return host_first_; }
  uint64_t host_last_ns() const { return host_last_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Fanout final : EventSink {
    std::vector<EventSink*> sinks;
    void OnHostCall(const HostCall& c) override;
    void OnFailedCall(const HostCall& c) override;
    void OnDeviceWork(const DeviceWork& w) override;
    void OnBusy(const BusySpan& b) override;
    void OnIdle(const IdleGap& g) override;
    void OnStep(const StepMark& s) override;
    void OnStepsReset() override;
    void OnProcSample(const wire::ProcSample& s) override;
    void OnDeviceSample(const wire::DeviceSample& s) override;
    void OnThreadSample(const ThreadSample& s) override;
    void OnDeviceSettled(uint64_t ns) override;
    void OnLaunchTally(const wire::LaunchTally& t) override;
  };

  HostCall Interpret(const wire::Event& e) const;
  void ReleaseHost(bool all);

  RankFacts facts_;
  HostOrder host_;
  PollFolder polls_;  // polling loops, folded at ingest (one thread's calls arrive in order)
  StepFinder steps_;
  DeviceSweep sweep_;
  Coverage coverage_;
  bool cupti_off_ = false;  // the library said GPUWATCH_CUPTI=off: no call is CUPTI-recorded
  Fanout fanout_;
  bool host_seen_ = false;  // the device stream trails the host stream only when there is one
  uint64_t host_calls_ = 0, host_first_ = UINT64_MAX, host_last_ = 0;
};

}  // namespace gpuwatch::collector
