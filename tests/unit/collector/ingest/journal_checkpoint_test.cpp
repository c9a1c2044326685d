// Journal checkpoints (ingest/journal_store.h, proto/journal.h): the journal of a long rank
// stays under its cap, and what a collector killed at any moment leaves on disk rebuilds
// the summary it would have written; a checkpoint that cannot be read or written costs
// one line, never the frames.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ingest/journal_store.h"
#include "ingest/replay.h"
#include "procs.h"
#include "rank_frames.h"
#include "report/summary.h"

using namespace gwtest;

namespace {

constexpr uint64_t kCap = 16 << 10;

col::JournalOptions Checkpointing(const std::string& dir, double every_s) {
  col::JournalOptions o;
  o.enabled = true;
  o.out_override = dir;
  o.max_bytes = kCap;
  o.checkpoint_s = every_s;
  return o;
}

// What a collector killed now leaves: a copy of the output folder as it is.
std::string Snapshot(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
  return to;
}

std::vector<std::string> JournalFiles(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir + "/.gpuwatch")) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("collector: a checkpointed journal stays under its cap and a crash at any frame loses nothing") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  const auto opt = Checkpointing(out, 1e-9);  // due at every read
  const auto frames = RankFrames(120, 7);
  col::JobTable live(col::JobTiming{});
  wire::FrameScratch scratch;
  auto conn = std::make_unique<col::Connection>(4242, live, col::Clock::now(), &opt);
  uint64_t largest_part = 0;
  int checked = 0;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {  // all but the Goodbye: the collector dies first
    REQUIRE(conn->OnBytes(Bytes(frames[i]), scratch, col::Clock::now()));
    for (const auto& e : fs::directory_iterator(out + "/.gpuwatch"))
      if (e.path().extension() == ".frames") largest_part = std::max<uint64_t>(largest_part, fs::file_size(e.path()));
    if (i % 7 != 3) continue;
    // Killed now: the report rebuilds what the live collector would write now.
    const std::string dead = Snapshot(out, tmp.path + "/dead");
    col::ReplayResult result;
    const json rebuilt = RebuiltSummary(dead, "ckpt-job", &result);
    INFO("after frame " << i << ": " << json(result.notes).dump());
    CHECK(result.notes.empty());
    CHECK(result.checkpoints == 1);
    col::JobTable copy(col::JobTiming{});  // the live rank's figures as they stand
    {
      col::Connection again(4242, copy, col::Clock::now());
      for (size_t k = 0; k <= i; ++k) REQUIRE(again.OnBytes(Bytes(frames[k]), scratch, col::Clock::now()));
    }
    CHECK(WithoutStorage(rebuilt).dump(1) == WithoutStorage(SummaryJson(*copy.Find("ckpt-job"), "t")).dump(1));
    ++checked;
  }
  CHECK(checked > 10);
  CHECK(largest_part <= kCap);
  const auto status = live.Find("ckpt-job")->ranks().begin()->second->storage().journal;
  CHECK(status.checkpoints == frames.size() - 2);  // one per read after the Hello's
  CHECK(status.checkpoint_error.empty());
  CHECK_FALSE(status.capped);
  // One checkpoint and the one part after it: the rest was dropped.
  const auto names = JournalFiles(out);
  REQUIRE(names.size() == 2);
  CHECK(names[0] == "rank-0-4242." + std::to_string(status.checkpoints) + ".frames");
  CHECK(names[1] == "rank-0-4242.checkpoint");
  conn.reset();
}

TEST_CASE("collector: a collector killed while checkpointing leaves the old checkpoint and every frame after it") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  const auto frames = RankFrames(30, 29);
  col::JobTable live(col::JobTiming{});
  wire::FrameScratch scratch;
  const auto opt = Checkpointing(out, 1e-9);
  col::Connection conn(4242, live, col::Clock::now(), &opt);
  for (size_t i = 0; i + 1 < frames.size(); ++i) REQUIRE(conn.OnBytes(Bytes(frames[i]), scratch, col::Clock::now()));
  col::JobTable whole(col::JobTiming{});
  {
    col::Connection again(4242, whole, col::Clock::now());
    for (size_t i = 0; i + 1 < frames.size(); ++i) REQUIRE(again.OnBytes(Bytes(frames[i]), scratch, col::Clock::now()));
  }
  const json expected = WithoutStorage(SummaryJson(*whole.Find("ckpt-job"), "t"));
  const std::string dead = Snapshot(out, tmp.path + "/dead");
  const auto status = live.Find("ckpt-job")->ranks().begin()->second->storage().journal;
  const int part = static_cast<int>(status.checkpoints);

  SECTION("the next part made, the checkpoint not yet renamed") {
    WriteFrameFile(dead + "/.gpuwatch/" + wire::JournalPartFileName(0, 4242, part + 1), {frames[0]});
    { std::ofstream(dead + "/.gpuwatch/rank-0-4242.checkpoint.tmp") << "half a checkpoint"; }
    col::ReplayResult result;
    CHECK(WithoutStorage(RebuiltSummary(dead, "ckpt-job", &result)).dump(1) == expected.dump(1));
    CHECK(result.notes.empty());
  }
  SECTION("the checkpoint renamed, the old part not yet deleted") {
    WriteFrameFile(dead + "/.gpuwatch/" + wire::JournalPartFileName(0, 4242, part - 1), {frames[0], frames[1]});
    col::ReplayResult result;
    CHECK(WithoutStorage(RebuiltSummary(dead, "ckpt-job", &result)).dump(1) == expected.dump(1));
    CHECK(result.notes.empty());
  }
  SECTION("a corrupt checkpoint: one line, and the frames after it are still read") {
    const std::string path = dead + "/.gpuwatch/rank-0-4242.checkpoint";
    std::string bytes = Slurp(path);
    SECTION("a flipped byte") { bytes[bytes.size() / 2] ^= 0x40; }
    SECTION("truncated") { bytes.resize(bytes.size() - 100); }
    SECTION("not one") { bytes = "GPUWCKP1 and then nothing useful"; }
    { std::ofstream(path, std::ios::trunc | std::ios::binary) << bytes; }
    col::ReplayResult result;
    const json rebuilt = RebuiltSummary(dead, "ckpt-job", &result);
    REQUIRE(result.notes.size() == 1);
    CHECK_THAT(result.notes[0], Catch::Contains("rank-0-4242.checkpoint"));
    CHECK_THAT(result.notes[0], Catch::Contains("rebuilt from the frames kept after it only"));
    CHECK(result.checkpoints == 0);
    CHECK(rebuilt["ranks"].size() == 1);
  }
}

