// The overhead budget's windows (enrich/cupti_budget.h), cycle by cycle with made-up counts:
// the library's added time stays within budget x wall + the allowance, a quiet phase gets
// long windows, a launch-heavy one short spaced ones, and CUPTI's cost comes from the launch
// calls' own times inside and outside windows once there are enough of them. What a window
// leaves after it closes: cupti_budget_tail_test.cpp.
#include <catch2/catch.hpp>

#include "enrich/cupti_budget.h"
#include "overhead_settings.h"

namespace gi = gpuwatch::inject;

namespace {

constexpr uint64_t kMs = 1'000'000, kS = 1000 * kMs;

// `seconds` of 10 ms cycles at `rate` launches per second; a launch takes `base_ns` of host
// time, plus `cupti_ns` while a window is open, and with `stall_every` one launch in that many
// waits 5 ms (a full launch queue, the scheduler); with `tail_every`, one launch in that many
// made in a window takes `tail_ns` more still (CUPTI handing a buffer over). Returns the share
// of time windows were open; adds what CUPTI really cost the launches to `*paid_ns`.
// `busy`: the job's cores as the process samples found them (Cycle::stretch ... cpus), with
// beside_ns the CPU of gpuwatch's threads beside the job per cycle.
double Play(gi::CuptiBudget& b, uint64_t& now, double seconds, double rate, double base_ns, double cupti_ns,
            uint64_t stall_every = 0, uint64_t tail_every = 0, double tail_ns = 0, double* paid_ns = nullptr,
            const gi::CuptiBudget::Cycle& busy = {}) {
  const uint64_t cycles = static_cast<uint64_t>(seconds * 100);
  uint64_t open_cycles = 0;
  for (uint64_t i = 0; i < cycles; ++i) {
    const bool open = b.open();
    open_cycles += open;
    gi::CuptiBudget::Cycle c;
    now += 10 * kMs;
    c.now_ns = now;
    c.enqueues = c.hook_calls = static_cast<uint64_t>(rate / 100);
    for (uint64_t k = 0; k < c.enqueues; ++k) {
      const uint64_t n = i * c.enqueues + k;
      const bool stall = stall_every && n % stall_every == 0;
      const double cupti = open ? cupti_ns + (tail_every && n % tail_every == 1 ? tail_ns : 0) : 0;
      if (paid_ns) *paid_ns += cupti;
      c.launches.Add(static_cast<uint64_t>(stall ? 5 * kMs : base_ns + cupti));
    }
    c.device_records = open ? c.enqueues : 0;
    c.recorded_enqueues = open ? c.enqueues : 0;
    c.stretch = busy.stretch;
    c.busy_share = busy.busy_share;
    c.beside_ns = (i + 1) * busy.beside_ns;
    c.cpus = busy.cpus;
    b.Update(c);
  }
  return cycles ? static_cast<double>(open_cycles) / cycles : 0;
}

}  // namespace

