// report.html's communicators section, from summary.json: every communicator of the job
// (members, kind, calls, GPU time, exposed and overlapped NCCL kernel time, busbw per op) and
// each rank's comm-compute overlap.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

void CommsSection(const nlohmann::json& summary, std::string& out);

}  // namespace gpuwatch::collector
