// Jobs (Hello.job_id) and their ranks, and the rule that decides when a job has ended:
// every connection of the job has closed and none came back within the linger time
// (longer while fewer distinct ranks than world_size have shown up).
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/hang.h"
#include "ingest/rank_sink.h"
#include "jobs/out_claim.h"
#include "jobs/rank_state.h"
#include "trace/job_trace.h"

namespace gpuwatch::collector {

struct JobTiming {
  std::chrono::milliseconds linger{500};
  // Extra wait when fewer distinct ranks than world_size have connected.
  std::chrono::milliseconds wait_for_ranks{10000};
  // A rank inside a collective or a sync for this long is reported as hung
  // (GPUWATCH_HANG_S / --hang-s).
  double hang_s = 300;
};

// Ranks are told apart by (rank, host, pid): two processes claiming the same rank number
// (no launcher variables, say) stay two entries; a rank that reconnects stays one.
using RankKey = std::tuple<int, std::string, int>;

class Job {
 public:
  explicit Job(std::string id) : id_(std::move(id)) {}

  const std::string& id() const { return id_; }
  // Hello.out_dir of the job's first rank ("" if it sent none).
  const std::string& first_out_dir() const { return first_out_dir_; }
  // Where the job's files go: the folder its table claimed for it (JobTable::ClaimOutDirs),
  // else `out_override`, else the first rank's out_dir (ChooseOutDir).
  std::string OutDir(const std::string& out_override) const;
  const std::map<RankKey, std::unique_ptr<RankState>>& ranks() const { return ranks_; }
  int world_size() const { return world_size_; }
  int distinct_ranks() const;
  int distinct_hosts() const;
  int open_connections() const { return open_; }
  // Largest rank wall time: ranks on different hosts have unrelated monotonic clocks (or,
  // forwarded with --upstream, aligned only to within the estimate's error), so spans are
  // not combined across ranks.
  double wall_s() const;
  // Every rank's result, in rank key order (pointers into the ranks' cached results).
  RankList Results() const;
  // Hangs detected so far (at most kMaxHangs), in the order they were found.
  const std::vector<Hang>& hangs() const { return hangs_; }
  // The job's Perfetto trace, null when tracing is off (collector/trace/).
  JobTrace* trace() const { return trace_.get(); }

 private:
  friend class JobTable;
  std::string id_;
  std::string first_out_dir_;
  OutClaim out_claim_;  // empty dir() unless the table claims folders
  std::map<RankKey, std::unique_ptr<RankState>> ranks_;
  int world_size_ = 0;
  int open_ = 0;
  bool dirty_ = false;  // has data not yet in a written summary
  Clock::time_point last_close_{};
  uint64_t last_written_seq_ = 0;  // for evicting the oldest finished jobs
  std::vector<Hang> hangs_;
  std::unique_ptr<JobTrace> trace_;
};

// Makes the trace of a new job from its first Hello (null: no trace for it).
using TraceFactory = std::function<std::unique_ptr<JobTrace>(const wire::Hello& first)>;

class JobTable final : public RankDirectory {
 public:
  explicit JobTable(JobTiming timing) : timing_(timing) {}
  // Jobs created from now on get a trace from `factory`.
  void set_trace_factory(TraceFactory factory) { trace_factory_ = std::move(factory); }
  // Each job created from now on claims its folder (`out_override`, else its first rank's
  // out_dir) so that jobs running at once never share one (jobs/out_claim.h); the trace
  // factory then gets the claimed folder as the Hello's out_dir. For the live collectors;
  // `gpuwatch report` rewrites a folder it is given and claims nothing.
  void ClaimOutDirs(std::string out_override) {
    claim_out_dirs_ = true;
    out_override_ = std::move(out_override);
  }

  // RankDirectory: a connection said Hello (null with `error` when the job cannot take
  // it: too many ranks), a connection closed.
  RankSink* Attach(const wire::Hello& hello, std::string* error) override;
  void Detach(const std::string& job_id, RankSink* rank, bool said_goodbye, Clock::time_point now) override;
  std::string OutDir(const std::string& job_id, const std::string& out_override) const override;

  // Jobs that have ended by `now` and have data not yet written.
  std::vector<Job*> Due(Clock::time_point now);
  // Every job with data not yet written (collector stopping). Marks open ranks abnormal.
  std::vector<Job*> Unwritten();
  // The summary of `job` has been produced; it may be evicted later.
  void MarkWritten(Job* job);
  // Looks for ranks inside a wait call for at least timing.hang_s, in every job; returns
  // the log line of each hang not reported before (each call is reported once).
  // jobs/hang_watch.cpp.
  std::vector<std::string> CheckHangs(Clock::time_point now);
  // When the next job will be due, if any is waiting.
  std::optional<Clock::time_point> NextDeadline() const;

  Job* Find(const std::string& job_id) const {
    auto it = jobs_.find(job_id);
    return it == jobs_.end() ? nullptr : it->second.get();
  }
  // Every job still held (written ones too, until evicted), in job id order.
  template <class F>
  void ForEach(F&& f) const {
    for (const auto& [id, job] : jobs_) f(*job);
  }
  bool AllWritten() const;
  bool empty() const { return jobs_.empty(); }
  size_t size() const { return jobs_.size(); }

 private:
  Clock::time_point DueAt(const Job& job) const;
  void EvictFinished();

  JobTiming timing_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  uint64_t written_seq_ = 0;
  TraceFactory trace_factory_;
  bool claim_out_dirs_ = false;
  std::string out_override_;
};

}  // namespace gpuwatch::collector
