// See job_view.h.
#include "report/job_view.h"

#include <algorithm>
#include <set>

namespace gpuwatch::collector {

int JobView::distinct_hosts() const {
  std::set<std::string> h;
  for (const RankView& r : ranks) h.insert(r.hello->host());
  return static_cast<int>(h.size());
}

double JobView::wall_s() const {
  double w = 0;
  for (const RankView& r : ranks) w = std::max(w, r.result->WallS());
  return w;
}

}  // namespace gpuwatch::collector
