// See live_snapshot.h.
#include "jobs/live_snapshot.h"

#include <algorithm>
#include <set>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {

// A job with more ranks than this shows, live, its sums and its outliers only: a scrape of
// a 10 000-rank root stays small (issue #21; each rank's series are on its host
// collector's own /metrics).
constexpr size_t kAllRanksUpTo = 16;
constexpr size_t kOutliersPerKind = 4;  // the most lost time; the fewest collective seconds
constexpr size_t kMaxHungShown = 16;

double CollectiveS(const RankResult& r) { return Seconds(r.collectives.Total().timed.ns); }
// Time the rank lost: its GPU's idle time when there is a device timeline, else the host's
// time blocked in syncs.
double LostS(const RankResult& r) { return r.cupti() ? Seconds(r.gpu.run.IdleTotal()) : Seconds(r.sync.TotalNs()); }

// The job's ranks summed, as one result (the counters a live view shows).
RankResult Sum(const Job& job) {
  RankResult all;
  for (const auto& [key, rank] : job.ranks()) {
    const RankResult& r = rank->result();
    all.host_calls += r.host_calls;
    all.sync.Merge(r.sync);
    all.copies.Merge(r.copies);
    all.collectives.Merge(r.collectives);
    all.graphs.Merge(r.graphs);
    all.gpu.Merge(r.gpu);
    all.dropped_total += r.dropped_total;
    all.found.total = std::max(all.found.total, r.steps_total());
    all.overhead.hooks_added_ns += r.overhead.hooks_added_ns;
    all.overhead.cupti_added_ns += r.overhead.cupti_added_ns;
    all.overhead.startup_ns += r.overhead.startup_ns;
    all.overhead.sampler_ns += r.overhead.sampler_ns;
    all.overhead.sampler_signals_ns += r.overhead.sampler_signals_ns;
    all.overhead.elapsed_ns += r.overhead.elapsed_ns;
  }
  return all;
}

// Which ranks of a large job to show, and why: every hung rank (bounded), the ranks that
// lost the most time, and those with the fewest collective seconds (the others wait for
// them inside collectives: the straggler's signature).
std::map<const RankState*, std::string> Outliers(const Job& job) {
  std::map<const RankState*, std::string> out;
  std::set<int> hung;
  for (const Hang& h : job.hangs()) hung.insert(h.rank);
  std::vector<const RankState*> ranks, with_coll;
  for (const auto& [key, rank] : job.ranks()) {
    ranks.push_back(rank.get());
    if (rank->result().collectives.Total().timed.count > 0) with_coll.push_back(rank.get());
    if (hung.count(rank->hello().rank()) && out.size() < kMaxHungShown) out[rank.get()] = "hang";
  }
  auto pick = [&](std::vector<const RankState*>& v, auto less, const char* why) {
    const size_t n = std::min(kOutliersPerKind, v.size());
    std::partial_sort(v.begin(), v.begin() + n, v.end(), less);
    for (size_t i = 0; i < n; ++i) out.emplace(v[i], why);
  };
  pick(ranks, [](const RankState* a, const RankState* b) { return LostS(a->result()) > LostS(b->result()); },
       "lost_time");
  pick(with_coll, [](const RankState* a, const RankState* b) { return CollectiveS(a->result()) < CollectiveS(b->result()); },
       "straggler");
  return out;
}

RankSample Sample(const Job& job, const RankState& rank, const std::string& outlier) {
  RankSample s = SampleOf(rank.result());
  s.job = job.id();
  s.host = rank.hello().host();
  s.rank = rank.hello().rank();
  s.pid = static_cast<int>(rank.hello().pid());
  s.connected = rank.open_connections() > 0;
  s.outlier = outlier;
  return s;
}

}  // namespace

LiveSnapshot TakeSnapshot(const JobTable& jobs, Clock::time_point now) {
  LiveSnapshot snap;
  snap.at = now;
  jobs.ForEach([&](const Job& job) {
    ++snap.jobs;
    const bool large = job.ranks().size() > kAllRanksUpTo;
    const auto outliers = large ? Outliers(job) : std::map<const RankState*, std::string>{};
    if (large) {
      RankSample all = SampleOf(Sum(job));
      all.job = job.id();
      all.host = "all";
      for (const auto& [key, rank] : job.ranks()) all.connected = all.connected || rank->open_connections() > 0;
      snap.ranks.push_back(std::move(all));
    }
    for (const auto& [key, rank] : job.ranks()) {
      // The collector-wide sums count every rank; the per-rank series only the shown ones.
      const RankSample s = Sample(job, *rank, "");
      snap.ranks_connected += s.connected ? 1 : 0;
      ++snap.ranks_total;
      snap.events += s.events;
      snap.dropped += s.dropped;
      snap.added_s += s.hooks_s + s.cupti_s + s.startup_s + s.sampler_signals_s;
      snap.elapsed_s += s.elapsed_s;
      if (s.has_gpu) {
        snap.gpu_busy_s += s.gpu_busy_s;
        snap.gpu_active_s += s.gpu_active_s;
      }
      if (!large) {
        snap.ranks.push_back(s);
      } else if (auto it = outliers.find(rank.get()); it != outliers.end()) {
        snap.ranks.push_back(Sample(job, *rank, it->second));
      }
    }
  });
  return snap;
}

}  // namespace gpuwatch::collector
