// Where syncs and blocking copies that blocked long were called from: host time blocked
// per call site (libinject's call sites: native frames and the Python line), the longest
// first.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

inline constexpr size_t kMaxSitesShown = 5;

struct SiteStat {
  std::string python;               // the user's Python frame, "train.py:42 in step", or empty
  std::vector<std::string> python_stack;  // the whole Python stack, innermost first
  std::vector<std::string> frames;  // native, innermost first
  uint64_t ns = 0, count = 0;       // host time blocked there, calls
};

class SiteCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  // The kMaxSitesShown sites that blocked longest, with their text.
  std::vector<SiteStat> Result(const RankFacts& facts) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Tally {
    uint64_t ns = 0, count = 0;
  };
  std::unordered_map<uint32_t, Tally> by_id_;  // bounded as RankFacts' sites
};

}  // namespace gpuwatch::collector
