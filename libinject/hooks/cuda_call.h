// How a CUDA runtime wrapper times its call and fills its Record, shared by every CUDA hook
// file: `Copy` for copies (direction, pinned or pageable, blocking), `Timed` for the rest.
// Hot path: a stamp, the real call, a stamp, a few loads, Emit.
#pragma once
#include <atomic>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "record/call_sites.h"
#include "record/hook_ab.h"
#include "record/pinned_ranges.h"
#include "hooks/missing.h"
#include "record/recorder.h"
#include "record/registry.h"
#include "record/stamp_clock.h"

namespace gpuwatch::inject::hooks {

inline uint64_t StreamId(cudaStream_t s) { return reinterpret_cast<uintptr_t>(s); }
// A record's name: an id known at the call (0 for most), or the launched kernel, which the
// record carries for the sender to name (Record::seq): a lookup here would be the hook's
// costliest step where the job's own work has pushed the table's lines out of the caches.
struct NameId {
  NameId(uint32_t known) : id(known) {}  // NOLINT(google-explicit-constructor): Timed(api, s, 0, ...)
  uint32_t id = 0;
  const void* kernel = nullptr;
};
inline NameId KernelId(const void* f) {
  NameId n(0);
  n.kernel = f;
  return n;
}

// Stream captures begun and not yet ended (hooks_cuda_graphs.cpp). While none is open, a
// call's capture check is this one relaxed load; while one is, the real
// cudaStreamIsCapturing says whether the call's stream is being captured (streams joined to
// a capture through an event included): a launch, copy or memset made then is recorded
// into a graph, not executed.
// Defined in hooks_cuda_graphs.cpp; hidden: nothing of ours joins the job's symbol scope.
__attribute__((visibility("hidden"))) extern std::atomic<int> g_open_captures;

inline bool InCapture(cudaStream_t s) {
  if (g_open_captures.load(std::memory_order_relaxed) <= 0) return false;
  static const auto is_capturing = Real<decltype(&cudaStreamIsCapturing)>("cudaStreamIsCapturing");
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  return is_capturing && is_capturing(s, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone;
}

inline bool IsHostSideOf(const void* p) {
  static const auto attrs = Real<decltype(&cudaPointerGetAttributes)>("cudaPointerGetAttributes");
  cudaPointerAttributes a{};
  if (!attrs || attrs(&a, p) != cudaSuccess) return true;
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeUnregistered;
}

// Direction and pinned/pageable of a copy. cudaMemcpyDefault (UVA) needs the pointers'
// attributes: a CUDA call, but only for copies that do not say their direction.
inline void ClassifyCopy(Record& r, void* dst, const void* src, cudaMemcpyKind kind) {
  const void* host = nullptr;
  if (kind == cudaMemcpyDefault) {
    const bool src_host = IsHostSideOf(src), dst_host = IsHostSideOf(dst);
    kind = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                    : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  }
  switch (kind) {
    case cudaMemcpyHostToDevice: r.copy_kind = kCopyH2D; host = src; break;
    case cudaMemcpyDeviceToHost: r.copy_kind = kCopyD2H; host = dst; break;
    case cudaMemcpyDeviceToDevice: r.copy_kind = kCopyD2D; break;
    default: r.copy_kind = kCopyH2H; break;
  }
  if (host && !Pinned().Contains(host)) r.flags |= kFlagPageable;
}

// Every copy shape (1D, 2D, 3D, peer, symbol): `api` is kApiMemcpy for the synchronous
// forms, kApiMemcpyAsync for the stream-ordered ones; `n` the bytes moved.
template <typename F>
cudaError_t Copy(Api api, void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s, F&& call) {
  if (!Recording()) return call();
  EnsureRing();
  const HookCostProbe cost;
  Record r{};
  r.t_ticks = Stamp();
  r.stream = StreamId(s);
  EnterCall(api, r.t_ticks, r.stream);  // a blocking copy can take seconds
  const cudaError_t rc = call();
  r.dur_ticks = cost.StampCallEnd() - r.t_ticks;
  r.api = api;
  r.bytes = n;
  ClassifyCopy(r, dst, src, kind);
  const bool host_side = r.copy_kind == kCopyH2D || r.copy_kind == kCopyD2H;
  if (rc != cudaSuccess) {
    r.flags |= kFlagFailed;  // nothing moved: counted as a failed call, not as a copy
  } else if (api == kApiMemcpyAsync && InCapture(s)) {
    r.flags |= kFlagInCapture;  // recorded into a graph: nothing moved, nothing waited
  } else if (host_side && (api == kApiMemcpy || (r.flags & kFlagPageable))) {
    // cudaMemcpy returns when the copy is done; an async copy from/to pageable memory is
    // staged through a pinned buffer and blocks the host as well.
    r.flags |= kFlagBlockedHost;
  }
  if (WantsCallSite(r)) r.site_id = CaptureCallSite();  // a blocking copy that waited long: where from
  Emit(r);
  LeaveCall();  // after Emit: the settled time counts on it (assemble/assembler.h)
  cost.Done(r);
  return rc;
}

// Calls that wait on the GPU: the sender's in-flight marks watch them (a hang shows).
constexpr bool MayHang(Api api) {
  return api == kApiStreamSynchronize || api == kApiDeviceSynchronize || api == kApiEventSynchronize ||
         api == kApiMemset;  // cudaMemset on pinned host memory waits for the device
}
// Calls that put something on a stream, and so can be recorded into a graph instead.
constexpr bool Enqueues(Api api) {
  return api == kApiLaunchKernel || api == kApiDriverLaunchKernel || api == kApiGraphLaunch ||
         api == kApiMemsetAsync || api == kApiLaunchHostFunc || api == kApiStreamWaitEvent || api == kApiEventRecord;
}

// Everything but copies. `s` is the call's stream (what the record carries, and what a
// capture check asks about); `name` a fixed id or the launched kernel; `bytes` for memsets;
// `seq` the event of event records and stream waits. A query answering "not ready" is flagged.
template <typename F>
cudaError_t Timed(Api api, cudaStream_t s, NameId name, F&& call, uint64_t bytes = 0, uint64_t seq = 0) {
  if (HookAbPass() || !Recording()) return call();  // HookAbPass: false, but in a bench build
  const bool may_hang = MayHang(api);
  const uint64_t stream = StreamId(s);
  if (may_hang) EnsureRing();
  const HookCostProbe cost;
  Record r{};
  r.t_ticks = Stamp();
  if (may_hang) EnterCall(api, r.t_ticks, stream);
  const cudaError_t rc = call();
  r.dur_ticks = cost.StampCallEnd() - r.t_ticks;
  HookAbCallTicks(r.dur_ticks);
  r.api = api;
  r.stream = stream;
  r.name_id = name.id;
  r.bytes = bytes;
  r.seq = name.kernel ? reinterpret_cast<uintptr_t>(name.kernel) : seq;
  if (rc == cudaErrorNotReady) r.flags |= kFlagNotReady;
  else if (rc != cudaSuccess) r.flags |= kFlagFailed;  // did nothing: no launch, no wait
  if (Enqueues(api) && InCapture(s)) r.flags |= kFlagInCapture;
  // Outside CUPTI's windows a launch that ran is counted where it is made, not recorded.
  if (LaunchesKernel(api) && r.flags == 0 && SummarizeLaunch(api, r.seq, r.t_ticks, r.dur_ticks)) {
    cost.Done(r);
    return rc;
  }
  if (WantsCallSite(r)) r.site_id = CaptureCallSite();  // a sync that waited long: where from
  Emit(r);
  if (may_hang) LeaveCall();  // after Emit: the settled time counts on it
  cost.Done(r);
  return rc;
}

}  // namespace gpuwatch::inject::hooks
