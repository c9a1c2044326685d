// The sections of summary.json, one per figure struct (docs/summary-schema.md): the same
// function writes a rank's section and the job's, so both always have the same keys.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/findings.h"
#include "analyze/job_result.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

nlohmann::json SyncJson(const SyncFigures& s);
nlohmann::json CopiesJson(const CopyFigures& c, const GpuFigures& gpu);
// `waits`: the ranks' waits for the last member, per op (null: not known).
nlohmann::json CollectivesJson(const CollectiveFigures& c, const RankWaits* waits = nullptr);
nlohmann::json LaunchesJson(const LaunchFigures& l);
nlohmann::json GraphsJson(const GraphFigures& g);
nlohmann::json ApiCallsJson(const ApiCallFigures& a);
nlohmann::json GpuJson(const GpuFigures& g);
nlohmann::json DroppedJson(const std::map<std::string, uint64_t>& d);
nlohmann::json StepsJson(const RankResult& r);
nlohmann::json FindingsJson(const std::vector<Finding>& f);
nlohmann::json EnvJson(const EnvFacts& e);
// The library's own cost (rank), and summed over ranks (job).
nlohmann::json OverheadJson(const RankResult& r);
nlohmann::json JobOverheadJson(const RankList& ranks);
// The steps table's per_step_ms (null without steps).
nlohmann::json PerStepMsJson(const PerStepMean& m);

// figures_parallel.cpp: `pipeline` (a rank's, the job's with its matched links and stages)
// and `small_collectives`.
nlohmann::json PipelineJson(const PipelineFigures& p);
nlohmann::json JobPipelineJson(const PipelineFigures& sums, const JobPipeline& jp);
nlohmann::json SmallCollectivesJson(const CollectiveSizeFigures& c);

// Every figure section of a rank's object / of the job object.
// `job`: the rank's job, whose analysis gives the rank's waits and corrected findings.
void AddRankFigures(const RankResult& r, nlohmann::json& obj, const JobResult* job = nullptr);
void AddJobFigures(const JobResult& j, nlohmann::json& obj);

}  // namespace gpuwatch::collector
