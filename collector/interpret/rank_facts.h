// What a rank told about itself besides its calls, decoded once: kernel and NVTX names,
// communicators, call sites, its software environment, where its device timeline comes
// from, and how many records it dropped. Every later stage looks these up here. Each table
// has a bound (a misbehaving client must not grow the collector).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

struct EnvFacts {
  bool known = false;
  int cuda_runtime = 0, cuda_driver = 0, nccl = 0;  // the APIs' encodings; 0 = unknown
  std::vector<std::pair<std::string, std::string>> settings;
  uint64_t device_memory_bytes = 0;  // the rank's device: total memory, SMs, name (0/"": unknown)
  int device_sm_count = 0;
  int device_compute_capability = 0;  // 10 x major + minor (0: unknown)
  std::string device_name;
  // Where the rank runs (issue 17): the CPUs it may run on (a cpulist), its GPU's NUMA node
  // (-1: not known) and that node's CPUs, its cgroup's CPU controller (1, 2; 0: none found)
  // and quota per period (0: none).
  std::string cpu_affinity, device_numa_cpus;
  int device_numa_node = -1, cgroup_version = 0;
  uint64_t cpu_quota_us = 0, cpu_period_us = 0;
  // The host's NIC ports as sysfs showed them (wire Environment: Mb/s; 0 / "": none read)
  // and the NVIDIA GPUs on the host (0: not known): the network peak of link_bandwidth.
  uint64_t nic_max_mbps = 0, nic_total_mbps = 0;
  uint32_t nic_ports = 0, host_gpus = 0;
  std::string nic_source;
  // The latest message wins field by field (a later one adds NCCL's version).
  void Merge(const wire::Environment& e);
};

// What the library said it added to the job (wire Overhead, the latest; known once sent).
struct OverheadFacts {
  bool known = false;
  int cupti_mode = 0;  // wire::CuptiMode
  double budget = 0, hook_ns = 0, cupti_ns = 0;
  bool cupti_ns_measured = false, hw_trace = false;
  uint64_t hook_calls = 0, cupti_calls = 0, hooks_added_ns = 0, cupti_added_ns = 0;
  uint64_t windows = 0, window_ns = 0, elapsed_ns = 0;
  uint64_t sender_cpu_ns = 0;
  uint64_t hook_samples = 0;  // 0: hook_ns was timed at start, not in place
  uint64_t startup_ns = 0;    // the library's load and ring set-up on the job's threads
  // Graph launches, apart (cupti_calls x cupti_ns leaves them out): CUPTI's cost on each,
  // whether measured, and how many ran in windows.
  double cupti_graph_ns = 0;
  bool cupti_graph_ns_measured = false;
  uint64_t cupti_graph_launches = 0;
  uint64_t cupti_detaches = 0, cupti_detach_ns = 0;  // CUPTI detached between windows (in cupti_added_ns)
  // Calls made while CUPTI lingered after a window, what it added to each (in cupti_added_ns),
  // whether measured.
  uint64_t cupti_linger_calls = 0;
  double cupti_linger_ns = 0;
  bool cupti_linger_ns_measured = false;
  // The host sampler's cost the budget spent (its thread's CPU and its signal handlers), and
  // of it the handlers, on the job's threads: only those are in the added time. Both from
  // the latest HostSampling (SamplingFacts).
  uint64_t sampler_ns = 0, sampler_signals_ns = 0;
  // The collector's CPU time for this rank: its process's, from its start to the rank's
  // Goodbye (or its connection's close), shared equally among the ranks that had connected
  // by then. 0: not measured (a
  // summary rebuilt from the journal by another process).
  uint64_t collector_cpu_ns = 0;
  uint64_t AddedNs() const { return hooks_added_ns + cupti_added_ns + startup_ns + sampler_signals_ns; }
  // The sampler thread's own CPU (beside the job, not in the added time).
  uint64_t SamplerThreadNs() const { return sampler_ns > sampler_signals_ns ? sampler_ns - sampler_signals_ns : 0; }
};

// The library's host sampler (wire HostSampling, the latest; known once sent).
struct SamplingFacts {
  bool known = false;
  double hz = 0;
  uint64_t samples = 0, cpu_ns = 0, dropped = 0;
  uint64_t native_samples = 0, timer_captures = 0;  // threads without Python (native frames)
  uint32_t native_signal = 0;                       // the CPU-time timer's signal; 0: none
  uint64_t handler_ns = 0;                          // that signal's handler, on the job's threads
  uint64_t held_samples = 0;                        // Python samples whose stack was the thread's previous one
};

