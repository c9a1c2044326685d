// See steps.h. Steps come from NVTX ranges (hooks_nvtx.cpp sends each closed range as an
// NVTX_RANGE event); without them, from the repeating pattern of collectives or syncs.
#include "analyze/steps.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "analyze/bus_factor.h"
#include "analyze/thresholds.h"

namespace gpuwatch::collector::diag {

const char* SyncKindName(int k) {
  static const char* kNames[kSyncKinds] = {"cudaStreamSynchronize", "cudaDeviceSynchronize",
                                           "cudaEventSynchronize",
                                           "small blocking copy (.item()/.cpu())"};
  return k >= 0 && k < kSyncKinds ? kNames[k] : "?";
}

double RankDiag::ActiveS() const {
  if (cupti && dev_last > dev_first) return (dev_last - dev_first) * 1e-9;
  return host_last > host_first ? (host_last - host_first) * 1e-9 : 0.0;
}

uint64_t RankDiag::SyncMidNs() const {
  uint64_t t = 0;
  for (uint64_t v : sync_mid_ns) t += v;
  return t;
}

std::vector<uint64_t> StepDurations(const RankDiag& d) {
  std::vector<uint64_t> v;
  v.reserve(d.steps.size());
  for (const auto& s : d.steps) v.push_back(s.end > s.start ? s.end - s.start : 0);
  return v;
}

uint64_t Percentile(std::vector<uint64_t> v, double p) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * v.size()));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + (rank - 1), v.end());
  return v[rank - 1];
}

static bool StepsAllKept(const RankDiag& d) { return d.steps_total <= d.steps.size() || d.step_stats.count() == 0; }

uint64_t RankDiag::StepPercentileNs(double p) const {
  return StepsAllKept(*this) ? Percentile(StepDurations(*this), p) : step_stats.Percentile(p);
}

uint64_t RankDiag::StepMaxNs() const {
  if (!StepsAllKept(*this)) return step_stats.max_ns();
  const auto dur = StepDurations(*this);
  return dur.empty() ? 0 : *std::max_element(dur.begin(), dur.end());
}

double RankDiag::StepsTotalS() const {
  if (!StepsAllKept(*this)) return step_stats.sum_ns() * 1e-9;
  double t = 0;
  for (const auto& s : steps) t += (s.end > s.start ? s.end - s.start : 0) * 1e-9;
  return t;
}

double RankDiag::StepMedianS() const { return StepPercentileNs(0.5) * 1e-9; }

namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsCollective(wire::Api a) { return a >= wire::NCCL_ALL_REDUCE && a <= wire::NCCL_RECV; }

int SyncKindOf(const HostEvent& e) {
  switch (e.api()) {
    case wire::CUDA_STREAM_SYNCHRONIZE: return kSyncStream;
    case wire::CUDA_DEVICE_SYNCHRONIZE: return kSyncDevice;
    case wire::CUDA_EVENT_SYNCHRONIZE: return kSyncEvent;
    case wire::CUDA_MEMCPY:
    case wire::CUDA_MEMCPY_ASYNC:
      if ((e.flags() & wire::FLAG_BLOCKED_HOST) && e.bytes() <= kSmallCopyBytes &&
          (e.copy_kind() == wire::COPY_H2D || e.copy_kind() == wire::COPY_D2H))
        return kSyncSmallCopy;
      return -1;
    default: return -1;
  }
}

}  // namespace

StepsCollector::StepsCollector() : tl_(std::make_unique<StepTimeline>(&d_.steps)) { tl_->SetGapSink(&io_); }

StepsCollector::StepsCollector(const StepsCollector& o)
    : d_(o.d_),
      io_(o.io_),
      tl_(std::make_unique<StepTimeline>(*o.tl_)),
      step_range_(o.step_range_),
      names_(o.names_),
      step_name_id_(o.step_name_id_),
      step_depth_(o.step_depth_),
      cur_mid_(o.cur_mid_),
      cur_mid_n_(o.cur_mid_n_),
      comms_(o.comms_),
      coll_pattern_(o.coll_pattern_),
      sync_pattern_(o.sync_pattern_),
      in_order_(o.in_order_),
      late_(o.late_),
      newest_host_(o.newest_host_),
      settled_(o.settled_),
      sites_(o.sites_) {
  tl_->Rebind(&d_.steps);
  tl_->SetGapSink(&io_);
  for (int k = 0; k < kSyncKinds; ++k) {
    pending_[k] = o.pending_[k];
    pending_n_[k] = o.pending_n_[k];
  }
}

