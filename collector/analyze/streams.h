// streams: each device stream's busy time and idle time, the idle time split by cause, with
// the cross-stream waits the hooks saw: `cudaEventRecord(e, t)` then `cudaStreamWaitEvent(s, e)`
// makes stream s wait for the work queued on t before the record. A gap on s that ends when
// that work ends is `stream_wait` (s waited for t), not waiting for the host.
//
// The hooks know streams by their handle, CUPTI by its stream id: a handle is tied to its
// id once, by the first device work whose launching call (CUPTI's API span) lies within a
// hooked call made on that handle (a launch, copy, memset, graph launch or collective).
//
// Per stream, a gap between two pieces of its work, [end of the previous, start of the
// next W], is split, first rule first:
//   stream_wait  from the gap's start until the awaited work ended (the latest end of the
//                work queued on the awaited streams before their event was recorded, for
//                the waits made on s after the previous work's launch and before W's);
//   host_wait    the rest, when W's launching call began after the rest began (the host had
//                not asked for W yet: HTA's rule, per stream);
//   other        the rest otherwise (launch latency, implicit ordering, unknown launch).
// The GPU's idle classification (events.h) is unchanged: while one stream waits for
// another, the other runs, so the device is not idle because of a cross-stream wait.
//
// Memory stays bounded: at most kMaxStreams streams, and bounded queues of launches still
// unmatched, waits not yet consumed and recent work per stream.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

enum StreamIdle : uint8_t { kStreamWait = 0, kStreamHostWait = 1, kStreamOther = 2, kStreamIdleKinds = 3 };
inline const char* StreamIdleKey(int k) {
  static const char* const kKeys[kStreamIdleKinds] = {"stream_wait", "host_wait", "other"};
  return k >= 0 && k < kStreamIdleKinds ? kKeys[k] : "?";
}

struct StreamFigures {
  static constexpr size_t kMaxStreams = 64;  // beyond: work on further streams is not counted here
  struct Stream {
    uint64_t work = 0;     // kernels, copies, memsets
    uint64_t busy_ns = 0;  // union of its work
    uint64_t idle_ns[kStreamIdleKinds] = {};
    uint64_t waits = 0;    // cross-stream waits consumed by its work (the awaited stream known)
    uint64_t IdleTotal() const { return idle_ns[0] + idle_ns[1] + idle_ns[2]; }
  };
  std::map<uint32_t, Stream> by_stream;  // CUPTI stream id
  uint64_t waits = 0;                    // cudaStreamWaitEvent on another stream's recorded event
  uint64_t waits_unresolved = 0;         // of those, the streams could not be tied to CUPTI's
};

class StreamCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  const StreamFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Recorded {
    uint64_t stream, t_ns;  // the handle that recorded the event, when
  };
  struct Wait {
    uint64_t awaited, record_ns, wait_ns;  // awaited stream's handle, its record's time, the wait's
  };
  struct Launch {
    uint64_t t_ns, end_ns, stream;
  };
  struct Work {
    uint64_t launch_ns, end_ns;
  };
  struct Track {
    bool any = false;
    uint64_t last_end = 0;
    std::deque<Work> recent;  // its latest work, for the streams that wait on it
  };
  void TieHandle(const DeviceWork& w);
  uint64_t AwaitedEnd(uint32_t stream, uint64_t record_ns) const;

  StreamFigures f_;
  std::unordered_map<uint64_t, Recorded> events_;           // event handle -> its latest record
  std::unordered_map<uint64_t, std::deque<Wait>> waits_;    // waiting handle -> waits not consumed
  std::deque<Launch> untied_;                               // launches on handles not tied yet
  std::unordered_map<uint64_t, uint32_t> stream_of_;        // handle -> CUPTI stream id
  std::unordered_map<uint32_t, uint64_t> handle_of_;        // CUPTI stream id -> handle
  std::unordered_map<uint32_t, Track> tracks_;
};

}  // namespace gpuwatch::collector
