// Launches the library summarized (CUDA_LAUNCH_RUN events in their place, their kernels in
// Batch.launch_tallies) must give every figure that the same launches sent one by one give:
// counts by kernel and API, host calls, the syncs charged inside steps (a run is work that
// follows them), inferred steps, the sampling's enqueue counts.
#include <catch2/catch.hpp>

#include <map>

#include "fixtures.h"
#include "jobs/job_table.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1'000, kMs = 1'000'000;

// One step of a loop without NVTX: 12 launches, an .item() in the middle of the step (more
// launches follow it), 8 more launches, the step's closing sync, then host work.
struct Launch {
  uint64_t t, dur;
  uint32_t name;
  wire::Api api;
};

struct Step {
  std::vector<Launch> first, second;
  uint64_t mid_sync_t, end_sync_t;
};

Step MakeStep(uint64_t t0) {
  Step s;
  uint64_t t = t0;
  for (int i = 0; i < 12; ++i, t += 20 * kUs)
    s.first.push_back({t, 5 * kUs, static_cast<uint32_t>(1 + i % 3),
                       i % 4 == 3 ? wire::CUDA_DRIVER_LAUNCH_KERNEL : wire::CUDA_LAUNCH_KERNEL});
  s.mid_sync_t = t;
  t += 300 * kUs;
  for (int i = 0; i < 8; ++i, t += 20 * kUs) s.second.push_back({t, 6 * kUs, 4, wire::CUDA_LAUNCH_KERNEL});
  s.end_sync_t = t;
  return s;
}

void Names(wire::Batch* b) {
  for (uint32_t id = 1; id <= 4; ++id) {
    auto* n = b->add_kernel_names();
    n->set_id(id);
    n->set_name("_Z7kernel" + std::to_string(id) + "v");
  }
}

// The launches of `part` as the library sends them outside the windows: one run, tallies.
void AddRun(wire::Batch* b, const std::vector<Launch>& part, std::map<std::pair<int, uint32_t>, wire::LaunchTally>& tallies) {
  auto* e = Add(b, wire::CUDA_LAUNCH_RUN, part.front().t, part.back().t + part.back().dur - part.front().t);
  e->set_tid(7);
  uint64_t ns = 0;
  for (const Launch& l : part) {
    ns += l.dur;
    wire::LaunchTally& t = tallies[{l.api, l.name}];
    t.set_api(l.api);
    t.set_name_id(l.name);
    t.set_launches(t.launches() + 1);
    t.set_ns(t.ns() + l.dur);
  }
  e->set_calls(part.size());
  e->set_calls_ns(ns);
}

void AddEach(wire::Batch* b, const std::vector<Launch>& part) {
  for (const Launch& l : part) {
    auto* e = Add(b, l.api, l.t, l.dur);
    e->set_name_id(l.name);
    e->set_tid(7);
  }
}

nlohmann::json RunJob(col::JobTable& jobs, const std::string& name, bool summarized) {
  {
    FakeRank r(jobs, Hello(name, 0, 1));
    for (int step = 0; step < 40; ++step) {
      const Step s = MakeStep(1000 * kMs + static_cast<uint64_t>(step) * 5 * kMs);
      wire::Batch b;
      if (step == 0) Names(&b);
      std::map<std::pair<int, uint32_t>, wire::LaunchTally> tallies;
      summarized ? AddRun(&b, s.first, tallies) : AddEach(&b, s.first);
      // .item(): a 4-byte blocking copy to the host, a sync of its own kind.
      Copy(&b, wire::CUDA_MEMCPY, wire::COPY_D2H, 4, s.mid_sync_t, 250 * kUs, wire::FLAG_BLOCKED_HOST)->set_tid(7);
      summarized ? AddRun(&b, s.second, tallies) : AddEach(&b, s.second);
      Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, s.end_sync_t, 200 * kUs)->set_tid(7);
      for (auto& [key, t] : tallies) *b.add_launch_tallies() = t;
      b.set_settled_ns(s.end_sync_t + 300 * kUs);
      REQUIRE(r.SendBatch(b));
    }
    r.Goodbye();
    r.Close();
  }
  const col::Job* job = jobs.Find(name);
  REQUIRE(job);
  return SummaryJson(*job);
}

}  // namespace

TEST_CASE("collector: launches summarized in runs and tallies give the figures of the same launches one by one") {
  col::JobTable jobs(col::JobTiming{});
  nlohmann::json each = RunJob(jobs, "launches-each", false);
  nlohmann::json runs = RunJob(jobs, "launches-runs", true);
  const nlohmann::json& a = each["ranks"][0];
  const nlohmann::json& b = runs["ranks"][0];
  INFO("one by one: " << a.dump());
  INFO("summarized: " << b.dump());
  // The figures the runs must keep, checked by name first so a failure says which.
  CHECK(b["kernels"] == a["kernels"]);
  CHECK(b["api_calls"] == a["api_calls"]);
  CHECK(b["steps"] == a["steps"]);
  CHECK(b["sync"] == a["sync"]);
  // What the loop made: 20 a step, 3 of the first 12 through the driver.
  CHECK(a["kernels"]["launches"] == 40 * 17);
  CHECK(a["kernels"]["driver_launches"] == 40 * 3);
  CHECK(a["steps"]["source"] == "inferred:syncs");
  // And every other figure of the rank, but the steps' dependency graphs (critical path,
  // what-ifs): they are built from steps CUPTI recorded whole, where every launch is a
  // record (this rank says nothing of CUPTI, so its steps count as recorded).
  nlohmann::json a_rest = a, b_rest = b;
  for (nlohmann::json* r : {&a_rest, &b_rest}) {
    r->erase("critical_path");
    r->erase("what_if_all");
    for (nlohmann::json& f : (*r)["findings"]) f.erase("what_if");
  }
  CHECK(b_rest == a_rest);
}