// Order key: a range counts when it closes, a sync when it returns, work when it starts.
void StepsCollector::Hold(Held h) {
  if (!in_order_.empty() && h.key >= in_order_.back().key && h.e.api() == wire::CUDA_LAUNCH_KERNEL &&
      in_order_.back().e.api() == wire::CUDA_LAUNCH_KERNEL) {
    in_order_.back().e.Absorb(h.e);  // the run keeps its first launch's place in time
    return;
  }
  if (in_order_.empty() || h.key >= in_order_.back().key)
    in_order_.push_back(std::move(h));
  else
    late_.push(std::move(h));
}

void StepsCollector::Release(bool all) {
  // What may still arrive goes after `mark`: the library says so (settled_ns), or else it
  // is assumed of everything kHostHorizonNs older than the newest event.
  const uint64_t mark = std::max(settled_, newest_host_ > kHostHorizonNs ? newest_host_ - kHostHorizonNs : 0);
  for (;;) {
    const bool from_late = !late_.empty() && (in_order_.empty() || late_.top().key < in_order_.front().key);
    if (!from_late && in_order_.empty()) break;
    const Held& next = from_late ? late_.top() : in_order_.front();
    if (!all && in_order_.size() + late_.size() <= kMaxHeld && next.key >= mark) break;
    const HostEvent e = next.e;
    if (from_late)
      late_.pop();
    else
      in_order_.pop_front();
    Process(e);
  }
}

void StepsCollector::OnHello(const wire::Hello& h) {
  ++batches_;  // a new state for Result()
  d_.rank = h.rank();
  d_.host = h.host();
  step_range_ = h.step_range();
}

bool StepsCollector::IsStepName(const std::string& n) const {
  if (!step_range_.empty()) return n == step_range_;
  const std::string l = Lower(n);
  for (const char* c : kDefaultStepRanges)
    if (l == c) return true;
  return l.find("step") != std::string::npos;
}

void StepsCollector::OnRange(const HostEvent& e) {
  auto it = names_.find(e.name_id());
  if (it == names_.end()) return;
  const uint64_t depth = e.seq();
  if (e.name_id() != step_name_id_) {
    // Lock on the outermost step-like range: a shallower one replaces a deeper one.
    if (step_name_id_ != 0 && depth >= step_depth_) return;
    step_name_id_ = e.name_id();
    step_depth_ = depth;
    d_.steps.clear();
    d_.steps_total = 0;
    d_.step_stats = StepStats{};
    tl_->ResetCursor();
    d_.step_source = "nvtx:" + it->second;
  }
  ++d_.steps_total;
  d_.step_stats.Add(e.dur_ns());
  if (d_.steps.size() >= kMaxSteps) {
    // The per-step records end here; device work after the last one is not its.
    if (d_.steps_total == kMaxSteps + 1) tl_->StopAt(d_.steps.back().end);
    return;
  }
  StepRec s;
  s.start = e.t_ns();
  s.end = e.t_ns() + e.dur_ns();
  s.sync_mid = cur_mid_;
  s.sync_mid_count = cur_mid_n_;
  d_.steps.push_back(s);
  d_.per_step_device = true;
}

