// Where a rank ran (analyze/host_placement.h): cpulists, its CPUs against its GPU's NUMA
// node, and the cgroup's throttling during the GPU's host-wait gaps (input_io.h); the
// cpu_affinity and cpu_throttled findings that read them.
#include <catch2/catch.hpp>

#include "findings_lookup.h"
#include "analyze/findings.h"
#include "analyze/host_placement.h"
#include "analyze/input_io.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kMs = 1'000'000;

using gpuwatch::collector::test::Find;

// A rank whose GPU waited 400 ms of its 1 s for the host.
col::RankResult WaitingRank() {
  col::RankResult r;
  r.rank = 0;
  r.gpu.cupti_ranks = 1;
  r.gpu.first_ns = 0;
  r.gpu.last_ns = r.gpu.active_ns = 1000 * kMs;
  r.gpu.run.busy = 600 * kMs;
  r.io.host_wait_s = 0.4;
  return r;
}

wire::ProcSample Sample(uint64_t t, uint64_t periods, uint64_t throttled, uint64_t throttled_ns) {
  wire::ProcSample s;
  s.set_t_ns(t);
  s.set_cgroup_periods(periods);
  s.set_cgroup_throttled_periods(throttled);
  s.set_cgroup_throttled_ns(throttled_ns);
  return s;
}

}  // namespace

TEST_CASE("collector: cpulists parse to sorted CPUs, a malformed one to none") {
  CHECK(col::ParseCpuList("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(col::ParseCpuList("5,1-2\n") == std::vector<int>{1, 2, 5});
  CHECK(col::ParseCpuList("").empty());
  CHECK(col::ParseCpuList("3-1").empty());
  CHECK(col::ParseCpuList("a-b").empty());
  CHECK(col::ParseCpuList("0-100000000").size() == col::kMaxCpus);
}

TEST_CASE("collector: cpu_affinity when most of the rank's CPUs are off its GPU's NUMA node") {
  col::RankResult r = WaitingRank();
  r.env.cpu_affinity = "0-7";
  r.env.device_numa_node = 1;
  r.env.device_numa_cpus = "6-11";
  const col::PlacementFigures p = col::Placement(r.env);
  CHECK(p.cpus == 8);
  CHECK(p.cpus_on_node == 2);
  CHECK(p.OffNodeShare() == Approx(0.75));
  const auto found = col::RankFindings(r);
  const col::Finding* f = Find(found, "cpu_affinity");
  REQUIRE(f);
  CHECK(f->time_lost_s == Approx(0.4 * 0.75 * 0.25));
  CHECK(f->evidence["gpu_numa_node"] == 1);
  CHECK(f->evidence["cpus_on_gpu_node"] == 2);
  CHECK(f->fix.find("NUMA") != std::string::npos);

  r.env.cpu_affinity = "6-9";  // half on the node: not reported
  CHECK_FALSE(Find(col::RankFindings(r), "cpu_affinity"));
  r.env.cpu_affinity = "0-7";
  r.env.device_numa_node = -1;  // the GPU's node not known
  CHECK_FALSE(Find(col::RankFindings(r), "cpu_affinity"));
}

TEST_CASE("collector: cpu_throttled from the cgroup's throttled periods during the GPU's host-wait gaps") {
  col::InputIo io;
  // Samples every 100 ms over 1 s: periods of 10 ms (10 per interval); throttled in 8 of 10
  // during [300, 700) ms, never elsewhere.
  uint64_t periods = 0, throttled = 0, throttled_ns = 0;
  for (int i = 0; i <= 10; ++i) {
    io.OnProcSample(Sample(i * 100 * kMs, periods, throttled, throttled_ns));
    periods += 10;
    if (i >= 3 && i < 7) throttled += 8, throttled_ns += 30 * kMs;
  }
  io.OnGap(300 * kMs, 700 * kMs);  // the GPU waited for the host exactly then
  io.OnGap(800 * kMs, 850 * kMs);  // and briefly when the group was not throttled
  const col::InputIoFigures& f = io.figures();
  CHECK(f.cgroup);
  CHECK(f.periods == Approx(45));
  CHECK(f.throttled_periods == Approx(32));
  CHECK(f.throttled_gap_s == Approx(0.4 * 0.8));
  CHECK(f.all_throttled_periods == Approx(32));
  CHECK(f.all_throttled_s == Approx(0.12));

  col::RankResult r = WaitingRank();
  r.io = f;
  r.env.cgroup_version = 2;
  r.env.cpu_quota_us = 50000;
  r.env.cpu_period_us = 100000;
  const auto found = col::RankFindings(r);
  const col::Finding* t = Find(found, "cpu_throttled");
  REQUIRE(t);
  CHECK(t->time_lost_s == Approx(0.32));
  CHECK(t->evidence["cpu_quota_cores"].get<double>() == Approx(0.5));
  CHECK(t->evidence["throttled_share_in_gaps"].get<double>() == Approx(32.0 / 45));

  // A cgroup that was never throttled: nothing.
  col::InputIo calm;
  for (int i = 0; i <= 10; ++i) calm.OnProcSample(Sample(i * 100 * kMs, 10 * i, 0, 0));
  calm.OnGap(300 * kMs, 700 * kMs);
  r.io = calm.figures();
  CHECK_FALSE(Find(col::RankFindings(r), "cpu_throttled"));
}
