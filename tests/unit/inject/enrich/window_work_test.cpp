// WindowWork: a window's calls against the device work CUPTI handed back for them, joined by
// correlation id; and the completion lag (a device record's end against its call's end).
#include <catch2/catch.hpp>

#include "enrich/window_work.h"

namespace gi = gpuwatch::inject;

namespace {
gi::ActivityRecord Rec(uint8_t kind, uint32_t corr, uint64_t end_ns, uint32_t graph_id = 0) {
  gi::ActivityRecord a{};
  a.kind = kind;
  a.correlation_id = corr;
  a.start_ns = end_ns > 10 ? end_ns - 10 : 0;
  a.end_ns = end_ns;
  a.graph_id = graph_id;
  return a;
}
}  // namespace

TEST_CASE("window work: the longest wait from a call's return to its work's end, this window and the last") {
  gi::WindowWork w;
  CHECK(w.max_lag_ns() == 0);
  w.Observe(Rec(gi::kActApi, 1, 1000));
  w.Observe(Rec(gi::kActKernel, 1, 91'000));  // queued 90 us
  w.Observe(Rec(gi::kActApi, 2, 2000));
  w.Observe(Rec(gi::kActMemcpy, 2, 12'000));
  w.Observe(Rec(gi::kActKernel, 3, 5'000'000));  // its call never seen: no lag
  CHECK(w.max_lag_ns() == 90'000);
  w.NextWindow();
  CHECK(w.max_lag_ns() == 90'000);  // the window before still counts
  w.Observe(Rec(gi::kActMemset, 4, 31'000));  // parsed before its call's record
  w.Observe(Rec(gi::kActApi, 4, 1000));
  CHECK(w.max_lag_ns() == 90'000);
  w.NextWindow();
  CHECK(w.max_lag_ns() == 30'000);  // two windows on: only the last one's
  // A call of another window gives no lag.
  w.Observe(Rec(gi::kActApi, 5, 1000));
  w.NextWindow();
  w.Observe(Rec(gi::kActKernel, 5, 9'000'000));
  CHECK(w.max_lag_ns() == 0);
}

TEST_CASE("window work: a window's work is back when every call recorded in it has its device record") {
  gi::WindowWork w;
  CHECK(w.outstanding() == 0);
  CHECK(w.latest_call_ns() == 0);
  w.Observe(Rec(gi::kActApi, 10, 1000));
  w.Observe(Rec(gi::kActApi, 10, 1000));  // the driver's record of the same launch
  w.Observe(Rec(gi::kActApi, 11, 2000));
  w.Observe(Rec(gi::kActKernel, 12, 9000));  // its call's record comes after it
  w.Observe(Rec(gi::kActApi, 12, 3000));
  CHECK(w.outstanding() == 2);  // 10 and 11 queued
  CHECK(w.latest_call_ns() == 2990);  // the latest call's start
  w.Observe(Rec(gi::kActKernel, 10, 5000));
  w.Observe(Rec(gi::kActKernel, 10, 5000));  // a second record of one call counts once
  CHECK(w.outstanding() == 1);
  w.Observe(Rec(gi::kActMemcpy, 11, 7000));
  CHECK(w.outstanding() == 0);
  CHECK(w.exact());
  // The next window counts its own calls only.
  w.Observe(Rec(gi::kActApi, 13, 4000));
  w.NextWindow();
  CHECK(w.outstanding() == 0);
  CHECK(w.latest_call_ns() == 0);
  w.Observe(Rec(gi::kActKernel, 13, 8000));  // the window before's work: not this window's
  CHECK(w.outstanding() == 0);
}

TEST_CASE("window work: a graph's work, or more pieces in flight than it can hold, make the count unsure") {
  gi::WindowWork w;
  w.Observe(Rec(gi::kActApi, 1, 1000));
  w.Observe(Rec(gi::kActKernel, 1, 5000, /*graph_id=*/7));  // one node of many
  CHECK(w.outstanding() == 0);
  CHECK_FALSE(w.exact());
  w.NextWindow();
  CHECK(w.exact());
  // 16384 slots: a call 16384 correlation ids after a queued one takes its slot.
  w.Observe(Rec(gi::kActApi, 100, 1000));
  w.Observe(Rec(gi::kActApi, 100 + 16384, 2000));
  CHECK_FALSE(w.exact());
  w.NextWindow();
  // A slot whose pair is complete is free to take.
  w.Observe(Rec(gi::kActApi, 200, 1000));
  w.Observe(Rec(gi::kActKernel, 200, 3000));
  w.Observe(Rec(gi::kActApi, 200 + 16384, 4000));
  CHECK(w.exact());
  CHECK(w.outstanding() == 1);
}

TEST_CASE("window work: at the close, calls that returned as the kinds went off are counted apart") {
  gi::WindowWork w;
  w.Observe(Rec(gi::kActApi, 1, 1000));
  w.Observe(Rec(gi::kActApi, 2, 2000));
  w.Observe(Rec(gi::kActApi, 3, 3000));  // returned as the kinds went off: its work may be unrecorded
  w.Close(2500);
  CHECK(w.outstanding() == 2);
  CHECK(w.late() == 1);
  w.Observe(Rec(gi::kActApi, 4, 3100));  // parsed after the close: late too
  CHECK(w.late() == 2);
  w.Observe(Rec(gi::kActKernel, 1, 9000));
  w.Observe(Rec(gi::kActKernel, 2, 9500));
  CHECK(w.outstanding() == 0);
  w.Observe(Rec(gi::kActKernel, 3, 9900));
  CHECK(w.late() == 1);
  w.NextWindow();
  CHECK(w.late() == 0);
  w.Observe(Rec(gi::kActApi, 5, 9'000'000));  // no cutoff while a window is open
  CHECK(w.outstanding() == 1);
}

TEST_CASE("window work: calls that started as the kinds went on are counted apart too") {
  gi::WindowWork w;
  w.NextWindow(/*open_ns=*/5000);
  w.Observe(Rec(gi::kActApi, 1, 5005));  // started at 4995: its work may not be recorded
  w.Observe(Rec(gi::kActApi, 2, 6000));
  CHECK(w.outstanding() == 1);
  CHECK(w.late() == 1);
  w.Observe(Rec(gi::kActKernel, 2, 9000));
  CHECK(w.outstanding() == 0);
  w.Observe(Rec(gi::kActKernel, 1, 9100));  // it was recorded after all
  CHECK(w.late() == 0);
}
