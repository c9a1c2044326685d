// Stream ordering and polling wrappers: cross-stream waits (cudaEventRecord on one stream,
// cudaStreamWaitEvent on another: both carry the event's handle in `seq`, so the collector
// knows which stream waited for which), host functions on a stream, and the queries that
// polling loops spin on (a "not ready" answer is flagged: the collector counts a spinning
// loop as sync time).
#include <cuda_runtime_api.h>

#include "hooks/cuda_call.h"

namespace gi = gpuwatch::inject;
using gi::hooks::Timed;

extern "C" {

namespace {
uint64_t EventId(cudaEvent_t e) { return reinterpret_cast<uintptr_t>(e); }
}  // namespace

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  GW_REAL(cudaStreamWaitEvent);
  return Timed(gi::kApiStreamWaitEvent, s, 0, [&] { return real(s, e, flags); }, 0, EventId(e));
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  GW_REAL_T(decltype(&cudaStreamWaitEvent), "cudaStreamWaitEvent_ptsz");
  return Timed(gi::kApiStreamWaitEvent, s, 0, [&] { return real(s, e, flags); }, 0, EventId(e));
}

// gpuwatch's own event records (collective_timer.cpp) call the real function directly.
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  GW_REAL(cudaEventRecord);
  return Timed(gi::kApiEventRecord, s, 0, [&] { return real(e, s); }, 0, EventId(e));
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaEventRecord), "cudaEventRecord_ptsz");
  return Timed(gi::kApiEventRecord, s, 0, [&] { return real(e, s); }, 0, EventId(e));
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  GW_REAL(cudaEventRecordWithFlags);
  return Timed(gi::kApiEventRecord, s, 0, [&] { return real(e, s, flags); }, 0, EventId(e));
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  GW_REAL_T(decltype(&cudaEventRecordWithFlags), "cudaEventRecordWithFlags_ptsz");
  return Timed(gi::kApiEventRecord, s, 0, [&] { return real(e, s, flags); }, 0, EventId(e));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  GW_REAL(cudaLaunchHostFunc);
  return Timed(gi::kApiLaunchHostFunc, s, 0, [&] { return real(s, fn, data); });
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) {
  GW_REAL_T(decltype(&cudaLaunchHostFunc), "cudaLaunchHostFunc_ptsz");
  return Timed(gi::kApiLaunchHostFunc, s, 0, [&] { return real(s, fn, data); });
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  GW_REAL(cudaStreamQuery);
  return Timed(gi::kApiStreamQuery, s, 0, [&] { return real(s); });
}
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) {
  GW_REAL_T(decltype(&cudaStreamQuery), "cudaStreamQuery_ptsz");
  return Timed(gi::kApiStreamQuery, s, 0, [&] { return real(s); });
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  GW_REAL(cudaEventQuery);
  return Timed(gi::kApiEventQuery, nullptr, 0, [&] { return real(e); });
}

}  // extern "C"
