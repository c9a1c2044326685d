// One rank's part of the trace: a process track, and a packet sequence per track below it
// (track_sequence.h says why). It subscribes to the rank's interpreted events (the interpret
// stage's host calls, device work with its launching call, idle gaps, busy spans); steps
// and findings are added at job end (docs/TRACE.md says what is where).
//
// Tracks (uuid = rank's base sequence id << 14 | local id, so uuids never collide across
// ranks):
//   process "rank R · host · pid P"            descriptors and instants (hangs, long stalls,
//   │                                          findings), absolute timestamps
//   ├─ "thread T" (+ "thread T · overlap N")   host calls from the hooks (Batch.events)
//   ├─ "CUDA API (CUPTI)" (+ lanes)            API records; flows start here
//   ├─ "GPU D · stream S" (+ lanes)            kernels, memcpy, memset; flows end here
//   ├─ "GPU idle"                              idle gaps, named by why (IdleKind)
//   ├─ counters "GPU busy %", "H2D MB/s"       10 ms windows
//   ├─ counters "NVML GPU util %", "SM clock MHz", "power W", "temperature C"   each NVML sample
//   ├─ "steps"                                 the steps found, with their figures (job end)
//   ├─ "critical path"                         what the step's critical path is made of, over
//   │                                          one step (job end)
//   └─ "python · thread T (sampled)"           the host sampler's stacks: a slice per run of
//                                              samples with one stack, named by its user frame
// Slices on one track always nest: a slice goes to the first lane of its track whose last
// slice ended at or before its start; at most kMaxLanes lanes, beyond that it is dropped and
// counted. Memory is bounded: threads, streams and names each have a cap.
#pragma once
#include <google/protobuf/arena.h>
#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analyze/hang.h"
#include "analyze/comm_overlap.h"
#include "analyze/critical_path.h"
#include "analyze/path_segments.h"
#include "analyze/memory.h"
#include "analyze/step_figures.h"
#include "gpuwatch.pb.h"
#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"
#include "perfetto_trace.pb.h"
#include "trace/trace_file.h"
#include "trace/track_sequence.h"
#include "trace/windows.h"

namespace gpuwatch::collector {

class RankTrace final : public EventSink {
 public:
  struct Limits {
    size_t max_threads = 1024;
    size_t max_streams = 512;
    size_t max_names = 20000;
  };
  static constexpr int kMaxLanes = 16;
  static constexpr size_t kMaxSampledThreads = 256;
  static constexpr int kCounterTracks = 12;  // counter tracks per rank (the Counter enum below)

  // `trace_pid`: the pid written into the ProcessDescriptor (the real one unless another
  // rank of the job already uses it).
  // `ids`: the trace's sequence and flow ids, shared by its ranks.
  RankTrace(TraceFile* file, TraceIds* ids, int32_t trace_pid, const wire::Hello& hello,
            Limits limits);
  RankTrace(TraceFile* file, TraceIds* ids, int32_t trace_pid, const wire::Hello& hello)
      : RankTrace(file, ids, trace_pid, hello, Limits{}) {}

  // The rank's names (kernels, NVTX messages), looked up as events are written.
  void Bind(const RankFacts* facts) { facts_ = facts; }
  // EventSink: the rank's interpreted events.
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnBusy(const BusySpan& b) override;
  void OnIdle(const IdleGap& g) override;
  // NVML: the device's utilization, SM clock, power and temperature as counters.
  void OnDeviceSample(const wire::DeviceSample& s) override;
  void OnThreadSample(const ThreadSample& s) override;
  // After each batch: what it produced goes to the file (one write per batch).
  void AfterBatch();
  void OnHang(const Hang& hang);
  // An instant on the process track (findings at job end).
  void Instant(uint64_t ts, const std::string& name);
  // The steps track, written at job end: one slice "step" per step, its number (from
  // `first_index`) as the argument `step` and, when `figures`, its device figures (ms).
  // `overlap`: the NCCL kernel time of each step overlapped with compute / exposed
  // (analyze/comm_overlap.h; by step index, may be shorter), as two more arguments.
  void WriteSteps(const std::deque<StepRec>& steps, size_t from, uint64_t first_index, bool figures,
                  const std::vector<OverlapTally>& overlap = {});
  // The "critical path" track, written at job end over `step`: the path's `segments` in it
  // at their own times (analyze/path_segments.h), each named with its part and ms; without
  // segments (no step graph kept: a rank that came as a digest), each part of `c` (largest
  // first) a slice laid end to end, as long as its share of the path.
  void WriteCriticalPath(const CriticalPathFigures& c, const StepRec& step,
                         const std::vector<PathSegment>& segments = {});
  // The rank's last connection closed: the counter windows are written out.
  void Finish();

