// The real gpuwatch-collector binary over its Unix socket, with fake ranks written with
// AppendFrame. Every wait polls for a file, a closed socket or an exit, with a deadline.
#include "procs.h"

using namespace gwtest;


TEST_CASE("collector: two ranks of one job give one summary with both ranks") {
  TempDir tmp;
  const std::string out = tmp.path + "/rank-out";
  Collector col(tmp, {"--linger-ms", "100"});
  Client a(col.sock), b(col.sock);
  auto h0 = Hello("job-two", 0, 2);
  h0.mutable_hello()->set_out_dir(out);  // no --out: the first rank's out_dir is used
  a.Send(h0);
  b.Send(Hello("job-two", 1, 2));
  a.SendBatch(SomeWork(3));
  b.SendBatch(SomeWork(5));
  a.Goodbye();
  b.Goodbye();
  a.Close();
  b.Close();

  const json s = ReadSummary(out);
  CHECK(s["job_id"] == "job-two");
  REQUIRE(s["ranks"].size() == 2);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 3);
  CHECK(s["ranks"][1]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 5);
  CHECK(s["ranks"][1]["ended"] == "normal");
  CHECK(s["job"]["memcpy"]["h2d"]["bytes"] == 8192);
  // summary.txt is renamed into place after summary.json (each written and synced): wait.
  CHECK(PollUntil([&] { return fs::exists(out + "/summary.txt"); }, 5000));
  CHECK(col.Stop() == 0);
  CHECK_THAT(col.Stdout(), Catch::Contains("gpuwatch summary: job job-two"));
}

TEST_CASE("collector: bad clients are dropped, a good client's data stays intact") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--linger-ms", "50", "--hello-timeout-ms", "300", "--out", out});
  Client good(col.sock);
  good.Send(Hello("job-good", 0, 1));
  good.SendBatch(SomeWork(2));

  Client garbage(col.sock);
  garbage.SendRaw(std::string("\x05\xff\xff\xff\xff\xff garbage follows", 23));
  Client oversized(col.sock);
  oversized.SendRaw(std::string("\x80\x80\x80\x80\x01", 5));  // 256 MiB
  Client old_version(col.sock);
  old_version.Send(Hello("job-good", 7, 1, /*version=*/2));
  Client silent(col.sock);

  CHECK(garbage.WaitDropped());
  CHECK(oversized.WaitDropped());
  CHECK(old_version.WaitDropped());
  CHECK(silent.WaitDropped());

  good.SendBatch(SomeWork(1));
  good.Goodbye();
  good.Close();

  const json s = ReadSummary(out);
  REQUIRE(s["ranks"].size() == 1);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][0]["ended"] == "normal");
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 3);
  CHECK(s["ranks"][0]["memcpy"]["h2d"]["count"] == 2);
  CHECK(col.Stop() == 0);

  const std::string log = col.Stderr();
  CHECK_THAT(log, Catch::Contains("does not decode"));
  CHECK_THAT(log, Catch::Contains("exceeds the limit"));
  CHECK_THAT(log, Catch::Contains("rank 7 (pid"));
  CHECK_THAT(log, Catch::Contains("speaks protocol 2, this collector speaks 1"));
  CHECK_THAT(log, Catch::Contains("no Hello within 300 ms"));
  CHECK_THAT(log, Catch::Contains("[gpuwatch]"));
}

TEST_CASE("collector: --autostart exits after the job, a killed rank is abnormal") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--autostart", "--linger-ms", "100", "--out", out});
  {
    Client a(col.sock), b(col.sock);
    a.Send(Hello("job-auto", 0, 2));
    b.Send(Hello("job-auto", 1, 2));
    a.SendBatch(SomeWork(1));
    b.SendBatch(SomeWork(1));
    a.Goodbye();
    // b closes without a Goodbye: a rank that was killed.
  }
  CHECK(col.WaitExit() == 0);
  const json s = ReadSummary(out);
  CHECK(s["ranks"][0]["ended"] == "normal");
  CHECK(s["ranks"][1]["ended"] == "abnormal");
  CHECK_THAT(col.Stdout(), Catch::Contains("job: 2 ranks (1 abnormal)"));
  CHECK_FALSE(fs::exists(col.sock));  // it cleans up its socket
}

TEST_CASE("collector: --autostart with nobody connecting exits") {
  TempDir tmp;
  Collector col(tmp, {"--autostart", "--idle-exit-ms", "200"});
  CHECK(col.WaitExit() == 0);
}

TEST_CASE("collector: a second collector on a live socket refuses to start") {
  TempDir tmp;
  Collector first(tmp, {});
  { Client probe(first.sock); }  // it is up
  TempDir other;
  Collector second(other, {}, first.sock);
  CHECK(second.WaitExit() == 1);
  CHECK_THAT(second.Stderr(), Catch::Contains("already listening on " + first.sock));
  CHECK(first.Stop() == 0);
}

TEST_CASE("collector: an unwritable output dir is one error, the summary is still printed") {
  TempDir tmp;
  std::ofstream(tmp.path + "/file") << "x";
  Collector col(tmp, {"--autostart", "--linger-ms", "50", "--out", tmp.path + "/file/out"});
  {
    Client a(col.sock);
    a.Send(Hello("job-nowrite", 0, 1));
    a.SendBatch(SomeWork(4));
    a.Goodbye();
  }
  CHECK(col.WaitExit() == 2);
  CHECK_THAT(col.Stderr(), Catch::Contains("summary not saved"));
  CHECK_THAT(col.Stdout(), Catch::Contains("gpuwatch summary: job job-nowrite"));
}

TEST_CASE("collector: SIGTERM writes the summary of a job still running") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--out", out});
  Client a(col.sock);
  a.Send(Hello("job-term", 0, 1));
  a.SendBatch(SomeWork(6));
  // What was sent before the signal is in the collector's socket buffers (or backlog):
  // it takes that in before writing the summary.
  CHECK(col.Stop() == 0);
  const json s = ReadSummary(out);
  CHECK(s["ranks"][0]["ended"] == "abnormal");
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 6);
}
