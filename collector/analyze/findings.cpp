// See findings.h. Every threshold is in common/thresholds.h.
#include "analyze/findings.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analyze/sampled_estimate.h"
#include "analyze/stall_period.h"
#include "analyze/stragglers.h"
#include "common/format.h"
#include "common/median.h"
#include "common/thresholds.h"
#include "interpret/python_frames.h"

namespace gpuwatch::collector {
namespace {


// A rule measures one finding of a rank; `found` holds what the rules before it found.
using RankRule = std::optional<Finding> (*)(const RankContext& c, const std::vector<Finding>& found);

struct Rule {
  const char* id;
  const char* title;
  const char* fix;
  RankRule measure;  // null: a job-level finding
};

std::optional<Finding> PeriodicStall(const RankContext& c, const std::vector<Finding>&);
std::optional<Finding> DataLoading(const RankContext& c, const std::vector<Finding>&);
std::optional<Finding> LaunchBound(const RankContext& c, const std::vector<Finding>&);
std::optional<Finding> Communication(const RankContext& c, const std::vector<Finding>&);
std::optional<Finding> SyncStall(const RankContext& c, const std::vector<Finding>&);
std::optional<Finding> PageableCopy(const RankContext& c, const std::vector<Finding>&);
std::optional<Finding> BlockingCopy(const RankContext& c, const std::vector<Finding>&);

// Every finding id, in the order the rules run (input_io reads data_loading's, environment
// every measured one). input_io's and environment's titles and fixes depend on what they
// find (findings_host.cpp).
const Rule kRules[] = {
    {"periodic_stall", "periodic stalls",
     "asynchronous checkpointing (torch.distributed.checkpoint async_save); less frequent "
     "evaluation/logging; do them off the training loop",
     PeriodicStall},
    {"data_loading", "data loading",
     "more DataLoader workers (num_workers), prefetch_factor, pin_memory=True; preprocess "
     "offline; faster formats; data on local NVMe",
     DataLoading},
    // Measured by DataLoading: the same loss when the host frames show the training thread
    // was not iterating a DataLoader. Its fix names the frames (HostOverheadFix).
    {"host_overhead", "host work while the GPU waited", "", nullptr},
    {"input_io", "", "", InputIoFinding},
    {"launch_bound", "kernel launch overhead",
     "the kernels are launched one by one: capture the step in a CUDA graph so one launch "
     "runs them all (torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")); larger "
     "batch; fused kernels (torch.compile)",
     LaunchBound},
    {"small_collectives", "many small collectives (latency-bound)",
     "fewer, larger collectives: raise DDP's bucket_cap_mb (default 25) so gradients go in "
     "larger buckets; accumulate gradients over micro-batches inside model.no_sync() so the "
     "all-reduce runs once per optimizer step; FSDP: wrap larger units (auto_wrap_policy "
     "min_num_params), keep forward_prefetch/backward_prefetch on; coalesce small tensors "
     "(torch.distributed all_reduce_coalesced)",
     SmallCollectives},
    {"link_bandwidth", "collectives far below their link's bandwidth",
     "see which transport NCCL took (NCCL_DEBUG=INFO): NVLink links down (nvidia-smi nvlink "
     "-s; a node with a failed link needs service), peer-to-peer disabled (NCCL_P2P_DISABLE, "
     "NCCL_P2P_LEVEL; ACS/IOMMU in VMs) or sockets instead of InfiniBand (NCCL_IB_HCA, "
     "NCCL_NET_GDR_LEVEL) make NCCL fall back to slower paths",
     LinkBandwidth},
    {"communication", "communication not hidden by compute",
     "overlap gradients' all-reduce with backward (DDP bucket_cap_mb, gradient_as_bucket_"
     "view); fewer, larger collectives; check NCCL uses NVLink/IB, not sockets",
     Communication},
    {"sync_stall", "host waiting on the GPU (syncs)",
     "avoid .item()/.cpu()/torch.cuda.synchronize() inside the loop; log the loss every N "
     "steps; keep values on the GPU",
     SyncStall},
    {"pageable_copy", "copies from pageable memory",
     "pin_memory=True in the DataLoader (or tensor.pin_memory()), then .to(dev, "
     "non_blocking=True)",
     PageableCopy},
    {"blocking_copy", "blocking copies",
     "use cudaMemcpyAsync / .to(non_blocking=True) from pinned memory; move checkpoint "
     "copies off the critical path",
     BlockingCopy},
    {"gpu_shared", "another process on the GPU",
     "run the job alone on its GPUs: a scheduler that allocates whole GPUs, exclusive-process "
     "compute mode, or MIG/MPS with guaranteed shares; nvidia-smi lists the other processes",
     GpuShared},
    {"clocks_throttled", "GPU clocks held back (power or heat)",
     "check cooling and airflow and the power limit (nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE); "
     "a GPU that throttles alone needs service",
     ClocksThrottled},
    {"pcie_link", "PCIe link below its generation or width",
     "reseat the GPU in a full x16 slot at the full generation; check BIOS PCIe settings and risers "
     "(nvidia-smi -q -d PCIE); keep copies off the critical path (pinned, asynchronous)",
     PcieLink},
    {"mixed_precision", "matrix math in FP32",
     "torch.autocast(\"cuda\", dtype=torch.bfloat16) (AMP); or TF32 for FP32 matmuls: "
     "torch.set_float32_matmul_precision(\"high\"), torch.backends.cudnn.allow_tf32 = True",
     MixedPrecision},
    {"small_batch", "kernels too small to fill the GPU",
     "raise the batch size (memory has room; scale the learning rate with it) or, for the "
     "same optimisation batch, fewer micro-batches / gradient accumulation steps; fuse small "
     "ops (torch.compile) so each kernel's grid covers every SM",
     SmallBatch},
    {"cpu_affinity", "rank's CPUs away from its GPU's NUMA node",
     "bind each rank to CPUs of its GPU's NUMA node (nvidia-smi topo -m shows each GPU's CPU "
     "affinity): torchrun --numa-binding, srun --cpu-bind, numactl --cpunodebind; size "
     "DataLoader workers to those cores",
     CpuAffinity},
    {"cpu_throttled", "CPU quota throttling the host",
     "the container's CPU limit (cgroup cpu.max / cfs_quota) stops the input pipeline every "
     "period: raise the limit (Kubernetes resources.limits.cpu, docker --cpus) or use fewer "
     "DataLoader workers and threads (OMP_NUM_THREADS) than the quota's cores",
     CpuThrottled},
    {"environment", "", "", EnvironmentFinding},
    {"cpu_oversubscribed", "ranks waiting for a CPU (host oversubscribed)",
     "fewer ranks or DataLoader workers (num_workers) per host, up to its cores; OMP_NUM_THREADS "
     "(and MKL_NUM_THREADS) at the cores per rank; bind each rank and its workers to cores of "
     "their own (CPU affinity: torchrun --numa-binding, srun --cpu-bind, taskset); keep other "
     "CPU-heavy processes off the host",
     nullptr},
    {"straggler", "a straggler rank",
     "find what makes that rank slower: its host work (data loading), its GPU (clocks, "
     "thermal), or uneven work per rank",
     nullptr},
    {"pipeline_bubble", "pipeline stages waiting for each other",
     "balance layers across pipeline stages (move layers off the slow stage); more "
     "micro-batches per step (the bubble shrinks as (stages-1)/(micro-batches+stages-1)); an "
     "interleaved schedule with virtual pipeline stages (Megatron-LM "
     "--num-layers-per-virtual-pipeline-stage)",
     nullptr},
};

