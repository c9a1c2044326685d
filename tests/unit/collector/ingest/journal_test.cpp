// The collector's journal (store/journal_store), the rebuild from journals and spools
// (store/replay), and hang detection (aggregate/hang), without processes or sockets.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "frames_on_disk.h"
#include "procs.h"
#include "report/summary.h"
#include "ingest/journal_store.h"
#include "ingest/replay.h"

using namespace gwtest;

namespace {

col::JournalOptions JournalInto(const std::string& dir, uint64_t max_bytes = 1 << 20) {
  col::JournalOptions o;
  o.enabled = true;
  o.out_override = dir;
  o.max_bytes = max_bytes;
  return o;
}

// Every whole frame of a frame file, raw.
std::vector<std::string> RawFrames(const std::string& path, col::FrameFileInfo* info) {
  std::vector<std::string> raws;
  col::ScanFrameFile(path, [&](const wire::Frame&, std::string_view raw) {
    raws.emplace_back(raw);
  }, info);
  return raws;
}

}  // namespace

TEST_CASE("collector: the journal holds every accepted frame exactly as received") {
  TempDir tmp;
  const auto opt = JournalInto(tmp.path);
  col::JobTable jobs(col::JobTiming{});
  wire::FrameScratch scratch;
  col::Connection conn(1003, jobs, col::Clock::now(), &opt);
  const std::string hello = Bytes(Hello("job-j", 3, 4)), batch = Bytes(BatchFrame(Syncs(5)));
  // Split mid-frame: the journal gets whole frames only.
  const std::string both = hello + batch;
  REQUIRE(conn.OnBytes(both.substr(0, hello.size() + 3), scratch, col::Clock::now()));
  REQUIRE(conn.OnBytes(both.substr(hello.size() + 3), scratch, col::Clock::now()));
  // Garbage after them: dropped, and nothing of it reaches the journal.
  CHECK_FALSE(conn.OnBytes(std::string("\x05\xff\xff\xff\xff\xff", 6), scratch, col::Clock::now()));

  const std::string path = tmp.path + "/.gpuwatch/rank-3-1003.frames";
  col::FrameFileInfo info;
  const auto raws = RawFrames(path, &info);
  CHECK(info.error.empty());
  REQUIRE(raws.size() == 2);
  CHECK(raws[0] == hello);
  CHECK(raws[1] == batch);
  CHECK(info.truncated_tail == 0);
  struct stat st {};
  REQUIRE(stat((tmp.path + "/.gpuwatch").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(conn.rank()->storage().journal.file == ".gpuwatch/rank-3-1003.frames");
}

TEST_CASE("collector: journal names come from integers, never from rank strings") {
  TempDir tmp;
  const auto opt = JournalInto(tmp.path);
  col::JobTable jobs(col::JobTiming{});
  auto hello = Hello("../../escape", 2, 4);
  hello.mutable_hello()->set_host("../../../etc/x");
  hello.mutable_hello()->set_out_dir("/definitely/not/here");
  wire::FrameScratch scratch;
  col::Connection conn(1002, jobs, col::Clock::now(), &opt);
  REQUIRE(conn.OnBytes(Bytes(hello), scratch, col::Clock::now()));
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    found.push_back(fs::relative(e.path(), tmp.path).string());
  std::sort(found.begin(), found.end());
  CHECK(found == std::vector<std::string>{".gpuwatch", ".gpuwatch/rank-2-1002.frames"});
}

TEST_CASE("collector: the journal stops at its cap, marks the file and the summary says so") {
  TempDir tmp;
  auto opt = JournalInto(tmp.path, 400);
  opt.checkpoint_s = 0;  // no checkpoints: nothing moves the journal past its cap
  col::JobTable jobs(col::JobTiming{});
  wire::FrameScratch scratch;
  col::Connection conn(1000, jobs, col::Clock::now(), &opt);
  REQUIRE(conn.OnBytes(Bytes(Hello("job-cap", 0, 1)), scratch, col::Clock::now()));
  for (int i = 0; i < 20; ++i)
    REQUIRE(conn.OnBytes(Bytes(BatchFrame(Syncs(3))), scratch, col::Clock::now()));
  const auto notices = conn.TakeNotices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Catch::Contains("reached its cap of 400 bytes"));
  conn.Close(col::Clock::now());

  col::FrameFileInfo info;
  RawFrames(tmp.path + "/.gpuwatch/rank-0-1000.frames", &info);
  CHECK((info.flags & wire::kJournalCapped) != 0);
  CHECK(info.bytes <= 400);
  const col::Job& job = *jobs.Find("job-cap");
  const json s = SummaryJson(job, "t");
  CHECK(s["ranks"][0]["storage"]["journal"]["capped"] == true);
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 60);  // all counted
  CHECK_THAT(SummaryText(job), Catch::Contains("journal stopped at its cap"));
}

