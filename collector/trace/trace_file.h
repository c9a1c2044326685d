// The trace file (OUT/trace.perfetto-trace) and its size control (docs/TRACE.md, "Size
// control"). The level is GPUWATCH_TRACE=off|summary|full (--trace); the cap is max_bytes
// (--trace-max-mib, GPUWATCH_TRACE_MAX_MIB, default 512 MiB), with a hard stop at
// max_bytes + max_bytes/8 that no packet passes. Which detail the cap keeps is `keep`
// (--trace-keep, GPUWATCH_TRACE_KEEP):
//   - first: one file, packets appended whole; full detail until it reaches max_bytes, then
//     the `summary` level (host syncs, copies, collectives, counters, findings).
//   - last[:N] (the default): summary packets go to the summary stream
//     (OUT/trace-parts-PID/summary.perfetto-trace), detail packets to rotating segments
//     (detail_segments.h) of which the newest are kept: those holding the last N minutes,
//     and never more than the cap leaves beside the summary stream (without N: as much of
//     the end as that room holds). The summary stream takes at most three quarters of the
//     cap: past that (a run of days), summary packets go into the segments with the detail,
//     so the run's start stays in the summary stream, its end in the newest segments, and
//     what the cap gives up is the middle. Flush() assembles OUT/trace.perfetto-trace from them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/detail_segments.h"
#include "trace/trace_stream.h"

namespace perfetto::protos {
class TracePacket;
}

namespace gpuwatch::collector {

enum class TraceLevel { kOff = 0, kSummary = 1, kFull = 2 };
// Which part of the trace a packet belongs to: kSummary packets are kept for the whole run;
// kDetail ones (launches, CUPTI API records, device work, flows, idle gaps) are what the
// cap chooses among.
enum class TracePart { kSummary = 0, kDetail = 1 };
enum class TraceKeep { kFirst, kLast };

constexpr uint64_t kDefaultTraceMaxMib = 512;
constexpr const char* kTraceFileName = "trace.perfetto-trace";
// The parts of a `last` trace: OUT/trace-parts-PID (the collector's pid, so that a
// rebuild never deletes what a collector that died left).
constexpr const char* kTracePartsPrefix = "trace-parts-";

struct TraceOptions {
  TraceLevel level = TraceLevel::kFull;
  uint64_t max_bytes = kDefaultTraceMaxMib << 20;
  // GPUWATCH_TRACE_KEEP=first|last|last:N / --trace-keep.
  TraceKeep keep = TraceKeep::kLast;
  double keep_last_min = 0;  // last:N, minutes; 0: as much of the end as the cap holds
  // GPUWATCH_TRACE_WINDOW=FROM:TO / --trace-window: full detail only for what happened
  // between FROM and TO seconds after each rank started (its Hello); before and after,
  // the `summary` level. Default: the whole run.
  double window_from_s = 0, window_to_s = 0;  // to <= from: no window
  bool has_window() const { return window_to_s > window_from_s; }
  // Tests only (GPUWATCH_TEST_CLOCK_SKEW_NS on a host collector): every time written is
  // moved by this much, so the trace is on the clock the host pretends to have, as a skewed
  // host's would be; `gpuwatch report --ranks` must take it back with the host's offset.
  int64_t test_clock_skew_ns = 0;
};

// "off", "summary", "full" (also "0"/"1"); false for anything else.
bool ParseTraceLevel(const std::string& s, TraceLevel* level);
// "FROM:TO" in seconds, 0 <= FROM < TO ("60:120"; "0:300" keeps the first 5 minutes).
bool ParseTraceWindow(const std::string& s, TraceOptions* options);
// "first", "last", or "last:N" with N > 0 minutes ("last:0.5": 30 s).
bool ParseTraceKeep(const std::string& s, TraceOptions* options);
// For a command line's check: "" when `s` is a --trace-keep value, else what is expected.
std::string TraceKeepError(const std::string& s);
const char* TraceLevelName(TraceLevel level);
// "first", "last", "last:10".
std::string TraceKeepName(const TraceOptions& options);
// Applies GPUWATCH_TRACE, GPUWATCH_TRACE_MAX_MIB, GPUWATCH_TRACE_KEEP and
// GPUWATCH_TRACE_WINDOW when set; false with `error` when one is malformed (the options are
// then left as they were for that variable).
bool TraceOptionsFromEnv(TraceOptions* options, std::string* error);

// A span of the run and the detail the trace has for it: kFull, kSummary (the summary level
// only) or kOff (nothing: the middle of a run whose summary outgrew its share of the cap).
struct TraceDetailSpan {
  uint64_t from_ns = 0, to_ns = 0;
  TraceLevel level = TraceLevel::kOff;
};
// "full", "summary", "none": summary.json's trace.detail_spans[].detail.
const char* SpanDetailName(TraceLevel level);

class TraceFile {
 public:
  // Creates the file (keep first: `path`, truncated; keep last: the parts folder beside it,
  // and an earlier run's `path` is removed), making its directory. Null with `error` on failure.
  static std::unique_ptr<TraceFile> Open(const std::string& path, const TraceOptions& options,
                                         std::string* error);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // What may be written now: the configured level, lowered by the size caps. (Inline:
  // every event asks.)
  TraceLevel level() const {
    if (!main_->ok() || stopped_ || main_->bytes() >= events_max()) return TraceLevel::kOff;
    if (opt_.level == TraceLevel::kFull && detail_capped()) return TraceLevel::kSummary;
    return opt_.level;
  }
  // No more detail: keep first, past the cap; keep last, no room beside the summary stream
  // or no segment could be written.
  bool detail_capped() const {
    if (!segments_) return main_->bytes() >= opt_.max_bytes;
    return main_->bytes() >= opt_.max_bytes || !segments_->error().empty();
  }
  const TraceOptions& options() const { return opt_; }
  // Whether detail packets go to segments of their own (keep last): a sequence writing both
  // parts then needs one sequence for each.
  bool detail_apart() const { return segments_ != nullptr; }
  // Changes when the stream `part` goes to starts over (a new detail segment): a sequence
  // that wrote into it before must clear its state and describe its track again.
  uint32_t generation(TracePart part) const {
    return InSegments(part) ? segments_->generation() : 0;
  }
  // A packet at `ts` (the rank's monotonic ns) of `part` is about to be appended: the time
  // line the detail spans and the segments' ages are measured on.
  void NoteTime(TracePart part, uint64_t ts);
  // Buffers one packet. At the hard stop it is dropped and so is everything after it;
  // `reserve_after`: room that must remain for packets that complete this one (a slice's
  // END, a flow's other end), so a slice or flow is never left open by the cap.
  void Append(const perfetto::protos::TracePacket& packet, size_t reserve_after = 0,
              TracePart part = TracePart::kSummary);
  // The same for a packet already encoded (trace/packet_encoder.h): its TracePacket bytes.
  void AppendEncoded(std::string_view packet, size_t reserve_after = 0, TracePart part = TracePart::kSummary);
  // A rank's process descriptor packet, which every detail segment repeats.
  void AddDetailPreamble(std::string packet);
  // While on, summary packets go to the summary stream even past its share: what describes
  // the whole run (its steps, the findings marked at its start), written once at its end,
  // whose old timestamps would otherwise date a segment back to the run's start.
  void set_run_wide(bool on) { run_wide_ = on; }
  // A hang that began at `since_ns`: the detail around it is kept whatever its age.
  void KeepDetailFrom(uint64_t since_ns);
  // Writes the buffered packets (whole packets only) and, between batches, rotates the
  // detail segments. A write error stops the trace (or, for a segment, its detail).
  void Flush();
  // Before a detail slice that ends no flow (so no slice or flow is open): a segment that
  // reached its size ends here, even inside a batch (a rank's end releases seconds of
  // device work at once, and its newest part is what must stay).
  void AtDetailBoundary() {
    if (segments_ && segments_->current_bytes() >= segment_bytes_) RotateSegments();
  }
  // Flush, and (keep last) writes `path` from the summary stream, the kept segments and
  // the `tail` packets; keep first: appends the `tail` packets to the file. False when the
  // file could not be written (logged).
  bool Assemble(const std::vector<std::string>& tail);

