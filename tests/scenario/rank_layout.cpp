// See rank_layout.h.
#include "rank_layout.h"

namespace gpuwatch::scenario {

const char* group_name(CommGroup g) {
  switch (g) {
    case CommGroup::World: return "world";
    case CommGroup::Dp: return "dp";
    case CommGroup::Tp: return "tp";
    case CommGroup::Pp: return "pp";
  }
  return "?";
}

RankLayout::RankLayout(int world, GroupSizes sizes) : world_(world), sizes_(sizes), dp_(world / (sizes.tp * sizes.pp)) {}

int RankLayout::size(CommGroup g) const {
  switch (g) {
    case CommGroup::World: return world_;
    case CommGroup::Dp: return dp_;
    case CommGroup::Tp: return sizes_.tp;
    case CommGroup::Pp: return sizes_.pp;
  }
  return 1;
}

// rank = tp + TP * (dp + DP * pp)
RankCoords RankLayout::coords(int rank) const {
  RankCoords c;
  c.tp = rank % sizes_.tp;
  c.dp = (rank / sizes_.tp) % dp_;
  c.pp = rank / (sizes_.tp * dp_);
  return c;
}

int RankLayout::rank_of(RankCoords c) const { return c.tp + sizes_.tp * (c.dp + dp_ * c.pp); }

int RankLayout::index(CommGroup g, int rank) const {
  const RankCoords c = coords(rank);
  switch (g) {
    case CommGroup::World: return rank;
    case CommGroup::Dp: return c.dp;
    case CommGroup::Tp: return c.tp;
    case CommGroup::Pp: return c.pp;
  }
  return 0;
}

// The coordinates that stay fixed along the group, flattened.
int RankLayout::color(CommGroup g, int rank) const {
  const RankCoords c = coords(rank);
  switch (g) {
    case CommGroup::World: return 0;
    case CommGroup::Dp: return c.tp + sizes_.tp * c.pp;
    case CommGroup::Tp: return c.dp + dp_ * c.pp;
    case CommGroup::Pp: return c.tp + sizes_.tp * c.dp;
  }
  return 0;
}

std::vector<int> RankLayout::members(CommGroup g, int rank) const {
  std::vector<int> out;
  const RankCoords c = coords(rank);
  for (int i = 0; i < size(g); ++i) {
    RankCoords m = c;
    switch (g) {
      case CommGroup::World: out.push_back(i); continue;
      case CommGroup::Dp: m.dp = i; break;
      case CommGroup::Tp: m.tp = i; break;
      case CommGroup::Pp: m.pp = i; break;
    }
    out.push_back(rank_of(m));
  }
  return out;
}

}  // namespace gpuwatch::scenario