const Rule* FindRule(const std::string& id) {
  for (const Rule& r : kRules)
    if (id == r.id) return &r;
  return nullptr;
}

// `environment` has no measured time (0): it stays, after every measured loss.
void RankOrder(std::vector<Finding>& v) {
  std::erase_if(v, [](const Finding& f) {
    return f.id != "environment" && (f.share < kReportShare || f.time_lost_s <= 0);
  });
  std::sort(v.begin(), v.end(), [](const Finding& a, const Finding& b) {
    return a.time_lost_s != b.time_lost_s ? a.time_lost_s > b.time_lost_s : a.id < b.id;
  });
}

}  // namespace

const char* SeverityOf(double share) { return share >= kHighShare ? "high" : share >= kMediumShare ? "medium" : "low"; }

Finding MakeFinding(const std::string& id, double lost, double base) {
  Finding f;
  f.id = id;
  if (const Rule* r = FindRule(id)) {
    f.title = r->title;
    f.fix = r->fix;
  }
  f.time_lost_s = lost;
  f.share = base > 0 ? lost / base : 0;
  f.severity = SeverityOf(f.share);
  return f;
}

double BaseS(const RankResult& r) {
  const double steps_s = r.StepsTotalS();
  return steps_s > 0 ? steps_s : r.ActiveS();
}

