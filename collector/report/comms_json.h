// summary.json's per-communicator figures (collectives.by_comm) and the comm-compute overlap
// (comm_overlap), for a rank and for the job (docs/summary-schema.md).
#pragma once
#include <nlohmann/json.hpp>

#include "analyze/job_result.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// A communicator's id in summary.json: its hash in hex (a rank's entry and the job's agree).
std::string CommIdText(uint64_t hash);
nlohmann::json RankCommsJson(const RankResult& r);
nlohmann::json JobCommsJson(const JobResult& j);
nlohmann::json RankOverlapJson(const RankResult& r);
nlohmann::json JobOverlapJson(const JobResult& j);

}  // namespace gpuwatch::collector
