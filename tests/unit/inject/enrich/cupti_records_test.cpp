// CUPTI's records read into ActivityRecord (enrich/cupti_records.h), from a hand-built buffer
// walked as cuptiActivityGetNextRecord walks one.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "enrich/cupti_records.h"

namespace gi = gpuwatch::inject;

namespace {

// A buffer of kernel records only: each is sizeof(CUpti_ActivityKernel10).
CUptiResult CUPTIAPI NextKernel(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  const size_t at = *record ? static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + sizeof(CUpti_ActivityKernel10) : 0;
  if (at + sizeof(CUpti_ActivityKernel10) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  return CUPTI_SUCCESS;
}

CUpti_ActivityKernel10 Kernel(uint64_t start, uint64_t end, uint32_t correlation) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.correlationId = correlation;
  k.name = "gemm";
  k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
  return k;
}

}  // namespace

TEST_CASE("CUPTI records: kernels still running when their buffer was forced back are counted, not timed") {
  // A window's detach flushes with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: a kernel the device has
  // not finished comes back with 0 for both times. Read as work, it would sit at CUPTI's
  // epoch minus the clock offset, a span of the whole run.
  const int64_t offset = 1'000'000;
  std::vector<CUpti_ActivityKernel10> recs = {Kernel(5'000'000, 5'004'000, 1), Kernel(0, 0, 2),
                                              Kernel(6'000'000, 6'002'000, 3)};
  auto* buffer = reinterpret_cast<uint8_t*>(recs.data());
  std::vector<gi::ActivityRecord> got;
  uint64_t incomplete = 0;
  gi::ParseActivityBuffer(NextKernel, offset, buffer, recs.size() * sizeof recs[0],
                          [&](const gi::ActivityRecord& a) { got.push_back(a); }, incomplete);
  CHECK(incomplete == 1);
  REQUIRE(got.size() == 2);
  CHECK(got[0].correlation_id == 1);
  CHECK(got[0].start_ns == 4'000'000);  // on CLOCK_MONOTONIC: CUPTI's time less the offset
  CHECK(got[0].end_ns == 4'004'000);
  CHECK(got[1].correlation_id == 3);
  CHECK(got[1].kind == gi::kActKernel);
}
