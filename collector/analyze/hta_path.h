// The critical path as HTA (Meta's HolisticTraceAnalysis, its critical_path_analysis) weighs
// it, computed on our own step graph (step_graph.h) of an imported torch.profiler trace: for
// checking our graph against HTA's figures on the same trace (docs/import.md). It is not a
// product figure; ReplayGraph's path is, and where the two weigh differently we keep ours:
//
//  - Host time between a thread's top-level operators and runtime calls weighs nothing in
//    HTA (its path runs only through the spans the trace recorded). Ours counts it as
//    host_compute: Python between operators is time the step takes.
//  - A blocking call (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
//    cudaEventQuery, cudaMemcpy) weighs nothing in HTA: the work it waited for is on the
//    path instead, through its sync edge. Ours counts the call's return after that work
//    as sync, which is time the host spent.
//  - HTA's path is the heaviest path from any node to any node: a kernel HTA cannot tie to
//    its launch or to its stream's previous work starts a path of its own, and nothing holds
//    a node to a release. Ours keeps each node's release (work queued before the window,
//    the window's start), so that the replay reproduces the measured step.
//  - In HTA a kernel follows either its launch, when its stream was idle at the launch (the
//    launch overhead then runs from the call's start to the kernel's), or its stream's
//    previous work (a kernel-kernel overhead: the gap, when under 1.5 ms and no work it
//    waited for through an event ended later), never both. Ours keeps both edges and the
//    replay takes the later.
//
// HTA's two shares, from our node kinds: CPU-bound is the weight of host nodes (host gaps
// inside operators, calls, sync waits: our host_compute, the launch calls' own time, sync),
// since HTA counts every CPU operator and runtime call as cpu_bound; GPU-bound is the weight
// of device nodes (kernels, copies and memsets, NCCL kernels: our gpu_compute, copies,
// communication and peer_wait), HTA's gpu_compute_bound plus gpu_communication_bound. The
// launch and kernel-kernel overheads (edges' weights) are categories of HTA's own, in
// neither share, as in HTA's summary.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/step_graph.h"
#include "common/host_spans.h"
#include "interpret/events.h"

namespace gpuwatch::collector {

// Which host time HTA weighs, per thread: inside the top-level spans the trace recorded
// (operators and runtime calls), less the spans of the calls HTA takes as blocking.
class HtaHostTime {
 public:
  // `top_level`: RankImportStats::host_spans; `calls`: the rank's host calls.
  HtaHostTime(const std::vector<HostSpan>& top_level, const std::vector<HostCall>& calls);
  // The weight of [start, end) on thread `tid`.
  uint64_t Weight(uint32_t tid, uint64_t start_ns, uint64_t end_ns) const;

  // The calls whose own time HTA does not weigh: its BLOCKING_SYNC_CALLS, less
  // cudaMemcpyAsync (HTA lists it but weighs its span, as one holding the runtime's lock).
  // CUDA_MEMCPY is every synchronous copy shape; HTA names cudaMemcpy alone.
  static bool HtaBlocking(const HostCall& c);

 private:
  using Spans = std::vector<std::pair<uint64_t, uint64_t>>;  // sorted, disjoint
  static uint64_t Overlap(const Spans& spans, uint64_t start_ns, uint64_t end_ns);
  std::unordered_map<uint32_t, Spans> counted_, blocking_;
};

struct HtaPath {
  uint64_t length_ns = 0;  // the sum of the path's weights
  uint64_t cpu_ns = 0;     // host nodes' weight on it
  uint64_t gpu_ns = 0;     // device nodes' weight on it
  uint64_t launch_ns = 0;      // launch edges: from the launching call's start to its work's
  uint64_t kernel_gap_ns = 0;  // stream edges: the gap between a stream's consecutive work

  double Pct(uint64_t ns) const {
    return length_ns ? 100.0 * static_cast<double>(ns) / static_cast<double>(length_ns) : 0;
  }
  double CpuBoundPct() const { return Pct(cpu_ns); }  // HTA's cpu_bound
  double GpuBoundPct() const { return Pct(gpu_ns); }  // HTA's gpu_compute_bound + gpu_communication_bound
};

// HTA's kernel-kernel delay threshold: a longer gap on a stream is not a dependency it draws.
inline constexpr uint64_t kHtaKernelGapLimitNs = 1'500'000;

// The heaviest path of `g` with HTA's weights (above): host nodes weigh what `host` says,
// device nodes their duration, launch and stream edges as HTA draws them, the rest nothing.
HtaPath HtaComparablePath(const StepGraph& g, const HtaHostTime& host);

}  // namespace gpuwatch::collector