  uint32_t sequence_id() const { return seq_; }
  // Slices not written because every lane of their track was busy, or their thread/stream
  // table was full (they go to a shared track then, so this stays 0 unless lanes run out).
  uint64_t dropped_slices() const { return dropped_slices_; }
  // Host-blocking calls written as "long stall" instants (at most kMaxStallInstants).
  uint64_t long_stalls() const { return long_stalls_; }
  // A call that blocked the host at least this long gets an instant on the process track.
  static constexpr uint64_t kLongStallNs = 100'000'000;
  static constexpr uint64_t kMaxStallInstants = 1000;

 private:
  // Annotation keys: their iids in keys_ (filled in this order by the constructor).
  enum Key : uint32_t {
    kKeyBytes = 1, kKeyBlocking, kKeySeq, kKeyBusbw, kKeyPeer, kKeyStep,
    kKeyCompute, kKeyCommExposed, kKeyIdle0, kKeyIdleLast = kKeyIdle0 + kIdleKinds - 1, kKeySyncMid, kKeyCopies,
    kKeyGraph, kKeyNcclOverlapped, kKeyNcclExposed, kKeyLaunches, kKeyLaunchCallsMs, kKeyPathMs, kKeyPathShare
  };
  struct Lanes {
    uint64_t last_end[kMaxLanes] = {};
    std::vector<TrackSequence> seqs;  // one per lane in use (their number: lanes used)
  };

  perfetto::protos::TracePacket& NewPacket(uint64_t ts);
  void Write(size_t reserve_after = 0, TracePart part = TracePart::kSummary);
  void DescribeProcess();
  uint64_t Uuid(uint32_t local) const;
  // Writes one slice of `part` on the first free lane of `lanes`, making the lane's track
  // (named by track_name(), called only then) when it is new; false if no lane was free.
  template <class TrackName>
  bool Slice(uint32_t base_local, Lanes& lanes, int32_t order, TracePart part, uint64_t start, uint64_t end,
             uint32_t name, const Ann* anns, int n_anns, uint64_t flow_out, uint64_t flow_in,
             const TrackName& track_name);
  // The iid of a name that is the same for every event with `key` (made by make() once):
  // most events then cost no string work at all.
  template <class MakeName>
  uint32_t CachedIid(uint32_t key, const MakeName& make);
  // Under the overhead budget, launches outside CUPTI's windows are drawn as bursts: one
  // slice per run of a thread's launches (count and call time as arguments), closed by any
  // other call of the thread, a pause over kBurstGapNs, or kBurstMaxNs of length. The
  // library sends them so (CUDA_LAUNCH_RUN, cut where these cut: record/launch_summary.h). One slice
  // per launch cost the collector a third of its CPU on a launch-bound job (175k launches/s
  // beside the job on its cores) for detail the windows show anyway.
  void AddToBurst(size_t thread_index, const HostCall& c);
  void CloseBurst(size_t thread_index);
  void LongStall(const HostCall& c);
  void EmitApi(const ApiSpan& span, uint64_t flow_out);
  // Counter `i` (kBusy, kH2d) for the window starting at `ts`.
  void EmitCounter(int i, uint64_t ts, int64_t value);
  void CheckLevel();
  // Full detail (launches, CUPTI API, device work, flows) for something at `t`: the file's
  // level, and the window of --trace-window.
  bool Detail(uint64_t t) const;
  // Demangled and clipped; "kernel#N" for a name the rank never sent.
  std::string KernelName(uint32_t id) const;
  size_t ThreadIndex(uint32_t tid);
  // "thread T", or "other threads" for the index past the thread cap (shared).
  std::string ThreadTrackName(size_t thread_index) const;
  uint64_t SamplePeriodNs() const;
  void CloseSampleSlice(size_t index, uint64_t end);
  size_t StreamIndex(int32_t device, uint32_t stream);

