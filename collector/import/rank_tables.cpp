// See rank_tables.h.
#include "import/rank_tables.h"

namespace gpuwatch::collector {

uint32_t RankTables::Name(const std::string& n) {
  auto [it, added] = name_ids_.emplace(n, static_cast<uint32_t>(names_.size() + 1));
  if (added) names_.push_back(n);
  return it->second;
}

uint32_t RankTables::Comm(const TraceComm& c) {
  for (size_t i = 0; i < comms_.size(); ++i)
    if (comms_[i].name == c.name && comms_[i].ranks == c.ranks) return static_cast<uint32_t>(i);
  comms_.push_back(c);
  return static_cast<uint32_t>(comms_.size() - 1);
}

}  // namespace gpuwatch::collector
