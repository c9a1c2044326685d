// See job_trace.h.
#include "trace/job_trace.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "analyze/path_segments.h"
#include "common/format.h"
#include "common/time_shift.h"
#include "perfetto_trace.pb.h"

namespace gpuwatch::collector {

std::unique_ptr<JobTrace> JobTrace::Open(const std::string& path, const TraceOptions& options,
                                         std::string* error) {
  if (options.level == TraceLevel::kOff) {
    *error = "trace off";
    return nullptr;
  }
  auto file = TraceFile::Open(path, options, error);
  if (!file) return nullptr;
  return std::unique_ptr<JobTrace>(new JobTrace(std::move(file)));
}

RankTrace* JobTrace::ForRank(const wire::Hello& hello) {
  auto key = std::make_tuple(hello.rank(), hello.host(), hello.pid());
  auto it = ranks_.find(key);
  if (it != ranks_.end()) return it->second.get();
  // Perfetto merges processes by pid: ranks on different hosts may share one.
  int32_t pid = hello.pid();
  if (pid <= 0 || pids_.count(pid)) pid = 0x40000000 + static_cast<int32_t>(ranks_.size());
  pids_.insert(pid);
  start_ns_ = std::min<uint64_t>(start_ns_, hello.start_ns());
  auto rank = std::make_unique<RankTrace>(file_.get(), &ids_, pid, hello);
  file_->Flush();
  return ranks_.emplace(key, std::move(rank)).first->second.get();
}

void JobTrace::OnHang(const Hang& hang) {
  file_->KeepDetailFrom(hang.since_ns);
  for (auto& [key, rank] : ranks_)
    if (std::get<0>(key) == hang.rank && std::get<1>(key) == hang.host &&
        std::get<2>(key) == hang.pid)
      rank->OnHang(hang);
}

// The first rank with that number on that host (ranks are keyed by pid too, which the
// analyses do not keep; two processes claiming one rank on one host are rare).
static RankTrace* Find(std::map<std::tuple<int, std::string, int>, std::unique_ptr<RankTrace>>& ranks,
                       int rank, const std::string& host) {
  auto it = ranks.lower_bound(std::make_tuple(rank, host, INT32_MIN));
  if (it == ranks.end() || std::get<0>(it->first) != rank || std::get<1>(it->first) != host)
    return nullptr;
  return it->second.get();
}

void JobTrace::Steps(int rank, const std::string& host, const RankResult& result) {
  RankTrace* t = Find(ranks_, rank, host);
  if (!t) return;
  CriticalPath(rank, host, result);
  const auto& steps = result.steps.steps;
  uint64_t& until = steps_until_[{rank, host}];
  size_t from = 0;
  while (from < steps.size() && steps[from].start < until) ++from;
  if (from == steps.size()) return;
  until = steps.back().end;
  t->WriteSteps(steps, from, from, result.per_step_device, result.overlap.per_step);
}

void JobTrace::CriticalPath(int rank, const std::string& host, const RankResult& result) {
  RankTrace* t = Find(ranks_, rank, host);
  if (!t || !result.critical_path.known() || paths_.count({rank, host})) return;
  // The step graphs kept: the median one of their steps, with its path's own segments.
  std::vector<const StepGraph*> graphs;
  for (const auto& g : result.step_graphs) graphs.push_back(g.get());
  if (const ChosenStepPath chosen = MedianStepPath(graphs); !chosen.segments.empty()) {
    StepRec step;
    step.start = chosen.span.start_ns;
    step.end = chosen.span.end_ns;
    t->WriteCriticalPath(result.critical_path, step, chosen.segments);
    paths_.emplace(rank, host);
    return;
  }
  std::vector<const StepRec*> steps;
  for (const StepRec& s : result.steps.steps)
    if (s.covered && s.end > s.start) steps.push_back(&s);
  if (steps.empty())
    for (const StepRec& s : result.steps.steps)
      if (s.end > s.start) steps.push_back(&s);
  if (steps.empty()) return;
  const auto mid = steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2);
  std::nth_element(steps.begin(), mid, steps.end(),
                   [](const StepRec* a, const StepRec* b) { return a->end - a->start < b->end - b->start; });
  t->WriteCriticalPath(result.critical_path, **mid);
  paths_.emplace(rank, host);
}

