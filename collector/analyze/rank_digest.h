// A rank's figures on the wire (issue #21): a host collector computes each of its ranks'
// RankResult and sends it upstream as a RankDigest; the root decodes it and merges it with
// the others (MergeRanks) exactly as if it had interpreted the rank itself. The codec is
// one list of fields per struct (rank_digest.cpp), used both ways, so a figure has one
// definition; a field added to RankResult (or a struct inside it) but not to that list
// fails the build (a size check there) and the round-trip test.
#pragma once
#include <cstdint>
#include <string>

#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// Bumped whenever the field lists change: a root refuses digests of another format.
inline constexpr uint32_t kRankDigestFormat = 18;

// MessagePack of every field of `r` (RankDigest.result).
std::string EncodeRankResult(const RankResult& r);
// The inverse; false with `error` when the bytes are not a digest of this format.
bool DecodeRankResult(const std::string& bytes, RankResult* r, std::string* error);

// Moves every absolute time of `r` (its host's CLOCK_MONOTONIC) by `delta` ns, as
// ShiftFrame does to a rank's frames: onto the root's clock.
void ShiftRankResult(RankResult& r, int64_t delta);

}  // namespace gpuwatch::collector
