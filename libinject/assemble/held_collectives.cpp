// Holding collectives until their event pair completes and CUPTI's kernels are known; a
// group's GPU time shared among its operations by bytes.
#include "assemble/held_collectives.h"

#include <algorithm>

#include "record/record.h"

namespace gpuwatch::inject {
namespace {
constexpr uint64_t kCuptiWaitNs = 1'000'000'000;  // CUPTI's records of a launch may still be in a buffer
}  // namespace

void HeldCollectives::Hold(const HostEvent& e, uint32_t slot, bool in_group) {
  Held& h = open_[slot];
  h.events.push_back(e);
  h.host_end_ns = std::max(h.host_end_ns, e.t_ns + e.dur_ns);
  if (!in_group) h.closed = true;
}

void HeldCollectives::CloseGroup(uint32_t slot, uint64_t end_ns) {
  Held& h = open_[slot];
  h.closed = true;
  h.host_end_ns = std::max(h.host_end_ns, end_ns);  // a group launches at its end
}

// Event pairs that completed: the slot goes back to the pool at once. A stream runs its
// work in order, so only its oldest pending pair is queried: the later ones cannot be done
// before it. A slot CUPTI times has no pair: it waits for the kernels once closed.
void HeldCollectives::PollPairs(bool final) {
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (first start, slot) of the closed ones
  order.reserve(open_.size());
  for (const auto& [slot, h] : open_)
    if (h.closed || final) order.emplace_back(h.events.empty() ? 0 : h.events.front().t_ns, slot);
  std::sort(order.begin(), order.end());
  std::vector<uint64_t> waiting;  // streams whose oldest pair is still pending
  for (const auto& [t0, slot] : order) {
    Held& h = open_[slot];
    const uint64_t stream = h.events.empty() ? 0 : h.events.front().stream;
    const bool cupti = CollectiveTimer::IsCuptiTimed(slot);
    auto poll = CollectiveTimes::Poll::kFailed;
    if (h.closed && !cupti) {
      if (std::find(waiting.begin(), waiting.end(), stream) != waiting.end() && !final) continue;
      poll = pairs_.Query(slot, &h.event_gpu_ns);
      if (poll == CollectiveTimes::Poll::kPending && !final) {
        waiting.push_back(stream);
        continue;
      }
    }
    if (!cupti) pairs_.Release(slot);
    if (poll != CollectiveTimes::Poll::kDone) h.event_gpu_ns = UINT64_MAX;
    h.events_done_ns = time_.NowNs();
    timed_.push_back(std::move(h));
    open_.erase(slot);
  }
}

void HeldCollectives::Release(bool final, bool cupti_live, const CommKernelTimes& kernels,
                              const std::function<void(const HostEvent&)>& emit) {
  PollPairs(final);
  // Their GPU time: CUPTI's kernels when they have arrived, else the events'.
  for (auto it = timed_.begin(); it != timed_.end();) {
    Held& h = *it;
    uint64_t gpu_ns = h.event_gpu_ns;
    const uint64_t t0 = h.events.empty() ? 0 : h.events.front().t_ns;
    const bool by_kernels = cupti_live && kernels.Lookup(t0, h.host_end_ns, &gpu_ns);
    if (cupti_live && !by_kernels && !final && time_.NowNs() - h.events_done_ns < kCuptiWaitNs) {
      ++it;
      continue;
    }
    const bool timed = gpu_ns != UINT64_MAX;
    uint64_t total_bytes = 0;
    for (const HostEvent& e : h.events) total_bytes += e.bytes;
    for (HostEvent e : h.events) {
      if (timed) {
        e.gpu_ns = total_bytes ? static_cast<uint64_t>(static_cast<double>(gpu_ns) * e.bytes / total_bytes)
                               : gpu_ns / h.events.size();
        if (by_kernels) e.flags |= kFlagKernelTimed;
      } else {
        e.flags |= kFlagNoGpuTime;
      }
      emit(e);
    }
    it = timed_.erase(it);
  }
}

uint64_t HeldCollectives::EarliestStartNs() const {
  uint64_t earliest = UINT64_MAX;
  for (const auto& [slot, h] : open_)
    for (const HostEvent& e : h.events) earliest = std::min(earliest, e.t_ns);
  for (const Held& h : timed_)
    for (const HostEvent& e : h.events) earliest = std::min(earliest, e.t_ns);
  return earliest;
}

}  // namespace gpuwatch::inject
