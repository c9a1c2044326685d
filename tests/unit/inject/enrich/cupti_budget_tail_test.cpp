// What a budget window leaves after it closes (enrich/cupti_budget.h): CUPTI's detach, the
// calls made while it lingered before it, and the tail the two make, each charged, spent and
// reported, and priced ahead so that a window leaves room for its own. Cycle by cycle with
// made-up counts, as in cupti_budget_test.cpp.
#include <catch2/catch.hpp>

#include <vector>

#include "enrich/cupti_budget.h"

namespace gi = gpuwatch::inject;

namespace {

constexpr uint64_t kMs = 1'000'000, kS = 1000 * kMs;

}  // namespace

TEST_CASE("overhead budget: detaching CUPTI after a window is CUPTI's cost, spent and reported") {
  // 100k launches/s, CUPTI adding 3 us a launch in windows, and each detach taking 2 ms of a
  // job's thread (cuptiFinalize at the exit of its next call): the detaches are in CUPTI's
  // added time, so the windows leave room for them and the whole stays within the budget.
  gi::CuptiBudget::Options o;
  o.hook_ns = 20;
  uint64_t now = 1 * kS;
  const uint64_t t0 = now;
  gi::CuptiBudget b(o, now);
  uint64_t detaches = 0, cupti_paid = 0;
  bool was_open = b.open();
  for (int i = 0; i < 1000; ++i) {
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    c.hook_calls = c.enqueues = 1000;
    for (int k = 0; k < 1000; ++k) c.launches.Add(b.open() ? 7000 : 4000);
    cupti_paid += b.open() ? 1000 * 3000 : 0;
    c.device_records = b.open() ? c.enqueues : 0;
    c.recorded_enqueues = b.open() ? c.enqueues : 0;
    if (was_open && !b.open()) ++detaches;  // the sender detaches in the cycle after a close
    was_open = b.open();
    c.cupti_detaches = detaches;
    c.cupti_detach_ns = detaches * 2 * kMs;  // cumulative, as the sender reads them
    b.Update(c);
  }
  const auto f = b.figures();
  REQUIRE(detaches >= 2);
  CHECK(f.cupti_detaches == detaches);
  CHECK(f.cupti_detach_ns == detaches * 2 * kMs);
  // CUPTI's added time: the windows' calls at the measured cost, and the detaches.
  CHECK(static_cast<double>(f.cupti_added_ns) ==
        Approx(static_cast<double>(cupti_paid + detaches * 2 * kMs)).epsilon(0.1));
  const double planned = b.PlannedNs(now - t0);
  const double spent = static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
  CHECK(spent <= planned + 5 * kMs);  // a cycle of overshoot, and a detach, at most
  CHECK(spent >= 0.9 * planned);
}

namespace {

// 10 s at 100k launches/s of 4 us each, hooks at 20 ns; a window adds 3 us a launch, and a
// disabled CUPTI 0.9 us until it is detached, `linger_cycles` cycles after each close (-1:
// never, CUPTI kept attached), the detach taking `detach_ns` of a job's thread. The lingering
// calls are counted apart, as the assembler counts them.
struct Lingered {
  gi::CuptiBudget budget;
  uint64_t t0, now;
  double paid_ns = 0;        // what CUPTI really cost the calls
  uint64_t lingered = 0;     // calls made while it lingered
  std::vector<double> over;  // how far the added time was past the plan as each tail was
                             // paid (as the budget saw it, in the cycle that reported the detach)
  double Planned() const { return budget.PlannedNs(now - t0); }
  double Spent() const {
    const auto f = budget.figures();
    return static_cast<double>(f.hooks_added_ns + f.cupti_added_ns);
  }
};

Lingered PlayLingering(int linger_cycles, uint64_t detach_ns = 0) {
  gi::CuptiBudget::Options o;
  o.hook_ns = 20;
  Lingered r{gi::CuptiBudget(o, 1 * kS), 1 * kS, 1 * kS, 0, 0, {}};
  gi::CuptiBudget& b = r.budget;
  int since_close = -1;  // cycles since the last close; -1 while a window is open
  uint64_t detaches = 0;
  for (int i = 0; i < 1000; ++i) {
    const bool open = b.open();
    const bool lingering = !open && (linger_cycles < 0 || since_close < linger_cycles);
    gi::CuptiBudget::Cycle c;
    c.now_ns = r.now += 10 * kMs;
    c.hook_calls = c.enqueues = 1000;
    const double cupti = open ? 3000 : lingering ? 900 : 0;
    for (int k = 0; k < 1000; ++k) (lingering ? c.linger_launches : c.launches).Add(static_cast<uint64_t>(4000 + cupti));
    c.linger_enqueues = lingering ? c.enqueues : 0;
    c.device_records = open ? c.enqueues : 0;
    c.recorded_enqueues = open ? c.enqueues : 0;
    const bool detached = !open && since_close == linger_cycles;  // the sender detached in the cycle before
    detaches += detached;
    c.cupti_detaches = detaches;
    c.cupti_detach_ns = detaches * detach_ns;
    r.paid_ns += 1000 * cupti;
    r.lingered += c.linger_enqueues;
    b.Update(c);
    since_close = b.open() ? -1 : since_close + 1;
    if (detached) r.over.push_back(r.Spent() - r.Planned());
  }
  return r;
}

}  // namespace

