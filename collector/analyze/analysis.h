// One analysis = one section of a rank's summary. Each analysis owns its counters, reads
// the batches of one rank as they arrive, and writes its own keys into summary.json and its
// own block into summary.txt. Adding an analysis (later: gpu, steps, findings) is adding a
// file in analyze/ and one line in registry.cpp; the pipeline around it does not change.
//
// Memory rule: state must not grow with the length of the run — counters, fixed arrays, or
// maps with an explicit bound.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

// What an analysis may add to the job's trace when the job ends (trace/job_trace.h
// implements it): the analysis does not depend on how the trace is written.
class TraceMarks {
 public:
  virtual ~TraceMarks() = default;
  // Steps [start, end) of the rank, numbered from `first_index`.
  virtual void Steps(int rank, const std::string& host,
                     const std::vector<std::pair<uint64_t, uint64_t>>& steps,
                     uint64_t first_index) = 0;
  // An instant on the rank's process track (a finding), written once per `key`.
  virtual void Instant(int rank, const std::string& host, const std::string& key, uint64_t ts,
                       const std::string& name) = 0;
};

class RankAnalysis {
 public:
  virtual ~RankAnalysis() = default;

  // Stable name; also how Merge finds its counterpart.
  virtual const char* name() const = 0;

  // The rank's identity, before any batch (and again if the rank reconnects).
  virtual void OnHello(const wire::Hello&) {}
  // A batch from the rank. Names and communicators in a batch may be used by events of
  // the same batch, so implementations read those before the events.
  virtual void OnBatch(const wire::Batch& batch) = 0;
  virtual void OnGoodbye(const wire::Goodbye&) {}

  // Job totals: a fresh instance of the same analysis absorbs each rank's instance.
  // `other` is always of the same concrete type (same name()).
  virtual void Merge(const RankAnalysis& other) = 0;

  // Adds this analysis' keys to a rank (or job) object of summary.json.
  virtual void WriteJson(nlohmann::json& obj) const = 0;
  // Appends this analysis' block of the per-rank text table: lines of at most 80 columns,
  // indented by two spaces. Must be deterministic (golden tests compare it).
  virtual void WriteText(std::string& out) const = 0;
  // A short fragment for the job line ("sync 1.234 s"); empty to say nothing.
  virtual std::string Headline() const { return {}; }
  // Job level, at job end: what this analysis found that belongs on the trace's timeline.
  virtual void MarkTrace(TraceMarks&) const {}
};

using Analyses = std::vector<std::unique_ptr<RankAnalysis>>;

// Every analysis, in the order its section appears. Defined in registry.cpp.
Analyses MakeRankAnalyses();

}  // namespace gpuwatch::collector
