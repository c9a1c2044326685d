// One rank's part of the trace: one Perfetto packet sequence, one process track, and the
// conversion of its batches into TrackEvents (docs/TRACE.md says what is where).
//
// Tracks (uuid = sequence id << 14 | local id, so uuids never collide across ranks):
//   process "rank R · host · pid P"
//   ├─ "thread T" (+ "thread T · overlap N")   host calls from the hooks (Batch.events)
//   ├─ "CUDA API (CUPTI)" (+ lanes)            API records; flows start here
//   ├─ "GPU D · stream S" (+ lanes)            kernels, memcpy, memset; flows end here
//   └─ counters "GPU busy %", "H2D MB/s"       10 ms windows
// Slices on one track always nest: a slice goes to the first lane of its track whose last
// slice ended at or before its start; at most kMaxLanes lanes, beyond that it is dropped and
// counted. Memory is bounded: threads, streams, names, communicators and pending API
// records each have a cap.
#pragma once
#include <google/protobuf/arena.h>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aggregate/hang.h"
#include "gpuwatch.pb.h"
#include "perfetto_trace.pb.h"
#include "trace/trace_file.h"
#include "trace/windows.h"

namespace gpuwatch::collector {

class RankTrace {
 public:
  struct Limits {
    size_t max_threads = 1024;
    size_t max_streams = 512;
    size_t max_names = 20000;
    size_t max_comms = 4096;
    size_t max_pending_api = 1 << 14;
    uint64_t api_keep_ns = 5'000'000'000;  // unmatched API records wait this long for work
  };
  static constexpr int kMaxLanes = 16;

  // `trace_pid`: the pid written into the ProcessDescriptor (the real one unless another
  // rank of the job already uses it).
  RankTrace(TraceFile* file, uint32_t sequence_id, int32_t trace_pid, const wire::Hello& hello,
            Limits limits);
  RankTrace(TraceFile* file, uint32_t sequence_id, int32_t trace_pid, const wire::Hello& hello)
      : RankTrace(file, sequence_id, trace_pid, hello, Limits{}) {}

  void OnBatch(const wire::Batch& batch);
  void OnHang(const Hang& hang);
  // The rank's connection closed: API records still waiting and the counter windows are
  // written out.
  void Finish();

  uint32_t sequence_id() const { return seq_; }
  // Slices not written because every lane of their track was busy, or their thread/stream
  // table was full (they go to a shared track then, so this stays 0 unless lanes run out).
  uint64_t dropped_slices() const { return dropped_slices_; }

 private:
  enum Cat : uint8_t { kCatCuda, kCatCopy, kCatNccl, kCatLaunch, kCatKernel, kCatMemcpy,
                       kCatMemset, kCatApi, kCats };
  enum Key : uint8_t { kKeyBytes, kKeyPageable, kKeyBlocking, kKeySeq, kKeyBusbw, kKeyPeer,
                       kKeyCorr, kKeys };
  struct Ann {
    Key key;
    enum { kUint, kBool, kDouble } type;
    uint64_t u;
    double d;
  };
  struct Lanes {
    uint64_t last_end[kMaxLanes] = {};
    uint8_t used = 0;
  };
  struct ApiSpan {
    uint64_t start, end;
  };

  perfetto::protos::TracePacket& NewPacket(uint64_t ts);
  void Write(size_t reserve_after = 0);
  void DescribeProcess();
  void DescribeTrack(uint32_t local, const std::string& name, int32_t order);
  void DescribeCounter(uint32_t local, const std::string& name, const char* unit);
  uint64_t Uuid(uint32_t local) const;
  uint64_t NameIid(std::string_view name, perfetto::protos::TracePacket& p);
  uint64_t CatIid(Cat c, perfetto::protos::TracePacket& p);
  uint64_t KeyIid(Key k, perfetto::protos::TracePacket& p);
  // Writes one slice; false if no lane was free.
  bool Slice(uint32_t base_local, Lanes& lanes, const std::string& track_name, int32_t order,
             uint64_t start, uint64_t end, std::string_view name, Cat cat, const Ann* anns,
             int n_anns, uint64_t flow_out, uint64_t flow_in);

  void OnEvent(const wire::Event& e);
  void OnDeviceWork(const wire::Activity& a);
  void AddApi(const wire::Activity& a);
  void ExpireApis(bool all);
  void EmitApi(uint32_t corr, const ApiSpan& span, uint64_t flow_out);
  void EmitCounters(uint64_t ts, uint64_t busy_ns, uint64_t h2d_bytes);
  void CheckLevel();
  const std::string& KernelName(uint32_t id);
  size_t ThreadIndex(uint32_t tid);
  size_t StreamIndex(int32_t device, uint32_t stream);

  TraceFile* file_;
  uint32_t seq_;
  int32_t pid_;
  wire::Hello hello_;
  Limits lim_;
  bool first_packet_ = true;
  TraceLevel last_level_ = TraceLevel::kFull;
  // The packet being built lives on an arena: clearing a TracePacket frees its TrackEvent
  // (a oneof member) and the next packet allocates one again, a malloc per packet that
  // showed in the collector's profile. The arena is reset every kArenaPackets packets.
  static constexpr int kArenaPackets = 4096;
  google::protobuf::Arena arena_;
  perfetto::protos::TracePacket* packet_ = nullptr;
  int arena_packets_ = 0;

  // Interning (per sequence, bounded by max_names; fixed tables for categories and keys).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Looked up by string_view: no std::string (and no malloc) per event.
  std::unordered_map<std::string, uint64_t, NameHash, std::equal_to<>> name_iids_;
  bool cat_interned_[kCats] = {};
  bool key_interned_[kKeys] = {};

  // Tracks.
  std::unordered_map<uint32_t, size_t> threads_;  // tid -> index
  std::vector<uint32_t> thread_tids_;
  std::vector<Lanes> thread_lanes_;
  std::unordered_map<uint64_t, size_t> streams_;  // device << 32 | stream -> index
  std::vector<std::pair<int32_t, uint32_t>> stream_ids_;
  std::vector<Lanes> stream_lanes_;
  Lanes api_lanes_;
  bool counters_described_ = false;
  int64_t last_busy_pct_ = -1, last_h2d_mbps_ = -1;
  CounterWindows windows_;

  // Names and communicators announced by the rank.
  std::unordered_map<uint32_t, std::string> kernel_names_;  // id -> demangled, clipped
  std::unordered_map<uint64_t, int32_t> comm_nranks_;

  // API records waiting for the device work they launched (flow arrows).
  std::unordered_map<uint32_t, ApiSpan> pending_api_;
  std::deque<std::pair<uint32_t, uint64_t>> api_fifo_;  // (corr, end) in arrival order
  uint64_t newest_device_ns_ = 0;
  uint64_t next_flow_ = 0;

  uint64_t dropped_slices_ = 0;
};

}  // namespace gpuwatch::collector