RankContext::RankContext(const RankResult& res) : r(res) {
  base = BaseS(r);
  const std::vector<uint64_t> dur = StepDurations(r);
  n = dur.size();
  median_step_ns = Percentile(dur, 0.5);
  steps_div = n ? static_cast<double>(r.steps_total() ? r.steps_total() : n) : 0.0;
  // Per-step records are kept for the first kMaxSteps steps: what they show is scaled to
  // every step, as the base (the sum of all steps' durations) covers every step.
  to_all_steps = n && r.steps_total() > n ? static_cast<double>(r.steps_total()) / n : 1.0;
  // Run totals (copies, and everything when the steps carry no device figures) are over the
  // whole run, which can be longer than its steps: their share is of the longer of the two.
  run_base = std::max(base, r.ActiveS());

  // Periodic stalls: steps far longer than the median whose excess is mostly GPU idle.
  stall.assign(n, false);
  // Under the overhead budget the steps inside windows ran slower by CUPTI's cost, and only
  // they carry device figures: each step is set against the steps of its own kind, or the
  // windows' regular spacing would read as a periodic stall.
  std::vector<uint64_t> kind_dur[2], kind_idle[2];
  for (size_t k = 0; k < n; ++k) {
    kind_dur[KindOf(k)].push_back(dur[k]);
    kind_idle[KindOf(k)].push_back(r.steps.steps[k].dev.IdleTotal());
  }
  uint64_t kind_med_idle[2] = {};
  for (int i = 0; i < 2; ++i) {
    kind_median_ns[i] = kind_dur[i].empty() ? median_step_ns : Percentile(kind_dur[i], 0.5);
    kind_med_idle[i] = kind_idle[i].empty() ? 0 : Percentile(kind_idle[i], 0.5);
  }
  if (n >= 4 && median_step_ns > 0) {
    for (size_t k = 0; k < n; ++k) {
      const uint64_t med = MedianFor(k);
      if (dur[k] <= kStallFactor * med) continue;
      const double excess = static_cast<double>(dur[k] - med);
      const uint64_t idle = r.steps.steps[k].dev.IdleTotal(), med_idle = kind_med_idle[KindOf(k)];
      const double idle_excess = idle > med_idle ? static_cast<double>(idle - med_idle) : 0.0;
      if (r.per_step_device && r.cupti() && r.steps.steps[k].covered && idle_excess < kStallIdleShare * excess)
        continue;
      stall[k] = true;
      stalls.push_back(k);
    }
  }
  // Long steps off a regular period (scheduler noise, one-off events) are no periodic stall.
  StallPeriod periodic = FindStallPeriod(stalls);
  period = periodic.period;
  stalls = std::move(periodic.stalls);
  std::fill(stall.begin(), stall.end(), false);
  for (size_t k : stalls) stall[k] = true;

  // Per-step categories over the normal steps (that CUPTI recorded whole, under the
  // overhead budget), scaled to all steps. Their base covers what they are charged over: a
  // step holds the device time until the next step starts, so host work between NVTX ranges
  // is in it (and a share stays within 100%).
  if (r.per_step_device && n > 0) {
    size_t normal = 0;
    uint64_t normal_ns = 0;
    for (size_t k = 0; k < n; ++k) {
      if (stall[k] || !r.steps.steps[k].covered) continue;
      ++normal;
      normal_ns += dur[k];
      dev.Add(r.steps.steps[k].dev);
      sync_mid_s += Seconds(r.steps.steps[k].sync_mid);
    }
    TypicalCoveredSteps(r, normal, normal_ns, dev);  // as the steps table does
    // Scaled to the steps the device timeline spans: where a profiler took CUPTI mid-run, not
    // to the steps after it (one 200 ms idle step among 150 recorded of 250 read as 334 ms
    // lost in a 203 ms run).
    const auto& kept = r.steps.steps;
    const uint64_t ended = r.gpu.coverage.ended_ns;
    size_t spanned = n;
    while (ended && spanned > 0 && kept[spanned - 1].start >= ended) --spanned;
    const double to_spanned = ended && ended <= kept.back().end ? 1.0 : to_all_steps;
    scale = normal ? static_cast<double>(spanned) / normal * to_spanned : 1.0;
    const uint64_t until = std::max(kept.back().end, r.steps.charged_until);
    const double covered = until > kept.front().start ? Seconds(until - kept.front().start) : 0.0;
    fig_base = std::max(base, covered * to_all_steps);
  } else {
    dev = r.gpu.run;
    sync_mid_s = Seconds(r.steps.SyncMidNs());
    fig_base = run_base;
  }
}

