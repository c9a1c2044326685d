// cpu_oversubscribed: a host whose ranks' threads waited for a CPU (cpu_contention.h). Where
// those waits explain the spread between ranks that made one of them the straggler, the finding
// is the host's instead: every rank does the same work, and which one the scheduler holds back
// changes. Elsewhere it stands on its own, with the GPU time idle while the host waited for a core.
#include <algorithm>
#include <set>

#include "analyze/cpu_contention.h"
#include "analyze/findings.h"
#include "common/format.h"

namespace gpuwatch::collector {
namespace {

nlohmann::json HostJson(const HostContention& h) {
  nlohmann::json by_rank = nlohmann::json::object();
  for (size_t i = 0; i < h.ranks.size(); ++i) by_rank[std::to_string(h.ranks[i])] = h.run_wait_share_by_rank[i];
  return {{"host", h.host},
          {"ranks", h.ranks},
          {"cpus", h.cpus ? nlohmann::json(h.cpus) : nlohmann::json(nullptr)},
          {"cpu_cores_busy", h.cores_busy},
          {"run_wait_share", h.run_wait_share},
          {"run_wait_share_by_rank", by_rank},
          {"throttled_share", h.throttled_share},
          {"cpu_wait_s", h.wait_s},
          {"gpu_idle_waiting_for_cpu_s", h.gpu_idle_waiting_for_cpu_s},
          {"sampled_s", h.sampled_s}};
}

// "8 ranks on host vm (2 CPUs) kept 0.8 cores busy; their threads waited for a CPU 388 ms per
// second each (summed over threads; 6.5 ms per step)"
std::string HostSummary(const HostContention& h, double steps) {
  std::string s = Printf("%zu rank%s on host %s", h.ranks.size(), h.ranks.size() == 1 ? "" : "s", h.host.c_str());
  if (h.cpus) s += Printf(" (%zu CPU%s)", h.cpus, h.cpus == 1 ? "" : "s");
  s += Printf(" kept %.1f cores busy; their threads waited for a CPU %.0f ms per second each (summed over threads",
              h.cores_busy, 1000 * h.WaitShare());
  s += steps > 0 ? "; " + FmtDuration(h.wait_s / steps) + " per step)" : std::string(")");
  // The ranks used few of the cores they waited for: something else held them.
  if (h.cpus && h.cores_busy < 0.5 * static_cast<double>(h.cpus)) s += "; other processes held the CPUs";
  return s;
}

// The spread between ranks the host's waits must explain: the straggler's time lost (the job's
// ranks' mean wait for it), or, for a straggler within a group of fewer ranks than the job's
// (a TP pair), its group's waiting peers' mean wait: the job's mean dilutes that by the ranks
// that never waited for it (a TP pair among 4 ranks read a quarter of its wait, and 4 ranks
// on 2 cores, waiting 0.1 s a second each for a core, "explained" a rank the scenario made slow).
double SpreadOf(const Finding& straggler, size_t job_ranks) {
  const nlohmann::json& e = straggler.evidence;
  if (!e.is_object() || !e.contains("comm") || !e.contains("peers_wait_s")) return straggler.time_lost_s;
  const nlohmann::json& members = e["comm"]["members"];
  if (!members.is_array() || members.size() < 2 || members.size() >= job_ranks || !e["peers_wait_s"].is_number())
    return straggler.time_lost_s;
  return e["peers_wait_s"].get<double>() / static_cast<double>(members.size() - 1);
}

}  // namespace

std::optional<Finding> CpuOversubscribed(const RankList& ranks, double base, const std::optional<Finding>& straggler,
                                         bool* explains_straggler) {
  *explains_straggler = false;
  const double steps = JobSteps(ranks);
  // The straggler's host first: its waits may explain the spread.
  if (straggler && !straggler->ranks.empty()) {
    for (const RankResult& r : ranks) {
      if (r.rank != straggler->ranks[0]) continue;
      const HostContention h = MeasureHost(ranks, r.host);
      if (!h.ExplainsSpread(SpreadOf(*straggler, ranks.size()))) break;
      *explains_straggler = true;
      Finding f = MakeFinding("cpu_oversubscribed", std::max(straggler->time_lost_s, h.gpu_idle_waiting_for_cpu_s), base);
      f.ranks = h.ranks;
      f.evidence = HostJson(h);
      f.evidence["hosts"] = nlohmann::json::array({HostJson(h)});
      // What would have been called a straggler, kept for whoever compares with HTA's view.
      f.evidence["straggler_explained"] = {{"rank", straggler->ranks[0]},
                                           {"time_lost_s", straggler->time_lost_s},
                                           {"summary", straggler->summary},
                                           {"evidence", straggler->evidence}};
      f.summary = HostSummary(h, steps) +
                  Printf(": as long as the ranks waited for each other in collectives (%s%s), so no rank is slow "
                         "of itself: the scheduler holds one back, then another",
                         FmtDuration(steps > 0 ? straggler->time_lost_s / steps : straggler->time_lost_s).c_str(),
                         steps > 0 ? " per step" : " in all");
      return f;
    }
  }
  // Every host on its own: the one whose GPUs waited longest for a CPU leads.
  std::set<std::string> hosts;
  for (const RankResult& r : ranks) hosts.insert(r.host);
  std::vector<HostContention> found;
  for (const std::string& host : hosts) {
    HostContention h = MeasureHost(ranks, host);
    if (h.Oversubscribed() && h.gpu_idle_waiting_for_cpu_s > 0) found.push_back(std::move(h));
  }
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end(), [](const HostContention& a, const HostContention& b) {
    return a.gpu_idle_waiting_for_cpu_s > b.gpu_idle_waiting_for_cpu_s;
  });
  const HostContention& top = found[0];
  Finding f = MakeFinding("cpu_oversubscribed", top.gpu_idle_waiting_for_cpu_s, base);
  f.ranks = top.ranks;
  f.evidence = HostJson(top);
  f.evidence["hosts"] = nlohmann::json::array();
  for (const HostContention& h : found) f.evidence["hosts"].push_back(HostJson(h));
  f.summary = HostSummary(top, steps) + "; the GPU idled " +
              FmtDuration(steps > 0 ? top.gpu_idle_waiting_for_cpu_s / steps : top.gpu_idle_waiting_for_cpu_s) +
              (steps > 0 ? " per step" : " in all") + " while the host waited for a core";
  return f;
}

void HostExplainsWaits(const RankList& ranks, const Finding& host, std::vector<std::vector<Finding>>& cause) {
  for (size_t i = 0; i < cause.size() && i < ranks.size(); ++i)
    for (Finding& g : cause[i]) {
      if (g.id != "straggler") continue;
      const double wait_s = g.time_lost_s;
      Finding f = MakeFinding("cpu_oversubscribed", wait_s, BaseS(ranks[i]));
      f.ranks = host.ranks;
      f.evidence = host.evidence;
      f.evidence.erase("straggler_explained");
      f.evidence["wait_s"] = wait_s;
      f.summary = Printf("this rank's collectives waited %s for peers that the scheduler held back: ",
                         FmtDuration(wait_s).c_str()) +
                  host.summary;
      g = std::move(f);
    }
}

}  // namespace gpuwatch::collector