  TraceFile* file_;
  TraceIds* ids_;
  uint32_t seq_;  // the process track's sequence (descriptors, instants)
  int32_t pid_;
  wire::Hello hello_;
  Limits lim_;
  bool first_packet_ = true;
  TraceLevel last_level_ = TraceLevel::kFull;
  uint64_t detail_from_ = 0, detail_to_ = UINT64_MAX;
  // Rare packets (descriptors, instants) are built with the generated classes, on an arena
  // so that clearing one does not free (and the next allocate) its submessage.
  static constexpr int kArenaPackets = 4096;
  google::protobuf::Arena arena_;
  perfetto::protos::TracePacket* packet_ = nullptr;
  uint64_t packet_ts_ = 0;  // packet_'s time, before any test skew
  int arena_packets_ = 0;

  NameTable names_, keys_;
  // Name iids by what they name (key tags in rank_trace.cpp).
  std::unordered_map<uint32_t, uint32_t> iid_cache_;
  PacketScratch scratch_;

  // Tracks.
  std::unordered_map<uint32_t, size_t> threads_;  // tid -> index
  std::vector<uint32_t> thread_tids_;
  std::vector<Lanes> thread_lanes_;
  struct LaunchBurst {
    uint64_t start = 0, end = 0, calls_ns = 0, count = 0;
  };
  static constexpr uint64_t kBurstGapNs = 1'000'000, kBurstMaxNs = 10'000'000;
  std::vector<LaunchBurst> bursts_;  // by thread index
  uint32_t last_tid_ = UINT32_MAX;   // ThreadIndex's last answer
  size_t last_ti_ = 0;
  std::unordered_map<uint64_t, size_t> streams_;  // device << 32 | stream -> index
  std::vector<std::pair<int32_t, uint32_t>> stream_ids_;
  std::vector<Lanes> stream_lanes_;
  Lanes api_lanes_;
  Lanes idle_lanes_;
  // Busy and H2D in 10 ms windows; the NVML counters at each sample; the memory the rank's
  // allocations hold, at each allocation and free (memory_).
  enum Counter {
    kBusy = 0, kH2d, kDevUtil, kSmClock, kPower, kTemperature, kMemory, kDevMemory, kPcieTx, kPcieRx, kNvlinkTx,
    kNvlinkRx, kCounters
  };
  static_assert(kCounters == kCounterTracks);
  std::array<std::optional<TrackSequence>, kCounters> counters_;  // one per Counter, from its first value
  Lanes step_lanes_;
  Lanes path_lanes_;  // the critical path track
  int64_t last_value_[kCounters] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  MemoryCounter memory_;  // the live set, as summary.json's memory keeps it
  CounterWindows windows_[2];  // kBusy, kH2d
  // Sampled threads (host samples): the run of samples with one stack not yet written.
  struct SampledThread {
    Lanes lanes;
    uint32_t tid = 0;
    uint64_t start = 0, last = 0;
    uint32_t stack = 0;
    bool open = false;
  };
  std::unordered_map<uint32_t, size_t> sampled_;  // tid -> index
  std::vector<SampledThread> sampled_threads_;

  const RankFacts* facts_ = nullptr;
  uint64_t newest_device_ns_ = 0;

  uint64_t dropped_slices_ = 0, long_stalls_ = 0;
};

}  // namespace gpuwatch::collector
