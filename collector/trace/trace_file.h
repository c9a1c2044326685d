// The trace file (OUT/trace.perfetto-trace) and its size control. A Perfetto trace is a
// sequence of `Trace.packet` records (tag 0x0A, varint length, TracePacket bytes); packets
// are appended whole, one write(2) per batch, so the file is valid up to the last complete
// packet whatever happens to the collector.
//
// Size control (docs/TRACE.md): the level is GPUWATCH_TRACE=off|summary|full (collector
// option --trace). `full` is written until the file reaches max_bytes (--trace-max-mib,
// GPUWATCH_TRACE_MAX_MIB, default 512 MiB); then the rest of the run is written at the
// `summary` level (host syncs, copies, collectives, counters, findings) until a hard stop at
// max_bytes + max_bytes/8, after which nothing more is written.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace perfetto::protos {
class TracePacket;
}

namespace gpuwatch::collector {

enum class TraceLevel { kOff = 0, kSummary = 1, kFull = 2 };

constexpr uint64_t kDefaultTraceMaxMib = 512;
constexpr const char* kTraceFileName = "trace.perfetto-trace";

struct TraceOptions {
  TraceLevel level = TraceLevel::kFull;
  uint64_t max_bytes = kDefaultTraceMaxMib << 20;
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
const char* TraceLevelName(TraceLevel level);
// Applies GPUWATCH_TRACE and GPUWATCH_TRACE_MAX_MIB when set; false with `error` when one
// is malformed (the options are then left as they were for that variable).
bool TraceOptionsFromEnv(TraceOptions* options, std::string* error);

class TraceFile {
 public:
  // Creates (truncates) `path`, making its directory. Null with `error` on failure.
  static std::unique_ptr<TraceFile> Open(const std::string& path, const TraceOptions& options,
                                         std::string* error);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // What may be written now: the configured level, lowered by the size caps. (Inline:
  // every event asks.)
  TraceLevel level() const {
    if (fd_ < 0 || stopped_ || bytes() >= hard_max()) return TraceLevel::kOff;
    if (opt_.level == TraceLevel::kFull && detail_capped()) return TraceLevel::kSummary;
    return opt_.level;
  }
  bool detail_capped() const { return bytes() >= opt_.max_bytes; }
  const TraceOptions& options() const { return opt_; }
  // Buffers one packet. At the hard stop it is dropped and so is everything after it;
  // `reserve_after`: room that must remain for packets that complete this one (a slice's
  // END, a flow's other end), so a slice or flow is never left open by the cap.
  void Append(const perfetto::protos::TracePacket& packet, size_t reserve_after = 0);
  // The same for a packet already encoded (trace/packet_encoder.h): its TracePacket bytes.
  void AppendEncoded(std::string_view packet, size_t reserve_after = 0);
  // Writes the buffered packets (whole packets only). A write error stops the trace.
  void Flush();

  const std::string& path() const { return path_; }
  uint64_t bytes() const { return written_ + buf_.size(); }
  uint64_t packets() const { return packets_; }
  uint64_t dropped_packets() const { return dropped_; }
  const std::string& error() const { return error_; }

 private:
  TraceFile(std::string path, int fd, TraceOptions options);
  uint64_t hard_max() const { return opt_.max_bytes + opt_.max_bytes / 8; }

  std::string path_;
  int fd_ = -1;
  TraceOptions opt_;
  std::string buf_;
  std::string scratch_;
  uint64_t written_ = 0, packets_ = 0, dropped_ = 0;
  bool stopped_ = false;  // a packet hit the hard stop: nothing more is written
  std::string error_;
};

}  // namespace gpuwatch::collector
