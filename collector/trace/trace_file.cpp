#include "trace/trace_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/format.h"
#include "perfetto_trace.pb.h"

namespace gpuwatch::collector {

bool ParseTraceLevel(const std::string& s, TraceLevel* level) {
  if (s == "off" || s == "0") *level = TraceLevel::kOff;
  else if (s == "summary") *level = TraceLevel::kSummary;
  else if (s == "full" || s == "1") *level = TraceLevel::kFull;
  else return false;
  return true;
}

const char* TraceLevelName(TraceLevel level) {
  switch (level) {
    case TraceLevel::kOff: return "off";
    case TraceLevel::kSummary: return "summary";
    case TraceLevel::kFull: return "full";
  }
  return "?";
}

bool ParseTraceWindow(const std::string& s, TraceOptions* options) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  char* end = nullptr;
  const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
  const double from = std::strtod(a.c_str(), &end);
  if (a.empty() || *end != '\0') return false;
  const double to = std::strtod(b.c_str(), &end);
  if (b.empty() || *end != '\0' || !(from >= 0) || !(to > from) || to > 1e9) return false;
  options->window_from_s = from;
  options->window_to_s = to;
  return true;
}

bool ParseTraceKeep(const std::string& s, TraceOptions* options) {
  if (s == "first" || s == "last") {
    options->keep = s == "first" ? TraceKeep::kFirst : TraceKeep::kLast;
    options->keep_last_min = 0;
    return true;
  }
  if (s.rfind("last:", 0) != 0) return false;
  const std::string n = s.substr(5);
  char* end = nullptr;
  const double min = std::strtod(n.c_str(), &end);
  if (n.empty() || *end != '\0' || !(min > 0) || min > 1e7) return false;
  options->keep = TraceKeep::kLast;
  options->keep_last_min = min;
  return true;
}

std::string TraceKeepError(const std::string& s) {
  TraceOptions o;
  return ParseTraceKeep(s, &o) ? std::string() : "expected first, last or last:MINUTES";
}

std::string TraceKeepName(const TraceOptions& o) {
  if (o.keep == TraceKeep::kFirst) return "first";
  return o.keep_last_min > 0 ? Printf("last:%g", o.keep_last_min) : std::string("last");
}

bool TraceOptionsFromEnv(TraceOptions* options, std::string* error) {
  bool ok = true;
  if (const char* v = std::getenv("GPUWATCH_TRACE_WINDOW"); v && *v) {
    if (!ParseTraceWindow(v, options)) {
      *error = std::string("GPUWATCH_TRACE_WINDOW=") + v + ": expected FROM:TO in seconds";
      ok = false;
    }
  }
  if (const char* v = std::getenv("GPUWATCH_TRACE_KEEP"); v && *v) {
    if (!ParseTraceKeep(v, options)) {
      *error = std::string("GPUWATCH_TRACE_KEEP=") + v + ": expected first, last or last:MINUTES";
      ok = false;
    }
  }
  if (const char* v = std::getenv("GPUWATCH_TRACE"); v && *v) {
    if (!ParseTraceLevel(v, &options->level)) {
      *error = std::string("GPUWATCH_TRACE=") + v + ": expected off, summary or full";
      ok = false;
    }
  }
  if (const char* v = std::getenv("GPUWATCH_TRACE_MAX_MIB"); v && *v) {
    char* end = nullptr;
    const unsigned long long mib = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0' || mib == 0 || mib > (1ull << 30)) {
      *error = std::string("GPUWATCH_TRACE_MAX_MIB=") + v + ": expected a positive number of MiB";
      ok = false;
    } else {
      options->max_bytes = static_cast<uint64_t>(mib) << 20;
    }
  }
  return ok;
}

std::unique_ptr<TraceFile> TraceFile::Open(const std::string& path, const TraceOptions& options,
                                           std::string* error) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::unique_ptr<TraceFile> f(new TraceFile(path, options));
  // Segments for keep last at either level: the detail's, and where the summary level
  // outgrows its share (a run of days at GPUWATCH_TRACE=summary too), the summary's.
  if (options.keep == TraceKeep::kFirst || options.level == TraceLevel::kOff) {
    f->main_ = TraceStream::Create(path, error);
    return f->main_ ? std::move(f) : nullptr;
  }
  f->parts_dir_ = (dir.empty() ? std::string(".") : dir.string()) + "/" + kTracePartsPrefix +
                  std::to_string(::getpid());
  std::filesystem::remove_all(f->parts_dir_, ec);  // a job before this one in this process
  std::filesystem::create_directories(f->parts_dir_, ec);
  ::unlink(path.c_str());  // an earlier run's trace must not pass for this one's
  f->main_ = TraceStream::Create(f->parts_dir_ + "/summary.perfetto-trace", error);
  if (!f->main_) return nullptr;
  DetailSegments::Limits lim;
  lim.keep_ns = static_cast<uint64_t>(options.keep_last_min * 60e9);
  // A quarter of the age limit per segment: at most a quarter more than N minutes kept.
  lim.segment_ns = lim.keep_ns / 4;
  // An eighth of the cap per segment: the room is given back an eighth at a time.
  lim.segment_bytes = std::max<uint64_t>(options.max_bytes / 8, 4096);
  f->segment_bytes_ = lim.segment_bytes;
  f->segments_ = std::make_unique<DetailSegments>(f->parts_dir_, lim);
  return f;
}

