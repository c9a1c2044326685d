// summary.txt against a golden file, and putting summaries on disk.
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "common/format.h"
#include "report/summary.h"
#include "report/writer.h"

using namespace gwtest;
namespace fs = std::filesystem;

namespace {

// A fixed two-rank job touching every section: rank 1 is killed (no Goodbye).
void FeedGoldenJob(col::JobTable& jobs) {
  const uint64_t ms = 1000000;
  FakeRank r0(jobs, Hello("golden-job", 0, 2));
  FakeRank r1(jobs, Hello("golden-job", 1, 2));
  for (int rank = 0; rank < 2; ++rank) {
    FakeRank& r = rank == 0 ? r0 : r1;
    wire::Batch b;
    Comm(&b, 1, 2, rank);
    auto* k = b.add_kernel_names();
    k->set_id(1);
    k->set_name("_Z14vector_add_f32PKfS0_Pfi");
    k = b.add_kernel_names();
    k->set_id(2);
    k->set_name(  // demangles to 205 characters: clipped in the text
        "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalINS1_11threadblock"
        "12MmaPipelinedIfEEEEEEvNT_6ParamsE");
    k = b.add_kernel_names();
    k->set_id(3);
    k->set_name("_Z10bad\x1bnameXX");  // not a valid mangling, with an escape char
    Add(&b, wire::CUDA_LAUNCH_KERNEL, 3 * ms, 1000)->set_name_id(3);
    for (int i = 0; i < 40 + rank; ++i) Add(&b, wire::CUDA_LAUNCH_KERNEL, 1 * ms + i, 2000)->set_name_id(1);
    for (int i = 0; i < 7; ++i) Add(&b, wire::CUDA_LAUNCH_KERNEL, 2 * ms + i, 3000)->set_name_id(2);
    Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 64 << 20, 3 * ms, 12 * ms,
         wire::FLAG_PAGEABLE | wire::FLAG_BLOCKED_HOST);
    Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_H2D, 256 << 20, 20 * ms, 30 * ms, 0);
    Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_D2H, 4, 60 * ms, ms / 20,
         wire::FLAG_PAGEABLE | wire::FLAG_BLOCKED_HOST);
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 70 * ms, 250 * ms);
    Add(&b, wire::CUDA_EVENT_SYNCHRONIZE, 400 * ms, ms / 2);
    for (int i = 0; i < 10; ++i) Coll(&b, wire::NCCL_ALL_REDUCE, 1, 100 << 20, 9 * ms, 500 * ms);
    Coll(&b, wire::NCCL_ALL_GATHER, 1, 8 << 20, 2 * ms, 900 * ms);
    Coll(&b, wire::NCCL_BROADCAST, 1, 1 << 20, 0, 950 * ms, wire::FLAG_NO_GPU_TIME);
    if (rank == 1) Drop(&b, "ring_full", 123);
    REQUIRE(r.SendBatch(b));
  }
  r0.Goodbye();
  r0.Close();
  r1.Close();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("collector: summary.txt matches the golden file") {
  col::JobTable jobs(col::JobTiming{});
  FeedGoldenJob(jobs);
  const std::string text = SummaryText(*jobs.Find("golden-job"));
  const std::string golden = std::string(GW_GOLDEN_DIR) + "/summary_two_ranks.txt";
  if (std::getenv("GPUWATCH_UPDATE_GOLDEN")) {
    std::ofstream(golden) << text;
  }
  CHECK(text == ReadFile(golden));

  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}

TEST_CASE("collector: the JSON of the golden job has every public key") {
  col::JobTable jobs(col::JobTiming{});
  FeedGoldenJob(jobs);
  const auto s = SummaryJson(*jobs.Find("golden-job"), "2000-01-01T00:00:00Z");
  for (const char* key : {"schema", "job_id", "generated_at", "ranks", "job"})
    CHECK(s.contains(key));
  for (const auto& r : s["ranks"])
    for (const char* key : {"rank", "world_size", "local_rank", "host", "pid", "device",
                            "rank_source", "ended", "wall_s", "sync", "memcpy", "collectives",
                            "kernels", "dropped", "dropped_total"})
      CHECK(r.contains(key));
  CHECK(s["ranks"][1]["collectives"]["broadcast"]["no_gpu_time_count"] == 1);
  CHECK(s["ranks"][0]["kernels"]["top_launched"][0]["name"] ==
        "vector_add_f32(float const*, float const*, float*, int)");
}

TEST_CASE("collector: output directory choice") {
  CHECK(col::ChooseOutDir("/o", "/rank") == "/o");
  CHECK(col::ChooseOutDir("", "/rank") == "/rank");
  CHECK(col::ChooseOutDir("", "relative") == "./gpuwatch-out");
  CHECK(col::ChooseOutDir("", "") == "./gpuwatch-out");
}

TEST_CASE("collector: summaries are written atomically, unwritable dirs are reported") {
  char tmpl[] = "/tmp/gwcol-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  std::string err;
  REQUIRE(col::WriteSummaryFiles(dir + "/a/b", {"{}\n", "text\n", "<p>\n", ""}, &err));
  CHECK(ReadFile(dir + "/a/b/summary.json") == "{}\n");
  CHECK(ReadFile(dir + "/a/b/summary.txt") == "text\n");
  CHECK(ReadFile(dir + "/a/b/report.html") == "<p>\n");
  CHECK_FALSE(fs::exists(dir + "/a/b/summary.json.tmp"));
  CHECK_FALSE(fs::exists(dir + "/a/b/report.html.tmp"));

  // A path below a regular file cannot be created, whoever we are (root included).
  std::ofstream(dir + "/file") << "x";
  CHECK_FALSE(col::WriteSummaryFiles(dir + "/file/out", {"{}", "t", "h", ""}, &err));
  CHECK_THAT(err, Catch::Contains(dir + "/file"));

  // A write that fails half way (as on a full disk): a file-size limit makes write()
  // fail with EFBIG; the error names the file and nothing half-written is left behind.
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 10;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  const bool ok = col::WriteSummaryFiles(dir + "/full", {std::string(100, 'x'), "t", "h", ""}, &err);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK_FALSE(ok);
  CHECK_THAT(err, Catch::Contains("summary.json.tmp"));
  CHECK_FALSE(fs::exists(dir + "/full/summary.json.tmp"));
  CHECK_FALSE(fs::exists(dir + "/full/summary.json"));
  fs::remove_all(dir);
}

TEST_CASE("collector: number formats are fixed") {
  CHECK(col::FmtBytes(999) == "999 B");
  CHECK(col::FmtBytes(1500) == "1.50 kB");
  CHECK(col::FmtBytes(67108864) == "67.11 MB");
  CHECK(col::FmtDuration(0.0005) == "500.0 us");
  CHECK(col::FmtDuration(0.25) == "250.000 ms");
  CHECK(col::FmtDuration(12.5) == "12.500 s");
  CHECK(col::Clip("a\x1b[31mb", 80) == "a?[31mb");
  CHECK(col::Clip("abcdefgh", 6) == "abc...");
}