TEST_CASE("overhead budget: what a disabled CUPTI leaves on the calls until its detach is measured, charged and spent") {
  // On an H200 a disabled CUPTI still cost a launch 1.3-1.6 us of the 5.3 it cost recording,
  // until cuptiFinalize; the detach comes a cycle or more after the close (the window's work
  // must finish first). Uncharged, those calls overspent the budget by what they cost, and
  // counted among the calls outside windows they made a window look cheaper than it was.
  const Lingered r = PlayLingering(2);
  const auto f = r.budget.figures();
  INFO("windows " << f.windows << ", lingering calls " << r.lingered << ", CUPTI " << f.cupti_ns << " ns a call, "
                  << f.cupti_linger_ns << " lingering");
  REQUIRE(f.windows >= 3);
  CHECK(f.cupti_linger_calls == r.lingered);
  REQUIRE(f.cupti_linger_ns_measured);
  CHECK(f.cupti_linger_ns == Approx(900).margin(30));
  REQUIRE(f.cupti_ns_measured);
  CHECK(f.cupti_ns == Approx(3000).margin(50));  // against detached calls only
  CHECK(static_cast<double>(f.cupti_added_ns) == Approx(r.paid_ns).epsilon(0.05));
  CHECK(r.Spent() <= r.Planned() + 5 * kMs);
}

TEST_CASE("overhead budget: a CUPTI kept attached lingers between all windows: charged at its share of the measured cost") {
  // GPUWATCH_CUPTI_DETACH=0, or a CUPTI that cannot call back: no call is made with it
  // detached, so its cost is the calls in windows against the lingering ones, which pay
  // kLingerShare of it. Here the leftover alone (0.9 us x 100k a second: 9% of the wall time)
  // is more than the budget: after the start's window (and one more, once the start's calls
  // are repriced at the measured cost) none opens again, and the summary says what it cost.
  const Lingered r = PlayLingering(-1);
  const auto f = r.budget.figures();
  INFO("windows " << f.windows << ", lingering calls " << r.lingered << ", CUPTI " << f.cupti_ns << " ns a call, "
                  << f.cupti_linger_ns << " lingering");
  CHECK(f.windows <= 2);
  CHECK(f.window_ns < 1 * kS);
  CHECK_FALSE(f.cupti_linger_ns_measured);
  CHECK(f.cupti_linger_calls == r.lingered);
  CHECK(f.cupti_ns == Approx(3000).margin(100));  // (3900 - 900 measured) / (1 - 0.3)
  CHECK(f.cupti_linger_ns == Approx(gi::CuptiBudget::kLingerShare * f.cupti_ns));
  CHECK(static_cast<double>(f.cupti_added_ns) == Approx(r.paid_ns).epsilon(0.05));
}

TEST_CASE("overhead budget: a window closes early by the tail it will leave, and opens only with credit for it") {
  // A job that seldom syncs: CUPTI detaches 10 cycles (100 ms) after each close, its 10k
  // lingering calls and the detach costing 9 + 3 ms. Charged only once paid, each tail took
  // the spend that far past the plan; priced ahead from the tails so far, a window leaves
  // room for its own, and each tail ends within a window's cycle of the plan.
  const Lingered r = PlayLingering(10, 3 * kMs);
  const auto f = r.budget.figures();
  const double tail = 10 * 1000 * 900 + 3 * kMs;
  INFO("windows " << f.windows << ", detaches " << f.cupti_detaches << ", tail priced " << r.budget.TailNs() << " ns");
  REQUIRE(f.cupti_detaches >= 3);
  // (A little more: the start's window was followed by another before its detach, and its
  // lingering calls are in the tails.)
  CHECK(r.budget.TailNs() == Approx(tail).epsilon(0.15));
  CHECK(f.windows >= 4);
  // The first tail is unknown until paid; after it, every tail ends within a window's cycle
  // (1000 calls x 3 us) of the plan. Unpriced, each ended a whole tail (12 ms) past it.
  for (size_t i = 1; i < r.over.size(); ++i) {
    INFO("tail " << i << " paid at " << r.over[i] / 1e6 << " ms over the plan");
    CHECK(r.over[i] <= 4 * kMs);
  }
  CHECK(r.Spent() <= r.Planned() + 5 * kMs);
  CHECK(static_cast<double>(f.cupti_added_ns) == Approx(r.paid_ns + f.cupti_detach_ns).epsilon(0.05));
}

