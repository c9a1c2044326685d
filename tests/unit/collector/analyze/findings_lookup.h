// What the findings' tests share: a finding looked up by id, and the job every straggler test
// starts from.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/finding.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector::test {

// The finding with that id, or null.
inline const Finding* Find(const std::vector<Finding>& v, const std::string& id) {
  for (const auto& f : v)
    if (f.id == id) return &f;
  return nullptr;
}

// Three ranks on host node1, 20 steps of 30 ms each; rank 2 reaches every all-reduce of
// communicator 42 10 ms late (its GPU time 1 ms, the others' 11 ms): ranks 0 and 1 wait 0.2 s
// for it in all. Their own findings are not computed yet.
inline std::vector<RankResult> LateRank2Job() {
  constexpr uint64_t kMs = 1'000'000;
  std::vector<RankResult> ranks(3);
  for (int r = 0; r < 3; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node1";
    for (uint64_t s = 0; s < 20; ++s) {
      StepRec st;
      st.start = s * 30 * kMs;
      st.end = st.start + 30 * kMs;
      ranks[r].steps.steps.push_back(st);
      const uint64_t late = r == 2 ? 10 * kMs : 0;
      ranks[r].collectives.sample.push_back({42, s, st.start + 5 * kMs + late, (r == 2 ? 1 : 11) * kMs});
    }
    ranks[r].found.total = 20;
  }
  return ranks;
}

}  // namespace gpuwatch::collector::test