int RankContext::KindOf(size_t k) const { return r.gpu.coverage.sampled && r.steps.steps[k].covered ? 1 : 0; }

std::string RankContext::Per(double s) const {
  return steps_div > 0 ? FmtDuration(s / steps_div) + " per step" : FmtDuration(s) + " in all";
}

double RankContext::PerStepMs(double s) const { return steps_div > 0 ? Millis(s / steps_div) : 0.0; }

namespace {

std::optional<Finding> PeriodicStall(const RankContext& c, const std::vector<Finding>&) {
  if (c.stalls.size() < kMinStalls) return std::nullopt;
  const std::vector<uint64_t> dur = StepDurations(c.r);
  double lost = 0;
  std::vector<uint64_t> ex;
  for (size_t k : c.stalls) {
    lost += Seconds(dur[k] - c.MedianFor(k));
    ex.push_back(dur[k] - c.MedianFor(k));
  }
  lost *= c.to_all_steps;
  Finding f = MakeFinding("periodic_stall", lost, c.base);
  const uint64_t med_ex = Percentile(ex, 0.5);
  f.evidence = {{"stalls", c.stalls.size()},
                {"period_steps", c.period},
                {"first_stall_step", c.stalls[0]},
                {"median_excess_s", Seconds(med_ex)},
                {"median_step_s", Seconds(c.median_step_ns)}};
  f.summary = Printf("%zu steps %.0fx longer than the median%s, %s extra each", c.stalls.size(),
                     static_cast<double>(c.median_step_ns + med_ex) / c.median_step_ns,
                     Printf(", every %zu steps", c.period).c_str(), FmtDuration(Seconds(med_ex)).c_str());
  return f;
}

// Findings from the device timeline say when it was sampled (the overhead budget).
void AddCoverage(const RankContext& c, Finding& f) {
  if (c.r.gpu.coverage.sampled)
    f.evidence["gpu_timeline_sampled"] = {{"share", c.r.gpu.coverage_share()}, {"windows", c.r.gpu.coverage.windows}};
}

// The host frames (analyze/host_frames.h) say what the GPU waited for: DataLoader
// iteration is data loading; anything else is the user's host work, named by its frames.
// Without samples (sampling off), or when most samples name none of the user's code (a
// thread whose stack shows only libc, say), it stays data loading, as before them: the
// frames are evidence only where they show what the host ran.
std::optional<Finding> DataLoading(const RankContext& c, const std::vector<Finding>&) {
  if (!c.r.cupti()) return std::nullopt;
  const double host = Seconds(c.dev.idle[kIdleHost]) * c.scale;
  const HostFramesFigures& hf = c.r.host_frames;
  const bool overhead = hf.samples >= kHostFramesMinSamples && hf.unnamed_share < 0.5 && hf.data_loading_share < 0.5;
  Finding f = MakeFinding(overhead ? "host_overhead" : "data_loading", host, c.fig_base);
  f.evidence = {{"gpu_idle_waiting_for_host_s", host},
                {"per_step_ms", c.PerStepMs(host)},
                {"gpu_utilization", c.r.ActiveS() > 0 ? Seconds(c.r.gpu.run.busy) / c.r.ActiveS() : 0.0}};
  AddCoverage(c, f);
  AddHostFrames(hf, f);
  if (overhead) {
    const std::string top = Clip(ShortWhere(hf.frames.front().where), 80);
    f.fix = HostOverheadFix(hf);
    const std::string& blocked = hf.frames.front().blocked_in;  // a native frame's syscall
    f.summary = Printf("GPU idle %s waiting for the host, which was %s %s (%.0f%% of the time sampled)",
                       c.Per(host).c_str(), blocked.empty() ? "running" : ("blocked in " + blocked + "() in").c_str(),
                       top.c_str(), 100 * hf.frames.front().share);
  } else {
    f.summary = Printf("GPU idle %s waiting for the host, which was not waiting on the GPU", c.Per(host).c_str());
  }
  return f;
}

// Only kernels launched one by one count (short_fraction leaves graph kernels out): a job
// whose kernels run in graphs already applied the fix, whatever its few graph launches cost.
std::optional<Finding> LaunchBound(const RankContext& c, const std::vector<Finding>&) {
  const GpuFigures& g = c.r.gpu;
  if (!c.r.cupti() || g.short_fraction() < kShortKernelShare) return std::nullopt;
  const double launch = Seconds(c.dev.idle[kIdleLaunch]) * c.scale;
  Finding l = MakeFinding("launch_bound", launch, c.fig_base);
  const LaunchFigures& lf = c.r.launches;
  l.evidence = {{"gpu_idle_waiting_for_launches_s", launch},
                {"per_step_ms", c.PerStepMs(launch)},
                {"kernels", g.kernel_count},
                {"graph_kernels", g.graph_kernels},
                {"short_kernel_fraction", g.short_fraction()},
                {"launches", lf.launches},
                {"launch_call_mean_us", lf.launches ? lf.launch_ns * 1e-3 / lf.launches : 0.0}};
  AddCoverage(c, l);
  // Of the kernels launched one by one (a graph's kernels share one launch).
  l.summary = Printf("%.0f%% of %llu kernels are shorter than their launch call; GPU idle %s between them",
                     100 * g.short_fraction(), static_cast<unsigned long long>(g.kernel_count - g.graph_kernels),
                     c.Per(launch).c_str());
  return l;
}

std::optional<Finding> Communication(const RankContext& c, const std::vector<Finding>& found) {
  if (!c.r.cupti()) return std::nullopt;
  const double exposed = Seconds(c.dev.ExposedComm()) * c.scale;
  // What small_collectives and the pipeline bubble explain is their loss, not this one's.
  const double explained = std::min(exposed, ExplainedCommS(c, found));
  const double comm = exposed - explained;
  const CollectiveFigures::Op t = c.r.collectives.Total();
  // Unknown, not zero, when no timed collective has a size (NCCL kernels whose call the
  // trace does not name: an imported all-to-all).
  const bool sized = t.timed.ns > 0 && t.bus_bytes > 0;
  const double busbw = sized ? t.bus_bytes / t.timed.ns : 0.0;
  Finding f = MakeFinding("communication", comm, c.fig_base);
  f.evidence = {{"exposed_comm_s", exposed},
                {"explained_by_other_findings_s", explained},
                {"per_step_ms", c.PerStepMs(exposed)},
                {"comm_kernels_s", Seconds(c.r.gpu.run.comm)},
                {"collectives", t.count},
                {"bytes", t.bytes},
                {"busbw_gbps", sized ? nlohmann::json(busbw) : nlohmann::json(nullptr)}};
  AddCoverage(c, f);
  f.summary = sized ? Printf("collectives run %s with no compute alongside (busbw %.1f GB/s)", c.Per(exposed).c_str(), busbw)
                    : Printf("NCCL kernels run %s with no compute alongside (their collectives' sizes not known)",
                             c.Per(exposed).c_str());
  return f;
}

std::optional<Finding> SyncStall(const RankContext& c, const std::vector<Finding>&) {
  const StepFigures& st = c.r.steps;
  const double v = c.sync_mid_s * c.scale;
  Finding f = MakeFinding("sync_stall", v, c.fig_base);
  int top = 0;
  for (int k = 1; k < kSyncKinds; ++k)
    if (st.sync_mid_ns[k] > st.sync_mid_ns[top]) top = k;
  nlohmann::json by = nlohmann::json::object();
  for (int k = 0; k < kSyncKinds; ++k)
    if (st.sync_mid_count[k])
      by[SyncKindName(k)] = {{"count", st.sync_mid_count[k]}, {"blocked_s", Seconds(st.sync_mid_ns[k])}};
  // Where: the call site that blocked longest (syncs that blocked at least
  // GPUWATCH_CALLSITE_US), its Python line when the job runs CPython, else its first frame.
  nlohmann::json site = nullptr;
  std::string where;
  if (!c.r.sites.empty()) {
    const SiteStat& s = c.r.sites.front();
    nlohmann::json frames = nlohmann::json::array();
    for (size_t i = 0; i < s.frames.size() && i < 6; ++i) frames.push_back(s.frames[i]);
    site = {{"python", s.python.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.python)},
            {"python_stack", s.python_stack},
            {"frames", frames},
            {"calls", s.count},
            {"blocked_s", Seconds(s.ns)}};
    where = !s.python.empty() ? s.python : (s.frames.empty() ? "" : s.frames.front());
  }
  f.evidence = {{"blocked_s", v},          {"per_step_ms", c.PerStepMs(v)}, {"count", st.SyncMidCount()},
                {"top_api", SyncKindName(top)}, {"by_api", by},            {"call_site", site}};
  f.summary = Printf("host blocked %s in syncs followed by more work, mostly %s%s%s", c.Per(v).c_str(),
                     SyncKindName(top), where.empty() ? "" : ", at ", Clip(where, 80).c_str());
  return f;
}

