// See rank_checkpoint.h; the field lists are in interpret_state.cpp and analyze_state.cpp.
#include "analyze/rank_checkpoint.h"

#include "analyze/checkpoint_access.h"

namespace gpuwatch::collector {

std::string EncodeRankModel(const RankModel& m) {
  StateOut out;
  out.Array(2);
  out.Leaf(kRankCheckpointFormat);
  CheckpointAccess::Save(out, m);
  return out.Take();
}

bool DecodeRankModel(std::string_view bytes, RankModel& m, std::string* error) {
  try {
    const json j = json::from_msgpack(bytes.begin(), bytes.end());
    const uint32_t format = j.at(0).get<uint32_t>();
    if (format != kRankCheckpointFormat) {
      *error = "a rank checkpoint of format " + std::to_string(format) + ", this collector reads " +
               std::to_string(kRankCheckpointFormat);
      return false;
    }
    CheckpointAccess::Load(j.at(1), m);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("not a rank checkpoint of format ") + std::to_string(kRankCheckpointFormat) + ": " + e.what();
  }
  return false;
}

}  // namespace gpuwatch::collector
