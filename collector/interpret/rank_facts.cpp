// See rank_facts.h.
#include "interpret/rank_facts.h"

#include "common/kernel_names.h"
#include "interpret/python_frames.h"

namespace gpuwatch::collector {
namespace {

constexpr size_t kMaxCpuList = 4096;  // a cpulist of every CPU of a large host is far shorter
constexpr size_t kMaxDetail = 256, kMaxReasonBytes = 64, kMaxFrames = 16, kMaxText = 512;
constexpr uint32_t kMaxNameId = 1u << 20;  // the library's name table holds 1 << 17

}  // namespace

void EnvFacts::Merge(const wire::Environment& e) {
  known = true;
  if (e.cuda_runtime_version()) cuda_runtime = e.cuda_runtime_version();
  if (e.cuda_driver_version()) cuda_driver = e.cuda_driver_version();
  if (e.nccl_version()) nccl = e.nccl_version();
  if (e.device_memory_bytes()) device_memory_bytes = e.device_memory_bytes();
  if (e.device_sm_count()) device_sm_count = e.device_sm_count();
  if (e.device_compute_capability() > 0) device_compute_capability = e.device_compute_capability();
  if (!e.device_name().empty()) device_name = e.device_name().substr(0, 128);
  if (!e.cpu_affinity().empty()) cpu_affinity = e.cpu_affinity().substr(0, kMaxCpuList);
  if (e.device_numa_node_plus1() > 0) {
    device_numa_node = e.device_numa_node_plus1() - 1;
    device_numa_cpus = e.device_numa_cpus().substr(0, kMaxCpuList);
  }
  if (e.cgroup_version()) {
    cgroup_version = e.cgroup_version();
    cpu_quota_us = e.cpu_quota_us();
    cpu_period_us = e.cpu_period_us();
  }
  if (e.nic_ports()) {
    nic_max_mbps = e.nic_max_mbps();
    nic_total_mbps = e.nic_total_mbps();
    nic_ports = e.nic_ports();
    nic_source = e.nic_source().substr(0, 16);
  }
  if (e.host_gpus()) host_gpus = e.host_gpus();
  settings.clear();
  for (const auto& s : e.settings())
    if (settings.size() < 64) settings.emplace_back(s.name().substr(0, 64), s.value().substr(0, 128));
}

void RankFacts::OnBatch(const wire::Batch& b) {
  for (const auto& k : b.kernel_names()) {
    if (k.id() < kMaxNameId) {
      if (k.id() >= comm_kernel_.size()) comm_kernel_.resize(k.id() + 1024, false);
      comm_kernel_[k.id()] = IsCommKernelName(k.name());
    }
    if (names_.size() >= kMaxNames && !names_.count(k.id())) continue;
    names_[k.id()] = k.name().substr(0, kMaxNameBytes);
  }
  for (const auto& c : b.communicators())
    if (comms_.size() < kMaxComms || comms_.count(c.comm_id()))
      comms_[c.comm_id()] = CommFacts{c.nranks(),      c.rank(),        c.unique_hash(), c.origin(), c.parent_hash(),
                                      c.split_index(), c.color(),       c.key(),         c.ended()};
  for (const auto& c : b.call_sites()) {
    if (sites_.size() >= kMaxSites && !sites_.count(c.id())) continue;
    SiteText& s = sites_[c.id()];
    s.python = c.python().substr(0, kMaxText);
    s.frames.clear();
    for (int i = 0; i < c.frames_size() && i < static_cast<int>(kMaxFrames); ++i)
      s.frames.push_back(c.frames(i).substr(0, kMaxText));
  }
  // After the call sites: a site's stack is sent after the site.
  for (const auto& p : b.python_stacks()) {
    std::vector<std::string> frames;
    for (int i = 0; i < p.frames_size() && i < static_cast<int>(kMaxFrames); ++i)
      frames.push_back(p.frames(i).substr(0, kMaxText));
    if (p.call_site_id() != 0) {
      auto site = sites_.find(p.call_site_id());
      if (site != sites_.end()) {
        site->second.python = UserFrame(frames);
        site->second.python_stack = frames;
      }
    }
    if (stacks_.size() < kMaxStacks || stacks_.count(p.id())) {
      stacks_[p.id()] = std::move(frames);
      if (p.native()) native_blocked_in_[p.id()] = p.blocked_in().substr(0, kMaxText);
    }
  }
  if (b.gpu_source() != wire::GPU_SOURCE_UNSPECIFIED) gpu_source_ = b.gpu_source();
  if (!b.gpu_source_detail().empty()) gpu_source_detail_ = b.gpu_source_detail().substr(0, kMaxDetail);
  if (!b.device_sampler_detail().empty()) device_sampler_detail_ = b.device_sampler_detail().substr(0, kMaxDetail);
  if (b.has_environment()) env_.Merge(b.environment());
  if (b.has_overhead()) {
    const wire::Overhead& o = b.overhead();
    const uint64_t collector_cpu = overhead_.collector_cpu_ns;  // the collector's, not the message's
    overhead_ = OverheadFacts{true,           o.cupti_mode(),     o.budget(),         o.hook_ns(),
                              o.cupti_ns(),   o.cupti_ns_measured(), o.hw_trace(),    o.hook_calls(),
                              o.cupti_calls(), o.hooks_added_ns(), o.cupti_added_ns(), o.windows(),
                              o.window_ns(),  o.elapsed_ns(),      o.sender_cpu_ns(),  o.hook_samples(),
                              o.startup_ns(), o.cupti_graph_ns(), o.cupti_graph_ns_measured(),
                              o.cupti_graph_launches(), o.cupti_detaches(), o.cupti_detach_ns(),
                              o.cupti_linger_calls(), o.cupti_linger_ns(), o.cupti_linger_ns_measured()};
    overhead_.collector_cpu_ns = collector_cpu;
  }
  if (b.has_host_sampling()) {
    const wire::HostSampling& h = b.host_sampling();
    sampling_ = SamplingFacts{true,      h.hz(),           h.samples(),          h.cpu_ns(),
                              h.dropped(), h.native_samples(), h.timer_captures(), h.native_signal(),
                              h.handler_ns(), h.held_samples()};
  }
  // The sampler's part in the library's cost is what HostSampling says it took (the budget
  // spends the same two figures), whichever of the two messages came last.
  overhead_.sampler_ns = sampling_.cpu_ns + sampling_.handler_ns;
  overhead_.sampler_signals_ns = sampling_.handler_ns;
  for (const auto& d : b.dropped()) NoteDropped(d);
}

void RankFacts::OnGoodbye(const wire::Goodbye& g) {
  for (const auto& d : g.dropped()) NoteDropped(d);
}

// Totals are cumulative: the largest one seen per reason, so a repeated total counts once.
void RankFacts::NoteDropped(const wire::DropCount& d) {
  const std::string reason = d.reason().substr(0, kMaxReasonBytes);
  auto it = dropped_.find(reason);
  if (it == dropped_.end()) {
    if (dropped_.size() >= kMaxReasons) return;
    it = dropped_.emplace(reason, 0).first;
  }
  if (d.count() > it->second) it->second = d.count();
}

uint64_t RankFacts::dropped_total() const {
  uint64_t t = 0;
  for (const auto& [reason, n] : dropped_) t += n;
  return t;
}

const std::string* RankFacts::Name(uint32_t id) const {
  auto it = names_.find(id);
  return it == names_.end() ? nullptr : &it->second;
}

const CommFacts* RankFacts::Comm(uint64_t comm_id) const {
  auto it = comms_.find(comm_id);
  return it == comms_.end() ? nullptr : &it->second;
}

const SiteText* RankFacts::Site(uint32_t id) const {
  auto it = sites_.find(id);
  return it == sites_.end() ? nullptr : &it->second;
}

const std::vector<std::string>* RankFacts::Stack(uint32_t id) const {
  auto it = stacks_.find(id);
  return it == stacks_.end() ? nullptr : &it->second;
}

const std::string* RankFacts::NativeBlockedIn(uint32_t id) const {
  auto it = native_blocked_in_.find(id);
  return it == native_blocked_in_.end() ? nullptr : &it->second;
}

}  // namespace gpuwatch::collector
