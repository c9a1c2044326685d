// Hang detection from heartbeats. The collector only sees a call when it returns, so the
// library's Heartbeat says which watched calls are in progress (since when) and how far
// each communicator has got. A rank counts as hung when it has been inside a collective or
// a synchronization for at least the threshold: heartbeat.now_ns - since_ns (the rank's
// own clock) plus the time since that heartbeat arrived (the collector's clock), so a rank
// whose heartbeats stop while inside a call is still caught.
#include <algorithm>

#include "analyze/hang.h"
#include "common/api_names.h"
#include "common/format.h"
#include "jobs/job_table.h"

namespace gpuwatch::collector {
namespace {

constexpr size_t kMaxHangs = 256;
constexpr size_t kRanksInLogLine = 16;

// Seconds `f` has been in progress at `now`, by the rank's heartbeat clock plus the
// collector's time since that heartbeat.
double InsideSeconds(const RankState& r, const wire::InFlight& f, Clock::time_point now) {
  const wire::Heartbeat& hb = r.heartbeat();
  const uint64_t rank_ns = hb.now_ns() > f.since_ns() ? hb.now_ns() - f.since_ns() : 0;
  const double since_hb = std::chrono::duration<double>(now - r.heartbeat_at()).count();
  return Seconds(rank_ns) + std::max(0.0, since_hb);
}

// unique_hash of the communicator `comm_id` in this rank's heartbeat, 0 if absent.
uint64_t HashOf(const wire::Heartbeat& hb, uint64_t comm_id) {
  for (const auto& c : hb.comms())
    if (c.comm_id() == comm_id) return c.unique_hash();
  return 0;
}

HangRankState StateOf(const RankState& r, uint64_t comm_hash, Clock::time_point now) {
  HangRankState s;
  s.rank = r.hello().rank();
  s.pid = r.hello().pid();
  s.host = r.hello().host();
  s.reporting = r.has_heartbeat() && r.open_connections() > 0;
  if (!r.has_heartbeat()) return s;
  const wire::InFlight* longest = nullptr;
  for (const auto& f : r.heartbeat().inside())
    if (IsWaitApi(f.api()) && (!longest || f.since_ns() < longest->since_ns())) longest = &f;
  if (longest && s.reporting) {
    s.inside = ApiName(longest->api());
    s.inside_collective = IsCollective(longest->api());
    s.inside_seq = longest->seq();
    s.inside_s = InsideSeconds(r, *longest, now);
  }
  if (comm_hash != 0)
    for (const auto& c : r.heartbeat().comms())
      if (c.unique_hash() == comm_hash && c.any_returned()) {
        s.has_last_seq = true;
        s.last_seq = c.last_seq();
      }
  return s;
}

std::string LogLine(const std::string& job_id, const Hang& h) {
  std::string line = Printf("hang: job %s: rank %d (host %s, pid %d, thread %u) has been inside %s",
                            Clip(job_id, 64).c_str(), h.rank, Clip(h.host, 64).c_str(), h.pid,
                            h.tid, h.api.c_str());
  if (h.collective) line += Printf(" (seq %llu)", static_cast<unsigned long long>(h.seq));
  line += Printf(" for %.1f s; where the ranks are:", h.inside_s);
  size_t n = 0;
  for (const auto& s : h.ranks) {
    if (n++ == kRanksInLogLine) {
      line += Printf(" ... (%zu more)", h.ranks.size() - kRanksInLogLine);
      break;
    }
    line += Printf(" [rank %d:", s.rank);
    if (!s.reporting) line += " no heartbeat";
    if (h.collective)
      line += s.has_last_seq ? Printf(" done seq %llu", static_cast<unsigned long long>(s.last_seq))
                             : std::string(" no collective done");
    if (!s.inside.empty()) {
      line += ", in " + s.inside;
      if (s.inside_collective)
        line += Printf(" seq %llu", static_cast<unsigned long long>(s.inside_seq));
      line += Printf(" %.0f s", s.inside_s);
    } else if (s.reporting) {
      line += ", not waiting";
    }
    line += "]";
  }
  return line;
}

}  // namespace

std::vector<std::string> JobTable::CheckHangs(Clock::time_point now) {
  std::vector<std::string> lines;
  for (auto& [id, job] : jobs_) {
    for (const auto& [key, rank_ptr] : job->ranks_) {
      const RankState* rank = rank_ptr.get();  // (lambdas cannot capture a binding in clang 14)
      if (rank->open_connections() == 0 || !rank->has_heartbeat()) continue;
      for (const auto& f : rank->heartbeat().inside()) {
        if (!IsWaitApi(f.api())) continue;
        const double inside = InsideSeconds(*rank, f, now);
        if (inside < timing_.hang_s) continue;
        // One report per call: the same rank, pid, thread and start time.
        const bool known = std::any_of(job->hangs_.begin(), job->hangs_.end(), [&](const Hang& h) {
          return h.rank == rank->hello().rank() && h.pid == rank->hello().pid() &&
                 h.host == rank->hello().host() && h.tid == f.tid() && h.since_ns == f.since_ns();
        });
        if (known || job->hangs_.size() >= kMaxHangs) continue;
        Hang h;
        h.rank = rank->hello().rank();
        h.pid = rank->hello().pid();
        h.host = rank->hello().host();
        h.tid = f.tid();
        h.since_ns = f.since_ns();
        h.api = ApiName(f.api());
        h.inside_s = inside;
        h.collective = IsCollective(f.api());
        h.seq = f.seq();
        h.comm_hash = h.collective ? HashOf(rank->heartbeat(), f.comm_id()) : 0;
        for (const auto& [k2, r2] : job->ranks_) h.ranks.push_back(StateOf(*r2, h.comm_hash, now));
        h.line = LogLine(job->id(), h);
        lines.push_back(h.line);
        job->hangs_.push_back(std::move(h));
        if (job->trace_) job->trace_->OnHang(job->hangs_.back());
        job->dirty_ = true;
      }
    }
  }
  return lines;
}

}  // namespace gpuwatch::collector
