// summary.txt's device block of a rank: the memory its allocations held, the utilization
// curve's shape, and its GPU as NVML saw it (the same figures as summary.json's `memory`,
// `gpu.utilization_shape` and `device`).
#pragma once
#include <string>

#include "analyze/rank_result.h"

namespace gpuwatch::collector {

void DeviceStateText(const RankResult& r, std::string& out);

}  // namespace gpuwatch::collector