void StepsCollector::OnBatch(const wire::Batch& b) {
  ++batches_;
  constexpr size_t kMaxSites = 1024, kMaxFrames = 16, kMaxText = 512;
  for (const auto& c : b.call_sites()) {
    if (sites_.size() >= kMaxSites && !sites_.count(c.id())) continue;
    SiteStat& st = sites_[c.id()];
    st.python = c.python().substr(0, kMaxText);
    st.frames.clear();
    for (int i = 0; i < c.frames_size() && i < static_cast<int>(kMaxFrames); ++i)
      st.frames.push_back(c.frames(i).substr(0, kMaxText));
  }
  for (const auto& e : b.events()) {
    if (e.site_id() == 0 || (sites_.size() >= kMaxSites && !sites_.count(e.site_id()))) continue;
    SiteStat& st = sites_[e.site_id()];
    st.ns += e.dur_ns();
    ++st.count;
  }
  if (b.gpu_source() == wire::GPU_SOURCE_CUPTI) d_.cupti = true;
  if (b.has_environment()) d_.env.Merge(b.environment());
  for (const auto& s : b.proc_samples()) io_.OnSample(s);
  for (const auto& k : b.kernel_names())
    if (names_.size() < 64 && IsStepName(k.name())) names_[k.id()] = k.name().substr(0, 128);
  for (const auto& c : b.communicators())
    if (comms_.size() < 4096) comms_[c.comm_id()] = {c.nranks(), c.unique_hash()};
  for (const auto& w : b.events()) {
    const HostEvent e(w);
    const uint64_t end = e.t_ns() + e.dur_ns();
    const bool at_end = e.api() == wire::NVTX_RANGE || SyncKindOf(e) >= 0;
    Hold(Held{at_end ? end : e.t_ns(), e});
    newest_host_ = std::max(newest_host_, end);
  }
  settled_ = std::max(settled_, b.settled_ns());
  Release(false);
  tl_->OnBatch(b);
}

void StepsCollector::Process(const HostEvent& e) {
  {
    const uint64_t end = e.t_ns() + e.dur_ns();
    if (e.api() == wire::NVTX_RANGE) {
      // Syncs still pending when the step closes were its trailing syncs (not a stall).
      if (names_.count(e.name_id())) {
        for (int k = 0; k < kSyncKinds; ++k) pending_[k] = pending_n_[k] = 0;
        OnRange(e);
        cur_mid_ = cur_mid_n_ = 0;
      }
      return;
    }
    if (d_.host_first == 0 || e.t_ns() < d_.host_first) d_.host_first = e.t_ns();
    d_.host_last = std::max(d_.host_last, end);
    const int sk = SyncKindOf(e);
    if (sk >= 0) {
      ++d_.sync_count;
      d_.sync_ns += e.dur_ns();
      pending_[sk] += e.dur_ns();
      ++pending_n_[sk];
      sync_pattern_.Add(static_cast<uint64_t>(e.api()) * 31 + sk, end);
      return;
    }
    // Work follows: the syncs before it were inside the step.
    for (int k = 0; k < kSyncKinds; ++k) {
      d_.sync_mid_ns[k] += pending_[k];
      d_.sync_mid_count[k] += pending_n_[k];
      cur_mid_ += pending_[k];
      cur_mid_n_ += pending_n_[k];
      pending_[k] = pending_n_[k] = 0;
    }
    if (e.api() == wire::CUDA_LAUNCH_KERNEL) {
      d_.launches += e.count();
      d_.launch_ns += e.dur_ns();
    } else if ((e.api() == wire::CUDA_MEMCPY || e.api() == wire::CUDA_MEMCPY_ASYNC) &&
               (e.copy_kind() == wire::COPY_H2D || e.copy_kind() == wire::COPY_D2H)) {
      if (e.flags() & wire::FLAG_PAGEABLE) {
        ++d_.pageable_count;
        d_.pageable_bytes += e.bytes();
        d_.pageable_ns += e.dur_ns();
      } else if (e.flags() & wire::FLAG_BLOCKED_HOST) {
        ++d_.blocking_count;
        d_.blocking_bytes += e.bytes();
        d_.blocking_ns += e.dur_ns();
      }
    } else if (IsCollective(e.api())) {
      auto c = comms_.find(e.comm_id());
      const int n = c != comms_.end() ? c->second.first : 1;
      const uint64_t hash = c != comms_.end() ? c->second.second : e.comm_id();
      uint64_t s = e.bytes();
      if (e.api() == wire::NCCL_ALL_GATHER || e.api() == wire::NCCL_REDUCE_SCATTER) s *= n;
      ++d_.coll_count;
      d_.coll_bytes += s;
      const bool timed = e.gpu_ns() > 0 && !(e.flags() & wire::FLAG_NO_GPU_TIME);
      if (timed) {
        ++d_.coll_timed;
        d_.coll_gpu_ns += e.gpu_ns();
        d_.coll_bus_bytes += s * BusFactor(e.api(), n);
      }
      if (e.seq() % d_.coll_stride == 0 && d_.colls.size() >= kMaxCollCalls) ThinCollSample();
      if (e.seq() % d_.coll_stride == 0 && d_.colls.size() < kMaxCollCalls)
        d_.colls.push_back({hash, e.seq(), e.t_ns(), timed ? e.gpu_ns() : 0});
      coll_pattern_.Add(static_cast<uint64_t>(e.api()) * 1000003 + e.bytes(), e.t_ns());
    }
  }
}

