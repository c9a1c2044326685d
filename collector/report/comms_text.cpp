// See comms_text.h.
#include "report/comms_text.h"

#include <algorithm>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {

constexpr size_t kRowsShown = 16;

std::string MembersText(const std::vector<int>& m) {
  std::string s = "[";
  for (size_t i = 0; i < m.size(); ++i) {
    if (s.size() > 14) return s + ",...]";
    if (i) s += ',';
    s += m[i] < 0 ? std::string("?") : std::to_string(m[i]);
  }
  return s + "]";
}


}  // namespace

// Per rank: the members' mean (the sums over ranks outgrow the job's wall time).
void AppendCommsText(const JobResult& j, std::string& out) {
  if (j.by_comm.empty()) return;
  out += Printf("%-22s %-7s %6s %9s %9s %9s %10s\n", "communicators", "kind", "calls", "GPU time", "waiting", "exposed",
                "overlapped");
  out += "  (per rank: the mean over its members; waiting: for the last member to arrive)\n";
  size_t shown = 0;
  for (const JobComm& c : j.by_comm) {
    if (++shown > kRowsShown) {
      out += Printf("  ... %zu more\n", j.by_comm.size() - kRowsShown);
      break;
    }
    const CollectiveFigures::Op t = c.figures.Total();
    const bool timeline = c.figures.kernels > 0;
    const uint64_t n = std::max<uint64_t>(c.ranks_reporting, 1);
    uint64_t wait = 0;
    for (uint64_t w : c.wait_ns) wait += w;
    out += Printf("  %-20s %-7s %6llu %9s %9s %9s %10s\n", MembersText(c.members).c_str(), c.kind.c_str(),
                  static_cast<unsigned long long>(t.count / n), FmtDurationNs(t.timed.ns / n).c_str(),
                  FmtDurationNs(wait / n).c_str(), timeline ? FmtDurationNs(c.figures.ExposedNs() / n).c_str() : "-",
                  timeline ? FmtDurationNs(c.figures.overlapped_ns / n).c_str() : "-");
  }
}

void AppendOverlapText(const RankResult& r, std::string& out) {
  const OverlapTally& t = r.overlap.total;
  if (!t.kernels) return;
  out += Printf("  comm overlap: NCCL kernels %s, overlapped %s (%.0f%%), exposed %s\n", FmtDurationNs(t.nccl_ns).c_str(),
                FmtDurationNs(t.overlapped_ns).c_str(), 100.0 * static_cast<double>(t.overlapped_ns) / static_cast<double>(t.nccl_ns),
                FmtDurationNs(t.ExposedNs()).c_str());
}

}  // namespace gpuwatch::collector