  // The run from `start_ns` to the newest time written, in spans of full detail and of the
  // summary level only, in order (empty when nothing was written).
  std::vector<TraceDetailSpan> DetailSpans(uint64_t start_ns) const;
  uint64_t newest_ns() const { return newest_ns_; }

  const std::string& path() const { return path_; }
  const std::string& parts_dir() const { return parts_dir_; }  // keep last only
  // Bytes of the trace as assembled (keep last: the summary stream and the kept segments).
  uint64_t bytes() const { return main_->bytes() + (segments_ ? segments_->bytes() : 0); }
  uint64_t packets() const { return packets_; }
  uint64_t dropped_packets() const { return dropped_; }
  size_t segments_opened() const { return segments_ ? segments_->opened() : 0; }
  size_t segments_kept() const { return segments_ ? segments_->kept() : 0; }
  std::string error() const;

 private:
  TraceFile(std::string path, TraceOptions options) : path_(std::move(path)), opt_(options) {}
  // The hard stop; events stop short of it by the room the "trace detail" track needs.
  uint64_t hard_max() const { return opt_.max_bytes + opt_.max_bytes / 8; }
  uint64_t events_max() const { return hard_max() - std::min<uint64_t>(1024, opt_.max_bytes / 16); }
  // keep last: the summary stream's share of the cap (the rest is the segments').
  uint64_t summary_max() const { return opt_.max_bytes / 4 * 3; }
  // Whether packets of `part` go to the detail segments.
  bool InSegments(TracePart part) const {
    return segments_ && (part == TracePart::kDetail || (summary_moved_ns_ != 0 && !run_wide_));
  }
  void AppendDetail(std::string_view packet, size_t reserve_after);
  void RotateSegments(bool at_end = false);

  std::string path_;
  TraceOptions opt_;
  std::unique_ptr<TraceStream> main_;  // the whole trace (first), the summary stream (last)
  std::unique_ptr<DetailSegments> segments_;  // keep last only
  std::string parts_dir_;
  uint64_t segment_bytes_ = UINT64_MAX;
  std::string scratch_;
  uint64_t packets_ = 0, dropped_ = 0;
  uint64_t newest_ns_ = 0;
  uint64_t last_detail_ns_ = 0;
  // Detail packets the hard stop dropped, as time spans (one per batch that lost some).
  std::vector<std::pair<uint64_t, uint64_t>> lost_;
  uint64_t detail_stop_ns_ = 0;  // the newest time written when detail stopped for good
  uint64_t summary_moved_ns_ = 0;  // the newest time written when summary packets moved to the segments
  bool stopped_ = false;        // a packet hit the hard stop: nothing more is written
  bool detail_held_ = false;    // a detail packet hit the hard stop: none until the next batch
  bool segment_error_logged_ = false;
  bool run_wide_ = false;
  bool assembled_ = false;      // `path` holds the parts as they are now
};

}  // namespace gpuwatch::collector
