// The assembler driven by hand (assembler_test.cpp, launch_runs_test.cpp): rings filled with
// made-up records, a fake clock (ticks are not ns), fake event pairs and CUPTI records, its
// own name and communicator tables. Each batch it builds is parsed with the generated classes.
#pragma once
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <vector>

#include "assemble/assembler.h"
#include "gpuwatch.pb.h"
#include "record/record.h"
#include "record/registry.h"
#include "record/ring.h"

namespace gi = gpuwatch::inject;
namespace w = gpuwatch::wire;

namespace assembler_test {

constexpr uint64_t kEpochNs = 5'000'000'000;

// A stamp is 3 ns after kEpochNs: anything not converted shows.
struct FakeTime final : gi::TimeBase {
  uint64_t now_ns = kEpochNs + 1'000'000'000;
  uint64_t NowNs() const override { return now_ns; }
  uint64_t ToNs(uint64_t stamp) const override { return kEpochNs + stamp * 3; }
  uint64_t DurationNs(uint64_t ticks) const override { return ticks * 3; }
};

struct FakePairs final : gi::CollectiveTimes {
  std::map<uint32_t, std::pair<Poll, uint64_t>> state;  // slot -> poll result, GPU ns
  std::map<uint32_t, int> queries, releases;
  Poll Query(uint32_t slot, uint64_t* gpu_ns) override {
    ++queries[slot];
    auto it = state.find(slot);
    if (it == state.end()) return Poll::kPending;
    if (it->second.first == Poll::kDone) *gpu_ns = it->second.second;
    return it->second.first;
  }
  void Release(uint32_t slot) override { ++releases[slot]; }
};

inline bool DescribeFake(uint32_t id, gi::CallSiteText* out) {
  out->frames = {"frame-of-site-" + std::to_string(id)};
  out->python = "train.py:" + std::to_string(id);
  return true;
}

inline gi::Record Launch(uint64_t t_ticks, uint32_t name_id) {
  gi::Record r{};
  r.api = gi::kApiLaunchKernel;
  r.t_ticks = t_ticks;
  r.dur_ticks = 2;
  r.name_id = name_id;
  return r;
}

inline gi::Record Collective(uint64_t t_ticks, uint32_t slot, uint64_t bytes, bool in_group) {
  gi::Record r{};
  r.api = gi::kApiAllReduce;
  r.t_ticks = t_ticks;
  r.dur_ticks = 10;
  r.bytes = bytes;
  r.comm_id = 1;
  r.seq = t_ticks;
  r.event_slot = slot;
  if (in_group) r.flags |= gi::kFlagInGroup;
  return r;
}

struct Fixture {
  FakeTime time;
  FakePairs pairs;
  std::unique_ptr<gi::KernelNames> names = std::make_unique<gi::KernelNames>();
  std::unique_ptr<gi::Comms> comms = std::make_unique<gi::Comms>();
  gi::Ring ring{64};
  std::vector<gi::Ring*> rings{&ring};
  gi::Assembler assembler{gi::Assembler::Sources{&time, &pairs, {names.get(), comms.get(), DescribeFake}}};
  gi::Assembler::Cycle cycle;
  bool sent = false;

  Fixture() { ring.tid.store(42); }

  w::Batch Assemble() {
    const gi::Assembler::Batch& b = assembler.AssembleBatch(rings, cycle);
    sent = b.worth_sending;
    w::Batch out;
    REQUIRE(out.ParseFromString(b.body));
    CHECK(static_cast<uint64_t>(out.events_size()) == b.events);
    CHECK(static_cast<uint64_t>(out.activities_size()) == b.activities);
    return out;
  }
};

}  // namespace assembler_test
