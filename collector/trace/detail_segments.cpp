// See detail_segments.h.
#include "trace/detail_segments.h"

#include <unistd.h>

#include <algorithm>

#include "common/format.h"

namespace gpuwatch::collector {

TraceStream* DetailSegments::Current() {
  if (current_ || failed_) return current_.get();
  Segment s;
  s.path = dir_ + Printf("/detail-%06zu.perfetto-trace", segs_.size() + 1);
  current_ = TraceStream::Create(s.path, &error_);
  if (!current_) {
    failed_ = true;
    return nullptr;
  }
  for (const std::string& p : preamble_) current_->Append(p);
  segs_.push_back(std::move(s));
  return current_.get();
}

void DetailSegments::NoteTime(uint64_t ts, bool summary) {
  if (!current_) return;
  Segment& s = segs_.back();
  s.min_ns = std::min(s.min_ns, ts);
  s.max_ns = std::max(s.max_ns, ts);
  if (summary) s.summary_min_ns = std::min(s.summary_min_ns, ts), s.summary_max_ns = std::max(s.summary_max_ns, ts);
  newest_ns_ = std::max(newest_ns_, ts);
}

void DetailSegments::AddPreamble(std::string packet) {
  if (current_) current_->Append(packet);
  preamble_.push_back(std::move(packet));
}

void DetailSegments::Pin(uint64_t from_ns) {
  for (Segment& s : segs_)
    if (!s.dropped && s.max_ns >= from_ns && s.min_ns != UINT64_MAX) s.pinned = true;
  if (current_) segs_.back().pinned = true;
}

void DetailSegments::CloseCurrent() {
  current_->Flush();
  if (!current_->ok() && error_.empty()) error_ = current_->error();
  segs_.back().bytes = current_->bytes();
  current_.reset();
  ++generation_;  // the next detail packet goes to a new segment
}

void DetailSegments::Drop(Segment& s) {
  ::unlink(s.path.c_str());
  s.dropped = true;
  s.bytes = 0;
}

void DetailSegments::Rotate(uint64_t room, uint64_t hard_room) {
  if (current_) {
    const Segment& c = segs_.back();
    const bool old = lim_.segment_ns && c.min_ns != UINT64_MAX && c.max_ns - c.min_ns >= lim_.segment_ns;
    const bool big = lim_.segment_bytes && current_->bytes() >= lim_.segment_bytes;
    if (old || big || !current_->ok()) CloseCurrent();
  }
  if (segs_.empty()) return;
  // Past the age limit: every event of the segment is older than the last keep_ns.
  if (lim_.keep_ns)
    for (size_t i = 0; i + 1 < segs_.size(); ++i) {
      Segment& s = segs_[i];
      if (!s.dropped && !s.pinned && (s.min_ns == UINT64_MAX || s.max_ns + lim_.keep_ns < newest_ns_)) Drop(s);
    }
  DropEnded(room);
  if (!segs_.back().dropped && bytes() > hard_room) {
    if (current_) CloseCurrent();
    Drop(segs_.back());
  }
}

void DetailSegments::DropEnded(uint64_t room) {
  // Never the newest segment (being written or just ended): the end is what is kept.
  for (bool pinned : {false, true})
    for (size_t i = 0; i + 1 < segs_.size() && bytes() > room; ++i)
      if (!segs_[i].dropped && segs_[i].pinned == pinned) Drop(segs_[i]);
}

void DetailSegments::Flush() {
  if (!current_) return;
  current_->Flush();
  if (!current_->ok() && error_.empty()) error_ = current_->error();
}

uint64_t DetailSegments::bytes() const {
  uint64_t b = current_ ? current_->bytes() : 0;
  for (size_t i = 0; i + (current_ ? 1 : 0) < segs_.size(); ++i) b += segs_[i].bytes;
  return b;
}

size_t DetailSegments::kept() const {
  size_t n = 0;
  for (const Segment& s : segs_) n += !s.dropped;
  return n;
}

std::vector<std::string> DetailSegments::KeptPaths() const {
  std::vector<std::string> out;
  for (const Segment& s : segs_)
    if (!s.dropped) out.push_back(s.path);
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> DetailSegments::DroppedSpans(bool summary) const {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  // A run of deleted segments leaves no detail from its first event to its last (from the
  // start of the run when the first segment is among them).
  uint64_t prev_max = 0;
  bool prev_dropped = true;
  for (const Segment& s : segs_) {
    const uint64_t min_ns = summary ? s.summary_min_ns : s.min_ns, max_ns = summary ? s.summary_max_ns : s.max_ns;
    if (min_ns == UINT64_MAX) continue;
    if (s.dropped) spans.emplace_back(prev_dropped ? prev_max : min_ns, max_ns);
    prev_dropped = s.dropped;
    prev_max = max_ns;
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& sp : spans) {
    if (!merged.empty() && sp.first <= merged.back().second) merged.back().second = std::max(merged.back().second, sp.second);
    else merged.push_back(sp);
  }
  return merged;
}

void DetailSegments::RemoveFiles() {
  if (current_) CloseCurrent();
  for (Segment& s : segs_)
    if (!s.dropped) ::unlink(s.path.c_str());
}

}  // namespace gpuwatch::collector