struct CommFacts {
  int32_t nranks = 0, rank = 0;
  uint64_t unique_hash = 0;
  wire::Communicator::Origin origin = wire::Communicator::ORIGIN_UNSAID;
  uint64_t parent_hash = 0, split_index = 0;
  int32_t color = 0, key = 0;
  uint32_t ended = 0;  // 1 destroyed, 2 aborted
  // Seen created: unique_hash names it on every rank (else it is a pointer in one process).
  bool Identified() const { return origin != wire::Communicator::ORIGIN_FIRST_USE; }
};

// Where a long sync or blocking copy was called from (libinject's call sites).
struct SiteText {
  std::string python;               // the user's frame (python_frames.h), "train.py:42 in step", or empty
  std::vector<std::string> python_stack;  // the whole Python stack, innermost first (at most 16)
  std::vector<std::string> frames;  // native, innermost first
};

class RankFacts {
 public:
  static constexpr size_t kMaxNames = 16384, kMaxNameBytes = 4096;
  static constexpr size_t kMaxComms = 4096, kMaxSites = 1024, kMaxReasons = 64, kMaxStacks = 4096;

  void OnHello(const wire::Hello& h) { world_size_ = h.world_size(); }
  // Definitions first: events of the same batch may use them.
  void OnBatch(const wire::Batch& b);
  void OnGoodbye(const wire::Goodbye& g);
  void NoteCollectorCpu(uint64_t ns) { overhead_.collector_cpu_ns = ns; }

  // Mangled name of a kernel (or NVTX message); null when never sent or beyond the bound.
  const std::string* Name(uint32_t id) const;
  // A kernel of NCCL's (decided from its name when the name arrived).
  bool IsCommKernel(uint32_t id) const { return id < comm_kernel_.size() && comm_kernel_[id]; }
  const CommFacts* Comm(uint64_t comm_id) const;
  // Every communicator announced, by the library's comm id.
  const std::unordered_map<uint64_t, CommFacts>& Comms() const { return comms_; }
  const SiteText* Site(uint32_t id) const;
  // A Python stack the library interned (a call site's or a host sample's), innermost first.
  const std::vector<std::string>* Stack(uint32_t id) const;
  // A native stack (a thread without Python, native_frames.h): the syscall its thread was
  // blocked in ("" while running); null for a Python stack or an unknown id.
  const std::string* NativeBlockedIn(uint32_t id) const;
  int world_size() const { return world_size_; }

  int gpu_source() const { return gpu_source_; }  // wire::GpuSource
  const std::string& gpu_source_detail() const { return gpu_source_detail_; }
  // Why the library has no NVML samples of the device ("libnvidia-ml.so.1 not found").
  const std::string& device_sampler_detail() const { return device_sampler_detail_; }
  const EnvFacts& env() const { return env_; }
  const OverheadFacts& overhead() const { return overhead_; }
  const SamplingFacts& sampling() const { return sampling_; }
  // Cumulative records the library lost, per reason (the largest total it reported).
  const std::map<std::string, uint64_t>& dropped() const { return dropped_; }
  uint64_t dropped_total() const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  void NoteDropped(const wire::DropCount& d);

  int world_size_ = 0;
  std::unordered_map<uint32_t, std::string> names_;
  std::vector<bool> comm_kernel_;  // by name id (ids are dense, bounded by the library)
  std::unordered_map<uint64_t, CommFacts> comms_;
  std::unordered_map<uint32_t, SiteText> sites_;
  std::unordered_map<uint32_t, std::vector<std::string>> stacks_;
  std::unordered_map<uint32_t, std::string> native_blocked_in_;  // native stacks' ids only (within kMaxStacks)
  int gpu_source_ = wire::GPU_SOURCE_UNSPECIFIED;
  std::string gpu_source_detail_;
  std::string device_sampler_detail_;
  EnvFacts env_;
  OverheadFacts overhead_;
  SamplingFacts sampling_;
  std::map<std::string, uint64_t> dropped_;  // ordered: deterministic output
};

}  // namespace gpuwatch::collector
