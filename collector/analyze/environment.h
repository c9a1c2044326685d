// The rules that say which of a rank's environment facts (interpret/rank_facts.h: CUDA
// runtime and driver versions, NCCL's version, the watched settings) cost speed.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// A setting or version that disables a fast path, forces a slow one, or is old.
struct EnvIssue {
  std::string what;      // "NCCL_P2P_DISABLE=1", "NCCL 2.17.1"
  std::string effect;    // what it does to speed
  std::string severity;  // high, medium, low (before the impact of the rank's communication)
  bool transport = false;  // costs only through collectives
  std::string fix;
};

std::vector<EnvIssue> EnvIssues(const EnvFacts& e);
// "13.0" from 13000; "2.28.0" from 22800 (and 2708 -> "2.7.8", NCCL's pre-2.9 encoding).
std::string CudaVersionText(int v);
std::string NcclVersionText(int v);
// "8.0" from 80 (EnvFacts::device_compute_capability); "" when 0 (unknown).
std::string ComputeCapabilityText(int cc);
}  // namespace gpuwatch::collector
