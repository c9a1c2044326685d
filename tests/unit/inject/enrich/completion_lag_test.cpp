// CompletionLag: a device record's end against its API record's end, joined by correlation id.
#include <catch2/catch.hpp>

#include "enrich/completion_lag.h"

namespace gi = gpuwatch::inject;

namespace {
gi::ActivityRecord Rec(uint8_t kind, uint32_t corr, uint64_t end_ns) {
  gi::ActivityRecord a{};
  a.kind = kind;
  a.correlation_id = corr;
  a.start_ns = end_ns > 10 ? end_ns - 10 : 0;
  a.end_ns = end_ns;
  return a;
}
}  // namespace

TEST_CASE("completion lag: the longest wait from a call's return to its work's end, this window and the last") {
  gi::CompletionLag lag;
  CHECK(lag.max_ns() == 0);
  lag.Observe(Rec(gi::kActApi, 1, 1000));
  lag.Observe(Rec(gi::kActKernel, 1, 91'000));  // queued 90 us
  lag.Observe(Rec(gi::kActApi, 2, 2000));
  lag.Observe(Rec(gi::kActMemcpy, 2, 12'000));
  lag.Observe(Rec(gi::kActKernel, 3, 5'000'000));  // its call never seen: no lag
  CHECK(lag.max_ns() == 90'000);
  lag.NextWindow();
  CHECK(lag.max_ns() == 90'000);  // the window before still counts
  lag.Observe(Rec(gi::kActApi, 4, 1000));
  lag.Observe(Rec(gi::kActMemset, 4, 31'000));
  CHECK(lag.max_ns() == 90'000);
  lag.NextWindow();
  CHECK(lag.max_ns() == 30'000);  // two windows on: only the last one's
  // A call whose slot another call took since (4096 apart) gives no lag.
  lag.Observe(Rec(gi::kActApi, 5, 1000));
  lag.Observe(Rec(gi::kActApi, 5 + 4096, 2000));
  lag.Observe(Rec(gi::kActKernel, 5, 9'000'000));
  CHECK(lag.max_ns() == 30'000);
}
