// Calls that returned an error (FLAG_FAILED: no driver, a sticky error) did nothing: they are
// counted in api_calls.failed and said in the text, and are in no other figure.
#include <catch2/catch.hpp>

#include "fixtures.h"
#include "jobs/job_table.h"

using namespace gwtest;

TEST_CASE("collector: failed calls are counted as failed, not as copies, syncs or launches") {
  col::JobTable jobs(col::JobTiming{});
  constexpr uint64_t kMs = 1'000'000;
  {
    FakeRank r(jobs, Hello("failed-job", 0, 1));
    wire::Batch b;
    for (uint64_t i = 0; i < 5; ++i) {
      Copy(&b, wire::CUDA_MEMCPY, wire::COPY_D2H, 4, 1000 * kMs + i * 10 * kMs, 2 * kMs,
           wire::FLAG_FAILED | wire::FLAG_BLOCKED_HOST);
      Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1001 * kMs + i * 10 * kMs, 3 * kMs)->set_flags(wire::FLAG_FAILED);
      Add(&b, wire::CUDA_LAUNCH_KERNEL, 1004 * kMs + i * 10 * kMs, kMs)->set_flags(wire::FLAG_FAILED);
    }
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 2000 * kMs, kMs);  // one that worked
    REQUIRE(r.SendBatch(b));
    r.Goodbye();
    r.Close();
  }
  const col::Job* job = jobs.Find("failed-job");
  REQUIRE(job);
  const nlohmann::json doc = SummaryJson(*job);
  const nlohmann::json& rank = doc["ranks"][0];
  INFO(rank["api_calls"].dump());
  CHECK(rank["api_calls"]["cudaMemcpy"]["failed"] == 5);
  CHECK(rank["api_calls"]["cudaMemcpy"]["count"] == 0);
  CHECK(rank["api_calls"]["cudaStreamSynchronize"]["failed"] == 5);
  CHECK(rank["api_calls"]["cudaStreamSynchronize"]["count"] == 1);
  CHECK(rank["api_calls"]["cudaLaunchKernel"]["failed"] == 5);
  CHECK(rank["sync"]["count"] == 1);  // the one that worked
  CHECK(rank["memcpy"]["d2h"]["count"] == 0);
  CHECK(doc["job"]["api_calls"]["cudaMemcpy"]["failed"] == 5);
  const std::string text = SummaryText(*job);
  CHECK(text.find("failed calls: 15") != std::string::npos);
}
