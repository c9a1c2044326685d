// Kernel launches outside CUPTI's windows, summarized on the thread that made them: no
// record each. Outside a window the collector only counts launches (per kernel, per API)
// and places them in time (the steps' "work follows a sync", the sampling's enqueue counts,
// the trace's launch bursts); a record per launch cost the sender ~170 ns and the collector
// ~200-450 ns to encode, decode, order and journal, for figures that need neither its
// kernel's place in the order nor its own times. So the hook adds the launch to
//   - a run: the thread's launches since its previous record, cut at a pause over
//     kRunGapNs or kRunMaxNs of length. The next record of the thread (a sync, a copy, a
//     launch inside a window...) is preceded in the ring by a marker closing the run, so
//     the collector gets the launches in their place among the thread's other calls; the
//     sender closes a run that went quiet itself (TakeQuietRun);
//   - a tally per (kernel, API): launches and host time, which the sender ships once per
//     batch as the change since the previous one.
// Counts are cumulative and single-writer (the owning thread stores, the sender loads), so
// whatever the two see of each other every launch is counted once: a marker carries the
// thread's total so far, and the sender counts what that adds to what it already took.
// Inside a window every launch stays a record: CUPTI's kernels are joined to their call.
#pragma once
#include <atomic>
#include <cstdint>

#include "record/record.h"

namespace gpuwatch::inject {

// Launches are records (CUPTI's kinds are on, or about to be: a window is open), not
// summarized. Set before CUPTI starts recording and cleared after it stopped, so every
// launch CUPTI records is a record.
extern std::atomic<bool> g_itemize_launches;
// A run ends at a pause over this many stamp ticks, or once it is this many ticks long
// (the trace's launch bursts: trace/rank_trace.h). 0 until the sender has calibrated the
// clock: every launch closes its run until then.
extern std::atomic<uint64_t> g_run_gap_ticks, g_run_max_ticks;
// Calls at least this long waited (a full launch queue, the scheduler): the overhead
// budget leaves them out of its mean (enrich/launch_times.h). Ticks; 0 until calibrated.
extern std::atomic<uint64_t> g_launch_stall_ticks;
constexpr uint64_t kRunGapNs = 1'000'000, kRunMaxNs = 10'000'000;

class LaunchSummary {
 public:
  static constexpr uint32_t kSlots = 1024;  // (kernel, API) pairs a thread tallies; more are records
  static constexpr uint32_t kProbes = 8;

