// A rank whose collector died mid-run: the journal holds what the collector read, the
// rank's spool opens with a Hello, the last batches it had sent (the socket may have
// swallowed them) and everything after. `gpuwatch report` must read the two as the one
// stream they are: cut anywhere, the rebuilt summary is the uncut stream's.
#include <catch2/catch.hpp>
#include <filesystem>

#include "ingest/replay.h"
#include "procs.h"
#include "rank_frames.h"
#include "report/summary.h"

using namespace gwtest;

namespace {

// CUPTI hands its records over in buffers, late: each batch's device records travel `lag`
// batches later, so at a cut the host has run past the last device work the journal holds
// (what a disconnect's flush used to close the device timeline at).
std::vector<wire::Frame> LateDeviceRecords(std::vector<wire::Frame> frames, size_t lag) {
  std::vector<wire::Batch*> batches;
  for (auto& f : frames)
    if (f.has_batch()) batches.push_back(f.mutable_batch());
  for (size_t i = batches.size(); i-- > 0;) {
    const size_t to = std::min(i + lag, batches.size() - 1);
    if (to == i) continue;
    auto* src = batches[i]->mutable_activities();
    for (auto& a : *src) *batches[to]->add_activities() = a;
    src->Clear();
  }
  return frames;
}

}  // namespace

TEST_CASE("collector: a journal cut anywhere and the spool after it rebuild the uncut stream's summary") {
  TempDir tmp;
  const auto frames = LateDeviceRecords(RankFrames(60, 7), 3);
  const std::string whole_dir = tmp.path + "/whole";
  fs::create_directories(whole_dir + "/.gpuwatch");
  WriteFrameFile(whole_dir + "/.gpuwatch/spool-rank-0-4242.frames", frames);
  col::ReplayResult whole_result;
  const json expected = WithoutStorage(RebuiltSummary(whole_dir, "ckpt-job", &whole_result));
  REQUIRE(expected["ranks"][0]["gpu"]["gaps"]["count"].get<int>() > 10);

  int checked = 0;
  for (size_t cut = 2; cut + 1 < frames.size(); cut += 3) {
    for (size_t replayed : {size_t{0}, size_t{4}}) {
      const std::string dir = tmp.path + "/cut";
      fs::remove_all(dir);
      fs::create_directories(dir + "/.gpuwatch");
      // The journal: what the collector read before it died.
      WriteFrameFile(dir + "/.gpuwatch/rank-0-4242.frames", {frames.begin(), frames.begin() + cut});
      // The spool: a Hello, the batches the library had sent last, then the rest.
      std::vector<wire::Frame> spool{frames[0]};
      spool.insert(spool.end(), frames.begin() + (cut > replayed + 1 ? cut - replayed : 1), frames.end());
      WriteFrameFile(dir + "/.gpuwatch/spool-rank-0-4242.frames", spool);
      col::ReplayResult result;
      const json got = WithoutStorage(RebuiltSummary(dir, "ckpt-job", &result));
      INFO("cut after frame " << cut << ", " << replayed << " replayed: " << json(result.notes).dump());
      CHECK(result.notes.empty());
      CHECK(got.dump(1) == expected.dump(1));
      ++checked;
    }
  }
  CHECK(checked > 20);
}
