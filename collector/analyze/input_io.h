// The `input_io` evidence (issue 6): what the rank's process tree (the process and its
// descendants, e.g. DataLoader workers) did while the GPU sat idle waiting for the host.
// The library samples the tree's cumulative CPU time, run-queue wait (every thread's) and read counters
// about every 100 ms (wire ProcSample); the device sweep reports each host-wait gap
// (interpret/device_sweep.h). Each sample interval's increase is shared among the gaps it overlaps
// in proportion to the overlap, i.e. the rate is taken as even within an interval.
//
// Streaming, bounded: both arrive in time order but at different lags (samples within
// ~100 ms, gaps ~2 s behind the newest CUPTI record), so each side keeps only what the other
// may still overlap: samples until no later gap can start before their end (Settle), gaps
// until a sample has covered their end. Each side is capped at kMaxKept entries.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>

#include "gpuwatch.pb.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct InputIoFigures {
  uint64_t intervals = 0;   // sample intervals received
  uint32_t max_processes = 0;
  double host_wait_s = 0;   // every host-wait gap, covered by samples or not
  // Over the host-wait gaps covered by samples:
  double gap_s = 0;         // gap time covered
  double cpu_s = 0;         // CPU time of the tree
  double run_wait_s = 0;    // runnable, waiting for a CPU
  double read_chars = 0;    // bytes read (rchar)
  double read_bytes = 0;    // bytes read from storage (read_bytes)
  // The cgroup's CPU throttling (cpu.stat, issue 17 `cpu_throttled`): scheduler periods and
  // those in which the group used up its quota, and the time its threads were held.
  double periods = 0, throttled_periods = 0, throttled_s = 0;
  double throttled_gap_s = 0;  // gap time x the share of its interval's periods that were throttled
  // Over all sampled time, for comparison:
  double all_s = 0, all_cpu_s = 0, all_read_chars = 0;
  double all_run_wait_s = 0;  // the tree's threads runnable, waiting for a CPU (cpu_oversubscribed)
  // Of all_s, the intervals in which the tree's threads waited for a CPU at least
  // wire::kContendedWaitShare of the time: every core the job may use was busy. What gpuwatch's
  // threads beside the job (the sender, the sampler, the collector) run there is taken from it.
  double all_contended_s = 0;
  double all_periods = 0, all_throttled_periods = 0, all_throttled_s = 0;
  bool cgroup = false;  // samples carried the cgroup's counters

  // The share of scheduler periods the group was throttled in, during the host-wait gaps.
  double ThrottledShareInGaps() const { return periods > 0 ? std::min(1.0, throttled_periods / periods) : 0.0; }
};

class InputIo final : public EventSink {
 public:
  static constexpr size_t kMaxKept = 4096;

  void OnProcSample(const wire::ProcSample& s) override;
  // Host-wait gaps, in time order.
  void OnIdle(const IdleGap& g) override {
    if (g.kind == kIdleHost) OnGap(g.start_ns, g.end_ns);
  }
  // No gap reported from now on starts before `mark`.
  void OnDeviceSettled(uint64_t mark) override;
  void OnGap(uint64_t a, uint64_t b);
  const InputIoFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Interval {
    uint64_t t0, t1;
    double cpu, wait, rchar, rbytes;  // increases over the interval
    double periods, throttled_periods, throttled_ns;
  };
  struct Gap {
    uint64_t a, b;
  };
  void Pair(const Interval& s, const Gap& g);

  InputIoFigures f_;
  bool have_prev_ = false;
  wire::ProcSample prev_;
  std::deque<Interval> samples_;
  std::deque<Gap> gaps_;
};

}  // namespace gpuwatch::collector
