// The trace of one job: one file (OUT/trace.perfetto-trace), one packet sequence and one
// process track per rank (rank_trace.h). The job table creates it with the job
// (set_trace_factory); each rank's part subscribes to the rank's interpreted events; hangs
// become instants (and keep the detail around them); steps and findings are marked when the
// job ends, with a top-level track "trace detail" saying which spans of the run have full
// detail (trace_file.h: what the cap keeps).
//
// Clocks: timestamps are the ranks' CLOCK_MONOTONIC nanoseconds, as the collector has them
// (ranks forwarded from other hosts are already on its clock, docs/TRACE.md).
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/hang.h"
#include "analyze/rank_result.h"
#include "gpuwatch.pb.h"
#include "trace/rank_trace.h"
#include "trace/trace_file.h"

namespace gpuwatch::collector {

class JobTrace {
 public:
  // Creates the trace file at `path`; null with `error` when the level is off or the file
  // cannot be created.
  static std::unique_ptr<JobTrace> Open(const std::string& path, const TraceOptions& options,
                                        std::string* error);

  // The part of the trace of the rank that said `hello` (the same one after a reconnect).
  RankTrace* ForRank(const wire::Hello& hello);
  void OnHang(const Hang& hang);
  // Writes everything out: the trace file is complete as of now (keep last: assembled from
  // the summary stream and the kept detail segments), with its "trace detail" track.
  void Flush();

  // At job end. A job that ends again after more data came adds only steps after those
  // already written, and findings not yet written. The kept steps are the first ones:
  // numbered from 0, with their figures when they have them.
  void Steps(int rank, const std::string& host, const RankResult& result);
  // The rank's critical path over its step of median duration (of those CUPTI recorded
  // whole, when there are any), once per rank: nothing while it is not known.
  void CriticalPath(int rank, const std::string& host, const RankResult& result);
  // An instant on the rank's process track, written once per `key`.
  void Instant(int rank, const std::string& host, const std::string& key, uint64_t ts, const std::string& name);
  // Around the writes above at the job's end: they describe the whole run (TraceFile::set_run_wide).
  void set_run_wide(bool on) { file_->set_run_wide(on); }

  const TraceFile& file() const { return *file_; }
  // The run, from its first rank's start, in spans of full detail, summary only, and nothing.
  std::vector<TraceDetailSpan> DetailSpans() const;
  uint64_t start_ns() const { return start_ns_; }
  // One line for the log: where, how big, what was left out.
  std::string Describe() const;

 private:
  explicit JobTrace(std::unique_ptr<TraceFile> file) : file_(std::move(file)) {}
  // The "trace detail" track's packets: a top-level track, a slice per span.
  std::vector<std::string> DetailTrackPackets();

  std::unique_ptr<TraceFile> file_;
  std::map<std::tuple<int, std::string, int>, std::unique_ptr<RankTrace>> ranks_;
  std::set<int32_t> pids_;
  TraceIds ids_;
  // (rank, host) -> end of the last step written; instants written.
  std::map<std::pair<int, std::string>, uint64_t> steps_until_;
  std::set<std::tuple<int, std::string, std::string>> instants_;
  std::set<std::pair<int, std::string>> paths_;  // ranks whose critical path is written
  uint64_t start_ns_ = UINT64_MAX;  // the first rank's start
  uint32_t detail_seq_ = 0;         // the "trace detail" track's sequence
  bool detail_track_written_ = false;  // keep first: it is appended to the file once
};

}  // namespace gpuwatch::collector
