// Turns what the application threads recorded into the body of a Batch: drains the rings,
// converts stamp ticks to ns, holds collectives for their GPU time, says how far the stream
// is settled, and adds the definitions and drop counts. Sender thread only.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "assemble/definitions.h"
#include "assemble/held_collectives.h"
#include "enrich/comm_kernel_times.h"
#include "enrich/cupti_reader.h"
#include "enrich/cupti_budget.h"
#include "record/collective_timer.h"
#include "record/ring.h"
#include "record/stamp_clock.h"
#include "transport/encode.h"

namespace gpuwatch::inject {

class Assembler {
 public:
  // What the assembler reads besides the rings (the process's; tests give their own).
  struct Sources {
    const TimeBase* time;
    CollectiveTimes* pairs;
    Definitions::Sources definitions = {};
  };
  // One cycle's view of the rest of the process.
  struct Cycle {
    bool final = false;       // the last batch: nothing is held back
    bool cupti_live = false;  // CUPTI records still come: collectives wait for their kernels
    // Stamp() now (the sender's), and how long a thread's run of summarized launches must
    // have been quiet to be taken from it (record/launch_summary.h).
    uint64_t now_ticks = UINT64_MAX / 2;
    uint64_t run_quiet_ticks = 0;
    int gpu_source = 0;       // CuptiReader::Source; 0 while unknown
    std::string_view gpu_source_detail;
    DropCounts drops;         // every reason but ring_full, which the assembler counts
    // Where CUPTI lingered, attached with its kinds off: the calls made there are counted
    // apart for the budget (CuptiBudget::Cycle::linger_enqueues).
    CuptiReader::LingerSpans cupti_linger;
    // Where CUPTI's kinds were on throughout the latest window: the enqueueing calls made
    // wholly within it are reported (CuptiBudget::Cycle::recorded_enqueue_ns).
    CuptiReader::RecordedSpan cupti_recorded;
    // Hands every CUPTI record parsed since the last cycle to its argument (may be empty),
    // given what the cycle drained from the rings before it.
    std::function<void(const CuptiBudget::Cycle& drained, const std::function<void(const ActivityRecord&)>&)>
        poll_activities;
    // Appends the cycle's samples (environment, process tree, the overhead budget's
    // windows and cost) after the definitions, given what the cycle drained.
    std::function<void(std::string& batch, const CuptiBudget::Cycle& drained)> append_samples;
  };
  struct Batch {
    std::string body;          // a gpuwatch.wire.Batch
    uint64_t events = 0;       // host events in it
    uint64_t activities = 0;   // CUPTI records in it
    uint64_t tallied = 0;      // launches in its tallies (record/launch_summary.h)
    bool worth_sending = false;  // data, drop counts that changed, definitions or samples
    // What the overhead budget counts: the hooked calls drained, the kernel launches among
    // them, the calls that enqueue device work, CUPTI's device records parsed (no now_ns).
    CuptiBudget::Cycle drained;
  };

  explicit Assembler(const Sources& s);

  // Builds the next batch from `rings` (numbered 1, 2, 3...; a batch not worth sending gives
  // its number to the next). Everything the rings held is in it or held back.
  const Batch& AssembleBatch(std::span<Ring* const> rings, const Cycle& in);
  // A sample of the host sampler uses Python stack `id`: its definition goes into `batch`
  // now unless sent before (append_samples calls it, before the samples).
  void UseStack(uint32_t id, std::string& batch) { definitions_.UseStack(id, batch); }
  // Collectives are still held for their GPU time.
  bool holding_collectives() const { return !held_.empty(); }
  // The drop counts so far: `others`, with ring_full counted in `rings`.
  static DropCounts CountDrops(std::span<Ring* const> rings, DropCounts others);

  // Batch.settled_ns bounds the start of every call that is not in a batch yet. A call
  // that never marks itself in flight (a launch, an NVTX pop) may straddle the drain by at
  // most this much.
  static constexpr uint64_t kUntrackedCallNs = 20'000'000;

 private:
  uint64_t InFlightFloorNs(std::span<Ring* const> rings) const;
  void TakeRecord(const Record& r, Ring& ring, uint32_t tid, const Cycle& in);
  // A run of launches summarized on `tid` (record/launch_summary.h): one event, and what the
  // overhead budget counts of its calls.
  void TakeRun(const LaunchSummary::Run& run, uint32_t tid, const Cycle& in);
  // The launch tallies' changes since the last batch, named.
  void AppendTallies(std::span<Ring* const> rings);
  void TakeActivity(const ActivityRecord& a);
  void AppendEventNow(const HostEvent& e);

  const TimeBase& time_;
  const KernelNames& names_;  // launches carry their kernel: named here (record.h: Record::seq)
  HeldCollectives held_;
  Definitions definitions_;
  CommKernelTimes kernels_;
  Batch batch_;
  uint64_t seq_ = 0;
  uint64_t drops_sent_ = 0;  // sum of the drop counts in the previous batch
};

}  // namespace gpuwatch::inject
