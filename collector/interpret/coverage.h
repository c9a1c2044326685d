// Which spans of a rank's run CUPTI recorded. Under the overhead budget (Batch.overhead's
// mode CUPTI_MODE_BUDGET) the library records only in windows; the device sweep emits an
// idle gap only where a window saw both of its ends, a step has device figures only when a
// window holds it, and the figures are scaled by how much of the active span the windows
// covered. Any other mode (full, or an older library): everything is covered.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

namespace gpuwatch::collector {

class Coverage {
 public:
  static constexpr size_t kMaxKept = 4096;  // windows kept for the sweep (older ones are passed)

  void SetSampled(bool sampled) { sampled_ = sampled; }
  bool sampled() const { return sampled_; }
  // A window that closed; the one open since `since` (0: none). In time order.
  void AddWindow(uint64_t start, uint64_t end);
  void SetOpenSince(uint64_t since) { open_since_ = since; }
  // CUPTI stopped recording at `t`, for good (Batch.cupti_ended_ns); 0: it has not.
  void SetEnded(uint64_t t) { ended_ = t; }
  uint64_t ended() const { return ended_; }
  bool PastEnd(uint64_t t) const { return ended_ != 0 && t >= ended_; }

  // CUPTI recorded all of [a, b] (never past where it stopped for good).
  bool Covers(uint64_t a, uint64_t b) const {
    return !PastEnd(b) && (!sampled_ || CoversSampled(a, b));
  }
  bool CoversSampled(uint64_t a, uint64_t b) const;
  // [a, b] shares time with a closed window the sweep may still ask about, or with the open
  // one; always outside sampling. A window that opens later covers none of the calls already
  // drained (the library opens one after draining the calls it sends with it), so a host
  // sync that touches none can never bear on a gap: the sweep need not keep it (a
  // launch-heavy loop with one window in minutes once kept 65536 of them, ~3 MB).
  bool Touches(uint64_t a, uint64_t b) const;
  // The sweep has passed `t`: windows that end before it are no longer needed.
  void Pass(uint64_t t);

  uint64_t windows() const { return windows_ + (open_since_ ? 1 : 0); }
  uint64_t closed_windows() const { return windows_; }
  // When the first window closed (0: it has not).
  uint64_t first_end() const { return windows_ ? first_end_ : 0; }

  // Recorded time within [first, last] (the device's active span), ns.
  uint64_t CoveredWithin(uint64_t first, uint64_t last) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  bool sampled_ = false;
  std::deque<std::pair<uint64_t, uint64_t>> kept_;  // closed windows the sweep may still ask about
  uint64_t open_since_ = 0;
  uint64_t ended_ = 0;
  uint64_t windows_ = 0, closed_ns_ = 0;
  uint64_t first_start_ = 0, first_end_ = 0;  // the first window
  uint64_t last_end_ = 0;                     // the latest closed window's end
};

}  // namespace gpuwatch::collector