TEST_CASE("overhead budget: a lingering CUPTI is never charged more than a recording one") {
  // The calls made while CUPTI lingers run as the sender and the collector handle the
  // window's last records: on a machine whose cores they share, those calls are slower for
  // that, and set against calls made with CUPTI detached they can read more than the
  // windows' calls did. A disabled CUPTI does not cost more than a recording one.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  uint64_t detaches = 0;
  bool was_open = true;
  for (int i = 0; i < 6000; ++i) {  // 60 s at 100k launches/s: 3 us in windows, 9 us lingering
    const bool open = b.open();
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    const bool lingering = !open && was_open;  // one cycle after each close, then the detach
    detaches += lingering;
    c.cupti_detaches = detaches;
    c.enqueues = c.hook_calls = 1000;
    for (int k = 0; k < 1000; ++k) (lingering ? c.linger_launches : c.launches).Add(open ? 7000 : lingering ? 13'000 : 4000);
    c.linger_enqueues = lingering ? 1000 : 0;
    c.device_records = open ? c.enqueues : 0;
    c.recorded_enqueues = open ? c.enqueues : 0;
    was_open = open;
    b.Update(c);
  }
  const auto f = b.figures();
  INFO("cupti " << f.cupti_ns << ", lingering " << f.cupti_linger_ns);
  REQUIRE(f.cupti_ns_measured);
  REQUIRE(f.cupti_linger_ns_measured);
  CHECK(f.cupti_ns == Approx(3000).epsilon(0.05));
  CHECK(f.cupti_linger_ns == Approx(f.cupti_ns));
}

TEST_CASE("overhead budget: where CUPTI is detached, the lingering calls never stand in for the detached ones") {
  // A GPU-bound job launches only at its steps' starts, and each window's close is followed by
  // the detach at the next step: its only calls outside windows are the lingering ones, slowed
  // as the window's records are handled (12 us, as slow as in a window). Set against them, a
  // recording CUPTI read 0 and the window then open stayed open; without calls made detached
  // to measure against, the budget keeps its prior.
  gi::CuptiBudget::Options o;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  uint64_t detaches = 0, open_cycles = 0;
  bool was_open = true;
  const int kCycles = 3000;  // 30 s
  for (int i = 0; i < kCycles; ++i) {
    const bool open = b.open();
    open_cycles += open;
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    const bool lingering = !open && was_open;
    detaches += lingering;
    c.cupti_detaches = detaches;
    if (open || lingering) {
      c.enqueues = c.hook_calls = 1000;
      for (int k = 0; k < 1000; ++k) (lingering ? c.linger_launches : c.launches).Add(12'000);
      c.linger_enqueues = lingering ? 1000 : 0;
    }
    c.device_records = open ? c.enqueues : 0;
    c.recorded_enqueues = open ? c.enqueues : 0;
    was_open = open;
    b.Update(c);
  }
  const auto f = b.figures();
  INFO("cupti " << f.cupti_ns << ", windows " << f.windows << ", open " << open_cycles);
  REQUIRE(f.cupti_detaches > 5);
  CHECK_FALSE(f.cupti_ns_measured);
  CHECK(f.cupti_ns == o.prior_cupti_ns);
}

TEST_CASE("overhead budget: a window's records that come back in the cycles after it do not make a call count twice") {
  // Under load the sender's cycles stretch: the cycle after a close ran with CUPTI recording
  // for part of it, and its records (and the window's last ones) came back after the budget
  // had counted the window's calls. Counted per cycle, a launch read as 2.2 of CUPTI's calls
  // and every lingering call after it as 2.2 (GPUWATCH_CUPTI_DETACH=0: 1.41M calls charged
  // for 625k launches). Per call made while CUPTI recorded, as here, it reads one.
  gi::CuptiBudget::Options o;
  o.hook_ns = 20;
  uint64_t now = 1 * kS;
  gi::CuptiBudget b(o, now);
  uint64_t lingered = 0, recorded = 0, late = 0;
  bool was_open = false;  // no records come back in the first cycle
  for (int i = 0; i < 1000; ++i) {
    const bool open = b.open();
    gi::CuptiBudget::Cycle c;
    c.now_ns = now += 10 * kMs;
    c.hook_calls = c.enqueues = 1000;
    for (int k = 0; k < 1000; ++k) c.launches.Add(open ? 7000 : 4000);
    // A cycle's records come back in the next one. The first cycle after a close: CUPTI
    // recorded 600 of its calls before it was disabled; their records come back with the
    // window's last cycle's.
    const bool after_close = was_open && !open;
    c.recorded_enqueues = open ? 1000 : after_close ? 600 : 0;
    c.device_records = open ? (was_open ? 1000 : 0) : after_close ? 1000 + 600 : 0;
    late += after_close;
    recorded += c.recorded_enqueues;
    c.linger_enqueues = after_close ? 400 : 0;  // then CUPTI is detached
    lingered += c.linger_enqueues;
    was_open = open;
    b.Update(c);
  }
  const auto f = b.figures();
  INFO("windows " << f.windows << ", CUPTI calls " << f.cupti_calls << ", lingering " << f.cupti_linger_calls);
  REQUIRE(f.windows >= 2);
  REQUIRE(late > 0);
  // One record a call: the lingering calls are counted once each (per cycle: 1 + 0.6 / the
  // window's cycles).
  CHECK(f.cupti_linger_calls == Approx(static_cast<double>(lingered)).epsilon(0.01));
}
