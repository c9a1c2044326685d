// Findings: what cost a rank (and the job) its GPU time, ranked by the time lost, each with
// its evidence and its fix (the verdict that opens the summary reads them: verdict.h). Each
// finding id has one rule (the tables in findings.cpp and findings_host.cpp); a rule reads
// the rank's RankResult only.
//
// Time lost is estimated per rank in seconds over the run. Per-step categories are summed
// over the steps that are not periodic stalls, scaled to all steps (a stall's excess goes
// to periodic_stall alone). Job level: a finding's time lost is the median over all ranks
// of each rank's (0 where it did not fire) -- ranks wait for each other in collectives, so
// the typical rank is what the job loses. A wait is charged to what it waits for: the
// straggler's and the pipeline bubble's are the ranks' mean wait for the slow rank or stage,
// taken out of each rank's communication, which the rank's own view shows too.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/collective_waits.h"
#include "analyze/finding.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// What the rules of one rank share, worked out once: the base times, the steps that are
// periodic stalls, the device and sync figures of the normal steps.
struct RankContext {
  explicit RankContext(const RankResult& r);
  const RankResult& r;
  double base = 0;      // the sum of the steps, else the active span
  double run_base = 0;  // for run totals: the longer of the steps and the active span
  double fig_base = 0;  // for the device and sync figures below
  size_t n = 0;         // step records kept
  uint64_t median_step_ns = 0;
  // The median step of each kind: 1 for steps inside the overhead budget's windows when the
  // run was sampled, 0 for the rest (KindOf); what a step is compared with for a stall.
  uint64_t kind_median_ns[2] = {};
  int KindOf(size_t k) const;
  uint64_t MedianFor(size_t k) const { return kind_median_ns[KindOf(k)]; }
  double steps_div = 0;     // steps to divide a run figure by (0: no steps)
  double to_all_steps = 1;  // kept records -> every step
  std::vector<bool> stall;  // per kept step: a periodic stall
  std::vector<size_t> stalls;
  size_t period = 0;
  DeviceSlice dev;          // device figures of the normal steps (or the run)
  double sync_mid_s = 0;    // syncs followed by work, normal steps (or the run)
  double scale = 1;         // normal steps -> every step
  bool across_hosts = false;  // the job's ranks run on more than one host (link_bandwidth)
  // "6.1 ms per step", or "1.2 s in all" when there are no steps; the per-step value in ms.
  std::string Per(double s) const;
  double PerStepMs(double s) const;
};

// A rank's base time: the sum of its steps, else its active span.
double BaseS(const RankResult& r);

// The severity a share of the base time gives (thresholds.h).
const char* SeverityOf(double share);
// A finding with its catalog title and fix, its share of `base` and the severity that
// share gives.
Finding MakeFinding(const std::string& id, double lost, double base);

// Findings of one rank, ranked (largest time lost first, ties by id); only those costing
// at least kReportShare of the rank's time. (RankModel keeps them in RankResult::findings.)
// `across_hosts`: the job's ranks run on more than one host, so its collectives may cross
// the network (JobFindings measures link_bandwidth again with it).
std::vector<Finding> RankFindings(const RankResult& r, bool across_hosts = false);
// Findings of the job (every rank's findings merged, plus straggler and pipeline_bubble),
// ranked. `rank_findings` (per rank index), when given, receives each rank's findings as the
// job's analysis corrected them: waits for a straggler or a slow pipeline stage taken out of
// its communication and given to that cause, as the job's findings do. `waits` and
// `pipeline`: the job's collective waits and matched sends/recvs when already measured
// (MeasureCollectiveWaits, MatchPipeline).
std::vector<Finding> JobFindings(const RankList& ranks, std::vector<std::vector<Finding>>* rank_findings = nullptr,
                                 const CollectiveWaits* waits = nullptr, const JobPipeline* pipeline = nullptr);

