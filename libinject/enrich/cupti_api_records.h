// Which runtime and driver calls gpuwatch asks CUPTI to record: those that put work on the
// device (launches, copies, memsets, graph launches). An API record is used only to tie a
// device record to the call that enqueued it (its correlation id: launch delay, the idle
// breakdown, a collective's NCCL kernels, a window's work counted back before a detach), so a record of
// any other call is one CUPTI times and writes, and gpuwatch ships and the collector reads,
// for nothing. A framework makes several such calls per launch: PyTorch checks every launch
// with cudaGetLastError and asks cudaGetDevice in its device guards, and on an H200 its
// launch loop sent ~10 CUPTI records per launch with whole API kinds on (docs/PERFORMANCE.md).
#pragma once
#include <cupti.h>

#include <cstdint>
#include <vector>

namespace gpuwatch::inject {

struct ApiRecordSelection {
  std::vector<uint32_t> runtime, driver;  // callback ids; both empty: whole kinds
  bool empty() const { return runtime.empty() && driver.empty(); }
};

// A call that enqueues device work, by its CUPTI callback name ("cudaLaunchKernel_v7000",
// "cuMemcpyHtoDAsync_v2", "cudaGraphLaunch_ptsz_v10000", ...): by name, so that every
// variant and version suffix counts, those of a CUPTI newer than these headers included.
bool EnqueuesDeviceWork(CUpti_CallbackDomain domain, const char* name);

// The enqueueing calls' callback ids of both domains, named through `callback_name`
// (cuptiGetCallbackName), ids below `runtime_ids` / `driver_ids`. Empty for a domain whose
// names CUPTI does not give.
using CallbackNameFn = CUptiResult (*)(CUpti_CallbackDomain, uint32_t, const char**);
ApiRecordSelection SelectEnqueueingCalls(CallbackNameFn callback_name, uint32_t runtime_ids = CUPTI_RUNTIME_TRACE_CBID_SIZE,
                                         uint32_t driver_ids = CUPTI_DRIVER_TRACE_CBID_SIZE);

}  // namespace gpuwatch::inject