TEST_CASE("collector: a checkpoint that cannot be written is said once, and the journal goes on to its cap") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  fs::create_directories(out + "/.gpuwatch/rank-0-4242.checkpoint.tmp");  // where it would be written
  const auto opt = Checkpointing(out, 1e-9);
  const auto frames = RankFrames(80, 29);
  col::JobTable live(col::JobTiming{});
  wire::FrameScratch scratch;
  col::Connection conn(4242, live, col::Clock::now(), &opt);
  std::vector<std::string> notices;
  for (size_t i = 0; i < frames.size(); ++i) {
    REQUIRE(conn.OnBytes(Bytes(frames[i]), scratch, col::Clock::now()));
    for (auto& n : conn.TakeNotices()) notices.push_back(n);
  }
  conn.Close(col::Clock::now());
  REQUIRE(notices.size() == 2);
  CHECK_THAT(notices[0], Catch::Contains("no more checkpoints"));
  CHECK_THAT(notices[1], Catch::Contains("reached its cap"));
  const auto& rank = *live.Find("ckpt-job")->ranks().begin()->second;
  CHECK(rank.storage().journal.capped);
  CHECK(rank.storage().journal.checkpoints == 0);
  CHECK(rank.result().steps_total() == 80);  // the summary still counts everything
  CHECK(fs::file_size(out + "/.gpuwatch/rank-0-4242.frames") <= kCap);
}

TEST_CASE("collector: checkpoint names and options from the environment") {
  int rank = 0, pid = 0;
  CHECK(col::ParseCheckpointFileName("rank-3-77.checkpoint", &rank, &pid));
  CHECK((rank == 3 && pid == 77));
  CHECK_FALSE(col::ParseCheckpointFileName("rank-3-77.checkpoint.tmp", &rank, &pid));
  CHECK_FALSE(col::ParseCheckpointFileName("rank-03-77.checkpoint", &rank, &pid));
  col::JournalOptions o;
  std::string error;
  setenv("GPUWATCH_JOURNAL_CHECKPOINT_S", "2.5", 1);
  setenv("GPUWATCH_JOURNAL_MAX_BYTES", "1048576", 1);
  CHECK(col::JournalOptionsFromEnv(&o, &error));
  CHECK(o.checkpoint_s == 2.5);
  CHECK(o.max_bytes == 1048576);
  setenv("GPUWATCH_JOURNAL_CHECKPOINT_S", "soon", 1);
  CHECK_FALSE(col::JournalOptionsFromEnv(&o, &error));
  CHECK_THAT(error, Catch::Contains("GPUWATCH_JOURNAL_CHECKPOINT_S=soon"));
  CHECK(o.checkpoint_s == 2.5);
  unsetenv("GPUWATCH_JOURNAL_CHECKPOINT_S");
  unsetenv("GPUWATCH_JOURNAL_MAX_BYTES");
}

TEST_CASE("collector: the Hello that opens a journal part continues the connection, it does not start one") {
  // Two parts, the second opening with the Hello again (as after a checkpoint), read as the
  // one connection they were: a reconnect there would release every event held at the cut.
  TempDir tmp;
  fs::create_directories(tmp.path + "/parts/.gpuwatch");
  fs::create_directories(tmp.path + "/whole/.gpuwatch");
  auto frames = RankFrames(40, 11);
  frames.pop_back();  // no Goodbye
  const size_t cut = frames.size() / 2;
  std::vector<wire::Frame> first(frames.begin(), frames.begin() + cut), second{frames[0]};
  second.insert(second.end(), frames.begin() + cut, frames.end());
  WriteFrameFile(tmp.path + "/parts/.gpuwatch/rank-0-4242.3.frames", first);
  WriteFrameFile(tmp.path + "/parts/.gpuwatch/rank-0-4242.4.frames", second);
  WriteFrameFile(tmp.path + "/whole/.gpuwatch/rank-0-4242.frames", frames);
  col::ReplayResult parts_result, whole_result;
  const json parts = RebuiltSummary(tmp.path + "/parts", "ckpt-job", &parts_result);
  CHECK(parts_result.notes.empty());
  CHECK(WithoutStorage(parts).dump(1) == WithoutStorage(RebuiltSummary(tmp.path + "/whole", "ckpt-job", &whole_result)).dump(1));
}