// findings_host.cpp. input_io: whether the host side of `data_loading` was CPU-bound or
// waiting on reads (same time lost: it explains that loss); none without enough process
// samples. environment: settings/versions that cost speed (time lost 0, ranked after every
// measured loss); none when there are none.
std::optional<Finding> InputIoFinding(const RankContext& c, const std::vector<Finding>& found);
std::optional<Finding> EnvironmentFinding(const RankContext& c, const std::vector<Finding>& found);

// findings_device.cpp: gpu_shared, clocks_throttled, pcie_link from the rank's NVML samples
// (none without samples).
std::optional<Finding> GpuShared(const RankContext& c, const std::vector<Finding>& found);
std::optional<Finding> ClocksThrottled(const RankContext& c, const std::vector<Finding>& found);
std::optional<Finding> PcieLink(const RankContext& c, const std::vector<Finding>& found);
// mixed_precision: GEMM/convolution time in FP32 kernels, by kernel name (precision.h).
std::optional<Finding> MixedPrecision(const RankContext& c, const std::vector<Finding>& found);
// findings_sm.cpp: small_batch, the SM capacity the kernels' grids left idle while the
// device's memory had room for a larger batch (sm_fill.h).
std::optional<Finding> SmallBatch(const RankContext& c, const std::vector<Finding>& found);
// findings_placement.cpp: cpu_affinity (the rank's CPUs away from its GPU's NUMA node) and
// cpu_throttled (its cgroup's CPU quota throttled it while the GPU waited on the host).
std::optional<Finding> CpuAffinity(const RankContext& c, const std::vector<Finding>& found);
std::optional<Finding> CpuThrottled(const RankContext& c, const std::vector<Finding>& found);
// findings_oversubscribed.cpp (job level): cpu_oversubscribed, a host whose ranks' threads
// waited for a CPU (cpu_contention.h). `explains_straggler` is set when those waits explain
// `straggler`'s spread: the finding then replaces it (same time lost, its evidence inside).
std::optional<Finding> CpuOversubscribed(const RankList& ranks, double base, const std::optional<Finding>& straggler,
                                         bool* explains_straggler);
// The waiting ranks' own `straggler` findings in `cause` (per rank index) become the host's
// `host` finding, each with its own wait as time lost: rank and job agree on the cause.
void HostExplainsWaits(const RankList& ranks, const Finding& host, std::vector<std::vector<Finding>>& cause);
// host_frames (issue 16): `evidence.host_frames` [{where, share}] of a finding about GPU
// time lost waiting for the host, and the fix of `host_overhead`, which names the frames.
void AddHostFrames(const HostFramesFigures& hf, Finding& f);
std::string HostOverheadFix(const HostFramesFigures& hf);

// findings_parallel.cpp. small_collectives: collectives under kSmallCollectiveBytes, the
// latency their number costs; pipeline_bubble (job level): the slow pipeline stage, its ranks
// in `ranks`, time lost the ranks' mean bubble; the exposed communication those two explain
// (taken out of `communication`).
std::optional<Finding> SmallCollectives(const RankContext& c, const std::vector<Finding>& found);
// Its waits are taken out of each rank's `communication` in `per`; each rank that waited gets
// its own pipeline_bubble finding in `cause`.
std::optional<Finding> PipelineBubbleFinding(const RankList& ranks, const JobPipeline& jp, double base,
                                             std::vector<std::vector<Finding>>& per,
                                             std::vector<std::vector<Finding>>& cause);
double ExplainedCommS(const RankContext& c, const std::vector<Finding>& found);
// The share of the rank's NCCL kernel time not overlapped with compute (1 without CUPTI).
double ExposedCommShare(const RankContext& c);
// findings_link.cpp. link_bandwidth: the large collectives far slower than the link that
// connects the rank's GPU to its peers (link_peaks.h) allows; its time lost (their exposed
// time beyond a latency per call plus their bus bytes at the link's expected share) is taken
// out of `communication`.
std::optional<Finding> LinkBandwidth(const RankContext& c, const std::vector<Finding>& found);

// Median over ranks of their step counts (the job's steps).
double JobSteps(const RankList& ranks);

}  // namespace gpuwatch::collector
