#include "jobs/job_table.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "common/format.h"
#include "common/out_dir.h"

namespace gpuwatch::collector {
namespace {

// Bounds that keep a misbehaving client (of our own user) from growing the collector.
constexpr size_t kMaxRanksPerJob = 65536;
// Finished jobs kept so a late rank reopens its job instead of starting a new summary
// that would overwrite the first one.
constexpr size_t kMaxFinishedJobs = 64;

}  // namespace

int Job::distinct_ranks() const {
  std::set<int> r;
  for (const auto& [key, rank] : ranks_) r.insert(std::get<0>(key));
  return static_cast<int>(r.size());
}

int Job::distinct_hosts() const {
  std::set<std::string> h;
  for (const auto& [key, rank] : ranks_) h.insert(std::get<1>(key));
  return static_cast<int>(h.size());
}

double Job::wall_s() const {
  double w = 0;
  for (const auto& [key, rank] : ranks_) w = std::max(w, rank->result().WallS());
  return w;
}

RankList Job::Results() const {
  RankList out;
  for (const auto& [key, rank] : ranks_) out.push_back(&rank->result());
  return out;
}

std::string Job::OutDir(const std::string& out_override) const {
  return out_claim_.dir().empty() ? ChooseOutDir(out_override, first_out_dir_) : out_claim_.dir();
}

RankSink* JobTable::Attach(const wire::Hello& hello, std::string* error) {
  auto& slot = jobs_[hello.job_id()];
  if (!slot) {
    slot = std::make_unique<Job>(hello.job_id());
    if (claim_out_dirs_) {
      slot->out_claim_ = OutClaim::Take(ChooseOutDir(out_override_, hello.out_dir()), hello.job_id());
      if (slot->out_claim_.dir() != ChooseOutDir(out_override_, hello.out_dir()))
        spdlog::warn("job {}: {} is in use by another job running now; writing to {}", Clip(hello.job_id(), 64),
                     ChooseOutDir(out_override_, hello.out_dir()), slot->out_claim_.dir());
    }
    // Ranks whose host collector aggregates keep their trace there (Hello.trace_at).
    if (trace_factory_ && !hello.upstream_digests()) {
      if (claim_out_dirs_) {
        wire::Hello claimed = hello;
        claimed.set_out_dir(slot->out_claim_.dir());
        slot->trace_ = trace_factory_(claimed);
      } else {
        slot->trace_ = trace_factory_(hello);
      }
    }
  }
  Job& job = *slot;
  RankKey key{hello.rank(), hello.host(), hello.pid()};
  auto it = job.ranks_.find(key);
  if (it == job.ranks_.end()) {
    if (job.ranks_.size() >= kMaxRanksPerJob) {
      if (error) *error = "job " + job.id() + " already has " +
                          std::to_string(kMaxRanksPerJob) + " ranks";
      return nullptr;
    }
    if (job.ranks_.empty()) job.first_out_dir_ = hello.out_dir();
    it = job.ranks_.emplace(key, std::make_unique<RankState>(hello)).first;
  }
  job.world_size_ = std::max(job.world_size_, hello.world_size());
  ++job.open_;
  job.dirty_ = true;
  it->second->OnConnect(hello);
  if (job.trace_ && !hello.upstream_digests()) it->second->set_trace(job.trace_->ForRank(hello));
  return it->second.get();
}

void JobTable::Detach(const std::string& job_id, RankSink* rank, bool said_goodbye, Clock::time_point now) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  if (rank) static_cast<RankState*>(rank)->OnDisconnect(said_goodbye);
  if (job.open_ > 0) --job.open_;
  job.last_close_ = now;
  job.dirty_ = true;
}

std::string JobTable::OutDir(const std::string& job_id, const std::string& out_override) const {
  const Job* job = Find(job_id);
  return job ? job->OutDir(out_override) : ChooseOutDir(out_override, "");
}

Clock::time_point JobTable::DueAt(const Job& job) const {
  auto at = job.last_close_ + timing_.linger;
  if (job.distinct_ranks() < job.world_size_) at += timing_.wait_for_ranks;
  return at;
}

std::vector<Job*> JobTable::Due(Clock::time_point now) {
  std::vector<Job*> due;
  for (auto& [id, job] : jobs_)
    if (job->dirty_ && job->open_ == 0 && now >= DueAt(*job)) due.push_back(job.get());
  return due;
}

std::vector<Job*> JobTable::Unwritten() {
  std::vector<Job*> out;
  for (auto& [id, job] : jobs_) {
    if (!job->dirty_) continue;
    for (auto& [key, rank] : job->ranks_) rank->OnCollectorStop();
    out.push_back(job.get());
  }
  return out;
}

void JobTable::MarkWritten(Job* job) {
  job->dirty_ = false;
  // The next job may take the folder; this one keeps writing where it wrote (a late rank).
  job->out_claim_.Release();
  job->last_written_seq_ = ++written_seq_;
  EvictFinished();
}

void JobTable::EvictFinished() {
  size_t finished = 0;
  for (const auto& [id, job] : jobs_) finished += (!job->dirty_ && job->open_ == 0);
  while (finished > kMaxFinishedJobs) {
    auto oldest = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      const Job& j = *it->second;
      if (j.dirty_ || j.open_ != 0) continue;
      if (oldest == jobs_.end() || j.last_written_seq_ < oldest->second->last_written_seq_)
        oldest = it;
    }
    if (oldest == jobs_.end()) break;
    jobs_.erase(oldest);
    --finished;
  }
}

std::optional<Clock::time_point> JobTable::NextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& [id, job] : jobs_) {
    if (!job->dirty_ || job->open_ != 0) continue;
    const auto at = DueAt(*job);
    if (!next || at < *next) next = at;
  }
  return next;
}

bool JobTable::AllWritten() const {
  for (const auto& [id, job] : jobs_)
    if (job->dirty_ || job->open_ != 0) return false;
  return true;
}

}  // namespace gpuwatch::collector
