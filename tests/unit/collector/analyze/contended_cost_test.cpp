// What gpuwatch took from a job whose cores were all busy (analyze/contended_cost.h): the
// intervals in which the job waited for a core, the stretch of its threads, and the estimate
// built from them; null where a part is not known.
#include <catch2/catch.hpp>

#include "analyze/contended_cost.h"
#include "analyze/input_io.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kMs = 1'000'000;

wire::ProcSample Sample(uint64_t t, uint64_t cpu, uint64_t wait) {
  wire::ProcSample s;
  s.set_t_ns(t);
  s.set_cpu_ns(cpu);
  s.set_run_wait_ns(wait);
  s.set_processes(1);
  return s;
}

// One rank on two cores whose 10 s run waited for them half the time.
col::RankResult Contended() {
  col::RankResult r;
  r.env.cpu_affinity = "0-1";
  r.overhead.known = true;
  r.overhead.hooks_added_ns = 60 * kMs;
  r.overhead.cupti_added_ns = 40 * kMs;
  r.overhead.sender_cpu_ns = 100 * kMs;
  r.overhead.sampler_ns = 30 * kMs;  // 10 of it the signals', on the job's threads (in added)
  r.overhead.sampler_signals_ns = 10 * kMs;
  r.overhead.collector_cpu_ns = 180 * kMs;
  r.io.all_s = 10;
  r.io.all_cpu_s = 4;
  r.io.all_run_wait_s = 6;
  r.io.all_contended_s = 5;
  return r;
}

}  // namespace

TEST_CASE("collector: the intervals in which the job's threads waited for a core are counted whole") {
  col::InputIo io;
  io.OnProcSample(Sample(0, 0, 0));
  io.OnProcSample(Sample(100 * kMs, 90 * kMs, 1 * kMs));   // 1% waiting: cores to spare
  io.OnProcSample(Sample(200 * kMs, 150 * kMs, 41 * kMs));  // 40%: every core busy
  io.OnProcSample(Sample(300 * kMs, 250 * kMs, 46 * kMs));  // exactly the 5%: busy
  io.OnProcSample(Sample(400 * kMs, 350 * kMs, 50 * kMs));  // 4%: not
  const col::InputIoFigures& f = io.figures();
  CHECK(f.all_s == Approx(0.4));
  CHECK(f.all_contended_s == Approx(0.2));
  CHECK(f.all_run_wait_s == Approx(0.050));
}

TEST_CASE("collector: the contended cost is the job's threads' stretched time and a core's share of the CPU beside it") {
  const col::ContendedCost c = col::MeasureContendedCost(Contended());
  REQUIRE(c.known);
  CHECK(c.cpus == 2);
  CHECK(c.stretch == Approx(2.5));  // (4 + 6) / 4
  CHECK(c.busy_share == Approx(0.5));
  CHECK(c.beside_cpu_s == Approx(0.1 + 0.02 + 0.18));
  // 110 ms on the job's threads (hooks, CUPTI, the signals) x 2.5, and 300 ms beside it,
  // half of it while every core was busy, on two cores.
  CHECK(c.added_s == Approx(0.110 * 2.5 + 0.300 * 0.5 / 2));

  // Cores to spare: the budget's own account.
  col::RankResult idle = Contended();
  idle.io.all_run_wait_s = 0;
  idle.io.all_contended_s = 0;
  const col::ContendedCost i = col::MeasureContendedCost(idle);
  REQUIRE(i.known);
  CHECK(i.added_s == Approx(0.110));
}

TEST_CASE("collector: the contended cost is unknown without process samples, the affinity or the collector's CPU") {
  col::RankResult r = Contended();
  r.io = {};
  CHECK_FALSE(col::MeasureContendedCost(r).known);
  r = Contended();
  r.env.cpu_affinity.clear();
  CHECK_FALSE(col::MeasureContendedCost(r).known);
  r = Contended();
  r.overhead.collector_cpu_ns = 0;  // a summary rebuilt from the journal
  const col::ContendedCost c = col::MeasureContendedCost(r);
  CHECK_FALSE(c.known);
  CHECK(c.beside_cpu_s == Approx(0.12));  // what is known still adds up
}
