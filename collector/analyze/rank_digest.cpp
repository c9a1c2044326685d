// See rank_digest.h. Every struct is a MessagePack array of its fields in the order listed
// in digest_fields.h (no names: a digest of a rank with 8 192 steps stays a few hundred kB); the same
// list writes and reads it. The size checks at the end fail the build when a struct gains
// a field: add it to its list (and bump kRankDigestFormat), then update the size.
#include "analyze/rank_digest.h"

#include <nlohmann/json.hpp>

#include "analyze/digest_fields.h"
#include "common/time_shift.h"

namespace gpuwatch::collector {

using nlohmann::json;

// A field added to one of these structs changes its size: carry it in digest_fields.h (and bump
// kRankDigestFormat), then write the new size here. Sizes of x86-64 with libstdc++, the
// platform the project builds on.
#if defined(__x86_64__) && defined(__GLIBCXX__)
// RankResult holds the others by value: its size covers them; these sit in containers.
// (RankResult::step_graphs is left out on purpose: the graphs stay in the process that built
// them; rank_result.h.)
static_assert(sizeof(RankResult) == 51568, "RankResult changed: carry the new field in the digest");
static_assert(sizeof(StepRec) == 168 && sizeof(CollCall) == 40 && sizeof(StepMark) == 24,
              "a step or collective record changed: carry the new field in the digest");
static_assert(sizeof(SiteStat) == 96 && sizeof(HostFrame) == 80 && sizeof(Finding) == 272,
              "a call site, host frame or finding changed: carry the new field in the digest");
static_assert(sizeof(GraphFigures::Graph) == 32 && sizeof(GpuFigures::KernelStat) == 24 &&
                  sizeof(ApiCallFigures::Api) == 40 && sizeof(DeviceStateFigures::Other) == 32 &&
                  sizeof(StreamFigures::Stream) == 48,
              "a per-graph, per-kernel, per-API or per-process figure changed: carry it in the digest");
static_assert(sizeof(P2pLink) == 88 && sizeof(CommFigures) == 608 && sizeof(SmFillFigures::Shape) == 88 &&
                  sizeof(OverlapTally) == 24,
              "a send/recv link, communicator, kernel shape or overlap tally changed: carry it in the digest");
#endif

std::string EncodeRankResult(const RankResult& r) {
  const std::vector<uint8_t> bytes = json::to_msgpack(json(r));
  return std::string(bytes.begin(), bytes.end());
}

bool DecodeRankResult(const std::string& bytes, RankResult* r, std::string* error) {
  try {
    const json j = json::from_msgpack(bytes);
    *r = j.get<RankResult>();
    return true;
  } catch (const json::exception& e) {
    *error = std::string("not a rank digest of format ") + std::to_string(kRankDigestFormat) + ": " + e.what();
  } catch (const std::exception& e) {
    *error = std::string("bad rank digest: ") + e.what();
  }
  return false;
}

void ShiftRankResult(RankResult& r, int64_t d) {
  if (d == 0) return;
  constexpr auto shift = &ShiftNs;  // as the frames' times: 0 stays "not set"
  r.host_first_ns = shift(r.host_first_ns, d);
  r.host_last_ns = shift(r.host_last_ns, d);
  r.gpu.first_ns = shift(r.gpu.first_ns, d);
  r.gpu.last_ns = shift(r.gpu.last_ns, d);
  r.gpu.coverage.ended_ns = shift(r.gpu.coverage.ended_ns, d);
  DigestAccess::Shift(r.gpu.series, d, shift);
  for (CollCall& c : r.collectives.sample) c.t_ns = shift(c.t_ns, d);
  for (StepMark& m : r.found.inferred) m.start_ns = shift(m.start_ns, d), m.end_ns = shift(m.end_ns, d);
  for (StepRec& s : r.steps.steps) s.start = shift(s.start, d), s.end = shift(s.end, d), s.done = shift(s.done, d);
  r.steps.charged_until = shift(r.steps.charged_until, d);
  r.memory.peak_t_ns = shift(r.memory.peak_t_ns, d);
  DigestAccess::Shift(r.memory.series, d, shift);
  r.device.first_ns = shift(r.device.first_ns, d);
  r.device.last_ns = shift(r.device.last_ns, d);
  for (auto& [t, v] : r.device.util_series) t = shift(t, d);
  for (auto& [t, v] : r.device.clock_series) t = shift(t, d);
}

}  // namespace gpuwatch::collector