TEST_CASE("collector: a journal continued after a crash loses only its torn last frame") {
  TempDir tmp;
  fs::create_directories(tmp.path + "/.gpuwatch");
  const std::string path = tmp.path + "/.gpuwatch/rank-0-1000.frames";
  const std::string torn = Bytes(BatchFrame(Syncs(4))).substr(0, 9);
  WriteFrameFile(path, {Hello("job-c", 0, 1), BatchFrame(Syncs(2))}, 0, torn);
  std::string error;
  auto w = col::JournalWriter::Open(tmp.path, 0, 1000, 1 << 20, &error);
  REQUIRE(w);
  REQUIRE(w->Add(Bytes(BatchFrame(Syncs(1)))));
  REQUIRE(w->Flush());
  w.reset();
  col::FrameFileInfo info;
  CHECK(RawFrames(path, &info).size() == 3);
  CHECK(info.truncated_tail == 0);
  CHECK(info.error.empty());

  // A file of that name that is not a journal is left alone; another name is used.
  const std::string alien = tmp.path + "/.gpuwatch/rank-1-1001.frames";
  { std::ofstream(alien) << "not a journal"; }
  auto w2 = col::JournalWriter::Open(tmp.path, 1, 1001, 1 << 20, &error);
  REQUIRE(w2);
  CHECK(w2->status().file == ".gpuwatch/rank-1-1001.1.frames");
  CHECK(Slurp(alien) == "not a journal");
}

TEST_CASE("collector: report merges journal then spool, ignores a torn tail with one note") {
  TempDir tmp;
  fs::create_directories(tmp.path + "/.gpuwatch");
  // The collector got the Hello and 3 syncs, then died; the rank spooled the rest.
  WriteFrameFile(tmp.path + "/.gpuwatch/rank-0-1000.frames",
                 {Hello("job-m", 0, 2), BatchFrame(Syncs(3))});
  WriteFrameFile(tmp.path + "/.gpuwatch/spool-rank-0-1000.frames",
                 {Hello("job-m", 0, 2), BatchFrame(Syncs(2, 9000)), GoodbyeFrame()}, 0,
                 Bytes(BatchFrame(Syncs(7))).substr(0, 5));
  // Rank 1 only ever reached its spool, which hit its cap.
  WriteFrameFile(tmp.path + "/.gpuwatch/spool-rank-1-1001.frames",
                 {Hello("job-m", 1, 2), BatchFrame(Syncs(4))}, wire::kJournalCapped);
  { std::ofstream(tmp.path + "/.gpuwatch/evil-../name") << "x"; }

  col::JobTable jobs(col::JobTiming{});
  col::ReplayResult result;
  std::string error;
  REQUIRE(col::ReplayDir(tmp.path, jobs, &result, &error));
  CHECK(result.files == 3);
  const json s = SummaryJson(*jobs.Find("job-m"), "t");
  REQUIRE(s["ranks"].size() == 2);
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 5);
  CHECK(s["ranks"][0]["ended"] == "normal");  // its last connection said Goodbye
  CHECK(s["ranks"][0]["storage"]["rebuilt_from"] ==
        json::array({".gpuwatch/rank-0-1000.frames", ".gpuwatch/spool-rank-0-1000.frames"}));
  CHECK(s["ranks"][0]["storage"]["truncated_tail_bytes"] == 5);
  CHECK(s["ranks"][1]["ended"] == "abnormal");
  CHECK(s["ranks"][1]["storage"]["spool_capped"] == true);
  int torn_notes = 0;
  for (const auto& n : result.notes) torn_notes += n.find("incomplete last frame") != std::string::npos;
  CHECK(torn_notes == 1);
}

TEST_CASE("collector: a summary rebuilt from the journal equals the live one") {
  TempDir tmp;
  const auto opt = JournalInto(tmp.path);
  col::JobTable live(col::JobTiming{});
  {
    wire::FrameScratch scratch;
    col::Connection r0(1000, live, col::Clock::now(), &opt), r1(1001, live, col::Clock::now(), &opt);
    auto send = [&](col::Connection& c, const wire::Frame& f) {
      REQUIRE(c.OnBytes(Bytes(f), scratch, col::Clock::now()));
    };
    send(r0, Hello("job-eq", 0, 2));
    send(r1, Hello("job-eq", 1, 2));
    wire::Batch b = Syncs(3);
    Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 1 << 20, 5000, 300, wire::FLAG_PAGEABLE);
    Comm(&b, 9, 2, 0);
    Coll(&b, wire::NCCL_ALL_REDUCE, 9, 1 << 24, 2'000'000);
    Drop(&b, "ring_full", 12);
    send(r0, BatchFrame(b));
    send(r1, BatchFrame(Syncs(6)));
    send(r0, GoodbyeFrame());
    r0.Close(col::Clock::now());
    r1.Close(col::Clock::now());  // no Goodbye: abnormal, in both
  }
  col::JobTable rebuilt(col::JobTiming{});
  col::ReplayResult result;
  std::string error;
  REQUIRE(col::ReplayDir(tmp.path, rebuilt, &result, &error));
  CHECK(result.notes.empty());
  const json a = WithoutStorage(SummaryJson(*live.Find("job-eq"), "t"));
  const json b = WithoutStorage(SummaryJson(*rebuilt.Find("job-eq"), "t"));
  CHECK(a.dump(1) == b.dump(1));
}

