// The one model of a rank's figures: what every analysis measured, plus the facts and
// steps of the interpret stage. The findings, summary.json, summary.txt, report.html,
// Prometheus and the trace's marks all read this; none computes a figure again.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analyze/api_calls.h"
#include "analyze/call_sites.h"
#include "analyze/collective_sizes.h"
#include "analyze/collectives.h"
#include "analyze/comm_overlap.h"
#include "analyze/communicators.h"
#include "analyze/copies.h"
#include "analyze/device_state.h"
#include "analyze/finding.h"
#include "analyze/gpu.h"
#include "analyze/graphs.h"
#include "analyze/host_frames.h"
#include "analyze/input_io.h"
#include "analyze/launches.h"
#include "analyze/memory.h"
#include "analyze/pipeline.h"
#include "analyze/sm_fill.h"
#include "analyze/step_graph.h"
#include "analyze/utilization_shape.h"
#include "analyze/step_figures.h"
#include "analyze/streams.h"
#include "analyze/sync.h"
#include "interpret/rank_facts.h"
#include "interpret/step_finder.h"

namespace gpuwatch::collector {

// Mean per step: over the kept records of NVTX steps, else run averages over every step.
// The steps table of summary.json, summary.txt, report.html's bars, Prometheus and the
// trace's step slices all show these.
struct PerStepMean {
  bool known = false;     // there are steps
  bool per_step = false;  // from per-step records (else run averages)
  size_t steps = 0;       // the records they are over (CUPTI recorded them whole)
  double compute_ms = 0, comm_not_overlapped_ms = 0, idle_ms[kIdleKinds] = {};
  double host_blocked_in_syncs_ms = 0, copies_ms = 0;
  double graph_launches = 0, graph_kernels = 0;  // CUDA graph launches and the kernels they ran, per step
  double step_ms = 0;  // the mean step (as the job paced it) over the same steps: what the parts divide
  // The step less its device parts (compute, exposed communication, copies, idle): negative
  // when work ran side by side (a copy beside a kernel counts in both).
  double UnattributedMs() const {
    double parts = compute_ms + comm_not_overlapped_ms + copies_ms;
    for (double i : idle_ms) parts += i;
    return step_ms - parts;
  }
  // Each part with its name in summary.json's steps.per_step_ms.
  std::array<std::pair<const char*, double>, 4 + kIdleKinds> Parts() const {
    return {{{"gpu_compute", compute_ms},
             {"comm_not_overlapped", comm_not_overlapped_ms},
             {"gpu_idle_waiting_for_host", idle_ms[kIdleHost]},
             {"gpu_idle_waiting_for_launches", idle_ms[kIdleLaunch]},
             {"gpu_idle_in_syncs", idle_ms[kIdleSync]},
             {"gpu_idle_other", idle_ms[kIdleOther]},
             {"host_blocked_in_syncs", host_blocked_in_syncs_ms},
             {"copies", copies_ms}}};
  }
};

struct RankResult {
  int rank = -1;
  std::string host;
  uint64_t host_calls = 0, host_first_ns = 0, host_last_ns = 0;

