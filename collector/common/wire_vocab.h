// What the wire's events are, decided in one place: which APIs are collectives, which calls
// block the host, which blocking calls are syncs in disguise, which copy direction. Every
// stage that asks such a question asks it here.
#pragma once
#include <cstdint>

#include "common/thresholds.h"
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

inline bool HasFlag(uint32_t flags, wire::EventFlag f) { return (flags & f) != 0; }

inline bool IsCollective(wire::Api api) {
  return api >= wire::NCCL_ALL_REDUCE && api <= wire::NCCL_RECV;
}
inline bool IsExplicitSync(wire::Api api) {
  return api == wire::CUDA_STREAM_SYNCHRONIZE || api == wire::CUDA_DEVICE_SYNCHRONIZE ||
         api == wire::CUDA_EVENT_SYNCHRONIZE;
}
// Device memory: allocations (bytes, address) and frees (address) of the rank's device.
inline bool AllocatesMemory(wire::Api api) {
  return api == wire::CUDA_MALLOC || api == wire::CUDA_MALLOC_ASYNC || api == wire::CUDA_MALLOC_MANAGED;
}
inline bool FreesMemory(wire::Api api) { return api == wire::CUDA_FREE || api == wire::CUDA_FREE_ASYNC; }
// Every copy shape (1D, 2D, 3D, peer, symbol) is one of these two.
inline bool IsCopy(wire::Api api) { return api == wire::CUDA_MEMCPY || api == wire::CUDA_MEMCPY_ASYNC; }
inline bool IsMemset(wire::Api api) { return api == wire::CUDA_MEMSET || api == wire::CUDA_MEMSET_ASYNC; }
// cudaStreamQuery / cudaEventQuery: a polling loop spins on them.
inline bool IsQuery(wire::Api api) { return api == wire::CUDA_STREAM_QUERY || api == wire::CUDA_EVENT_QUERY; }
// A hooked call that puts work on the device (a kernel, a graph's work, a copy, a memset).
inline bool EnqueuesWork(wire::Api api) {
  return api == wire::CUDA_LAUNCH_KERNEL || api == wire::CUDA_DRIVER_LAUNCH_KERNEL || api == wire::CUDA_GRAPH_LAUNCH ||
         IsCopy(api) || IsMemset(api);
}
// Recorded into a CUDA graph while its stream was captured: nothing ran, nothing waited.
inline bool InCapture(uint32_t flags) { return HasFlag(flags, wire::FLAG_IN_CAPTURE); }

// The call held the host until the GPU had caught up: an explicit sync, or a copy the
// library flagged FLAG_BLOCKED_HOST (cudaMemcpy, or cudaMemcpyAsync on pageable memory).
// A polling loop that spun is one too (interpret/poll_folder.h decides it, not the flags).
inline bool BlocksHost(wire::Api api, uint32_t flags) {
  return IsExplicitSync(api) || (IsCopy(api) && HasFlag(flags, wire::FLAG_BLOCKED_HOST));
}

// Host-device copies: 0 for H2D, 1 for D2H, -1 for the rest (D2D, H2H, unknown).
inline int CopyDirection(wire::CopyKind k) { return k == wire::COPY_H2D ? 0 : k == wire::COPY_D2H ? 1 : -1; }
inline constexpr int kCopyDirections = 2;
inline constexpr const char* kCopyDirectionKeys[kCopyDirections] = {"h2d", "d2h"};

// Waiting for the GPU, by kind: what a sync stall is made of.
enum SyncKind : int8_t {
  kNotSync = -1,
  kSyncStream = 0,
  kSyncDevice = 1,
  kSyncEvent = 2,
  kSyncSmallCopy = 3,  // a small blocking H2D/D2H copy: .item(), .cpu() of a scalar
  kSyncPoll = 4,       // a polling loop (cudaStreamQuery/cudaEventQuery) that spun: poll_folder.h
  kSyncKinds = 5
};
inline SyncKind SyncKindOf(wire::Api api, uint32_t flags, uint64_t bytes, wire::CopyKind copy) {
  switch (api) {
    case wire::CUDA_STREAM_SYNCHRONIZE: return kSyncStream;
    case wire::CUDA_DEVICE_SYNCHRONIZE: return kSyncDevice;
    case wire::CUDA_EVENT_SYNCHRONIZE: return kSyncEvent;
    case wire::CUDA_MEMCPY:
    case wire::CUDA_MEMCPY_ASYNC:
      return HasFlag(flags, wire::FLAG_BLOCKED_HOST) && bytes <= kSmallCopyBytes && CopyDirection(copy) >= 0
                 ? kSyncSmallCopy
                 : kNotSync;
    default: return kNotSync;
  }
}
inline const char* SyncKindName(int kind) {
  static const char* const kNames[kSyncKinds] = {"cudaStreamSynchronize", "cudaDeviceSynchronize",
                                                 "cudaEventSynchronize", "small blocking copy (.item()/.cpu())",
                                                 "polling loop (cudaStreamQuery/cudaEventQuery)"};
  return kind >= 0 && kind < kSyncKinds ? kNames[kind] : "?";
}

// Device work: what occupies the GPU (CUPTI kernels, copies, memsets).
inline bool IsDeviceWork(wire::ActivityKind k) {
  return k == wire::ACTIVITY_KERNEL || k == wire::ACTIVITY_MEMCPY || k == wire::ACTIVITY_MEMSET;
}

}  // namespace gpuwatch::collector