std::optional<Finding> PageableCopy(const RankContext& c, const std::vector<Finding>&) {
  const Tally& p = c.r.copies.pageable;
  if (!p.count) return std::nullopt;
  Finding f = MakeFinding("pageable_copy", Seconds(p.ns), c.run_base);
  f.evidence = {{"count", p.count},
                {"bytes", p.bytes},
                {"host_s", Seconds(p.ns)},
                {"per_step_ms", c.PerStepMs(Seconds(p.ns))},
                {"gbps", p.ns ? static_cast<double>(p.bytes) / p.ns : 0.0}};
  f.summary = Printf("%llu copies, %s from pageable memory held the host %s", static_cast<unsigned long long>(p.count),
                     FmtBytes(p.bytes).c_str(), FmtDuration(Seconds(p.ns)).c_str());
  return f;
}

std::optional<Finding> BlockingCopy(const RankContext& c, const std::vector<Finding>&) {
  const Tally& b = c.r.copies.blocking;
  if (!b.count) return std::nullopt;
  Finding f = MakeFinding("blocking_copy", Seconds(b.ns), c.run_base);
  f.evidence = {{"count", b.count}, {"bytes", b.bytes}, {"host_s", Seconds(b.ns)}};
  f.summary = Printf("%llu blocking copies, %s, held the host %s", static_cast<unsigned long long>(b.count),
                     FmtBytes(b.bytes).c_str(), FmtDuration(Seconds(b.ns)).c_str());
  return f;
}

}  // namespace

