// What gpuwatch asks CUPTI to record, and the switch that turns it on and off: the record
// kinds (GPUWATCH_CUPTI_KINDS) and, for the runtime and driver kinds, the API records of the
// calls that enqueue work only (cupti_api_records.h), where this CUPTI can choose calls.
#pragma once
#include <cupti.h>

#include <vector>

#include "enrich/cupti_api_records.h"

namespace gpuwatch::inject {

// CUPTI's functions gpuwatch calls, from the libcupti it loaded; null where that CUPTI lacks one.
struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe;
  decltype(&cuptiUnsubscribe) unsubscribe;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&cuptiActivityEnable) enable;
  decltype(&cuptiActivityDisable) disable;
  decltype(&cuptiActivityFlushAll) flush_all;
  decltype(&cuptiActivityGetNextRecord) next_record;
  decltype(&cuptiGetTimestamp) timestamp;
  decltype(&cuptiActivityEnableHWTrace) enable_hw_trace;  // CUDA 13 CUPTI; null in older ones
  decltype(&cuptiEnableDomain) enable_domain;  // these two detach CUPTI between windows
  decltype(&cuptiFinalize) finalize;
  // API records of chosen calls only (CUPTI 12 and later).
  decltype(&cuptiActivityEnableRuntimeApi) enable_runtime_api;
  decltype(&cuptiActivityEnableDriverApi) enable_driver_api;
};
CuptiApi LoadCuptiApi(void* lib);

// The record kinds gpuwatch enables: the device's work, host waits, and the runtime/driver
// calls that enqueued work (to tie kernels launched around the hooks to their host call).
// GPUWATCH_CUPTI_KINDS=kernel,memcpy,memset,sync,runtime,driver picks a subset (to measure
// what each kind costs).
std::vector<CUpti_ActivityKind> Kinds();

// Turns the kinds on or off: the runtime and driver kinds as the enqueueing calls of `only`
// where it names them, else whole. Returns the first kind CUPTI refused
// (CUPTI_ACTIVITY_KIND_INVALID: none).
CUpti_ActivityKind SwitchKinds(const CuptiApi& api, const ApiRecordSelection& only, bool on);

// The enqueueing calls' API records only, unless GPUWATCH_CUPTI_API_RECORDS=all, or this CUPTI
// cannot name or choose them (then whole kinds, as before CUDA 12's CUPTI). Tried here, so
// that a refusal falls back before the first window rather than losing its records; left off.
ApiRecordSelection ChooseApiRecords(void* lib, const CuptiApi& api);

// The calls of `chosen` off and their two kinds on whole: for a CUPTI that took the choice
// and ignores it.
void SwitchToWholeApiKinds(const CuptiApi& api, const ApiRecordSelection& chosen);

}  // namespace gpuwatch::inject