TraceFile::~TraceFile() {
  if (!segments_) return;
  // A trace never assembled (or written to since): its parts become the file now.
  if (!assembled_) Assemble({});
  if (assembled_) {
    segments_->RemoveFiles();
    main_.reset();
    std::error_code ec;
    std::filesystem::remove_all(parts_dir_, ec);
  }
}

void TraceFile::NoteTime(TracePart part, uint64_t ts) {
  if (!segments_ && !detail_stop_ns_ && main_->bytes() >= opt_.max_bytes) detail_stop_ns_ = std::max<uint64_t>(newest_ns_, 1);
  newest_ns_ = std::max(newest_ns_, ts);
  if (InSegments(part)) {
    segments_->NoteTime(ts, part == TracePart::kSummary);
    last_detail_ns_ = ts;
  }
}

void TraceFile::Append(const perfetto::protos::TracePacket& packet, size_t reserve_after, TracePart part) {
  if (level() == TraceLevel::kOff) {
    ++dropped_;
    return;
  }
  scratch_.clear();
  packet.AppendToString(&scratch_);
  AppendEncoded(scratch_, reserve_after, part);
}

void TraceFile::AppendEncoded(std::string_view packet, size_t reserve_after, TracePart part) {
  if (level() == TraceLevel::kOff) {
    ++dropped_;
    return;
  }
  assembled_ = false;
  if (InSegments(part)) return AppendDetail(packet, reserve_after);
  if (main_->bytes() + packet.size() + 6 + reserve_after > events_max()) {  // the hard stop is never passed
    ++dropped_;
    stopped_ = true;
    return;
  }
  main_->Append(packet);
  ++packets_;
}

void TraceFile::AppendDetail(std::string_view packet, size_t reserve_after) {
  TraceStream* seg = segments_->Current();
  const uint64_t need = packet.size() + 6 + reserve_after;
  // Older detail makes room for newer (a rank's end releases seconds of device work at once).
  if (seg && !detail_held_ && bytes() + need > events_max() && main_->bytes() + need < events_max())
    segments_->DropEnded(events_max() - main_->bytes() - need);
  if (!seg || detail_held_ || bytes() + need > events_max()) {
    ++dropped_;
    // What completes this packet is dropped too; the span says detail is missing there.
    if (lost_.empty() || (!detail_held_ && lost_.size() < 1024))  // bounded: past it, the last one grows
      lost_.emplace_back(last_detail_ns_, last_detail_ns_);
    lost_.back().first = std::min(lost_.back().first, last_detail_ns_);
    lost_.back().second = std::max(lost_.back().second, last_detail_ns_);
    detail_held_ = true;
    return;
  }
  seg->Append(packet);
  ++packets_;
}

void TraceFile::AddDetailPreamble(std::string packet) {
  if (segments_) segments_->AddPreamble(std::move(packet));
}

void TraceFile::KeepDetailFrom(uint64_t since_ns) {
  // The launches and device work just before the hung call are what explains it.
  constexpr uint64_t kBeforeNs = 10'000'000'000;
  if (segments_) segments_->Pin(since_ns > kBeforeNs ? since_ns - kBeforeNs : 0);
}

void TraceFile::RotateSegments(bool at_end) {
  const uint64_t hard_room = events_max() > main_->bytes() ? events_max() - main_->bytes() : 0;
  // While the run goes on, the cap's slack is left to the summary stream; at the end (the
  // steps and findings written) there is nothing more to come, and the detail may use it.
  const uint64_t room = at_end ? hard_room : opt_.max_bytes > main_->bytes() ? opt_.max_bytes - main_->bytes() : 0;
  segments_->Rotate(room, hard_room);
  detail_held_ = false;
}