const RankDiag& StepsCollector::Result() const {
  // A summary asks several times for the same state (JSON, text, the job's merge): the
  // copy below is of everything still held, so it is made once per state.
  if (cached_ && cached_batches_ == batches_) return *cached_;
  cached_ = Compute();
  cached_batches_ = batches_;
  return *cached_;
}

RankDiag StepsCollector::Compute() const {
  RankDiag sited;
  for (const auto& [id, st] : sites_)
    if (st.count) sited.sites.push_back(st);
  std::sort(sited.sites.begin(), sited.sites.end(), [](const SiteStat& a, const SiteStat& b) { return a.ns > b.ns; });
  if (sited.sites.size() > kMaxSitesShown) sited.sites.resize(kMaxSitesShown);
  RankDiag r = ComputeSteps();
  r.sites = std::move(sited.sites);
  return r;
}

// Every other call of the sample goes: the stride doubles. Not when that would free
// nothing (calls of an unknown communicator all have sequence number 0): the sample then
// stays full, and the stride, which scales the waits, stays what it is.
void StepsCollector::ThinCollSample() {
  const uint64_t wider = d_.coll_stride * 2;
  auto& c = d_.colls;
  if (std::none_of(c.begin(), c.end(), [&](const CollCall& k) { return k.seq % wider != 0; })) return;
  d_.coll_stride = wider;
  std::erase_if(c, [&](const CollCall& k) { return k.seq % wider != 0; });
}

void StepsCollector::OnGoodbye() {
  ++batches_;  // a new state for Result()
  Release(true);
}

RankDiag StepsCollector::ComputeSteps() const {
  if (in_order_.empty() && late_.empty()) return ComputeReleased();
  // Still running (a live summary) or gone without a goodbye: what is held is processed
  // on a copy, so the live analysis keeps waiting for what may still go before it.
  StepsCollector c(*this);
  c.Release(true);
  return c.ComputeReleased();
}

RankDiag StepsCollector::ComputeReleased() const {
  RankDiag r = d_;
  StepTimeline t = *tl_;
  InputIo io = io_;
  t.Rebind(&r.steps);
  t.SetGapSink(&io);
  t.Flush();  // its last host-wait gap goes to io
  r.io = io.figures();
  r.dev = t.total();
  r.dev_first = t.first_ns();
  r.dev_last = t.last_ns();
  r.kernels = t.kernels();
  r.kernels_with_api = t.kernels_with_api();
  r.kernels_short = t.kernels_short();
  if (t.work() > 0) r.cupti = true;
  if (!r.steps.empty()) return r;
  // No NVTX step: the repeating pattern of collectives, else of host syncs.
  for (const StepPattern* pattern : {&coll_pattern_, &sync_pattern_}) {
    if (!pattern->Result(&r.steps, &r.steps_total, &r.step_stats)) continue;
    r.step_source = pattern == &coll_pattern_ ? "inferred:collectives" : "inferred:syncs";
    r.per_step_device = false;
    break;
  }
  return r;
}

}  // namespace gpuwatch::collector::diag
