// See call_sites.h.
#include "analyze/call_sites.h"

#include <algorithm>

namespace gpuwatch::collector {

void SiteCounter::OnHostCall(const HostCall& c) {
  if (c.site_id == 0 || (by_id_.size() >= RankFacts::kMaxSites && !by_id_.count(c.site_id))) return;
  Tally& t = by_id_[c.site_id];
  t.ns += c.dur_ns;
  ++t.count;
}

std::vector<SiteStat> SiteCounter::Result(const RankFacts& facts) const {
  std::vector<SiteStat> out;
  for (const auto& [id, t] : by_id_) {
    SiteStat s;
    if (const SiteText* text = facts.Site(id)) {
      s.python = text->python;
      s.python_stack = text->python_stack;
      s.frames = text->frames;
    }
    s.ns = t.ns;
    s.count = t.count;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const SiteStat& a, const SiteStat& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.python + (a.frames.empty() ? "" : a.frames[0]) <
                                            b.python + (b.frames.empty() ? "" : b.frames[0]);
  });
  if (out.size() > kMaxSitesShown) out.resize(kMaxSitesShown);
  return out;
}

}  // namespace gpuwatch::collector