void TraceFile::Flush() {
  main_->Flush();
  if (!segments_) return;
  segments_->Flush();
  RotateSegments();
  if (!detail_stop_ns_ && detail_capped()) detail_stop_ns_ = std::max<uint64_t>(newest_ns_, 1);
  // Between batches (no slice open): the summary sequences see a new generation and start
  // over in the current segment.
  if (!summary_moved_ns_ && main_->bytes() >= summary_max()) {
    summary_moved_ns_ = std::max<uint64_t>(newest_ns_, 1);
    spdlog::info("trace: the summary level reached {} of the cap; from here on it is kept with the detail (the end "
                 "of the run), the run's middle is what the cap gives up",
                 FmtBytes(summary_max()));
  }
  if (!segments_->error().empty() && !segment_error_logged_) {
    segment_error_logged_ = true;
    spdlog::warn("trace: {}; detail stops there, the summary level goes on", segments_->error());
  }
}

bool TraceFile::Assemble(const std::vector<std::string>& tail) {
  if (segments_) {
    main_->Flush();
    segments_->Flush();
    RotateSegments(true);
  }
  // The tail whole or not at all (a slice left open would not load), within the hard stop.
  std::string framed;
  for (const std::string& p : tail) {
    FramePacket(p.size(), &framed);
    framed += p;
  }
  if (bytes() + framed.size() > hard_max()) framed.clear();
  if (!segments_) {
    main_->AppendFramed(framed);
    main_->Flush();
    return main_->ok();
  }
  std::vector<std::string> parts = {main_->path()};
  for (std::string& s : segments_->KeptPaths()) parts.push_back(std::move(s));
  std::string error;
  if (!ConcatenateTrace(parts, framed, path_, &error)) {
    spdlog::warn("trace: {}; its parts stay in {}", error, parts_dir_);
    return false;
  }
  assembled_ = true;
  return true;
}

const char* SpanDetailName(TraceLevel level) {
  switch (level) {
    case TraceLevel::kFull: return "full";
    case TraceLevel::kSummary: return "summary";
    case TraceLevel::kOff: break;
  }
  return "none";
}

std::vector<TraceDetailSpan> TraceFile::DetailSpans(uint64_t start_ns) const {
  std::vector<TraceDetailSpan> out;
  const uint64_t end = newest_ns_;
  if (end <= start_ns) return out;
  // The spans without detail, and (once summary packets went into the segments) those
  // without the summary level either; the rest of [start, end] has full detail.
  using Spans = std::vector<std::pair<uint64_t, uint64_t>>;
  Spans gone, summary_gone;
  if (segments_) gone = segments_->DroppedSpans();
  gone.insert(gone.end(), lost_.begin(), lost_.end());
  if (opt_.level != TraceLevel::kFull) gone.emplace_back(start_ns, end);
  if (detail_stop_ns_) gone.emplace_back(detail_stop_ns_, end);
  if (summary_moved_ns_) {
    summary_gone = segments_->DroppedSpans(true);
    summary_gone.insert(summary_gone.end(), lost_.begin(), lost_.end());  // held with the detail
    if (detail_stop_ns_) summary_gone.emplace_back(detail_stop_ns_, end);
    for (auto& [from, to] : summary_gone) from = std::max(from, summary_moved_ns_);
  }
  // A sweep over both: +1/-1 at each span's ends, clamped to the run.
  struct Edge {
    uint64_t t;
    int gone, summary_gone;
  };
  std::vector<Edge> edges;
  const auto add_edges = [&](const Spans& spans, bool summary) {
    for (auto [from, to] : spans) {
      from = std::clamp(from, start_ns, end);
      to = std::clamp(to, start_ns, end);
      if (to <= from) continue;
      edges.push_back({from, summary ? 0 : 1, summary ? 1 : 0});
      edges.push_back({to, summary ? 0 : -1, summary ? -1 : 0});
    }
  };
  add_edges(gone, false);
  add_edges(summary_gone, true);
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  uint64_t at = start_ns;
  int in_gone = 0, in_summary_gone = 0;
  const auto add = [&](uint64_t to) {
    if (to <= at) return;
    const TraceLevel level = in_summary_gone > 0 ? TraceLevel::kOff
                             : in_gone > 0       ? TraceLevel::kSummary
                                                 : TraceLevel::kFull;
    if (!out.empty() && out.back().level == level) out.back().to_ns = to;
    else out.push_back({at, to, level});
    at = to;
  };
  for (const Edge& e : edges) {
    add(e.t);
    in_gone += e.gone;
    in_summary_gone += e.summary_gone;
  }
  add(end);
  return out;
}

std::string TraceFile::error() const {
  if (!main_->error().empty()) return main_->error();
  return segments_ ? segments_->error() : std::string();
}

}  // namespace gpuwatch::collector
