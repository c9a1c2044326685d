// Streams and events of the simulated runtime.
#include <thread>

#include "runtime.h"

using namespace simgpu;

namespace {

cudaError_t stream_create(cudaStream_t* out, unsigned flags, int priority) {
  if (!out) return fail(cudaErrorInvalidValue);
  *out = reinterpret_cast<cudaStream_t>(M().create_stream(flags, priority));
  return cudaSuccess;
}

cudaError_t stream_sync(cudaStream_t stream, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  M().wait(M().tail(s));
  return cudaSuccess;
}

cudaError_t stream_query(cudaStream_t stream, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  return M().done(M().tail(s)) ? cudaSuccess : cudaErrorNotReady;  // not-ready is not sticky
}

cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  Event* e = M().event(event);
  if (!s || !e) return fail(cudaErrorInvalidResourceHandle);
  OpRef m = M().marker(e);
  if (m) M().enqueue(s, OpDesc{}, m);  // an ordering point: later work also waits for m
  return cudaSuccess;
}

cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  Event* e = M().event(event);
  if (!s || !e) return fail(cudaErrorInvalidResourceHandle);
  M().record_event(e, s);
  return cudaSuccess;
}

cudaError_t is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status, bool per_thread) {
  if (!status) return fail(cudaErrorInvalidValue);
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  *status = capture_status(s);
  return cudaSuccess;
}

}  // namespace

SIMGPU_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* s) { return stream_create(s, cudaStreamDefault, 0); }
SIMGPU_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  return stream_create(s, flags, 0);
}
SIMGPU_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  return stream_create(s, flags, priority);
}

SIMGPU_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return M().destroy_stream(s) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

SIMGPU_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s) { return stream_sync(s, false); }
SIMGPU_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return stream_sync(s, true); }
SIMGPU_EXPORT cudaError_t cudaStreamQuery(cudaStream_t s) { return stream_query(s, false); }
SIMGPU_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { return stream_query(s, true); }

SIMGPU_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  (void)flags;
  return stream_wait_event(s, e, false);
}
SIMGPU_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  (void)flags;
  return stream_wait_event(s, e, true);
}

// A host function runs on a thread of the runtime's once the stream reaches it (later work
// on the stream does not wait for it to return: the simulator's one simplification).
namespace {
cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void* data, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!fn) return fail(cudaErrorInvalidValue);
  OpRef m = M().enqueue(s, OpDesc{});
  std::thread([m, fn, data] {
    M().wait(m);
    fn(data);
  }).detach();
  return cudaSuccess;
}
}  // namespace
SIMGPU_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return launch_host_func(s, fn, data, false);
}
SIMGPU_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return launch_host_func(s, fn, data, true);
}

SIMGPU_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* st) {
  return is_capturing(s, st, false);
}
SIMGPU_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, cudaStreamCaptureStatus* st) {
  return is_capturing(s, st, true);
}
SIMGPU_EXPORT int simgpu_stream_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  return is_capturing(s, &st, false) == cudaSuccess && st != cudaStreamCaptureStatusNone;
}

// ---- events ----------------------------------------------------------------------------

SIMGPU_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e) return fail(cudaErrorInvalidValue);
  *e = reinterpret_cast<cudaEvent_t>(M().create_event(flags));
  return cudaSuccess;
}
SIMGPU_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

SIMGPU_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  return M().destroy_event(e) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

SIMGPU_EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return event_record(e, s, false); }
SIMGPU_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { return event_record(e, s, true); }
SIMGPU_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  (void)flags;  // cudaEventRecordExternal only matters inside graph capture
  return event_record(e, s, false);
}
SIMGPU_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  (void)flags;
  return event_record(e, s, true);
}

SIMGPU_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  Event* e = M().event(event);
  if (!e) return fail(cudaErrorInvalidResourceHandle);
  return M().done(M().marker(e)) ? cudaSuccess : cudaErrorNotReady;  // never-recorded: success
}

SIMGPU_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Event* e = M().event(event);
  if (!e) return fail(cudaErrorInvalidResourceHandle);
  M().wait(M().marker(e));
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return fail(cudaErrorInvalidValue);
  Event* a = M().event(start);
  Event* b = M().event(end);
  if (!a || !b) return fail(cudaErrorInvalidResourceHandle);
  // Real runtime: events created with cudaEventDisableTiming, or never recorded, cannot be
  // timed (invalid handle); recorded but unfinished ones give not-ready.
  if ((a->flags | b->flags) & cudaEventDisableTiming) return fail(cudaErrorInvalidResourceHandle);
  OpRef ma = M().marker(a), mb = M().marker(b);
  if (!ma || !mb) return fail(cudaErrorInvalidResourceHandle);
  if (!M().done(ma) || !M().done(mb)) return fail(cudaErrorNotReady);
  *ms = static_cast<float>((static_cast<double>(mb->end_ns) - static_cast<double>(ma->end_ns)) / 1e6);
  return cudaSuccess;
}
