// Small summary.json documents for the diff's tests: a two-rank job of 50 NVTX steps of
// 20 ms that the tests change one key at a time (the keys of docs/summary-schema.md).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gwdiff {

using nlohmann::json;

inline json Rank(int rank, int steps = 50) {
  const double n = steps;
  return {{"rank", rank},
          {"world_size", 2},
          {"host", "node1"},
          {"device", rank},
          {"library_version", "0.1.0"},
          {"ended", "normal"},
          {"environment",
           {{"cuda_runtime", "13.0"}, {"cuda_driver", "13.0"}, {"nccl", "2.28.0"}, {"settings", json::object()}}},
          {"steps",
           {{"count", steps},
            {"source", "nvtx:train_step"},
            {"median_ms", 20.0},
            {"p90_ms", 22.0},
            {"max_ms", 30.0},
            {"per_step_source", "per step"},
            {"per_step_ms",
             {{"gpu_compute", 12.0}, {"comm_not_overlapped", 2.0}, {"gpu_idle_waiting_for_host", 4.0},
              {"gpu_idle_waiting_for_launches", 0.5}, {"gpu_idle_in_syncs", 0.0}, {"gpu_idle_other", 0.0},
              {"host_blocked_in_syncs", 0.0}, {"copies", 0.2}}}}},
          {"sync", {{"count", steps}, {"total_s", 0.005 * n},
                    {"by_api", {{"cudaStreamSynchronize", {{"count", steps}, {"total_s", 0.005 * n}}}}}}},
          {"memcpy",
           {{"h2d", {{"count", steps}, {"bytes", 4000000 * steps}, {"total_s", 0.0001 * n}, {"gbps", 40.0},
                     {"device_gbps", 24.0}, {"pageable_count", 0}, {"pageable_bytes", 0}, {"blocking_count", 0}}},
            {"d2h", {{"count", 0}, {"bytes", 0}, {"total_s", 0.0}, {"gbps", 0.0}, {"device_gbps", nullptr},
                     {"pageable_count", 0}, {"pageable_bytes", 0}, {"blocking_count", 0}}}}},
          {"collectives",
           {{"allreduce", {{"count", steps}, {"bytes", 16000000 * steps}, {"total_s", 0.002 * n},
                           {"algbw_gbps", 80.0}, {"busbw_gbps", 80.0}, {"no_gpu_time_count", 0}}}}},
          {"kernels", {{"launches", 10 * steps}, {"top_launched", json::array()}}},
          {"gpu", {{"source", "cupti"}, {"utilization", 0.8}}},
          {"findings", json::array()}};
}

inline json Doc(int steps = 50) {
  const double n = steps;
  json job = {
      {"ranks", 2},
      {"world_size", 2},
      {"hosts", 1},
      {"abnormal_ranks", json::array()},
      {"steps", {{"count", steps}, {"source", "nvtx:train_step"}, {"median_ms", 20.0}}},
      {"gpu",
       {{"source", "cupti"},
        {"utilization", 0.8},
        {"kernels", {{"top", {{{"name", "fwd"}, {"count", 20 * steps}, {"total_s", 0.024 * n}}}}}}}},
      {"memcpy",
       {{"h2d", {{"count", 2 * steps}, {"bytes", 8000000 * steps}, {"pageable_bytes", 0}, {"device_gbps", 24.0}}},
        {"d2h", {{"count", 0}, {"bytes", 0}, {"pageable_bytes", 0}, {"device_gbps", nullptr}}}}},
      {"collectives", {{"allreduce", {{"count", 2 * steps}, {"total_s", 0.004 * n}, {"busbw_gbps", 80.0}}}}},
      {"findings", json::array()},
      {"verdict", "GPU busy 80% of the time."}};
  return {{"schema", "gpuwatch.summary.v1"},
          {"job_id", "job-a"},
          {"generated_at", "2026-12-01T00:00:00Z"},
          {"ranks", {Rank(0, steps), Rank(1, steps)}},
          {"job", job}};
}

// A job finding of `ms_per_step` (time_lost_s over the job's steps).
inline void AddFinding(json& doc, const std::string& id, const std::string& severity, double ms_per_step,
                       const std::string& title = "") {
  const double steps = doc["job"]["steps"]["count"].get<double>();
  doc["job"]["findings"].push_back({{"id", id},
                                    {"title", title.empty() ? id + " title" : title},
                                    {"severity", severity},
                                    {"ranks", {0, 1}},
                                    {"time_lost_s", ms_per_step * steps / 1e3},
                                    {"share", ms_per_step / 20.0},
                                    {"summary", "measured"},
                                    {"fix", "fix it"},
                                    {"evidence", json::object()}});
}

inline void SetStepMedian(json& doc, double ms) {
  doc["job"]["steps"]["median_ms"] = ms;
  for (json& r : doc["ranks"]) r["steps"]["median_ms"] = ms;
}

}  // namespace gwdiff
