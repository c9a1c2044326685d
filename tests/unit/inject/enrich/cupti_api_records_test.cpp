// Which calls get CUPTI API records (enrich/cupti_api_records.h): the enqueueing ones, told by
// CUPTI's names for them, every variant and version suffix; the names here are CUPTI 13's.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>

#include "enrich/cupti_api_records.h"

namespace gi = gpuwatch::inject;

TEST_CASE("CUPTI API records: the calls that enqueue device work are chosen by name, the others not") {
  const auto rt = CUPTI_CB_DOMAIN_RUNTIME_API;
  const auto drv = CUPTI_CB_DOMAIN_DRIVER_API;
  for (const char* n : {"cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
                        "cudaLaunchCooperativeKernel_v9000", "cudaMemcpyAsync_v3020", "cudaMemcpy2DToArray_v3020",
                        "cudaMemcpyPeerAsync_v4000", "cudaMemsetAsync_ptsz_v7000", "cudaGraphLaunch_v10000"})
    CHECK(gi::EnqueuesDeviceWork(rt, n));
  for (const char* n : {"cuLaunchKernel", "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel", "cuMemcpyHtoDAsync_v2",
                        "cuMemsetD8Async", "cuGraphLaunch"})
    CHECK(gi::EnqueuesDeviceWork(drv, n));
  // PyTorch's per-launch check and device guard, syncs, queries, events, host functions.
  for (const char* n : {"cudaGetLastError_v3020", "cudaGetDevice_v3020", "cudaStreamSynchronize_v3020",
                        "cudaEventRecord_v3020", "cudaStreamIsCapturing_v10000", "cudaLaunchHostFunc_v10000",
                        "cudaMallocAsync_v11020", "cudaMemGetInfo_v3020"})
    CHECK_FALSE(gi::EnqueuesDeviceWork(rt, n));
  for (const char* n : {"cuCtxGetCurrent", "cuLaunchHostFunc", "cuMemAlloc_v2", "cuStreamSynchronize"})
    CHECK_FALSE(gi::EnqueuesDeviceWork(drv, n));
  // Names belong to their domain; no name, no record.
  CHECK_FALSE(gi::EnqueuesDeviceWork(drv, "cudaLaunchKernel_v7000"));
  CHECK_FALSE(gi::EnqueuesDeviceWork(CUPTI_CB_DOMAIN_RESOURCE, "cuLaunchKernel"));
  CHECK_FALSE(gi::EnqueuesDeviceWork(rt, nullptr));
}

namespace {
// A CUPTI that names a few ids of each domain.
const std::map<std::pair<int, uint32_t>, const char*> kNames = {
    {{CUPTI_CB_DOMAIN_RUNTIME_API, 10}, "cudaGetLastError_v3020"},
    {{CUPTI_CB_DOMAIN_RUNTIME_API, 211}, "cudaLaunchKernel_v7000"},
    {{CUPTI_CB_DOMAIN_RUNTIME_API, 41}, "cudaMemcpyAsync_v3020"},
    {{CUPTI_CB_DOMAIN_DRIVER_API, 307}, "cuLaunchKernel"},
    {{CUPTI_CB_DOMAIN_DRIVER_API, 17}, "cuCtxGetCurrent"},
};
CUptiResult FakeName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  const auto it = kNames.find({domain, cbid});
  *name = it == kNames.end() ? nullptr : it->second;
  return it == kNames.end() ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
}
}  // namespace

TEST_CASE("CUPTI API records: the chosen ids are those CUPTI names as enqueueing, none without names") {
  const gi::ApiRecordSelection chosen = gi::SelectEnqueueingCalls(FakeName, 400, 400);
  CHECK(chosen.runtime == std::vector<uint32_t>{41, 211});
  CHECK(chosen.driver == std::vector<uint32_t>{307});
  CHECK_FALSE(chosen.empty());
  // Ids past the bound are not asked for; a CUPTI without names chooses nothing (whole kinds).
  CHECK(gi::SelectEnqueueingCalls(FakeName, 100, 100).runtime == std::vector<uint32_t>{41});
  CHECK(gi::SelectEnqueueingCalls(nullptr).empty());
}
