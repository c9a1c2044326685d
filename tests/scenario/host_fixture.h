// The scenario's gpu.numa_node as the host placement probe reads it: a recorded sysfs under
// a directory the ranks get as GPUWATCH_HOST_ROOT (the simulated GPU has no sysfs entry).
#pragma once
#include <string>

#include "scenario_model.h"

namespace gpuwatch::scenario {

// Without gpu.numa_node: writes nothing and returns "". Else writes, under `dir`, the NUMA
// node of each simulated device a rank uses (sys/bus/pci/devices/0000:BB:00.0/numa_node, BB
// the device index, as the simulator's PCI bus ids) and the CPUs of two nodes: node 0 the
// first half of the machine's CPUs (0 .. n/2 - 1, n = sysconf(_SC_NPROCESSORS_CONF), rounded
// up), node 1 the rest (both CPU 0 on a machine with one); returns `dir`.
std::string write_host_fixture(const Scenario& sc, const std::string& dir);

}  // namespace gpuwatch::scenario
