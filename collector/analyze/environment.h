// The `environment` facts of one rank (issue 6): CUDA runtime and driver versions, NCCL's
// version, and the watched settings of its environment (wire Environment, sent by
// libinject/environment_probe.cpp), and the rules that say which of them cost speed.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector::diag {

struct EnvFacts {
  bool known = false;
  int cuda_runtime = 0, cuda_driver = 0, nccl = 0;  // the APIs' encodings; 0 = unknown
  std::vector<std::pair<std::string, std::string>> settings;
  // The latest message wins field by field (a later one adds NCCL's version).
  void Merge(const wire::Environment& e);
};

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
// The rank's `environment` object of summary.json (null when the library sent none).
nlohmann::json EnvJson(const EnvFacts& e);

}  // namespace gpuwatch::collector::diag
