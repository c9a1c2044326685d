// The event-pair pool: created on first use, recorded around collectives, polled and
// released by the sender thread.
#include "record/collective_timer.h"

#include <algorithm>
#include <mutex>

#include "record/real.h"

namespace gpuwatch::inject {

CollectiveTimer& Timer() {
  static CollectiveTimer* t = new CollectiveTimer;
  return *t;
}

bool CollectiveTimer::EnsureEvents() {
  const int s = events_state_.load(std::memory_order_acquire);
  if (s != 0) return s == 1;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (events_state_.load(std::memory_order_relaxed) == 0) {
    auto create = Real<decltype(&cudaEventCreateWithFlags)>("cudaEventCreateWithFlags");
    bool ok = create != nullptr;
    for (uint32_t i = 0; ok && i < kSlots; ++i) {
      ok = create(&start_[i], cudaEventDefault) == cudaSuccess &&
           create(&end_[i], cudaEventDefault) == cudaSuccess;
    }
    // Non-blocking: the legacy default stream's work must not delay a mark. Without the
    // stream or its events, the pairs time collectives alone.
    auto create_stream = Real<decltype(&cudaStreamCreateWithFlags)>("cudaStreamCreateWithFlags");
    bool marks = ok && create_stream && create_stream(&marks_, cudaStreamNonBlocking) == cudaSuccess;
    for (uint32_t i = 0; marks && i < kSlots; ++i) marks = create(&returned_[i], cudaEventDefault) == cudaSuccess;
    if (!marks) marks_ = nullptr;
    events_state_.store(ok ? 1 : 2, std::memory_order_release);
  }
  return events_state_.load(std::memory_order_relaxed) == 1;
}

uint32_t CollectiveTimer::Begin(cudaStream_t stream, NoTime* why) {
  static const auto is_capturing = Real<decltype(&cudaStreamIsCapturing)>("cudaStreamIsCapturing");
  static const auto record = Real<decltype(&cudaEventRecord)>("cudaEventRecord");
  *why = NoTime::kNone;
  if (!record || !EnsureEvents()) {
    *why = NoTime::kCudaError;
    return 0;
  }
  // Recording an event into a stream under capture would become part of the graph.
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (is_capturing && is_capturing(stream, &cap) == cudaSuccess && cap != cudaStreamCaptureStatusNone) {
    *why = NoTime::kCapturing;
    return 0;
  }
  for (uint32_t tries = 0; tries < 8; ++tries) {
    const uint32_t i = next_.fetch_add(1, std::memory_order_relaxed) % kSlots;
    uint8_t expected = 0;
    if (busy_[i].compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      if (record(start_[i], stream) != cudaSuccess) {
        busy_[i].store(0, std::memory_order_release);
        *why = NoTime::kCudaError;
        return 0;
      }
      return i + 1;
    }
  }
  *why = NoTime::kPoolEmpty;
  return 0;
}

void CollectiveTimer::End(uint32_t slot, cudaStream_t stream) {
  static const auto record = Real<decltype(&cudaEventRecord)>("cudaEventRecord");
  if (slot == 0 || IsCuptiTimed(slot)) return;
  const uint32_t i = slot - 1;
  // The mark first: it stands for the moment the call returned.
  marked_[i].store(marks_ != nullptr && record(returned_[i], marks_) == cudaSuccess, std::memory_order_relaxed);
  record(end_[i], stream);
}

CollectiveTimer::Poll CollectiveTimer::Query(uint32_t slot, uint64_t* gpu_ns) {
  static const auto query = Real<decltype(&cudaEventQuery)>("cudaEventQuery");
  static const auto elapsed = Real<decltype(&cudaEventElapsedTime)>("cudaEventElapsedTime");
  const uint32_t i = slot - 1;
  const cudaError_t q = query(end_[i]);
  if (q == cudaErrorNotReady) return Poll::kPending;
  if (q != cudaSuccess) return Poll::kFailed;
  float ms = 0;
  if (elapsed(&ms, start_[i], end_[i]) != cudaSuccess) return Poll::kFailed;
  // A mark after the end (a kernel over before the call returned) says nothing: the pair
  // stands. So does a mark the GPU has not reached yet.
  float since_return = 0;
  if (marked_[i].load(std::memory_order_relaxed) && elapsed(&since_return, returned_[i], end_[i]) == cudaSuccess &&
      since_return > 0)
    ms = std::min(ms, since_return);
  *gpu_ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6 + 0.5);
  return Poll::kDone;
}

void CollectiveTimer::Release(uint32_t slot) { busy_[slot - 1].store(0, std::memory_order_release); }

}  // namespace gpuwatch::inject
