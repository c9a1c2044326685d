// The call-site rule (which records carry Record::site_id: the one place that decides) and
// the capture behind it.
#include <catch2/catch.hpp>

#include "record/call_sites.h"
#include "record/record.h"

namespace gi = gpuwatch::inject;

namespace {

gi::Record Call(uint8_t api, uint64_t dur_ticks, uint16_t flags = 0) {
  gi::Record r{};
  r.api = api;
  r.dur_ticks = dur_ticks;
  r.flags = flags;
  return r;
}

// A hook (its frame is skipped, like CaptureCallSite's), called from two places. The empty
// asm after each call keeps it a call (no tail call), so every frame stays on the stack.
__attribute__((noinline)) uint32_t Hook() {
  const uint32_t id = gi::CaptureCallSite();
  asm volatile("" ::: "memory");
  return id;
}
__attribute__((noinline)) uint32_t FromOne() {
  const uint32_t id = Hook();
  asm volatile("" ::: "memory");
  return id;
}
__attribute__((noinline)) uint32_t FromTwo() {
  const uint32_t id = Hook();
  asm volatile("" ::: "memory");
  return id;
}

}  // namespace

TEST_CASE("call-site rule: syncs and copies that blocked the host, once they blocked long enough") {
  gi::g_call_site_min_ticks.store(1000);
  for (uint8_t sync : {gi::kApiStreamSynchronize, gi::kApiDeviceSynchronize, gi::kApiEventSynchronize}) {
    INFO("api " << int(sync));
    CHECK(gi::WantsCallSite(Call(sync, 1000)));
    CHECK_FALSE(gi::WantsCallSite(Call(sync, 999)));
  }
  for (uint8_t copy : {gi::kApiMemcpy, gi::kApiMemcpyAsync}) {
    INFO("api " << int(copy));
    CHECK(gi::WantsCallSite(Call(copy, 5000, gi::kFlagBlockedHost | gi::kFlagPageable)));
    CHECK_FALSE(gi::WantsCallSite(Call(copy, 5000)));  // async: the host went on
    CHECK_FALSE(gi::WantsCallSite(Call(copy, 999, gi::kFlagBlockedHost)));
  }
  // Everything else carries a name, or nothing, never a site: however long it took.
  for (uint8_t other : {gi::kApiLaunchKernel, gi::kApiAllReduce, gi::kApiSend, gi::kApiNvtxRange}) {
    INFO("api " << int(other));
    CHECK_FALSE(gi::WantsCallSite(Call(other, 1'000'000, gi::kFlagBlockedHost)));
  }
  gi::g_call_site_min_ticks.store(UINT64_MAX);  // the stamp rate is not measured yet: none
  CHECK_FALSE(gi::WantsCallSite(Call(gi::kApiDeviceSynchronize, UINT64_MAX - 1)));
}

TEST_CASE("call sites: the same place gives the same id, another place another id") {
  uint32_t ids[2] = {};
  volatile int n = 2;  // read each time: the loop cannot be unrolled into two call sites
  for (int i = 0; i < n; ++i) ids[i] = FromOne();
  const uint32_t first = ids[0], again = ids[1];
  const uint32_t other = FromTwo();
  REQUIRE(first != 0);
  CHECK(again == first);
  CHECK(other != 0);
  CHECK(other != first);
  gi::CapturedSite s;
  REQUIRE(gi::FindCallSite(first, &s));
  CHECK(s.n > 0);
  CHECK(s.python[0] == '\0');  // no Python in this process
  CHECK_FALSE(gi::FindCallSite(0, &s));
  CHECK_FALSE(gi::FindCallSite(gi::kMaxCallSites + 1, &s));
}