TEST_CASE("overhead budget: added time stays within budget x wall + allowance") {
  gi::CuptiBudget::Options o;
  o.hook_ns = 50;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  REQUIRE(b.open());  // the allowance: record from the start
  // 10 s at 100k launches/s, CUPTI adding 3 us to each: recording whole would cost 30%.
  const double open_share = Play(b, now, 10, 100'000, 4000, 3000);
  const auto f = b.figures();
  const double added = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
  CHECK(added <= 0.01 * 10 * kS + 50 * kMs + 3 * kMs);  // one cycle of overshoot at most
  CHECK(added >= 0.95 * b.PlannedNs(10 * kS));          // and the plan is used
  CHECK(f.hook_calls == 1'000'000);
  CHECK(f.hooks_added_ns == 50'000'000);
  CHECK(open_share > 0.01);
  CHECK(open_share < 0.08);
  CHECK(f.windows >= 3);  // spaced windows, not one at the start
  CHECK(f.cupti_ns_measured);
  CHECK(f.cupti_ns == Approx(3000).epsilon(0.01));
}

TEST_CASE("overhead budget: where the job's cores are busy it spends the job's wall time, not its own CPU") {
  // Beside two busy threads a core, a second of work on the job's thread is three on its wall,
  // and the sender's and the collector's CPU is taken from it (proto/contention.h). Spending
  // CPU, the default's windows cost a launch loop there 3x its budget.
  gi::CuptiBudget::Options o;
  o.hook_ns = 10;
  uint64_t now = 1 * kS;
  gi::CuptiBudget idle(o, now), busy(o, now);
  uint64_t now2 = now;
  Play(idle, now, 10, 100'000, 4000, 3000);
  gi::CuptiBudget::Cycle k;
  k.stretch = 3;
  k.busy_share = 1;
  k.cpus = 2;
  k.beside_ns = 100'000;  // 10 ms of CPU a second beside the job
  const double open_share = Play(busy, now2, 10, 100'000, 4000, 3000, 0, 0, 0, nullptr, k);
  const auto fi = idle.figures(), fb = busy.figures();
  const double wall = 3.0 * static_cast<double>(fb.hooks_added_ns + fb.cupti_added_ns) + 1000 * 100'000 / 2.0;
  CHECK(fb.spent_ns == Approx(wall).epsilon(0.001));
  CHECK(wall <= 0.01 * 10 * kS + 50 * kMs + 9 * kMs);  // one cycle of overshoot at most, stretched
  CHECK(wall >= 0.95 * busy.PlannedNs(10 * kS));
  CHECK(fb.hooks_added_ns == fi.hooks_added_ns);  // the hooks are what they are
  CHECK(fb.cupti_added_ns < fi.cupti_added_ns / 2);
  CHECK(open_share > 0.001);
  // Uncontended, nothing changes: spent is the time itself.
  CHECK(fi.spent_ns == fi.hooks_added_ns + fi.cupti_added_ns);
}

TEST_CASE("overhead budget: the plan holds back part of the budget, never of the allowance") {
  // The same launch-heavy minute planned at the whole budget and at the default share: the
  // default ends a fifth of budget x wall under the budget (what the measured costs miss),
  // and a run within the allowance is recorded whole either way.
  const auto spend = [](double share) {
    gi::CuptiBudget::Options o;
    o.hook_ns = 50;
    o.plan_share = share;
    uint64_t now = 1 * kS;
    gi::CuptiBudget b(o, now);
    Play(b, now, 60, 100'000, 4000, 3000);
    const auto f = b.figures();
    const double added = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
    INFO("plan " << share << ": " << added / kMs << " ms of " << b.PlannedNs(60 * kS) / kMs);
    CHECK(added <= b.PlannedNs(60 * kS) + 3 * kMs);
    CHECK(added >= 0.97 * b.PlannedNs(60 * kS));
    return added;
  };
  const double whole = spend(1.0), planned = spend(0.8);
  CHECK(whole - planned == Approx(0.2 * 0.01 * 60 * kS).epsilon(0.1));  // 120 ms of 650
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget short_run(o, now);
  CHECK(Play(short_run, now, 0.5, 20'000, 4000, 3000) == 1.0);  // 30 ms of CUPTI in 0.5 s: whole
}

TEST_CASE("overhead budget: CUPTI's cost is the mean launch in windows minus outside, stalls aside") {
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  // One launch in 200 waits 5 ms: a plain mean would put CUPTI's cost at 25 us in and out
  // alike, and any imbalance of stalls between them would swamp the 2.5 us.
  Play(b, now, 10, 100'000, 4000, 2500, 200);
  const auto f = b.figures();
  REQUIRE(f.cupti_ns_measured);
  CHECK(f.cupti_ns == Approx(2500).margin(100));
  gi::LaunchTimes t;
  CHECK(t.TrimmedMean() == 0);
  for (int i = 0; i < 99; ++i) t.Add(7'050);
  t.Add(50'000'000);  // counted, and left out of the mean: a stall
  CHECK(t.count() == 100);
  CHECK(t.TrimmedMean() == Approx(7'050).margin(1));
}

TEST_CASE("overhead budget: CUPTI's cost counts the calls it makes much slower, not only the common case") {
  // In windows 9 launches in 10 take 2 us more and the 10th 22 us more (a buffer handed
  // over): 4 us on average, what the job pays. The median said 2 us.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  Play(b, now, 10, 100'000, 5000, 2000, 0, 10, 20'000);
  const auto f = b.figures();
  REQUIRE(f.cupti_ns_measured);
  CHECK(f.cupti_ns == Approx(4000).margin(100));
  // And the windows are sized by it: the added time still within budget x wall + allowance.
  CHECK(static_cast<double>(f.hooks_added_ns + f.cupti_added_ns) <= 0.01 * 10 * kS + 50 * kMs + 3 * kMs);
}

TEST_CASE("overhead budget: CUPTI's cost is set against the nearest calls, so a phase's own call times do not move it") {
  // 20 s launching little (long windows), then 40 s launching much (short spaced ones), the
  // launch call itself slower or faster in the second phase; CUPTI adds 3 us throughout.
  // All calls in windows minus all calls outside weighs the phases differently on each side:
  // that read 2.2 us (and spent 39% over the budget) with the calls slower in the second
  // phase, 4.2 us with them faster.
  for (const auto& [quiet_ns, heavy_ns] : {std::pair{4000.0, 6000.0}, std::pair{6000.0, 4000.0}}) {
    gi::CuptiBudget::Options o;
    uint64_t now = 1 * kS;
    gi::CuptiBudget b(o, now);
    double paid = 0;
    Play(b, now, 20, 5'000, quiet_ns, 3000, 0, 0, 0, &paid);
    Play(b, now, 40, 175'000, heavy_ns, 3000, 0, 0, 0, &paid);
    const auto f = b.figures();
    const double allowance = 0.01 * 60 * kS + 50 * kMs;
    INFO("calls " << quiet_ns << " then " << heavy_ns << " ns: CUPTI read " << f.cupti_ns << " ns, paid "
                  << paid / kMs << " ms of " << allowance / kMs);
    REQUIRE(f.cupti_ns_measured);
    CHECK(f.cupti_ns == Approx(3000).epsilon(0.05));
    CHECK(paid <= 1.03 * allowance);
    CHECK(paid >= 0.9 * b.PlannedNs(60 * kS));
  }
}

TEST_CASE("overhead budget: the calls just after a window do not make it look cheaper") {
  // CUPTI adds 3 us to a launch in a window; for 5 cycles after one, the sender and the
  // collector handle its records beside the job, and launches take 0.5 us more. Set against
  // those calls, a window's launches would read ~2.6 us.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  int since_window = 100;
  for (int i = 0; i < 6000; ++i) {  // 60 s at 175k launches/s
    const bool open = b.open();
    since_window = open ? 0 : since_window + 1;
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    c.enqueues = c.hook_calls = 1750;
    const uint64_t ns = open ? 7000 : since_window <= 5 ? 4500 : 4000;
    for (int k = 0; k < 1750; ++k) c.launches.Add(ns);
    c.device_records = open ? c.enqueues : 0;
    c.recorded_enqueues = open ? c.enqueues : 0;
    b.Update(c);
  }
  const auto f = b.figures();
  REQUIRE(f.cupti_ns_measured);
  CHECK(f.cupti_ns == Approx(3000).epsilon(0.02));
}

TEST_CASE("overhead budget: CUPTI's cost follows a change in it") {
  // 20 s at 3 us a launch, then CUPTI's cost doubles (more record kinds, another driver
  // path): the figure moves most of the way within a minute (5.5 us). All calls in windows
  // minus all calls outside read 4.5 us after 60 s.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  Play(b, now, 20, 175'000, 4000, 3000);
  REQUIRE(b.figures().cupti_ns == Approx(3000).epsilon(0.02));
  Play(b, now, 60, 175'000, 4000, 6000);
  CHECK(b.figures().cupti_ns > 5000);
}

TEST_CASE("overhead budget: calls keep the price CUPTI's cost had in their time") {
  // A minute at 6 us a launch, then a minute at 3: repriced at the latest figure, the first
  // minute's calls looked half as dear as they were, and the windows spent 20% over the
  // budget (1507 ms of 1250). Now only the last 30 s of calls are repriced (1292 ms).
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  double paid = 0;
  Play(b, now, 60, 175'000, 4000, 6000, 0, 0, 0, &paid);
  Play(b, now, 60, 175'000, 4000, 3000, 0, 0, 0, &paid);
  const auto f = b.figures();
  const double allowance = 0.01 * 120 * kS + 50 * kMs;
  INFO("paid " << paid / kMs << " ms of " << allowance / kMs << ", charged " << f.cupti_added_ns / kMs);
  CHECK(paid <= 1.05 * allowance);
  CHECK(f.cupti_added_ns == Approx(paid).epsilon(0.1));
}

TEST_CASE("overhead budget: a phase with few launches is recorded whole") {
  gi::CuptiBudget::Options o;
  o.hook_ns = 50;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  Play(b, now, 2, 100'000, 4000, 3000);  // launch-heavy: the allowance is spent
  CHECK(Play(b, now, 20, 100, 4000, 3000) > 0.95);  // then 100 launches/s: always open
  const auto f = b.figures();
  CHECK(f.hooks_added_ns + f.cupti_added_ns <= 0.01 * 22 * kS + 50 * kMs);
}

TEST_CASE("overhead budget: full and off never change, and a short run is recorded whole") {
  uint64_t now = 1 * kS;
  gi::CuptiBudget::Options o;
  o.mode = gi::CuptiBudget::Mode::kFull;
  gi::CuptiBudget full(o, now);
  CHECK(Play(full, now, 5, 100'000, 4000, 3000) == 1.0);
  CHECK_FALSE(full.figures().cupti_ns_measured);  // never outside a window: NVIDIA's figure
  CHECK(full.figures().cupti_ns == 4000);
  o.mode = gi::CuptiBudget::Mode::kOff;
  gi::CuptiBudget off(o, now);
  CHECK_FALSE(off.open());
  CHECK(Play(off, now, 1, 100'000, 4000, 3000) == 0.0);
  // 0.1 s at 100k launches/s costs 30 ms (40 ms at the 4 us prior, which is what the budget
  // knows before anything is measured): within the allowance, so recorded whole.
  o.mode = gi::CuptiBudget::Mode::kBudget;
  gi::CuptiBudget short_run(o, now);
  CHECK(Play(short_run, now, 0.1, 100'000, 4000, 3000) == 1.0);
  CHECK(short_run.TakeClosedWindows().empty());
}

TEST_CASE("overhead budget: the trace window is recorded whole, and then the budget resumes") {
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  o.record_from_ns = now + 3 * kS;
  o.record_to_ns = now + 5 * kS;
  gi::CuptiBudget b(o, now);
  CHECK(Play(b, now, 3, 100'000, 4000, 3000) < 0.1);  // sampled
  CHECK(Play(b, now, 2, 100'000, 4000, 3000) == 1.0);  // the window: whole, over budget
  CHECK(Play(b, now, 3, 100'000, 4000, 3000) < 0.02);  // then closed until the cost is paid back
  const auto f = b.figures();
  CHECK(f.cupti_added_ns > 2 * 100'000 * 3000ull);  // its cost is counted
}

TEST_CASE("overhead budget: windows closed are handed over once, in order") {
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  Play(b, now, 10, 200'000, 4000, 3000);
  const auto w = b.TakeClosedWindows();
  REQUIRE(w.size() >= 2);
  for (size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].first < w[i].second);
    if (i) CHECK(w[i - 1].second <= w[i].first);
  }
  CHECK(w.front().first == 1 * kS);
  CHECK(b.TakeClosedWindows().empty());
}

TEST_CASE("overhead budget: the hooks' in-place samples replace the start-up figure, for every call") {
  gi::CuptiBudget::Options o;
  o.hook_ns = 20;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  gi::CuptiBudget::Cycle c;
  c.now_ns = now += 10 * kMs;
  c.hook_calls = 1000;
  c.hook_ns = 150;
  c.hook_samples = gi::CuptiBudget::kMinHookSamples - 1;  // too few yet: the start-up figure
  b.Update(c);
  CHECK(b.figures().hook_ns == 20);
  CHECK(b.figures().hook_samples == 0);
  CHECK(b.figures().hooks_added_ns == 20'000);
  c.now_ns = now += 10 * kMs;
  c.hook_samples = gi::CuptiBudget::kMinHookSamples;
  b.Update(c);
  const auto f = b.figures();
  CHECK(f.hook_ns == 150);
  CHECK(f.hook_samples == gi::CuptiBudget::kMinHookSamples);
  CHECK(f.hooks_added_ns == 300'000);  // all 2000 calls at the in-place cost
}

TEST_CASE("overhead budget: hooks that cost more than the budget leave CUPTI no window once they have spent it") {
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  // 100k calls/s at 200 ns each, timed in place: 2% of the wall time, over the 1% budget.
  // From 5 s on the hooks alone have spent budget x wall + the allowance (20 ms/s against
  // 10 ms/s + 50 ms).
  uint64_t open_late = 0;
  for (int i = 0; i < 1000; ++i) {
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    c.hook_calls = c.enqueues = 1000;
    c.hook_ns = 200;
    c.hook_samples = 1000;
    for (int k = 0; k < 1000; ++k) c.launches.Add(4000);
    b.Update(c);
    if (i >= 500) open_late += b.open();
  }
  CHECK(open_late == 0);
  CHECK(b.figures().hooks_added_ns == 200ull * 1'000'000);
}

TEST_CASE("overhead budget: the library's start-up is reported, not spent from the allowance") {
  // Two budgets on the same calls; one says its load and a thread's ring took 30 ms. Both
  // record the first 50 ms of CUPTI's time whole (a short run stays whole: the allowance
  // is for CUPTI), and the one that paid for its start reports it.
  gi::CuptiBudget::Options o;
  o.hook_ns = 0;
  o.budget = 0;  // the allowance alone
  uint64_t t0 = 1 * kS;
  gi::CuptiBudget plain(o, t0), loaded(o, t0);
  uint64_t open_plain = 0, open_loaded = 0;
  for (int i = 0; i < 100; ++i) {
    // 1000 launches a cycle, CUPTI adding 3 us to each while a window is open: 3 ms a cycle.
    auto cycle = [&](const gi::CuptiBudget& b) {
      gi::CuptiBudget::Cycle c;
      c.now_ns = t0 + 10 * kMs;
      c.hook_calls = c.enqueues = 1000;
      for (int k = 0; k < 1000; ++k) c.launches.Add(b.open() ? 7000 : 4000);
      c.device_records = b.open() ? c.enqueues : 0;
      c.recorded_enqueues = b.open() ? c.enqueues : 0;
      return c;
    };
    gi::CuptiBudget::Cycle c = cycle(plain), d = cycle(loaded);
    d.startup_ns = 30 * kMs;  // cumulative, as the sender reads it
    open_plain += plain.open();
    open_loaded += loaded.open();
    plain.Update(c);
    loaded.Update(d);
    t0 += 10 * kMs;
  }
  CHECK(open_plain == 17);  // 50 ms / 3 ms a cycle, rounded up: the cycle that overshoots
  CHECK(open_loaded == open_plain);
  CHECK(loaded.figures().startup_ns == 30 * kMs);  // counted once, not per cycle
  CHECK(plain.figures().startup_ns == 0);
  CHECK(loaded.figures().cupti_added_ns == plain.figures().cupti_added_ns);
}

TEST_CASE("overhead budget: the host sampler's cost is spent and reported, and says when the budget is gone") {
  // 100k calls/s at 20 ns each (0.2% of the wall time) and a sampler whose thread and
  // signals cost 0.5%: 0.7% of the 1%, so CUPTI gets what is left, and the whole stays
  // within budget x wall + the allowance. Once spent, spent() says so until credit returns.
  gi::CuptiBudget::Options o;
  o.hook_ns = 20;
  uint64_t now = 1 * kS;
  const uint64_t t0 = now;
  gi::CuptiBudget b(o, now);
  uint64_t spent_cycles = 0, sampler = 0;
  for (int i = 0; i < 1000; ++i) {
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    c.hook_calls = c.enqueues = 1000;
    for (int k = 0; k < 1000; ++k) c.launches.Add(b.open() ? 7000 : 4000);
    c.device_records = b.open() ? c.enqueues : 0;
    c.recorded_enqueues = b.open() ? c.enqueues : 0;
    if (!b.spent()) sampler += 50'000;  // a sampler that waits while the budget is spent
    c.sampler_ns = sampler;            // cumulative, as the sender reads it
    b.Update(c);
    spent_cycles += b.spent();
  }
  const auto f = b.figures();
  CHECK(f.sampler_ns == sampler);
  const double allowance = 0.01 * static_cast<double>(now - t0) + 50 * kMs;
  const double spent = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns + f.sampler_ns);
  CHECK(spent <= allowance + 4 * kMs);  // a cycle of CUPTI's overshoot at most
  CHECK(spent >= 0.9 * b.PlannedNs(now - t0));  // and the plan is used
  CHECK(f.cupti_added_ns > 0);
  CHECK(spent_cycles > 0);
  CHECK(spent_cycles < 1000);

  // Full and off report the sampler's cost too, and never say the budget is spent.
  for (auto mode : {gi::CuptiBudget::Mode::kFull, gi::CuptiBudget::Mode::kOff}) {
    o.mode = mode;
    gi::CuptiBudget other(o, t0);
    gi::CuptiBudget::Cycle c;
    c.now_ns = t0 + 10 * kS;
    c.sampler_ns = 1 * kS;
    other.Update(c);
    CHECK(other.figures().sampler_ns == 1 * kS);
    CHECK_FALSE(other.spent());
  }
}

TEST_CASE("overhead budget: CUPTI that records nothing costs nothing, and one taken over mid-run keeps its windows") {
  // Cycles at 100k launches/s in which CUPTI records nothing: another profiler holds it, or
  // cuptiSubscribe failed. A budget that charged them at the prior 4 us claimed half the
  // wall time for a CUPTI that never ran.
  auto play_gone = [](gi::CuptiBudget& b, uint64_t& now, double seconds) {
    for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
      gi::CuptiBudget::Cycle c;
      now += 10 * kMs;
      c.now_ns = now;
      c.enqueues = c.hook_calls = 1000;
      for (int k = 0; k < 1000; ++k) c.launches.Add(4000);
      c.cupti_gone = true;
      b.Update(c);
    }
  };
  for (auto mode : {gi::CuptiBudget::Mode::kBudget, gi::CuptiBudget::Mode::kFull}) {
    gi::CuptiBudget::Options o;
    o.hook_ns = 50;
    o.mode = mode;
    uint64_t now = 1 * kS;
    gi::CuptiBudget b(o, now);
    play_gone(b, now, 2);
    const auto f = b.figures();
    CHECK_FALSE(b.open());
    CHECK(f.cupti_calls == 0);
    CHECK(f.cupti_added_ns == 0);
    CHECK(f.windows == 0);  // the one opened at start never recorded
    CHECK(f.hooks_added_ns == 200'000 * 50);
    CHECK_FALSE(b.spent());  // the hooks' 10 ms are far within 1% + 50 ms: the sampler may go on
  }
  // Recorded for 3 s, then a profiler takes CUPTI: the windows so far stay, none opens again.
  gi::CuptiBudget::Options o;
  o.hook_ns = 50;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  Play(b, now, 3, 100'000, 4000, 3000);
  const auto before = b.figures();
  REQUIRE(before.windows >= 1);
  play_gone(b, now, 5);
  const auto after = b.figures();
  CHECK_FALSE(b.open());
  CHECK(after.windows == before.windows);  // an open one is closed where CUPTI stopped
  CHECK(after.cupti_calls == before.cupti_calls);
  CHECK(after.window_ns <= before.window_ns + 10 * kMs);  // the cycle in which it stopped
}

TEST_CASE("overhead budget: a window open when a profiler takes CUPTI ends when it did, not when the sender saw it") {
  // The run's first window, open at 1,000 launches/s; CUPTI is taken 3 ms into a cycle the
  // sender updates at its end. The collector counts the calls made in a window as recorded:
  // closed at the cycle's end, 7 ms of calls CUPTI never saw were (e2e `faults: a profiler
  // that takes CUPTI mid-run ...`: the job's GPU figures then depended on when the sender woke).
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  Play(b, now, 0.2, 1000, 4000, 3000);
  REQUIRE(b.open());
  const uint64_t opened = b.open_since_ns();
  gi::CuptiBudget::Cycle c;
  c.cupti_gone = true;
  c.cupti_ended_ns = now + 3 * kMs;
  c.now_ns = now += 10 * kMs;
  b.Update(c);
  CHECK_FALSE(b.open());
  const auto closed = b.TakeClosedWindows();
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].first == opened);
  CHECK(closed[0].second == c.cupti_ended_ns);
}

namespace {

// `seconds` of 10 ms cycles replaying a graph of `nodes` kernels `rate` times a second, and
// launching `launches_per_cycle` kernels besides, each of which CUPTI records as
// `records_per_launch` (a collective's kernels launched around the hooks). A graph launch
// takes `base_ns` of host time, plus `cupti_ns` while a window is open; a launch 4 us, plus 3.
void PlayGraphs(gi::CuptiBudget& b, uint64_t& now, double seconds, double rate, uint64_t nodes, double base_ns,
                double cupti_ns, uint64_t launches_per_cycle = 0, uint64_t records_per_launch = 1) {
  const uint64_t cycles = static_cast<uint64_t>(seconds * 100);
  for (uint64_t i = 0; i < cycles; ++i) {
    const bool open = b.open();
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    const uint64_t graphs = static_cast<uint64_t>(rate / 100);
    for (uint64_t k = 0; k < graphs; ++k) c.graph_launches.Add(static_cast<uint64_t>(base_ns + (open ? cupti_ns : 0)));
    for (uint64_t k = 0; k < launches_per_cycle; ++k) c.launches.Add(open ? 7000 : 4000);
    c.enqueues = c.hook_calls = graphs + launches_per_cycle;
    c.graph_records = open ? graphs * nodes : 0;
    c.device_records = c.graph_records + (open ? launches_per_cycle * records_per_launch : 0);
    c.recorded_enqueues = open ? c.enqueues : 0;
    c.recorded_graph_launches = open ? graphs : 0;
    b.Update(c);
  }
}

}  // namespace

TEST_CASE("overhead budget: a graph launch's cost is measured apart, every node at a launch's cost until then") {
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  // 800 replays/s of 200 nodes. Before anything is measured, a replay is charged as 200
  // launches at the 4 us prior: 800 us.
  PlayGraphs(b, now, 0.05, 800, 200, 10'000, 50'000);
  auto f = b.figures();
  REQUIRE_FALSE(f.cupti_graph_ns_measured);
  CHECK(f.cupti_graph_ns == Approx(200 * 4000));
  CHECK(f.cupti_calls == 0);  // graph launches are not calls at the launch's cost
  CHECK(f.cupti_added_ns == Approx(f.cupti_graph_launches * 800'000.0).epsilon(0.001));
  // Once measured (50 in windows, 50 outside): 50 us, what the replays really pay, and every
  // replay so far repriced at it. The windows then cover what 1% buys at 50 us a replay (4%
  // of the time): about a quarter of the run, not the 1/64 the prior allowed.
  PlayGraphs(b, now, 20, 800, 200, 10'000, 50'000);
  f = b.figures();
  REQUIRE(f.cupti_graph_ns_measured);
  CHECK(f.cupti_graph_ns == Approx(50'000).margin(100));
  CHECK(f.cupti_added_ns == Approx(f.cupti_graph_launches * 50'000.0).epsilon(0.01));
  const double added = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
  CHECK(added <= 0.01 * 20.05 * kS + 50 * kMs + 3 * kMs);
  CHECK(added >= 0.8 * (0.01 * 20.05 * kS + 50 * kMs));
  const double open_share = static_cast<double>(f.window_ns) / static_cast<double>(f.elapsed_ns);
  CHECK(open_share > 0.15);
  CHECK(open_share < 0.35);
}

TEST_CASE("overhead budget: a graph's nodes do not scale the other calls' cost") {
  // Replays of 200 nodes beside 100 launches a cycle, each recorded as 2 kernels (work
  // launched around the hooks): the launches are charged twice each, not 200 times.
  gi::CuptiBudget::Options o;
  o.mode = gi::CuptiBudget::Mode::kFull;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  PlayGraphs(b, now, 1, 800, 200, 10'000, 50'000, 100, 2);
  const auto f = b.figures();
  CHECK(f.cupti_graph_launches == 800);
  CHECK(f.cupti_calls == 2 * 100 * 100);
}

TEST_CASE("overhead budget: CUPTI's cost is measured from several cycles in and out of windows, not one") {
  // Replays cost 54 us a call outside windows and 75 inside; the first cycle after the first
  // window caught them at 88 us (the collector starting beside the job on a 2-core machine).
  // Measured from that cycle alone CUPTI's cost was 0, and the window it opened stayed open:
  // 2 s traced whole at 21 us a replay, 1.2M records a second the collector could not take.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  uint64_t gaps = 0;
  bool measured_low = false;
  // 80 s, 75 replays a cycle: priced at 200 launches each until measured (0.8 ms a replay),
  // a window of them opens every ~19 s.
  for (int i = 0; i < 8000; ++i) {
    const bool open = b.open();
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    const uint64_t call_ns = open ? 75'000 : (gaps == 0 ? 88'000 : 54'000);
    gaps += !open;
    for (int k = 0; k < 75; ++k) c.graph_launches.Add(call_ns);
    c.enqueues = c.hook_calls = 75;
    c.graph_records = c.device_records = open ? 75 * 200 : 0;
    c.recorded_enqueues = c.recorded_graph_launches = open ? 75 : 0;
    b.Update(c);
    const auto f = b.figures();
    measured_low = measured_low || (f.cupti_graph_ns_measured && f.cupti_graph_ns < 15'000);
  }
  const auto f = b.figures();
  INFO("gaps " << gaps << ", windows " << f.windows << ", cupti per replay " << f.cupti_graph_ns);
  CHECK_FALSE(measured_low);
  REQUIRE(f.cupti_graph_ns_measured);
  CHECK(f.cupti_graph_ns == Approx(21'000).epsilon(0.05));
  const double added = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
  CHECK(added <= 0.01 * 80 * kS + 50 * kMs + 5 * kMs);
  CHECK(f.windows >= 3);
}

TEST_CASE("overhead budget: GPUWATCH_OVERHEAD and GPUWATCH_CUPTI read alike by the library and gpuwatch run") {
  namespace w = gpuwatch::wire;
  double x = 0;
  std::string error;
  CHECK(w::ParseOverheadShare("1%", &x, &error));
  CHECK(x == Approx(0.01));
  CHECK(w::ParseOverheadShare("0.5%", &x, &error));
  CHECK(x == Approx(0.005));
  CHECK(w::ParseOverheadShare("0.02", &x, &error));
  CHECK(x == Approx(0.02));
  CHECK(w::ParseOverheadShare("100%", &x, &error));
  CHECK(x == 1.0);
  for (const char* bad : {"", "0", "0%", "-1%", "150%", "2", "1%%", "5x", "%", "abc"}) {
    INFO(bad);
    x = 7;
    error.clear();
    CHECK_FALSE(w::ParseOverheadShare(bad, &x, &error));
    CHECK(x == 7);  // untouched
    CHECK(error.find("not a share") != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  }
  w::CuptiSetting m = w::CuptiSetting::kOff;
  CHECK(w::ParseCuptiSetting("budget", &m, &error));
  CHECK(m == w::CuptiSetting::kBudget);
  CHECK(w::ParseCuptiSetting("on", &m, &error));  // the budget's older name
  CHECK(m == w::CuptiSetting::kBudget);
  CHECK(w::ParseCuptiSetting("full", &m, &error));
  CHECK(m == w::CuptiSetting::kFull);
  CHECK(w::ParseCuptiSetting("off", &m, &error));
  CHECK(m == w::CuptiSetting::kOff);
  CHECK_FALSE(w::ParseCuptiSetting("ful", &m, &error));
  CHECK(error.find("expected budget, full or off") != std::string::npos);
}

TEST_CASE("overhead budget: the cycle after a window opens or closes is timed neither in nor out") {
  // Replays cost 63 us a call outside windows and 130 inside; the cycle in which CUPTI is
  // being disabled (the sender flushing its buffers) takes them 400 us, and the one in which
  // it is being enabled runs half of them at each cost. Timed with the rest, those cycles
  // put CUPTI's cost 9% low here (61 us); on a loaded 2-core machine, one such cycle among
  // the first five outside a window made it 6 us a replay, and the window it then opened
  // stayed open for 98% of the run.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  bool was_open = true;
  uint64_t open_cycles = 0;
  const int kCycles = 8000;  // 80 s, 75 replays a cycle (a window every ~19 s until measured)
  for (int i = 0; i < kCycles; ++i) {
    const bool open = b.open();
    open_cycles += open;
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    for (int k = 0; k < 75; ++k) {
      const uint64_t ns = open == was_open ? (open ? 130'000 : 63'000)
                          : open           ? (k % 2 ? 130'000 : 63'000)
                                           : 400'000;
      c.graph_launches.Add(ns);
    }
    was_open = open;
    c.enqueues = c.hook_calls = 75;
    c.graph_records = c.device_records = open ? 75 * 200 : 0;
    c.recorded_enqueues = c.recorded_graph_launches = open ? 75 : 0;
    b.Update(c);
  }
  const auto f = b.figures();
  INFO("windows " << f.windows << ", cupti per replay " << f.cupti_graph_ns << ", open " << open_cycles);
  REQUIRE(f.cupti_graph_ns_measured);
  CHECK(f.cupti_graph_ns == Approx(67'000).epsilon(0.02));
  CHECK(f.windows >= 3);
  CHECK(open_cycles < kCycles / 5);
  const double added = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
  CHECK(added <= 0.01 * 80 * kS + 50 * kMs + 10 * kMs);
}
