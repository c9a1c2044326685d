// Definitions due with a batch, and sent again after the transport lost frames.
#include "assemble/definitions.h"

#include <algorithm>

#include "transport/encode.h"

namespace gpuwatch::inject {

void Definitions::UseName(uint32_t id) {
  if (id == 0) return;
  if (id >= name_sent_.size()) name_sent_.resize(id + 1024);  // ids are dense and bounded
  if (name_sent_[id]) return;
  name_sent_[id] = true;
  names_due_.push_back(id);
}

void Definitions::UseSite(uint32_t id, std::string& batch) {
  if (id == 0 || !sites_sent_.insert(id).second) return;
  CallSiteText t;
  if (!src_.describe_site(id, &t)) return;
  AppendCallSite(batch, id, t.frames, t.python);
  // The site's whole Python stack, tied to it (sent with each site: a stack shared with
  // samples goes out again here, with the site's id).
  std::vector<std::string> frames;
  if (t.python_stack && src_.find_stack && src_.find_stack(t.python_stack, &frames)) {
    AppendPythonStack(batch, t.python_stack, frames, id);
    stacks_sent_.insert(t.python_stack);
  }
}

void Definitions::UseStack(uint32_t id, std::string& batch) {
  if (id == 0 || !stacks_sent_.insert(id).second) return;
  if (id > kNativeStackIdBase) {
    NativeStackText t;
    if (src_.find_native && src_.find_native(id, &t)) AppendNativeStack(batch, id, t.frames, t.blocked_in);
    return;
  }
  std::vector<std::string> frames;
  if (src_.find_stack && src_.find_stack(id, &frames)) AppendPythonStack(batch, id, frames, 0);
}

void Definitions::AppendDue(std::string& batch, int gpu_source, std::string_view gpu_source_detail,
                            uint64_t frames_lost) {
  // The source (and its detail) changes when the application's profiler takes CUPTI.
  if (gpu_source != 0 && (gpu_source != source_sent_ || gpu_source_detail != detail_sent_)) {
    AppendGpuSource(batch, gpu_source, gpu_source_detail);
    source_sent_ = gpu_source;
    detail_sent_ = gpu_source_detail;
  }
  if (frames_lost != lost_seen_) {
    lost_seen_ = frames_lost;
    std::fill(name_sent_.begin(), name_sent_.end(), false);
    sites_sent_.clear();
    stacks_sent_.clear();
    for (uint32_t id : names_due_) name_sent_[id] = true;  // in this batch
    comms_sent_ = 0;
  }
  for (uint32_t id : names_due_) AppendKernelName(batch, id, src_.names->Name(id));
  names_due_.clear();
  const auto append = [&](const CommInfo* c) {
    const uint32_t ended = c->ended.load(std::memory_order_relaxed);
    AppendCommunicator(batch, CommDefinition{.comm_id = c->id, .unique_hash = c->unique_hash,
                                             .parent_hash = c->made.parent_hash, .split_index = c->made.split_index,
                                             .nranks = c->nranks, .rank = c->rank, .color = c->made.color,
                                             .key = c->made.key, .origin = c->made.origin, .ended = ended});
    if (ended) c->end_sent = true;
  };
  for (const CommInfo* c : src_.comms->Since(comms_sent_)) {
    append(c);
    comms_sent_ = c->id;
  }
  // Communicators destroyed or aborted since: their definition again, with how it ended.
  const uint64_t ends = src_.comms->EndCount();
  if (ends != ends_seen_) {
    ends_seen_ = ends;
    for (const CommInfo* c : src_.comms->Since(0))
      if (c->id <= comms_sent_ && !c->end_sent && c->ended.load(std::memory_order_relaxed)) append(c);
  }
}

}  // namespace gpuwatch::inject
