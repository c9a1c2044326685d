// summary.json. Per-rank identity, end state and storage come from the RankView; every
// figure section from its RankResult (report/figures_json.h). The `job` object carries the
// same sections merged over ranks (JobResult).
#include <ctime>

#include "common/format.h"
#include "report/figures_json.h"
#include "report/host_clocks.h"
#include "report/html_report.h"
#include "report/summary.h"
#include "report/svg_chart.h"

namespace gpuwatch::collector {
namespace {

nlohmann::json StorageJson(const RankStorage& s) {
  nlohmann::json j = nlohmann::json::object();
  if (!s.journal.file.empty() || !s.journal.error.empty())
    j["journal"] = {{"file", s.journal.file},
                    {"bytes", s.journal.bytes},
                    {"capped", s.journal.capped},
                    {"error", s.journal.error},
                    {"checkpoints", s.journal.checkpoints},
                    {"checkpoint_bytes", s.journal.checkpoint_bytes},
                    {"checkpoint_ms", static_cast<double>(s.journal.checkpoint_ns) / 1e6},
                    {"checkpoint_error", s.journal.checkpoint_error}};
  if (!s.rebuilt_from.empty()) {
    j["rebuilt_from"] = s.rebuilt_from;
    j["spool_capped"] = s.spool_capped;
    j["truncated_tail_bytes"] = s.truncated_tail_bytes;
  }
  return j;
}

nlohmann::json HangsJson(const JobView& job) {
  nlohmann::json out = nlohmann::json::array();
  for (const Hang& h : *job.hangs) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& s : h.ranks) {
      nlohmann::json r = {{"rank", s.rank}, {"pid", s.pid}, {"host", s.host},
                          {"reporting", s.reporting}};
      r["inside"] = s.inside.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.inside);
      if (!s.inside.empty()) {
        r["inside_s"] = s.inside_s;
        if (s.inside_collective) r["inside_seq"] = s.inside_seq;
      }
      if (h.collective)
        r["last_seq"] = s.has_last_seq ? nlohmann::json(s.last_seq) : nlohmann::json(nullptr);
      ranks.push_back(std::move(r));
    }
    nlohmann::json j = {{"rank", h.rank}, {"host", h.host},   {"pid", h.pid},
                        {"tid", h.tid},   {"api", h.api},     {"inside_s", h.inside_s},
                        {"ranks", std::move(ranks)}};
    if (h.collective) {
      j["seq"] = h.seq;
      j["comm_hash"] = Printf("0x%016llx", static_cast<unsigned long long>(h.comm_hash));
    }
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json HostsJson(const JobView& job) {
  nlohmann::json out = nlohmann::json::array();
  for (const HostClock& h : HostClocks(job))
    out.push_back({{"host", h.host},
                   {"ranks", h.ranks},
                   {"clock_offset_ns", h.offset_ns},
                   {"clock_uncertainty_ns", h.uncertainty_ns},
                   {"via_collector", h.via_collector.empty() ? nlohmann::json(nullptr)
                                                             : nlohmann::json(h.via_collector)}});
  return out;
}

nlohmann::json TraceJson(const TraceView& t) {
  nlohmann::json spans = nlohmann::json::array();
  for (const TraceView::Span& s : t.detail_spans)
    spans.push_back({{"detail", s.detail}, {"from_s", s.from_s}, {"to_s", s.to_s}});
  return {{"file", t.file}, {"keep", t.keep}, {"bytes", t.bytes}, {"detail_spans", std::move(spans)}};
}

}  // namespace

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json BuildSummaryJson(const JobView& job, const std::string& generated_at) {
  nlohmann::json ranks = nlohmann::json::array();
  nlohmann::json abnormal = nlohmann::json::array();
  for (const RankView& rank : job.ranks) {
    const wire::Hello& h = *rank.hello;
    nlohmann::json r = {{"rank", h.rank()},
                        {"world_size", h.world_size()},
                        {"local_rank", h.local_rank()},
                        {"host", h.host()},
                        {"pid", h.pid()},
                        {"device", h.device()},
                        {"rank_source", h.rank_source()},
                        {"library_version", h.library_version()},
                        {"ended", rank.ended_normally ? "normal" : "abnormal"},
                        {"wall_s", rank.result->WallS()},
                        {"events", rank.result->host_calls},
                        {"storage", StorageJson(*rank.storage)}};
    AddRankFigures(*rank.result, r, job.result);
    if (!rank.ended_normally) abnormal.push_back(h.rank());
    ranks.push_back(std::move(r));
  }

  nlohmann::json totals = {{"ranks", job.ranks.size()},
                           {"world_size", job.world_size},
                           {"hosts", job.distinct_hosts()},
                           {"host_clocks", HostsJson(job)},
                           {"abnormal_ranks", abnormal},
                           {"wall_s", job.wall_s()}};
  AddJobFigures(*job.result, totals);

  nlohmann::json doc = {{"schema", kSummarySchema},
                        {"job_id", job.id},
                        {"generated_at", generated_at},
                        {"ranks", std::move(ranks)},
                        {"job", std::move(totals)},
                        {"hangs", HangsJson(job)}};
  if (job.trace) doc["trace"] = TraceJson(*job.trace);
  return doc;
}

}  // namespace gpuwatch::collector

namespace gpuwatch::collector {

RenderedSummary RenderSummary(const JobView& job) {
  const nlohmann::json doc = BuildSummaryJson(job, UtcNow());
  RenderedSummary r;
  r.json = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  r.text = BuildSummaryText(job);
  // The page is a convenience: whatever goes wrong drawing it must not cost the summary.
  try {
    r.html = BuildHtmlReport(doc);
  } catch (const std::exception& e) {
    r.html = "<!DOCTYPE html><meta charset=\"utf-8\"><title>gpuwatch</title><p>report.html "
             "could not be drawn (" + html::Esc(e.what()) + "); see summary.txt.</p>\n";
  }
  return r;
}

}  // namespace gpuwatch::collector
