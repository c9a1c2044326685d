// See host_spans.h.
#include "common/host_spans.h"

#include <algorithm>
#include <tuple>

namespace gpuwatch::collector {

std::vector<HostSpan> TopLevelHostSpans(std::vector<HostSpan> spans) {
  // By thread, then start, the longer first on a tie (the parent before the child it starts with).
  std::sort(spans.begin(), spans.end(), [](const HostSpan& a, const HostSpan& b) {
    return std::tie(a.tid, a.start_ns, b.end_ns) < std::tie(b.tid, b.start_ns, a.end_ns);
  });
  std::vector<HostSpan> top;
  for (const HostSpan& s : spans) {
    if (!top.empty() && top.back().tid == s.tid && s.start_ns < top.back().end_ns) {
      // Inside the current top-level span; one that outlasts it (an operator closed after
      // its parent, by a clock tick) extends it.
      top.back().end_ns = std::max(top.back().end_ns, s.end_ns);
      continue;
    }
    top.push_back(s);
  }
  return top;
}

}  // namespace gpuwatch::collector
