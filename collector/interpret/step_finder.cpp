// See step_finder.h.
#include "interpret/step_finder.h"

#include <algorithm>
#include <cctype>

#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool StepFinder::IsStepName(const std::string& n) const {
  if (!step_range_.empty()) return n == step_range_;
  const std::string l = Lower(n);
  for (const char* c : kDefaultStepRanges)
    if (l == c) return true;
  return l.find("step") != std::string::npos;
}

void StepFinder::NoteNames(const wire::Batch& b) {
  for (const auto& k : b.kernel_names())
    if (names_.size() < 64 && IsStepName(k.name())) names_[k.id()] = k.name().substr(0, 128);
}

void StepFinder::OnHostCall(const HostCall& c, const Coverage& coverage, uint64_t device_swept, EventSink& out) {
  last_host_end_ = std::max(last_host_end_, c.end_ns());
  if (c.api == wire::NVTX_RANGE) {
    auto it = names_.find(c.name_id);
    if (it == names_.end()) return;
    const uint64_t depth = c.seq;
    if (c.name_id != step_name_id_) {
      // Lock on the outermost step-like range: a shallower one replaces a deeper one.
      if (step_name_id_ != 0 && depth >= step_depth_) return;
      step_name_id_ = c.name_id;
      step_depth_ = depth;
      nvtx_ = StepsFound{};
      nvtx_.nvtx = true;
      nvtx_.source = "nvtx:" + it->second;
      out.OnStepsReset();
    }
    ++nvtx_.total;
    nvtx_.stats.Add(c.dur_ns);
    last_end_ = c.end_ns();
    out.OnStep(StepMark{c.t_ns, c.end_ns(), coverage.Covers(c.t_ns, c.end_ns())});
    return;
  }
  // NVTX steps, once found, are the steps: the inferring patterns would only cost CPU per
  // call and keep boundaries no one takes.
  if (nvtx_.nvtx) return;
  if (c.sync_kind != kNotSync) {
    sync_pattern_.Add(static_cast<uint64_t>(c.api) * 31 + static_cast<uint64_t>(c.sync_kind), c.end_ns());
  } else if (IsCollective(c.api) && !c.captured) {
    coll_pattern_.Add(static_cast<uint64_t>(c.api) * 1000003 + c.bytes, c.t_ns);
  } else if ((EnqueuesWork(c.api) || c.api == wire::CUDA_LAUNCH_RUN) && !c.captured) {
    // What was launched (the kernel, the copy's size, or how many launches a run of them
    // the library summarized holds), and whether the host paused first.
    const bool paused = last_enqueue_end_ != 0 && c.t_ns > last_enqueue_end_ + kLaunchPauseNs;
    const uint64_t what = c.api == wire::CUDA_LAUNCH_RUN ? c.calls : c.name_id != 0 ? c.name_id : c.bytes;
    launch_pattern_.Add(((static_cast<uint64_t>(c.api) * 1000003 + what) << 1) | paused, c.t_ns);
    last_enqueue_end_ = c.end_ns();
  } else {
    return;
  }
  EmitInferred(coverage, device_swept, out);
}

void StepFinder::EmitInferred(const Coverage& coverage, uint64_t device_swept, EventSink& out) {
  StepPattern* const patterns[] = {&coll_pattern_, &sync_pattern_, &launch_pattern_};
  const StepPattern* best = nullptr;
  for (const StepPattern* p : patterns)
    if (p->locked()) {
      best = p;
      break;
    }
  if (best) {
    bool reset = false;
    if (best != emitting_) {  // a better kind of anchor found its period: its steps replace
      out.OnStepsReset();
      emitting_ = best;
      emitted_from_ = 0;
      reset = true;
    }
    for (uint64_t b : reset ? best->boundaries() : best->fresh()) {
      if (emitted_from_ != 0 && b > emitted_from_) {
        out.OnStep(StepMark{emitted_from_, b, coverage.Covers(emitted_from_, b) && emitted_from_ >= device_swept});
        last_len_ = b - emitted_from_;
      }
      emitted_from_ = b;
    }
  }
  for (StepPattern* p : patterns) p->ClearFresh();  // taken from every pattern, so none grows
}

void StepFinder::Flush(const Coverage& coverage, uint64_t device_swept, EventSink& out) {
  if (nvtx_.nvtx || flushed_ || !emitting_ || !emitting_->open_step_complete()) return;
  // Its end: where the host stopped, but no later than a step as long as the one before
  // (the calls after it are the teardown's).
  const uint64_t end = std::min(last_host_end_, emitted_from_ + last_len_);
  if (end <= emitted_from_) return;
  flushed_ = true;
  flushed_step_ = StepMark{emitted_from_, end, coverage.Covers(emitted_from_, end) && emitted_from_ >= device_swept};
  out.OnStep(flushed_step_);
}

StepsFound StepFinder::Result() const {
  if (nvtx_.nvtx) return nvtx_;
  StepsFound r;
  const std::pair<const StepPattern*, const char*> kinds[] = {
      {&coll_pattern_, "inferred:collectives"}, {&sync_pattern_, "inferred:syncs"}, {&launch_pattern_, "inferred:launches"}};
  for (auto [pattern, source] : kinds) {
    // The steps that went out, if some did: the figures charged to them must match.
    if (emitting_ && pattern != emitting_) continue;
    if (!pattern->Result(&r.inferred, &r.total, &r.stats)) continue;
    r.source = source;
    if (flushed_ && pattern == emitting_) {  // the last step, which no boundary closed
      ++r.total;
      r.stats.Add(flushed_step_.end_ns - flushed_step_.start_ns);
      if (r.inferred.size() < kMaxSteps) r.inferred.push_back(flushed_step_);
    }
    return r;
  }
  return StepsFound{};
}

}  // namespace gpuwatch::collector
