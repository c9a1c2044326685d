// See input_io.h.
#include "analyze/input_io.h"

#include <algorithm>

#include "contention.h"

namespace gpuwatch::collector {
namespace {

// A counter that went down (a process left the tree unreaped) counts as no increase.
double Up(uint64_t now, uint64_t before) { return now > before ? static_cast<double>(now - before) : 0.0; }

}  // namespace

void InputIo::Pair(const Interval& s, const Gap& g) {
  const uint64_t lo = std::max(s.t0, g.a), hi = std::min(s.t1, g.b);
  if (hi <= lo || s.t1 <= s.t0) return;
  const double share = static_cast<double>(hi - lo) / static_cast<double>(s.t1 - s.t0);
  f_.gap_s += (hi - lo) * 1e-9;
  f_.cpu_s += s.cpu * share * 1e-9;
  f_.run_wait_s += s.wait * share * 1e-9;
  f_.read_chars += s.rchar * share;
  f_.read_bytes += s.rbytes * share;
  f_.periods += s.periods * share;
  f_.throttled_periods += s.throttled_periods * share;
  f_.throttled_s += s.throttled_ns * share * 1e-9;
  if (s.periods > 0) f_.throttled_gap_s += (hi - lo) * 1e-9 * std::min(1.0, s.throttled_periods / s.periods);
}

void InputIo::OnProcSample(const wire::ProcSample& s) {
  f_.max_processes = std::max(f_.max_processes, s.processes());
  if (have_prev_ && s.t_ns() <= prev_.t_ns()) return;  // out of order or repeated: ignore
  if (!have_prev_) {
    have_prev_ = true;
    prev_ = s;
    return;
  }
  const Interval iv{prev_.t_ns(), s.t_ns(), Up(s.cpu_ns(), prev_.cpu_ns()), Up(s.run_wait_ns(), prev_.run_wait_ns()),
                    Up(s.read_chars(), prev_.read_chars()), Up(s.read_bytes(), prev_.read_bytes()),
                    Up(s.cgroup_periods(), prev_.cgroup_periods()),
                    Up(s.cgroup_throttled_periods(), prev_.cgroup_throttled_periods()),
                    Up(s.cgroup_throttled_ns(), prev_.cgroup_throttled_ns())};
  f_.cgroup = f_.cgroup || s.cgroup_periods() > 0;
  prev_ = s;
  ++f_.intervals;
  f_.all_s += (iv.t1 - iv.t0) * 1e-9;
  f_.all_cpu_s += iv.cpu * 1e-9;
  f_.all_run_wait_s += iv.wait * 1e-9;
  if (wire::ContendedInterval(static_cast<double>(iv.t1 - iv.t0), static_cast<double>(iv.wait)))
    f_.all_contended_s += (iv.t1 - iv.t0) * 1e-9;
  f_.all_read_chars += iv.rchar;
  f_.all_periods += iv.periods;
  f_.all_throttled_periods += iv.throttled_periods;
  f_.all_throttled_s += iv.throttled_ns * 1e-9;
  for (const Gap& g : gaps_) Pair(iv, g);
  // Later samples start at iv.t1: gaps that end by then are done.
  while (!gaps_.empty() && gaps_.front().b <= iv.t1) gaps_.pop_front();
  samples_.push_back(iv);
  if (samples_.size() > kMaxKept) samples_.pop_front();
}

void InputIo::OnGap(uint64_t a, uint64_t b) {
  if (b <= a) return;
  f_.host_wait_s += (b - a) * 1e-9;
  const Gap g{a, b};
  for (const Interval& s : samples_) Pair(s, g);
  // Kept while a later sample may still cover part of it.
  if (!have_prev_ || b > prev_.t_ns()) {
    gaps_.push_back(g);
    if (gaps_.size() > kMaxKept) gaps_.pop_front();
  }
}

void InputIo::OnDeviceSettled(uint64_t mark) {
  while (!samples_.empty() && samples_.front().t1 <= mark) samples_.pop_front();
}

}  // namespace gpuwatch::collector