  struct Limits {
    uint64_t gap_ticks, max_ticks, stall_ticks;
  };
  static Limits CurrentLimits() {
    return {g_run_gap_ticks.load(std::memory_order_relaxed), g_run_max_ticks.load(std::memory_order_relaxed),
            g_launch_stall_ticks.load(std::memory_order_relaxed)};
  }
  // Owning thread: adds one launch; `*closed` when it began a new run, `*marker` closing
  // the one before. False (nothing added) when its kernel finds no slot: the caller records
  // it instead.
  bool Add(uint8_t api, uintptr_t kernel, uint64_t t_ticks, uint64_t dur_ticks, const Limits& limits, Record* marker,
           bool* closed) {
    Slot* slot = Find(api, kernel);
    if (slot == nullptr) return false;
    *closed = false;
    const uint64_t end = t_ticks + dur_ticks;
    if (!RunOpen()) {
      StartRun(t_ticks);
    } else if (t_ticks > last_end_ + limits.gap_ticks || end > first_ + limits.max_ticks) {
      *marker = CloseRun();
      *closed = true;
      StartRun(t_ticks);
    }
    slot->count.store(slot->count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    slot->ticks.store(slot->ticks.load(std::memory_order_relaxed) + dur_ticks, std::memory_order_relaxed);
    last_end_ = end;
    ticks_ += dur_ticks;
    if (dur_ticks >= limits.stall_ticks) ++stalls_;
    else timed_ticks_ += dur_ticks;
    ++count_;
    shared_.last_end.store(end, std::memory_order_relaxed);
    shared_.ticks.store(ticks_, std::memory_order_relaxed);
    shared_.timed_ticks.store(timed_ticks_, std::memory_order_relaxed);
    shared_.stalls.store(stalls_, std::memory_order_relaxed);
    shared_.count.store(count_, std::memory_order_release);
    return true;
  }
  // Owning thread, before it records anything else: the marker closing its open run, if
  // it has one the sender did not take.
  bool CloseOpenRun(Record* marker) {
    if (!RunOpen()) return false;
    *marker = CloseRun();
    return true;
  }

  // --- sender thread ---
  // A run's launches as the sender counts them (the change in the thread's totals).
  struct Run {
    uint64_t first_ticks = 0, end_ticks = 0;
    uint64_t count = 0, ticks = 0, timed_ticks = 0, stalls = 0;
  };
  // The launches a marker closed that the sender has not counted yet; count 0: none.
  Run FromMarker(const Record& m) {
    Totals t;
    t.count = m.bytes;
    t.ticks = m.seq;
    t.timed_ticks = m.stream;
    // 32 bits on the marker: stalls past 2^32 wrap, their change does not.
    t.stalls = sender_.stalls + static_cast<uint32_t>(m.comm_id - static_cast<uint32_t>(sender_.stalls));
    Run r = Take(t);
    r.first_ticks = m.t_ticks > taken_end_ ? m.t_ticks : taken_end_;
    r.end_ticks = m.t_ticks + m.dur_ticks > r.first_ticks ? m.t_ticks + m.dur_ticks : r.first_ticks;
    if (r.count) taken_end_ = r.end_ticks;
    return r;
  }
  // The launches of a run still open, when it went quiet (no launch for `quiet_ticks`
  // before `now_ticks`) or `all` (the last batch); count 0: none taken. Else `open_since`
  // is set to the start of the open run (the batch's settled time may not pass it).
  Run TakeQuietRun(uint64_t now_ticks, uint64_t quiet_ticks, bool all, uint64_t* open_since) {
    Totals t;
    t.count = shared_.count.load(std::memory_order_acquire);
    if (t.count == sender_.count) return {};
    const uint64_t last = shared_.last_end.load(std::memory_order_relaxed);
    const uint64_t first = shared_.first.load(std::memory_order_relaxed);
    if (!all && last + quiet_ticks > now_ticks) {
      if (first < *open_since) *open_since = first;
      return {};
    }
    t.ticks = shared_.ticks.load(std::memory_order_relaxed);
    t.timed_ticks = shared_.timed_ticks.load(std::memory_order_relaxed);
    t.stalls = shared_.stalls.load(std::memory_order_relaxed);
    Run r = Take(t);
    r.first_ticks = first > taken_end_ ? first : taken_end_;
    r.end_ticks = last > r.first_ticks ? last : r.first_ticks;
    taken_end_ = r.end_ticks;
    taken_.store(t.count, std::memory_order_release);  // the owner's next launch starts a new run
    return r;
  }
  // Each tallied (kernel, API) whose launches changed since the last call: fn(api, kernel,
  // launches, ticks) with the change.
  template <typename Fn>
  void TakeTallies(Fn&& fn) {
    for (uint32_t i = 0; i < kSlots; ++i) {
      const uintptr_t kernel = slots_[i].kernel.load(std::memory_order_acquire);
      if (kernel == 0) continue;
      const uint64_t count = slots_[i].count.load(std::memory_order_relaxed);
      const uint64_t ticks = slots_[i].ticks.load(std::memory_order_relaxed);
      Shipped& s = shipped_[i];
      if (count == s.count) continue;
      fn(slots_[i].api.load(std::memory_order_relaxed), kernel, count - s.count, ticks - s.ticks);
      s.count = count;
      s.ticks = ticks;
    }
  }

 private:
  struct Slot {
    std::atomic<uintptr_t> kernel{0};  // 0: free; published last (release)
    std::atomic<uint8_t> api{0};
    std::atomic<uint64_t> count{0}, ticks{0};
  };
  struct Totals {
    uint64_t count = 0, ticks = 0, timed_ticks = 0, stalls = 0;
  };
  struct Shipped {
    uint64_t count = 0, ticks = 0;
  };

  Slot* Find(uint8_t api, uintptr_t kernel) {
    const uintptr_t key = kernel != 0 ? kernel : 1;  // 0 marks a free slot
    uint64_t h = (static_cast<uint64_t>(key) ^ api) * 0x9E3779B97F4A7C15ull;
    for (uint32_t p = 0; p < kProbes; ++p) {
      Slot& s = slots_[(h >> 40) & (kSlots - 1)];
      const uintptr_t k = s.kernel.load(std::memory_order_relaxed);
      if (k == key && s.api.load(std::memory_order_relaxed) == api) return &s;
      if (k == 0) {
        s.api.store(api, std::memory_order_relaxed);
        s.kernel.store(key, std::memory_order_release);
        return &s;
      }
      h += uint64_t{1} << 40;
    }
    return nullptr;
  }
  // Launches since the thread's last marker that the sender has not taken either.
  bool RunOpen() const { return count_ != marked_ && count_ != taken_.load(std::memory_order_relaxed); }
  void StartRun(uint64_t t_ticks) {
    first_ = t_ticks;
    shared_.first.store(t_ticks, std::memory_order_relaxed);
  }
  Record CloseRun() {
    Record m{};
    m.api = kLaunchRun;
    m.t_ticks = first_;
    m.dur_ticks = last_end_ - first_;
    m.bytes = count_;        // the thread's totals so far (the sender counts the change)
    m.seq = ticks_;
    m.stream = timed_ticks_;
    m.comm_id = static_cast<uint32_t>(stalls_);
    marked_ = count_;
    return m;
  }
  Run Take(const Totals& t) {
    Run r;
    if (t.count <= sender_.count) return r;
    r.count = t.count - sender_.count;
    r.ticks = t.ticks - sender_.ticks;
    r.timed_ticks = t.timed_ticks - sender_.timed_ticks;
    r.stalls = t.stalls - sender_.stalls;
    sender_ = t;
    return r;
  }

  // The owning thread's (plain: only it reads them).
  alignas(64) uint64_t count_ = 0, ticks_ = 0, timed_ticks_ = 0, stalls_ = 0;
  uint64_t marked_ = 0;  // count_ at its last marker
  uint64_t first_ = 0, last_end_ = 0;  // the open run's first launch, its latest end
  // What the sender reads of it.
  struct Shared {
    std::atomic<uint64_t> count{0}, ticks{0}, timed_ticks{0}, stalls{0};
    std::atomic<uint64_t> first{0}, last_end{0};
  };
  alignas(64) Shared shared_;
  // Written by the sender: the owner's count it took (TakeQuietRun): a launch after it
  // starts a new run.
  alignas(64) std::atomic<uint64_t> taken_{0};
  // The sender's (plain).
  alignas(64) Totals sender_;
  uint64_t taken_end_ = 0;  // the latest end of what it took: no run starts before it
  Shipped shipped_[kSlots];
  alignas(64) Slot slots_[kSlots];
};

}  // namespace gpuwatch::inject
