// The CUPTI activity calls an application's profiler makes (torch.profiler's Kineto,
// Nsight), wrapped so that gpuwatch steps aside: CUPTI has one pair of buffer callbacks per
// process. gpuwatch's own calls go through dlsym on libcupti, never through these.
#include <cupti.h>

#include "enrich/cupti_reader.h"
#include "hooks/missing.h"

namespace gi = gpuwatch::inject;

template <>
constexpr CUptiResult gi::hooks::MissingValue<CUptiResult>() {
  return CUPTI_ERROR_NOT_INITIALIZED;
}

// Seen on an H200 with PyTorch 2.11: a profiler registering its callbacks after gpuwatch
// received gpuwatch's buffers ("bufferCompleted called with unknown buffer"); registering
// before gpuwatch started and enabling its record kinds later, it received nothing while
// gpuwatch got its records. So: the application's callbacks are remembered whenever they
// are registered; when the application registers or enables a record kind, gpuwatch hands
// CUPTI over (flushes and keeps its own buffers, turns its kinds off, puts the
// application's callbacks back) and times the job with hooks and events from then on.
extern "C" {

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  GW_REAL(cuptiActivityRegisterCallbacks);
  gi::Cupti().AppCallbacks(reinterpret_cast<void*>(request), reinterpret_cast<void*>(complete));
  gi::Cupti().HandOver(false);
  return real(request, complete);
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  GW_REAL(cuptiActivityEnable);
  gi::Cupti().HandOver(true);
  return real(kind);
}

CUptiResult cuptiActivityEnableContext(CUcontext context, CUpti_ActivityKind kind) {
  GW_REAL(cuptiActivityEnableContext);
  gi::Cupti().HandOver(true);
  return real(context, kind);
}

// A profiler subscribing to CUPTI's callbacks (Kineto does when it starts): CUPTI has one
// subscriber, which gpuwatch holds for a moment after each window to detach CUPTI at the exit
// of a CUDA call. It gives that up rather than make the profiler's subscribe fail.
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  GW_REAL(cuptiSubscribe);
  gi::Cupti().YieldSubscriber();
  return real(subscriber, callback, userdata);
}

// A profiler's own clock for CUPTI's timestamps: it is about to record, and records made
// from now on would not be on the clock gpuwatch calibrated (an H200 run showed kernels
// 16,000 s away from their launches after torch.profiler started).
CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc func) {
  GW_REAL(cuptiActivityRegisterTimestampCallback);
  gi::Cupti().HandOver(true);
  return real(func);
}

}  // extern "C"
