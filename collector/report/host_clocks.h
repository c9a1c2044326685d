// The hosts of a job and how their clocks were put on the collector's (multi-host,
// --upstream): a rank forwarded by its host's collector carries that collector's estimate
// of (this collector's clock - its host's) in its Hello; a rank that connected directly
// was taken as it came (offset 0). summary.json `job.hosts` and summary.txt's host lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/job_view.h"

namespace gpuwatch::collector {

struct HostClock {
  std::string host;
  std::vector<int> ranks;
  int64_t offset_ns = 0;       // added to the host's times
  uint64_t uncertainty_ns = 0;  // rtt/2 of the probe it came from
  std::string via_collector;   // "" when its ranks connected directly
};

// One entry per host, in host order. If a host's ranks were forwarded with different
// estimates (one taken again between their connects), the tightest one is shown.
std::vector<HostClock> HostClocks(const JobView& job);

// Whether any rank of the job came through another collector (the text then lists hosts).
bool AnyForwarded(const std::vector<HostClock>& hosts);

}  // namespace gpuwatch::collector
