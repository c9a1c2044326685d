// The scenario's device-state keys of the `gpu` object (issue 17): the simulated device's
// memory, SMs, PCIe link, throttling and other processes, as SIMGPU_CONFIG takes them.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "scenario_model.h"

namespace gpuwatch::scenario {

// If `key` is one of memory_gib, sm_count, pcie_gen, pcie_width, nvlink_links, numa_node,
// throttle, other_processes:
// checks `value`, stores it in sc.gpu (numbers) or sc.gpu_text, and returns true; a bad
// value throws ScenarioError naming "gpu.KEY". False for any other key.
bool parse_device_key(Scenario& sc, const std::string& key, const nlohmann::json& value, const std::string& source);

// The PCIe link's bandwidth as a share of gen 5 x16, as the simulator scales H2D/D2H copies.
double pcie_link_fraction(const Scenario& sc);

// How much longer the simulator runs each compute kernel on the scenario's device: 1 / (SM
// clock share under `throttle` (0.75 power, 0.6 thermal) x (1 - the other processes' busy,
// at most 0.9)); tests/sim/model/config.h kernel_slowdown.
double kernel_slowdown(const Scenario& sc);

}  // namespace gpuwatch::scenario
