// See step_pattern.h.
#include "interpret/step_pattern.h"

#include <algorithm>
#include <unordered_map>

namespace gpuwatch::collector {
namespace {

// The share of anchors that repeat the signature p anchors earlier, each kind of anchor
// weighing the same however often it comes: a step of 20 identical launches and one copy
// repeats only half at period 1 (the launches do, the copy never), all of it at 21.
double Score(const std::vector<uint64_t>& sig, const std::vector<double>& weight, uint64_t p) {
  double same = 0, all = 0;
  for (uint64_t i = p; i < sig.size(); ++i) {
    all += weight[i];
    if (sig[i] == sig[i - p]) same += weight[i];
  }
  return all > 0 ? same / all : 0;
}

// Periods worth scoring. Small limits: every one. Large ones (launches): the distances at
// which some signature recurs -- a launch made once per step recurs exactly at the period.
std::vector<uint64_t> Candidates(const std::vector<uint64_t>& sig, uint64_t limit) {
  std::vector<uint64_t> out;
  if (limit <= 256) {
    for (uint64_t p = 1; p <= limit; ++p) out.push_back(p);
    return out;
  }
  std::unordered_map<uint64_t, uint64_t> last;  // signature -> its latest index
  std::unordered_map<uint64_t, uint64_t> count;  // distance -> how often
  for (uint64_t i = 0; i < sig.size(); ++i) {
    auto [it, fresh] = last.try_emplace(sig[i], i);
    if (!fresh) {
      const uint64_t d = i - it->second;
      if (d <= limit) ++count[d];
      it->second = i;
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> by_count(count.begin(), count.end());
  std::sort(by_count.begin(), by_count.end(), [](auto a, auto b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  for (size_t k = 0; k < by_count.size() && k < 128; ++k) out.push_back(by_count[k].first);
  for (uint64_t p = 1; p <= 16 && p <= limit; ++p) out.push_back(p);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

uint64_t FindPeriod(const std::vector<uint64_t>& sig, uint64_t max_period, uint64_t min_repeats) {
  const uint64_t n = sig.size();
  const uint64_t limit = std::min<uint64_t>(max_period, n / 2);
  if (limit == 0) return 0;
  std::unordered_map<uint64_t, uint64_t> count;
  for (uint64_t x : sig) ++count[x];
  std::vector<double> weight(n);
  for (uint64_t i = 0; i < n; ++i) weight[i] = 1.0 / static_cast<double>(count[sig[i]]);
  std::vector<std::pair<uint64_t, double>> scored;
  double best = 0;
  for (uint64_t p : Candidates(sig, limit)) {
    const double s = Score(sig, weight, p);
    scored.emplace_back(p, s);
    best = std::max(best, s);
  }
  for (auto [p, s] : scored)  // ascending p
    if (s >= kPeriodMatch && s >= best - kPeriodSlack) return n >= min_repeats * p ? p : 0;
  return 0;
}

void StepPattern::Boundary(uint64_t index, uint64_t t_ns) {
  last_boundary_index_ = index;
  if (boundary_count_ > 0) stats_.Add(t_ns > last_boundary_ ? t_ns - last_boundary_ : 0);
  last_boundary_ = t_ns;
  ++boundary_count_;
  if (boundaries_.size() <= kMaxSteps) boundaries_.push_back(t_ns);
  fresh_.push_back(t_ns);
}

void StepPattern::Search(uint64_t min_repeats, bool final) {
  std::vector<uint64_t> sig;
  sig.reserve(window_.size());
  for (const Anchor& a : window_) sig.push_back(a.sig);
  const uint64_t p = FindPeriod(sig, max_period_, min_repeats);
  if (p == 0 && !final) return;
  searched_ = true;
  period_ = p;
  if (p) {
    // The phase whose anchors follow the longest pauses (median over the window).
    uint64_t best_gap = 0;
    std::vector<uint64_t> gaps;
    uint64_t longest = 0;
    for (uint64_t phase = 0; phase < p; ++phase) {
      gaps.clear();
      for (uint64_t i = phase == 0 ? p : phase; i < window_.size(); i += p)
        gaps.push_back(window_[i].t_ns - std::min(window_[i].t_ns, window_[i - 1].t_ns));
      if (gaps.empty()) continue;
      std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
      if (gaps[gaps.size() / 2] > best_gap) best_gap = gaps[gaps.size() / 2], longest = phase;
    }
    // An anchor that ends its step: the boundary is the one the pause follows.
    phase_ = anchors_end_steps_ ? (longest + p - 1) % p : longest;
    // The kind of anchor in the boundary's place, most often.
    std::unordered_map<uint64_t, uint64_t> kinds;
    for (size_t i = phase_; i < window_.size(); i += p) ++kinds[window_[i].sig & boundary_mask_];
    uint64_t most = 0;
    for (auto [sig, n] : kinds)
      if (n > most || (n == most && sig < boundary_sig_)) most = n, boundary_sig_ = sig;
    for (size_t i = phase_; i < window_.size(); i += p)
      if ((window_[i].sig & boundary_mask_) == boundary_sig_) Boundary(i, window_[i].t_ns);
  }
  std::vector<Anchor>().swap(window_);
}

void StepPattern::Add(uint64_t sig, uint64_t t_ns) {
  const uint64_t index = seen_++;
  if (searched_) {
    if (period_ && index % period_ == phase_ % period_ && (sig & boundary_mask_) == boundary_sig_) Boundary(index, t_ns);
    return;
  }
  window_.push_back({sig, t_ns});
  const uint64_t n = window_.size();
  const bool doubled = n >= first_search_ && (n & (n - 1)) == 0;
  if (doubled || n == window_limit_) Search(kMinRepeats, n == window_limit_);
}

bool StepPattern::Result(std::vector<StepMark>* steps, uint64_t* total, StepStats* stats) const {
  if (!searched_) {  // fewer anchors than the window: searched whole, now
    StepPattern whole = *this;
    whole.Search(2, true);
    return whole.Result(steps, total, stats);
  }
  if (period_ == 0 || boundary_count_ < 3) return false;  // at least two steps
  *stats = stats_;
  *total = boundary_count_ - 1;
  for (size_t i = 0; i + 1 < boundaries_.size() && steps->size() < kMaxSteps; ++i) {
    steps->push_back(StepMark{boundaries_[i], boundaries_[i + 1], false});
  }
  return true;
}

}  // namespace gpuwatch::collector
