// The host-frames evidence a trace holds: which CPU spans (record_function ranges,
// python_function frames, DataLoader iteration) were open on each thread, read at a fixed
// period, as the library's host sampler reads a thread's stack. The spans arrive in start
// order; a thread's open spans are kept until they end (a stack per thread: its depth).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace gpuwatch::collector {

class SpanSampler {
 public:
  static constexpr uint64_t kPeriodNs = 1'000'000;  // 1 kHz
  static constexpr size_t kMaxFrames = 16;          // as a PythonStack holds
  // Samples of one file at most (about 17 min of one thread): a span left open for hours
  // would otherwise be read a million times an hour. Past it, sampling stops (capped()).
  static constexpr uint64_t kMaxSamples = 1 << 20;

  // A span of `tid` begins; every span starting earlier has been opened.
  void Open(uint32_t tid, uint64_t start_ns, uint64_t end_ns, uint32_t name_id) {
    if (capped()) return;
    if (next_tick_ == 0) next_tick_ = (start_ns / kPeriodNs + 1) * kPeriodNs;
    threads_[tid].push_back({end_ns, name_id});
  }
  // Samples each thread with an open span at every tick before `now_ns`:
  // take(t_ns, tid, frames) with the spans' name ids, innermost first.
  template <class Take>
  void Advance(uint64_t now_ns, Take&& take) {
    for (; next_tick_ != 0 && next_tick_ < now_ns && samples_ < kMaxSamples; next_tick_ += kPeriodNs) {
      for (auto it = threads_.begin(); it != threads_.end();) {
        auto& open = it->second;
        const uint64_t t = next_tick_;
        open.erase(std::remove_if(open.begin(), open.end(), [t](const Span& s) { return s.end_ns <= t; }), open.end());
        if (open.empty()) {
          it = threads_.erase(it);
          continue;
        }
        frames_.clear();
        for (auto s = open.rbegin(); s != open.rend() && frames_.size() < kMaxFrames; ++s) frames_.push_back(s->name_id);
        take(t, it->first, frames_);
        ++samples_;
        ++it;
      }
      if (threads_.empty()) {
        next_tick_ = 0;  // nothing open: the next span sets the clock again
        break;
      }
    }
  }
  uint64_t samples() const { return samples_; }
  bool capped() const { return samples_ >= kMaxSamples; }

 private:
  struct Span {
    uint64_t end_ns;
    uint32_t name_id;
  };
  std::map<uint32_t, std::vector<Span>> threads_;
  std::vector<uint32_t> frames_;
  uint64_t next_tick_ = 0;
  uint64_t samples_ = 0;
};

}  // namespace gpuwatch::collector
