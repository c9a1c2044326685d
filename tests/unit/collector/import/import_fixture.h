// Imports committed torch.profiler traces (tests/data/kineto) through the real importer and
// job table, and reads the summary a run would write.
#pragma once
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "import/rank_import.h"
#include "jobs/job_table.h"

namespace gwtest {

// The committed real traces (tests/data/kineto/README.md).
inline const char* const kRealTraces[] = {"alexnet_a100.json.gz", "nccl_data_a100_rank0.json.gz",
                                          "ns_resolution_v100_rank0.json.gz", "sampled_rank0.json.gz",
                                          "sampled_rank1.json.gz"};

inline std::string KinetoTrace(const std::string& name) { return std::string(GW_KINETO_DIR) + "/" + name; }

inline nlohmann::json ExpectedCounts(const std::string& name) {
  std::ifstream f(KinetoTrace("expected_counts.json"));
  REQUIRE(f.good());
  return nlohmann::json::parse(f).at(name);
}

struct Imported {
  nlohmann::json summary;
  std::vector<col::RankImportStats> stats;
};

// Each file one rank of job "import" (files without distributedInfo: ranks in this order).
inline Imported ImportTraces(const std::vector<std::string>& files) {
  col::JobTable jobs(col::JobTiming{std::chrono::milliseconds(0), std::chrono::milliseconds(0), 300});
  Imported out;
  for (size_t i = 0; i < files.size(); ++i) {
    col::RankImportOptions o;
    o.fallback_rank = static_cast<int>(i);
    o.fallback_world_size = static_cast<int>(files.size());
    col::RankImportStats s;
    std::string error;
    INFO(error);
    REQUIRE(col::ImportRankTrace(files[i], o, jobs, &s, &error));
    out.stats.push_back(s);
  }
  const col::Job* job = jobs.Find("import");
  REQUIRE(job != nullptr);
  out.summary = SummaryJson(*job, "t");
  return out;
}

}  // namespace gwtest
