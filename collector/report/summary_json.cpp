// summary.json. Per-rank identity and end state come from the RankAggregate; every other
// section is written by its analysis, so adding an analysis adds its keys here without
// changes to this file. The `job` object carries the same sections merged over ranks.
#include <ctime>

#include "report/summary.h"

namespace gpuwatch::collector {

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json BuildSummaryJson(const Job& job, const std::string& generated_at) {
  nlohmann::json ranks = nlohmann::json::array();
  nlohmann::json abnormal = nlohmann::json::array();
  for (const auto& [key, rank] : job.ranks()) {
    const wire::Hello& h = rank->hello();
    nlohmann::json r = {{"rank", h.rank()},
                        {"world_size", h.world_size()},
                        {"local_rank", h.local_rank()},
                        {"host", h.host()},
                        {"pid", h.pid()},
                        {"device", h.device()},
                        {"rank_source", h.rank_source()},
                        {"library_version", h.library_version()},
                        {"ended", rank->ended()},
                        {"wall_s", rank->wall_s()},
                        {"events", rank->events()}};
    for (const auto& a : rank->analyses()) a->WriteJson(r);
    if (!rank->ended_normally()) abnormal.push_back(h.rank());
    ranks.push_back(std::move(r));
  }

  nlohmann::json totals = {{"ranks", job.ranks().size()},
                           {"world_size", job.world_size()},
                           {"hosts", job.distinct_hosts()},
                           {"abnormal_ranks", abnormal},
                           {"wall_s", job.wall_s()}};
  for (const auto& a : job.Totals()) a->WriteJson(totals);

  return {{"schema", kSummarySchema},
          {"job_id", job.id()},
          {"generated_at", generated_at},
          {"ranks", std::move(ranks)},
          {"job", std::move(totals)}};
}

}  // namespace gpuwatch::collector
