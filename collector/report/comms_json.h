// summary.json's per-communicator figures (collectives.by_comm) and the comm-compute overlap
// (comm_overlap), for a rank and for the job (docs/summary-schema.md).
#pragma once
#include <nlohmann/json.hpp>

#include "analyze/job_result.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// A communicator's id in summary.json: its hash in hex (a rank's entry and the job's agree).
std::string CommIdText(uint64_t hash);
// An op's bandwidth keys: its wait for the last member (`wait_ns`, 0 when not known) and the
// bandwidths of the transfer after it; null bandwidths, with the reason, where no call crossed
// a link (a one-member communicator).
void AddOpBandwidthJson(const CollectiveFigures::Op& o, uint64_t wait_ns, nlohmann::json& e);
// A rank's `collectives` ops whose algbw is above what its device's links carry (`peak_gbps`
// each way; 0: not known) say so, and why that can be.
void NoteAboveLinkPeak(double peak_gbps, nlohmann::json& collectives);
// `waits`: the rank's, as the job measured them (null: none known).
nlohmann::json RankCommsJson(const RankResult& r, const RankWaits* waits = nullptr);
nlohmann::json JobCommsJson(const JobResult& j);
nlohmann::json RankOverlapJson(const RankResult& r);
nlohmann::json JobOverlapJson(const JobResult& j);

}  // namespace gpuwatch::collector
