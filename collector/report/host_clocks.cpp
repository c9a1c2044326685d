// See host_clocks.h.
#include "report/host_clocks.h"

#include <map>

namespace gpuwatch::collector {

std::vector<HostClock> HostClocks(const JobView& job) {
  std::map<std::string, HostClock> by_host;
  for (const RankView& rank : job.ranks) {
    const wire::Hello& h = *rank.hello;
    HostClock& hc = by_host[h.host()];
    const bool first = hc.ranks.empty();
    hc.host = h.host();
    hc.ranks.push_back(h.rank());
    if (h.via_collector().empty()) continue;
    const uint64_t u = h.clock_rtt_ns() / 2;
    if (first || hc.via_collector.empty() || u < hc.uncertainty_ns) {
      hc.offset_ns = h.clock_offset_ns();
      hc.uncertainty_ns = u;
      hc.via_collector = h.via_collector();
    }
  }
  std::vector<HostClock> out;
  for (auto& [host, hc] : by_host) out.push_back(std::move(hc));
  return out;
}

bool AnyForwarded(const std::vector<HostClock>& hosts) {
  for (const HostClock& h : hosts)
    if (!h.via_collector.empty()) return true;
  return false;
}

}  // namespace gpuwatch::collector
