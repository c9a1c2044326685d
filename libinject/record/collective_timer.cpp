// The event-pair pool: created on first use, recorded around collectives, polled and
// released by the sender thread.
#include "record/collective_timer.h"

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
  record(end_[slot - 1], stream);
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
  *gpu_ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6 + 0.5);
  return Poll::kDone;
}

void CollectiveTimer::Release(uint32_t slot) { busy_[slot - 1].store(0, std::memory_order_release); }

}  // namespace gpuwatch::inject
