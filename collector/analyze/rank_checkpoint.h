// A rank's interpretation as a checkpoint: the whole state of its RankModel (the
// interpreter, with the events it still holds, and every analysis), so that a model
// restored from it and fed the frames that followed computes exactly the RankResult of
// the model that was never stopped. The collector journals one per rank at an interval
// and drops the frames before it (ingest/journal_store.h); `gpuwatch report` restores it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "analyze/rank_model.h"

namespace gpuwatch::collector {

// Bumped whenever a field list of checkpoint_access.h changes: a checkpoint of another
// format is refused (the report then rebuilds from the frames it has).
inline constexpr uint32_t kRankCheckpointFormat = 4;

// MessagePack of the state of `m`: [format, state].
std::string EncodeRankModel(const RankModel& m);
// Restores into `m`, a model fresh from its constructor. False with `error` (one line)
// when the bytes are not a checkpoint of this format; `m` is then unusable.
bool DecodeRankModel(std::string_view bytes, RankModel& m, std::string* error);

}  // namespace gpuwatch::collector
