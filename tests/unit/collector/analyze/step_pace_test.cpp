// A step's time as the job paced it (analyze/step_pace.h): a loop that runs ahead of the GPU
// is paced by the device, a loop that waits for its data by the host; device work belongs to
// the step whose host range launched it, whichever comes first, the step's mark or the work;
// the steps' times add up to their span; memory stays bounded.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "analyze/step_pace.h"
#include "common/thresholds.h"

namespace dg = gpuwatch::collector;

namespace {

constexpr uint64_t kMs = 1'000'000;

dg::StepMark Mark(uint64_t start, uint64_t end, bool covered = true) { return {start, end, covered}; }

uint64_t Sum(const std::vector<uint64_t>& done, uint64_t first_start) {
  return done.empty() ? 0 : done.back() - first_start;
}

}  // namespace

TEST_CASE("step pace: a host that runs ahead is paced by the device") {
  // Ranges of 4 ms every 5 ms; each step launches 26 ms of work, queued behind the last.
  dg::StepPace p;
  const int n = 40;
  uint64_t dev = 0;
  for (int k = 0; k < n; ++k) {
    const uint64_t start = 100 * kMs + k * 5 * kMs;
    p.OnStep(Mark(start, start + 4 * kMs));
    dev = std::max(dev, start + kMs) + 26 * kMs;  // launched 1 ms into the step
    p.OnDeviceWork(start + kMs, dev);             // released after the step's mark
  }
  std::vector<uint64_t> done;
  const dg::PaceStats st = p.Finish(done);
  CHECK(st.step.count() == n);
  CHECK(st.step.Percentile(0.5) == Approx(26 * kMs).epsilon(0.01));
  CHECK(st.host_period.Percentile(0.5) == Approx(5 * kMs).epsilon(0.01));
  CHECK(st.device_period.Percentile(0.5) == Approx(26 * kMs).epsilon(0.01));
  // The steps' times add up to their span: the first start to the last work's end.
  CHECK(st.step.sum_ns() == dev - 100 * kMs);
  REQUIRE(done.size() == n);
  CHECK(done.back() == dev);
  CHECK(Sum(done, 100 * kMs) == st.step.sum_ns());
}

TEST_CASE("step pace: a host that waits for its data is paced by the host") {
  // 10 ms of host work, then 2 ms of kernels and a sync: the range is the whole step.
  dg::StepPace p;
  for (int k = 0; k < 20; ++k) {
    const uint64_t start = k * 12 * kMs;
    p.OnDeviceWork(start + 10 * kMs, start + 12 * kMs - 10'000);  // released before the mark
    p.OnStep(Mark(start, start + 12 * kMs));
  }
  std::vector<uint64_t> done;
  const dg::PaceStats st = p.Finish(done);
  // (the histograms read within 1/128)
  CHECK(st.step.Percentile(0.5) == Approx(12 * kMs).epsilon(0.01));
  CHECK(st.host_period.Percentile(0.5) == Approx(12 * kMs).epsilon(0.01));
  CHECK(st.device_period.Percentile(0.5) == Approx(12 * kMs).epsilon(0.01));
  CHECK(done[3] == 4 * 12 * kMs);  // done when the range closed, after its work
}

TEST_CASE("step pace: work launched between two ranges is the earlier step's") {
  dg::StepPace p;
  p.OnStep(Mark(0, 4 * kMs));
  p.OnDeviceWork(6 * kMs, 30 * kMs);  // after step 0's range, before step 1 starts
  p.OnStep(Mark(10 * kMs, 14 * kMs));
  p.OnDeviceWork(11 * kMs, 40 * kMs);  // step 1's
  std::vector<uint64_t> done;
  const dg::PaceStats st = p.Finish(done);
  REQUIRE(done.size() == 2);
  CHECK(done[0] == 30 * kMs);
  CHECK(done[1] == 40 * kMs);
  CHECK(st.device_period.Percentile(0.5) == Approx(10 * kMs).epsilon(0.01));
  // Work launched before the first step (set-up) is no step's.
  dg::StepPace q;
  q.OnDeviceWork(0, 50 * kMs);
  q.OnStep(Mark(kMs, 2 * kMs));
  q.Finish(done);
  CHECK(done == std::vector<uint64_t>{2 * kMs});
}

TEST_CASE("step pace: a step without recorded device work is done when its range closes") {
  dg::StepPace p;
  p.OnStep(Mark(0, kMs));
  p.OnDeviceWork(0, 20 * kMs);
  p.OnStep(Mark(2 * kMs, 3 * kMs, /*covered=*/false));  // outside CUPTI's windows
  p.OnStep(Mark(4 * kMs, 5 * kMs, false));
  std::vector<uint64_t> done;
  const dg::PaceStats st = p.Finish(done);
  // Done never goes back: the later steps end with step 0's work.
  CHECK(done == std::vector<uint64_t>{20 * kMs, 20 * kMs, 20 * kMs});
  CHECK(st.step.sum_ns() == 20 * kMs);
  CHECK(st.device_period.count() == 0);  // no two consecutive steps with recorded work
}

TEST_CASE("step pace: memory stays bounded over a long run, and every step is counted") {
  dg::StepPace p;
  const uint64_t n = 3 * dg::kMaxSteps;
  for (uint64_t k = 0; k < n; ++k) {
    const uint64_t start = k * kMs;
    p.OnStep(Mark(start, start + kMs / 2));
    for (int w = 0; w < 3; ++w) p.OnDeviceWork(start + w, start + kMs / 2 + w);
  }
  std::vector<uint64_t> done;
  const dg::PaceStats st = p.Finish(done);
  CHECK(st.step.count() == n);
  CHECK(done.size() == dg::kMaxSteps);  // the kept steps' records
  CHECK(st.host_period.Percentile(0.5) == Approx(kMs).epsilon(0.01));
  // Reset (another range turned out to be the step) starts over.
  p.Reset();
  CHECK(p.Finish(done).step.count() == 0);
}