  SyncFigures sync;
  CopyFigures copies;
  CollectiveFigures collectives;
  CollectiveSizeFigures coll_sizes;  // small vs large collectives (small_collectives)
  PipelineFigures pipeline;          // send/recv per link, the pipeline bubble
  CommTable comms;        // per communicator (with its NCCL kernels' overlap)
  OverlapFigures overlap;  // NCCL kernel time overlapped with compute / exposed
  LaunchFigures launches;
  GraphFigures graphs;
  ApiCallFigures api_calls;
  GpuFigures gpu;
  StreamFigures streams;  // per device stream: busy, idle by cause (cross-stream waits)
  // Steps: `found` says which and how many; `steps.steps` holds the kept records (NVTX
  // steps with their figures, or inferred steps with none: per_step_device false).
  StepsFound found;
  StepFigures steps;
  bool per_step_device = false;
  InputIoFigures io;
  MemoryFigures memory;        // device memory the rank's allocations held
  DeviceStateFigures device;   // its device as NVML saw it
  SmFillFigures sm_fill;       // how much of the device its kernels' grids occupied
  std::string device_sampler_detail;  // why there are no NVML samples
  UtilizationShape gpu_shape;  // the utilization curve read as the guide reads it
  std::vector<SiteStat> sites;  // the call sites that blocked longest
  HostFramesFigures host_frames;  // where the training thread was while the GPU waited for it
  SamplingFacts sampling;         // the library's host sampler (its rate and cost)
  EnvFacts env;
  std::map<std::string, uint64_t> dropped;
  uint64_t dropped_total = 0;
  OverheadFacts overhead;         // what the library said it added (its own cost)
  std::vector<Finding> findings;  // ranked (analyze/findings.h)
  PerStepMean per_step;
  CriticalPathFigures critical_path;  // what paced its recorded steps (analyze/critical_path.h)
  WhatIf all_fixed;                   // the step with every finding's fix applied
  // The sampled step graphs the path and the what-ifs replayed (at most
  // StepGraphs::kMaxGraphs, shared, not copied), for the job to join the ranks' graphs at
  // their collectives (job_graph.h). Not in the digest: a rank that reaches the job as a
  // digest (a host collector's, upstream) has none, and the job replays its ranks' paces.
  std::vector<std::shared_ptr<const StepGraph>> step_graphs;

  bool cupti() const { return gpu.cupti(); }
  double WallS() const;         // host span: first call to last call end
  double ActiveS() const;       // device active span, else the host span
  uint64_t steps_total() const { return found.total; }
  double StepMedianS() const;   // 0 without steps (a step's time as the job paced it: step_pace.h)
  // Over every step: exact while `steps` holds them all, else from found.stats.
  uint64_t StepPercentileNs(double p) const;
  uint64_t StepMaxNs() const;
  double StepsTotalS() const;   // the steps' span
  // The median host range of a step (NVTX push to pop, or the inferred period), and the
  // medians of the host's and device's periods (0: not measured); which of the two sets
  // the pace: "host" or "device".
  uint64_t HostRangeMedianNs() const;
  uint64_t HostPeriodMedianNs() const;
  uint64_t DevicePeriodMedianNs() const;
  const char* PacedBy() const;  // reads per_step: call once it is set
};

PerStepMean MeanPerStep(const RankResult& r);

// Step times (ns) of the kept records, as the job paced them (step_pace.h), their host
// ranges, and nearest-rank percentiles of values.
std::vector<uint64_t> StepDurations(const RankResult& r);
std::vector<uint64_t> HostRanges(const RankResult& r);
uint64_t Percentile(std::vector<uint64_t> v, double p);

// The ranks of a job, by reference: the job's results point at each rank's own result
// instead of copying its per-step records (up to kMaxSteps each).
class RankList {
 public:
  RankList() = default;
  RankList(const std::vector<RankResult>& v) {  // NOLINT: implicit, for callers with values
    for (const auto& r : v) p_.push_back(&r);
  }
  void push_back(const RankResult* r) { p_.push_back(r); }
  size_t size() const { return p_.size(); }
  bool empty() const { return p_.empty(); }
  const RankResult& operator[](size_t i) const { return *p_[i]; }
  struct Iter {
    const RankResult* const* p;
    const RankResult& operator*() const { return **p; }
    const RankResult* operator->() const { return *p; }
    Iter& operator++() { return ++p, *this; }
    bool operator!=(const Iter& o) const { return p != o.p; }
  };
  Iter begin() const { return {p_.data()}; }
  Iter end() const { return {p_.data() + p_.size()}; }

 private:
  std::vector<const RankResult*> p_;
};

}  // namespace gpuwatch::collector
