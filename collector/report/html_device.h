// report.html's device sections, from summary.json: device memory over time (each rank's
// reserved bytes as a share of its device's memory) and the device table (NVML's figures,
// the utilization curve's shape).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

void DeviceSections(const nlohmann::json& summary, std::string& out);

}  // namespace gpuwatch::collector