std::vector<Finding> RankFindings(const RankResult& r, bool across_hosts) {
  RankContext c(r);
  c.across_hosts = across_hosts;
  std::vector<Finding> out;
  for (const Rule& rule : kRules) {
    if (!rule.measure) continue;
    std::optional<Finding> f = rule.measure(c, out);
    if (!f) continue;
    f->ranks = {r.rank};
    out.push_back(std::move(*f));
  }
  RankOrder(out);
  return out;
}

std::vector<Finding> JobFindings(const RankList& ranks, std::vector<std::vector<Finding>>* rank_findings,
                                 const CollectiveWaits* waits, const JobPipeline* pipeline) {
  const size_t R = ranks.size();
  std::vector<Finding> out;
  if (!R) return out;
  std::vector<double> bases;
  for (const auto& r : ranks) bases.push_back(BaseS(r));
  const double base = Median(bases);

  std::vector<std::vector<Finding>> per(R);
  bool one_host = true;
  for (const auto& r : ranks) one_host = one_host && r.host == ranks[0].host;
  for (size_t i = 0; i < R; ++i) {
    per[i] = ranks[i].findings;
    // A rank judges its collectives by its own GPU's links; across hosts they may take the
    // network: link_bandwidth, and the communication it explains, are measured again.
    const bool link = std::any_of(per[i].begin(), per[i].end(), [](const Finding& g) { return g.id == "link_bandwidth"; });
    if (!one_host && link) per[i] = RankFindings(ranks[i], true);
  }
  // The causes the job's view finds (waits) are added to the ranks' after the merge below.
  std::vector<std::vector<Finding>> cause(R);
  const CollectiveWaits measured = waits ? CollectiveWaits{} : MeasureCollectiveWaits(ranks);
  // A host whose CPUs were oversubscribed explains a straggler among symmetric ranks: the
  // finding is the host's, at job and rank level alike.
  std::optional<Finding> straggler = StragglerFinding(ranks, waits ? *waits : measured, base, per, cause);
  bool host_explains = false;
  if (auto o = CpuOversubscribed(ranks, base, straggler, &host_explains)) {
    if (host_explains) HostExplainsWaits(ranks, *o, cause);
    out.push_back(std::move(*o));
  }
  if (straggler && !host_explains) out.push_back(std::move(*straggler));
  const JobPipeline matched = pipeline ? JobPipeline{} : MatchPipeline(ranks);
  if (auto p = PipelineBubbleFinding(ranks, pipeline ? *pipeline : matched, base, per, cause)) out.push_back(std::move(*p));

  std::map<std::string, std::vector<double>> lost;
  std::map<std::string, Finding> best;
  std::map<std::string, int> best_rank;  // whose evidence and summary the job's finding shows
  std::string env_severity = "low";  // the most severe rank's
  for (size_t i = 0; i < R; ++i) {
    for (const auto& g : per[i]) {
      if (g.id == "environment" && (g.severity == "high" || (g.severity == "medium" && env_severity == "low")))
        env_severity = g.severity;
      auto& v = lost[g.id];
      v.resize(R, 0.0);
      v[i] = g.time_lost_s;
      auto it = best.find(g.id);
      if (it == best.end()) {
        best.emplace(g.id, g);
        best_rank[g.id] = ranks[i].rank;
      } else {
        it->second.ranks.push_back(ranks[i].rank);
        if (g.time_lost_s > it->second.time_lost_s) {
          auto keep = it->second.ranks;
          it->second = g;
          it->second.ranks = keep;
          best_rank[g.id] = ranks[i].rank;
        }
      }
    }
  }
  for (auto& [id, g] : best) {
    Finding f = MakeFinding(id, Median(lost[id]), base);
    f.title = g.title;  // input_io's and environment's depend on what was found
    f.fix = g.fix;
    if (id == "environment") f.severity = env_severity;
    f.ranks = g.ranks;
    std::sort(f.ranks.begin(), f.ranks.end());
    f.evidence = g.evidence;
    nlohmann::json by = nlohmann::json::object();
    for (size_t i = 0; i < R; ++i) by[std::to_string(ranks[i].rank)] = lost[id][i];
    f.evidence["time_lost_s_by_rank"] = by;
    f.summary = g.summary;
    // The time lost is the ranks' median; the summary's figures are one rank's: say whose,
    // where the ranks differ (not for the environment's settings, which lose no time).
    if (f.ranks.size() > 1 && !f.summary.empty() && g.time_lost_s > 0 &&
        std::abs(g.time_lost_s - f.time_lost_s) > 0.01 * g.time_lost_s)
      f.summary += Printf(" (rank %d, the most affected)", best_rank[id]);
    out.push_back(f);
  }
  RankOrder(out);
  if (rank_findings) {
    for (size_t i = 0; i < R; ++i) {
      for (Finding& g : cause[i]) per[i].push_back(std::move(g));
      RankOrder(per[i]);
    }
    *rank_findings = std::move(per);
  }
  return out;
}

double JobSteps(const RankList& ranks) {
  std::vector<double> s;
  for (const auto& r : ranks) s.push_back(static_cast<double>(r.steps_total()));
  return Median(s);
}

}  // namespace gpuwatch::collector