TEST_CASE("collector: file names accepted by report are only the canonical ones") {
  bool spool;
  int rank, pid, part;
  CHECK(col::ParseFrameFileName("rank-3-77.frames", &spool, &rank, &pid, &part));
  CHECK((!spool && rank == 3 && pid == 77 && part == 0));
  CHECK(col::ParseFrameFileName("spool-rank-0-5.frames", &spool, &rank, &pid, &part));
  CHECK(spool);
  CHECK(col::ParseFrameFileName("rank-1-9.2.frames", &spool, &rank, &pid, &part));
  CHECK(part == 2);
  for (const char* bad : {"rank-1-9.frames.tmp", "rank-01-9.frames", "rank-1-9", "x.frames",
                          "rank- 1-9.frames", "spool-rank-1-9.2.frames", "rank-1-9.0.frames"})
    CHECK_FALSE(col::ParseFrameFileName(bad, &spool, &rank, &pid, &part));
}

TEST_CASE("collector: hang detection says which rank is where, once per call") {
  col::JobTiming timing;
  timing.hang_s = 1.0;
  col::JobTable jobs(timing);
  FakeRank r0(jobs, Hello("job-h", 0, 3)), r1(jobs, Hello("job-h", 1, 3)),
      r2(jobs, Hello("job-h", 2, 3));
  const uint64_t s = 1'000'000'000;
  // Rank 0 waits in all-reduce seq 5 for 2 s; rank 1 finished seq 5 and waits in seq 6
  // for 0.5 s (not yet a hang); rank 2 is in a long kernel launch (not a wait call).
  auto hb0 = Heartbeat(100 * s, wire::NCCL_ALL_REDUCE, 2 * s, 7, 5);
  AddProgress(hb0, 7, 0xfeed, 4);
  auto hb1 = Heartbeat(50 * s, wire::NCCL_ALL_REDUCE, s / 2, 3, 6);
  AddProgress(hb1, 3, 0xfeed, 5);
  auto hb2 = Heartbeat(70 * s, wire::CUDA_LAUNCH_KERNEL, 10 * s);
  REQUIRE(r0.Send(hb0));
  REQUIRE(r1.Send(hb1));
  REQUIRE(r2.Send(hb2));
  const auto lines = jobs.CheckHangs(col::Clock::now());
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("rank 0 (host node1, pid 1000, thread 77) has been "
                                       "inside ncclAllReduce (seq 5) for 2."));
  CHECK_THAT(lines[0], Catch::Contains("[rank 1: done seq 5, in ncclAllReduce seq 6"));
  CHECK_THAT(lines[0], Catch::Contains("[rank 2: no collective done, not waiting]"));
  CHECK(jobs.CheckHangs(col::Clock::now()).empty());  // reported once

  // A sync counts too.
  REQUIRE(r2.Send(Heartbeat(80 * s, wire::CUDA_DEVICE_SYNCHRONIZE, 3 * s)));
  CHECK(jobs.CheckHangs(col::Clock::now()).size() == 1);

  const json j = SummaryJson(*jobs.Find("job-h"), "t");
  REQUIRE(j["hangs"].size() == 2);
  CHECK(j["hangs"][0]["api"] == "ncclAllReduce");
  CHECK(j["hangs"][0]["seq"] == 5);
  CHECK(j["hangs"][0]["comm_hash"] == "0x000000000000feed");
  CHECK(j["hangs"][0]["ranks"][1]["last_seq"] == 5);
  CHECK(j["hangs"][0]["ranks"][1]["inside_seq"] == 6);
  CHECK(j["hangs"][0]["ranks"][0]["last_seq"] == 4);
  CHECK(j["hangs"][1]["api"] == "cudaDeviceSynchronize");
  const std::string text = SummaryText(*jobs.Find("job-h"));
  CHECK_THAT(text, Catch::Contains("2 hangs"));
  CHECK_THAT(text, Catch::Contains("rank 0 in ncclAllReduce seq 5"));
}

TEST_CASE("collector: a heartbeat's lists are clipped") {
  col::JobTable jobs(col::JobTiming{});
  FakeRank r(jobs, Hello("job-clip", 0, 1));
  wire::Frame hb = Heartbeat(1000, wire::API_UNSPECIFIED, 0);
  for (int i = 0; i < 1000; ++i) {
    hb.mutable_heartbeat()->add_inside()->set_tid(i);
    AddProgress(hb, i, i, i);
  }
  REQUIRE(r.Send(hb));
  const auto& rank = *jobs.Find("job-clip")->ranks().begin()->second;
  CHECK(rank.heartbeat().inside_size() == 64);
  CHECK(rank.heartbeat().comms_size() == 256);
}
