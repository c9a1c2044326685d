// The trace's detail (launches, CUPTI API records, device work, flows, idle gaps) as
// `--trace-keep last` keeps it: written into the current segment, a file of its own; at a
// batch boundary a segment that spans `segment_ns` or holds `segment_bytes` is closed and
// the next one opened. A closed segment is deleted once none of its events is within the
// last `keep_ns` of the newest one (later segments hold all of those), or when the trace's
// cap needs its room (oldest first; segments pinned around a hang last).
// Every segment begins with the ranks' process descriptors (the preamble), and each
// sequence in it starts with its incremental state cleared (TrackSequence starts over at a
// new generation()), so a segment is a valid trace alone, and the summary stream followed
// by any kept segments, in order, is one.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_stream.h"

namespace gpuwatch::collector {

class DetailSegments {
 public:
  struct Limits {
    uint64_t keep_ns = 0;        // 0: no age limit; only the cap drops detail
    uint64_t segment_ns = 0;     // 0: segments end by size only
    uint64_t segment_bytes = 0;  // 0: by age only
  };
  // Segments are written as `dir`/detail-NNNNNN.perfetto-trace.
  DetailSegments(std::string dir, Limits limits) : dir_(std::move(dir)), lim_(limits) {}

  // The segment being written, opened (preamble first) on first use; null once one could
  // not be created (error()).
  TraceStream* Current();
  // The segment the next detail packet goes to: grows each time one ends, so a sequence
  // that wrote into an older one starts over.
  uint32_t generation() const { return generation_; }
  // An event at `ts` (the rank's monotonic ns) went into the current segment; `summary`: a
  // summary-level one (trace_file.h: past the summary stream's share of the cap).
  void NoteTime(uint64_t ts, bool summary = false);
  // One rank's process descriptor packet: written now into the current segment, and at the
  // start of every later one.
  void AddPreamble(std::string packet);
  // A hang: the segments holding events from `from_ns` on, and the current one, are kept
  // whatever their age.
  void Pin(uint64_t from_ns);
  // At a point where no slice or flow is open: ends the current segment when it is due,
  // and deletes the segments no longer needed. `room`: the bytes kept segments may take;
  // the newest one goes only past `hard_room` (the newest detail is worth the most).
  void Rotate(uint64_t room, uint64_t hard_room);
  // Deletes ended segments but the newest, oldest first (those around a hang after the
  // others), until the kept ones take at most `room` bytes. Safe at any time: ended
  // segments hold no open slice or flow.
  void DropEnded(uint64_t room);
  void Flush();

  uint64_t bytes() const;  // kept segments, the current one included
  uint64_t current_bytes() const { return current_ ? current_->bytes() : 0; }
  std::vector<std::string> KeptPaths() const;  // oldest first
  // The time spans of deleted segments' events, merged: detail there is gone. `summary`: of
  // their summary-level events (written in time order, unlike device work, which comes up to
  // seconds late): the summary level there is gone.
  std::vector<std::pair<uint64_t, uint64_t>> DroppedSpans(bool summary = false) const;
  size_t opened() const { return segs_.size(); }
  size_t kept() const;
  uint64_t newest_ns() const { return newest_ns_; }
  const std::string& error() const { return error_; }
  // Deletes the kept segment files (the parts of a trace that was assembled).
  void RemoveFiles();

 private:
  struct Segment {
    std::string path;
    uint64_t bytes = 0;
    uint64_t min_ns = UINT64_MAX, max_ns = 0;                  // of its events
    uint64_t summary_min_ns = UINT64_MAX, summary_max_ns = 0;  // of its summary-level ones
    bool pinned = false, dropped = false;
  };
  void CloseCurrent();
  void Drop(Segment& s);

  std::string dir_;
  Limits lim_;
  std::vector<Segment> segs_;  // every segment opened, oldest first; the current one last
  std::unique_ptr<TraceStream> current_;
  std::vector<std::string> preamble_;
  uint32_t generation_ = 1;
  uint64_t newest_ns_ = 0;
  bool failed_ = false;
  std::string error_;
};

}  // namespace gpuwatch::collector
