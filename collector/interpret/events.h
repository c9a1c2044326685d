// The typed events the interpret stage emits for one rank, in time order (see
// docs/ARCHITECTURE.md): host calls, device work with the call that launched it, busy
// spans and idle gaps of the device, steps. Times are the rank's CLOCK_MONOTONIC ns.
#pragma once
#include <cstdint>

#include "common/wire_vocab.h"
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

// One intercepted call (wire Event), with what the interpret stage decided about it.
struct HostCall {
  uint64_t t_ns, dur_ns;
  uint64_t bytes;  // as sent: copies' bytes; collectives' count x element size
  uint64_t stream, comm_id, seq, gpu_ns;
  int32_t peer;
  uint32_t tid, flags;
  uint32_t name_id;  // kernel launches and NVTX ranges: id of a KernelName
  uint32_t site_id;  // long syncs and blocking copies: id of a CallSite
  uint64_t address;      // memory calls: the allocation's address
  uint64_t total_bytes;  // cudaMemGetInfo: the device's total memory (bytes = free)
  wire::Api api;
  wire::CopyKind copy_kind;
  // Decided once (common/wire_vocab.h):
  SyncKind sync_kind;  // kNotSync unless an explicit sync, a small blocking copy or a spin
  bool blocks_host;
  // Made while its stream was captured into a CUDA graph: recorded, not executed (no work,
  // no wait); the analyses count it as a capture, never as a launch, copy or sync.
  bool captured;
  // Collectives: the communicator's size (the world size when it was never announced),
  // its identity across ranks (unique_hash, else comm_id), S as nccl-tests define it
  // (count x element size, x nranks for AllGather/ReduceScatter), and whether GPU time
  // was measured.
  int32_t comm_nranks;
  uint64_t comm_hash;
  int32_t comm_rank;     // this rank's index in it (0 when never announced)
  bool comm_identified;  // seen created, so comm_hash names it on every rank (CommFacts::Identified)
  uint64_t coll_bytes;
  bool timed;
  // CUPTI was recording when the call was made (always, unless the overhead budget's
  // windows sample the timeline, or GPUWATCH_CUPTI=off): the device work it enqueued is on
  // the timeline.
  bool recorded = true;
  // Made after CUPTI stopped recording for good (an application's profiler took it:
  // Coverage::ended): not recorded, and no sampling gap either; the device timeline ends
  // before it.
  bool past_timeline = false;
  // The calls it stands for: 1, but for a run of launches the library summarized
  // (CUDA_LAUNCH_RUN: its launches, and the host time inside them; their kernels come as
  // tallies: EventSink::OnLaunchTally).
  uint64_t calls = 1, calls_ns = 0;

  uint64_t end_ns() const { return t_ns + dur_ns; }
};

// The API call(s) that enqueued a piece of device work: the outer span of its runtime and
// driver records (CUPTI, joined by correlation id).
struct ApiSpan {
  uint64_t start_ns, end_ns;
};

// A kernel's launch geometry, from CUPTI's kernel record: how much of the device its grid
// can occupy (analyze/sm_fill.h). blocks == 0: not known (a copy, an old library).
struct LaunchGeometry {
  uint64_t blocks = 0;         // grid x*y*z
  uint32_t block_threads = 0;  // block x*y*z
  uint32_t registers = 0;      // per thread
  uint32_t shared_bytes = 0;   // per block: static + dynamic
};

struct DeviceWork {
  uint64_t start_ns, end_ns;
  uint64_t bytes;  // copies, memsets
  uint32_t correlation_id, name_id, stream;
  int32_t device;
  wire::ActivityKind kind;
  wire::CopyKind copy_kind;
  bool pageable;
  bool comm;  // a kernel of NCCL's
  bool late;  // released after the sweep had passed its start (the reorder window missed it)
  const ApiSpan* api;  // the launching call; null when unknown (valid during the call only)
  bool first_of_api;   // the first work released for that call (a call can launch several)
  // Run by a CUDA graph launch: the executable graph's CUPTI id (0: launched on its own).
  // Its correlation id, and so `api`, is the graph launch's.
  uint32_t graph_id;
  LaunchGeometry geometry;  // kernels

  uint64_t dur_ns() const { return end_ns - start_ns; }
};

// A merged busy interval of the device, closed: all work, or all work but NCCL kernels
// (busy(all) - busy(non-comm) is communication that compute did not hide).
struct BusySpan {
  uint64_t start_ns, end_ns;
  bool noncomm;
};

// Why the device was idle between two busy intervals: the one classification every view
// shows. First rule that applies:
//   sync_wait    the host was blocked in a sync call for more than half the gap;
//   host_wait    the call that launched the work ending the gap started after the gap began
//                and the gap is at least kLaunchGapNs (thresholds.h): host work (data loading, Python);
//   launch_wait  that call had not returned when the gap began (or began after it, briefly):
//                launch overhead, the GPU running dry between launches;
//   other        the work was launched well before the gap (dependencies, stream waits) or
//                its launch is unknown.
enum IdleKind : uint8_t { kIdleHost = 0, kIdleLaunch = 1, kIdleSync = 2, kIdleOther = 3, kIdleKinds = 4 };
inline const char* IdleKindKey(int k) {
  static const char* const kKeys[kIdleKinds] = {"host_wait", "launch_wait", "sync_wait", "other"};
  return k >= 0 && k < kIdleKinds ? kKeys[k] : "?";
}

struct IdleGap {
  uint64_t start_ns, end_ns;
  IdleKind kind;
  // After the device's last work, until the last step ended: inside the steps, outside the
  // device's active span (emitted once, when the rank is flushed).
  bool trailing;
  // When the call that launched the work ending the gap started (its CUPTI API record);
  // 0: not known (no record, or a trailing gap). Names the thread the GPU waited for.
  uint64_t launch_ns;
};

// Where a thread that called CUDA was at one instant (the library's host sampler, issue
// 16): its Python stack by id (RankFacts::Stack; 0: none read).
struct ThreadSample {
  uint64_t t_ns;
  uint32_t tid;
  uint32_t stack_id;
  bool in_cuda;  // inside a hooked call that can block (waiting on the GPU)
};

// A training step, as the step finder saw it close (NVTX steps, in order).
struct StepMark {
  uint64_t start_ns, end_ns;
  bool device_covered;  // CUPTI recorded the whole step (always, unless the budget sampled)
};

}  // namespace gpuwatch::collector
