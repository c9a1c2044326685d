// sync: host time blocked waiting for the GPU. Explicit synchronize calls, plus the copies
// that the library flagged FLAG_BLOCKED_HOST (every cudaMemcpy H2D/D2H, and a
// cudaMemcpyAsync on pageable memory): for the host those are a sync in disguise.
#pragma once
#include <array>
#include <cstdint>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct SyncFigures {
  // By API, in the order they are printed.
  // A query is here as the polling loop it closed (interpret/poll_folder.h).
  static constexpr std::array<wire::Api, 7> kApis = {
      wire::CUDA_STREAM_SYNCHRONIZE, wire::CUDA_DEVICE_SYNCHRONIZE, wire::CUDA_EVENT_SYNCHRONIZE,
      wire::CUDA_MEMCPY, wire::CUDA_MEMCPY_ASYNC, wire::CUDA_STREAM_QUERY, wire::CUDA_EVENT_QUERY};
  std::array<uint64_t, kApis.size()> count{}, ns{};
  // The same calls by SyncKind (explicit syncs and small blocking copies; a large blocking
  // copy is a copy, not a sync).
  std::array<uint64_t, kSyncKinds> kind_count{}, kind_ns{};

  uint64_t TotalCount() const;
  uint64_t TotalNs() const;
  uint64_t KindCount() const;
  uint64_t KindNs() const;
  void Merge(const SyncFigures& o);
};

class SyncCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  const SyncFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  SyncFigures f_;
};

}  // namespace gpuwatch::collector
