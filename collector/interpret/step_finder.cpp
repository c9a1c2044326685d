// See step_finder.h.
#include "interpret/step_finder.h"

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

void StepFinder::OnHostCall(const HostCall& c, const Coverage& coverage, EventSink& out) {
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
  if (c.sync_kind != kNotSync) {
    sync_pattern_.Add(static_cast<uint64_t>(c.api) * 31 + static_cast<uint64_t>(c.sync_kind), c.end_ns());
  } else if (IsCollective(c.api)) {
    coll_pattern_.Add(static_cast<uint64_t>(c.api) * 1000003 + c.bytes, c.t_ns);
  }
}

StepsFound StepFinder::Result() const {
  if (nvtx_.nvtx) return nvtx_;
  StepsFound r;
  for (const StepPattern* pattern : {&coll_pattern_, &sync_pattern_}) {
    if (!pattern->Result(&r.inferred, &r.total, &r.stats)) continue;
    r.source = pattern == &coll_pattern_ ? "inferred:collectives" : "inferred:syncs";
    return r;
  }
  return StepsFound{};
}

}  // namespace gpuwatch::collector