void JobTrace::Instant(int rank, const std::string& host, const std::string& key, uint64_t ts,
                       const std::string& name) {
  RankTrace* t = Find(ranks_, rank, host);
  if (!t || !instants_.emplace(rank, host, key).second) return;
  t->Instant(ts, name);
  file_->Flush();
}

void JobTrace::Flush() {
  if (file_->options().keep == TraceKeep::kFirst || file_->options().level != TraceLevel::kFull) {
    file_->Assemble(detail_track_written_ ? std::vector<std::string>{} : DetailTrackPackets());
    detail_track_written_ = true;
    return;
  }
  file_->Assemble(DetailTrackPackets());
}

std::vector<TraceDetailSpan> JobTrace::DetailSpans() const {
  return start_ns_ == UINT64_MAX ? std::vector<TraceDetailSpan>{} : file_->DetailSpans(start_ns_);
}

std::vector<std::string> JobTrace::DetailTrackPackets() {
  using perfetto::protos::TracePacket;
  using perfetto::protos::TrackEvent;
  const std::vector<TraceDetailSpan> spans = DetailSpans();
  if (spans.empty()) return {};
  if (!detail_seq_) detail_seq_ = ids_.next_sequence++;
  // Above every rank's uuids (sequence id << 14 | local).
  constexpr uint64_t kUuid = uint64_t{1} << 60;
  const int64_t skew = file_->options().test_clock_skew_ns;
  std::vector<std::string> out;
  TracePacket p;
  p.set_trusted_packet_sequence_id(detail_seq_);
  p.set_sequence_flags(TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  p.set_first_packet_on_sequence(true);
  p.set_timestamp(ShiftNs(spans.front().from_ns, skew));
  auto* d = p.mutable_track_descriptor();
  d->set_uuid(kUuid);
  d->set_name("trace detail");
  d->set_sibling_order_rank(-1);  // above the ranks
  out.push_back(p.SerializeAsString());
  for (const TraceDetailSpan& s : spans)
    for (const bool begin : {true, false}) {
      p.Clear();
      p.set_trusted_packet_sequence_id(detail_seq_);
      p.set_timestamp(ShiftNs(begin ? s.from_ns : s.to_ns, skew));
      TrackEvent* te = p.mutable_track_event();
      te->set_track_uuid(kUuid);
      te->set_type(begin ? TrackEvent::TYPE_SLICE_BEGIN : TrackEvent::TYPE_SLICE_END);
      if (begin)
        te->set_name(s.level == TraceLevel::kFull      ? "full detail"
                     : s.level == TraceLevel::kSummary ? "summary only"
                                                       : "nothing kept");
      out.push_back(p.SerializeAsString());
    }
  return out;
}

std::string JobTrace::Describe() const {
  uint64_t dropped = 0;
  for (const auto& [key, rank] : ranks_) dropped += rank->dropped_slices();
  std::string s = Printf("%s: %s, %llu packets, %zu rank(s)", file_->path().c_str(),
                         FmtBytes(file_->bytes()).c_str(),
                         static_cast<unsigned long long>(file_->packets()), ranks_.size());
  if (file_->options().keep == TraceKeep::kFirst && file_->detail_capped())
    s += "; size cap reached, detail stopped there";
  if (file_->segments_opened())
    s += Printf("; detail in %zu of %zu segment(s) kept (--trace-keep %s)", file_->segments_kept(),
                file_->segments_opened(), TraceKeepName(file_->options()).c_str());
  if (file_->dropped_packets())
    s += Printf("; %llu packets past the hard cap not written",
                static_cast<unsigned long long>(file_->dropped_packets()));
  if (dropped) s += Printf("; %llu slices dropped (lanes full)", static_cast<unsigned long long>(dropped));
  if (!file_->error().empty()) s += "; " + file_->error();
  return s;
}

}  // namespace gpuwatch::collector
