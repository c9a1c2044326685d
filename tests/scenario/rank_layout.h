// Where a rank sits in a TP x PP x DP job, as Megatron-LM lays ranks out (its default order
// "tp-cp-ep-dp-pp", innermost first): tensor-parallel groups are runs of consecutive ranks,
// data-parallel groups stride over them inside one pipeline stage, and the pipeline stage is
// outermost. 16 ranks, tp 2, pp 4 (dp 2): TP [0,1] [2,3] ...; DP [0,2] [1,3] [4,6] ...;
// PP [0,4,8,12] [1,5,9,13] ...
//
// Plain C++ (no CUDA): the player, the truth checks and the unit tests share it.
#pragma once

#include <vector>

namespace gpuwatch::scenario {

// Which communicator an op runs on (the scenario's "group" key; "pp" for send/recv).
enum class CommGroup { World, Dp, Tp, Pp };

const char* group_name(CommGroup g);

struct GroupSizes {
  int tp = 1, pp = 1;
};

struct RankCoords {
  int tp = 0;  // index inside its tensor-parallel group
  int dp = 0;  // index inside its data-parallel group
  int pp = 0;  // pipeline stage
};

class RankLayout {
 public:
  // `world` must be a multiple of tp x pp (parse_scenario checks it).
  RankLayout(int world, GroupSizes sizes);

  int world() const { return world_; }
  int size(CommGroup g) const;
  RankCoords coords(int rank) const;
  int rank_of(RankCoords c) const;
  // The world ranks of `rank`'s group of kind `g`, in the order of their index in it.
  std::vector<int> members(CommGroup g, int rank) const;
  // Which group of kind `g` the rank is in (0 .. world/size-1): the color of ncclCommSplit.
  int color(CommGroup g, int rank) const;
  // The rank's index inside its group of kind `g`: the key of ncclCommSplit.
  int index(CommGroup g, int rank) const;

 private:
  int world_;
  GroupSizes sizes_;
  int dp_;
};

}  // namespace gpuwatch::scenario
