// The GPU timeline from CUPTI activity records: every kernel, copy and memset the device
// executes, whoever launched it (cuBLAS, NCCL and Triton launch around the runtime hooks),
// plus the runtime/driver calls that enqueued them, tied by correlation id.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace gpuwatch::inject {

// Mirror of gpuwatch.proto's ActivityKind (transport/wire_check.cpp asserts it matches).
enum ActivityKind : uint8_t { kActKernel = 1, kActMemcpy = 2, kActMemset = 3, kActSync = 4, kActApi = 5 };
// ActivityRecord::api_domain of kActApi records.
enum ApiDomain : uint32_t { kApiDomainRuntime = 1, kApiDomainDriver = 2 };

// One parsed record, times on CLOCK_MONOTONIC. Kinds and fields follow gpuwatch.wire.Activity.
struct ActivityRecord {
  uint8_t kind;        // ActivityKind
  uint8_t copy_kind;   // wire CopyKind
  uint16_t flags;      // wire EventFlag bits
  uint32_t correlation_id;
  uint64_t start_ns, end_ns;
  uint64_t bytes;
  uint32_t stream;
  int32_t device;
  uint32_t name_id;
  uint32_t api_id, api_domain;
  uint32_t graph_id;       // device work run by a graph launch: CUPTI's graphId; else 0
  uint64_t graph_node_id;
  bool comm_kernel;    // a kernel of NCCL's (not encoded: used to time collectives)
  // Kernels: the launch geometry CUPTI recorded (grid, block, registers, shared memory).
  uint32_t grid[3], block[3];
  uint32_t registers_per_thread, static_shared_bytes, dynamic_shared_bytes;

  // The device's work (a kernel, a copy, a memset), as against an API call's record.
  bool device_work() const { return kind == kActKernel || kind == kActMemcpy || kind == kActMemset; }
};

// CUPTI is loaded with dlopen: without it (or when another profiler holds it) gpuwatch
// keeps working on hooks and events alone and says which source the GPU figures use.
// Completed buffers are queued by CUPTI's callback and parsed on the sender thread, never
// on an application thread.
class CuptiReader {
 public:
  // Mirror of gpuwatch.proto's GpuSource.
  enum class Source { kUnknown = 0, kCupti = 1, kEvents = 2 };

  // Loads CUPTI and enables activity records. Idempotent; any thread.
  void Start();

  // An application profiler is taking CUPTI (hooks_cupti.cpp): flush what CUPTI holds for
  // gpuwatch (parsed by the next Poll), turn gpuwatch's record kinds off, give the
  // application its own buffer callbacks back, stop asking CUPTI for anything. Before
  // Start(), it makes Start() step aside. Any thread; idempotent.
  void HandOver(bool enabling);
  // The application subscribes to CUPTI's callbacks: a detach armed between windows gives its
  // subscriber up (CUPTI has one), and leaves CUPTI attached until the next window closes.
  void YieldSubscriber();
  // The buffer callbacks the application registered (restored by HandOver).
  void AppCallbacks(void* request, void* complete);
  // CUPTI records are still coming (source is CUPTI and it was not handed over).
  bool live() const;
  // CUPTI will record nothing more for gpuwatch: it could not be used, or was handed over.
  // (Before Start() has decided, neither live nor gone.)
  bool gone() const;
  // When CUPTI stopped recording for gpuwatch mid-run (an application's profiler took it, or
  // it could not be attached again for a window), on CLOCK_MONOTONIC; 0: it has not. The
  // device timeline ends there: the calls made after it are no sampling gap.
  uint64_t ended_ns() const;
  // The overhead budget's windows: records on (`on`) or off. Sender thread; no-op unless
  // live. Work launched while off never reaches the timeline. Off, CUPTI is detached soon
  // after (Poll), and attached again when a window opens.
  void SetRecording(bool on);
  // Detaches between windows so far: cuptiFinalize calls, the time they took on the job's
  // threads (the budget's to pay), and device records that came back without times.
  struct DetachCounts {
    uint64_t detaches = 0, detach_ns = 0, incomplete_records = 0;
  };
  DetachCounts detach_counts() const;
  // Where CUPTI was attached with every kind off after a window: from the close to the detach
  // (or to the next window, where it stays attached). Its instrumentation lingers there: on
  // an H200 a disabled CUPTI still cost each launch a quarter to a third of a window's cost
  // (tests/device/cupti_linger.py), which the budget charges (enrich/cupti_budget.h). The
  // latest two spans, [from, to), `to` UINT64_MAX while one lasts; from == 0: none.
  struct LingerSpans {
    uint64_t from[2] = {0, 0}, to[2] = {0, 0};
    bool Contains(uint64_t t_ns) const {
      return (from[0] != 0 && t_ns >= from[0] && t_ns < to[0]) || (from[1] != 0 && t_ns >= from[1] && t_ns < to[1]);
    }
  };
  LingerSpans lingering() const;
  // CUPTI records kernels now (live, a window open, the kernel kind among GPUWATCH_CUPTI_KINDS):
  // its NCCL kernel records will time collectives launched now.
  bool RecordsKernels() const;
  // CUPTI's hardware event tracing took (Blackwell): most of its per-launch cost is gone.
  bool hw_trace() const;

  Source source() const;
  std::string source_detail() const;

  // Sender thread, each cycle before Poll, of the calls drained so far: the latest start
  // among those that returned only once the device had run what was queued before them (a
  // sync), and among the enqueueing calls made wholly within recorded_span(). A sync that
  // started after a window closed says the window's work is done; the last enqueueing call
  // is the one whose API record CUPTI must have handed back before the window's work can be.
  void NoteDrainedCalls(uint64_t queue_drained_ns, uint64_t recorded_enqueue_ns);
  // Where CUPTI's kinds were on throughout the latest window, [from, to) on CLOCK_MONOTONIC
  // (to: UINT64_MAX while it is open): a call made wholly within it has its API record.
  struct RecordedSpan {
    uint64_t from = 0, to = 0;
    bool Holds(uint64_t start_ns, uint64_t end_ns) const { return from != 0 && start_ns >= from && end_ns < to; }
  };
  RecordedSpan recorded_span() const;
  // Sender thread: asks CUPTI for its buffers when `final` (or when due), then hands every
  // record parsed since the last call to `fn`.
  void Poll(bool final, const std::function<void(const ActivityRecord&)>& fn);

 private:
  // Sender thread (Poll). A window closed, its work done (or waited for long enough: see
  // kDetachGraceNs), CUPTI attached and not yet tried: the detach is due (flush and parse
  // first, then ArmDetach). Before that, waiting: CUPTI's records are asked for each cycle.
  enum class DetachStep { kNone, kWaiting, kDue };
  DetachStep DetachDue(uint64_t now);
  // Subscribes the callback that detaches CUPTI at the exit of the job's next CUDA call.
  void ArmDetach();
};

CuptiReader& Cupti();

}  // namespace gpuwatch::inject
