// See what_if.h.
#include "analyze/what_if.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "common/format.h"
#include "common/median.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

namespace {

constexpr uint64_t kBucketBytes = uint64_t{25} << 20;  // DDP's default gradient bucket
// A pinned copy over PCIe reaches about this share of the link's rate (Gen4 x16: ~25 of 31.5 GB/s).
constexpr double kPinnedLinkShare = 0.8;

// A fix, made per graph (its typical gaps and launches are the graph's own).
using FixMaker = std::function<ReplayFix(const StepGraph&)>;

struct Model {
  FixMaker make;
  std::string assumes;
};

// What the replays of every graph add up to.
struct Totals {
  double span_ns = 0, steps = 0;
  double part_ns[kPathParts] = {};
  std::map<uint32_t, double> streams;
  int Largest() const { return span_ns > 0 ? LargestPart(part_ns) : -1; }
};

Totals ReplayAll(const StepGraphList& graphs, const FixMaker* make, bool alone) {
  Totals t;
  for (const auto& gp : graphs) {
    const StepGraph& g = *gp;
    const PathReplay r = make ? ReplayGraph(g, (*make)(g), alone) : ReplayGraph(g, {}, alone);
    t.span_ns += static_cast<double>(r.span_ns);
    t.steps += r.steps;
    for (int p = 0; p < kPathParts; ++p) t.part_ns[p] += r.part_ns[p];
    for (const PathStreamTime& s : r.streams) t.streams[s.stream] += s.ms;
  }
  return t;
}

// The loop's typical time between two calls: the median of the host's short gaps.
uint64_t TypicalGap(const StepGraph& g) {
  std::vector<uint64_t> gaps;
  for (const GraphNode& n : g.nodes)
    if (n.kind == NodeKind::kHostGap && n.dur() < kLaunchGapNs) gaps.push_back(n.dur());
  return MiddleOf(std::move(gaps));
}

Model HostWork() {
  return {[](const StepGraph& g) {
            const uint64_t typical = TypicalGap(g);
            ReplayFix f;
            f.duration = [typical](const StepGraph& g, uint32_t i) {
              const GraphNode& n = g.nodes[i];
              return n.kind == NodeKind::kHostGap && n.dur() >= kLaunchGapNs ? std::min(n.dur(), typical) : n.dur();
            };
            return f;
          },
          "the host's long stretches between CUDA calls shortened to the loop's usual time between calls "
          "(the data ready when the step asks for it)"};
}

Model SyncsAsync() {
  return {[](const StepGraph& g) {
            // .item()-type syncs where the graph has them (a small blocking copy, a polling
            // loop, or a sync that waits for a small copy: .item() is cudaMemcpyAsync then
            // cudaStreamSynchronize), else every blocking call but each step's last.
            auto item_type = [](const StepGraph& g, uint32_t i, const GraphEdge& e) {
              const GraphNode& n = g.nodes[i];
              const GraphNode& from = g.nodes[e.from];
              return n.sync_kind == kSyncSmallCopy || n.sync_kind == kSyncPoll ||
                     (from.kind == NodeKind::kCopy && from.bytes <= kSmallCopyBytes);
            };
            bool any_item = false;
            for (uint32_t i = 0; i < g.nodes.size() && !any_item; ++i) {
              const GraphNode& n = g.nodes[i];
              if (n.kind != NodeKind::kSyncWait) continue;
              for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k)
                if (g.edges[k].kind == EdgeKind::kSync && item_type(g, i, g.edges[k])) any_item = true;
            }
            ReplayFix f;
            f.keeps = [any_item, item_type](const StepGraph& g, uint32_t i, const GraphEdge& e) {
              const GraphNode& n = g.nodes[i];
              if (e.kind != EdgeKind::kSync || n.kind != NodeKind::kSyncWait) return true;
              if (any_item) return !item_type(g, i, e);
              return n.last_sync;
            };
            return f;
          },
          "the syncs inside the step made asynchronous: their values read a step later, the step's last sync kept"};
}

// The rank's pinned copy rate, bytes per ns: its pinned copies' best in the graphs, else a
// share of its PCIe link's; 0 when neither is known.
double PinnedRate(const StepGraphList& graphs, const RankResult& r) {
  double best = 0;
  for (const auto& g : graphs)
    for (const GraphNode& n : g->nodes)
      if (n.kind == NodeKind::kCopy && !n.pageable && n.bytes >= (uint64_t{256} << 10) && n.dur() > 0)
        best = std::max(best, static_cast<double>(n.bytes) / static_cast<double>(n.dur()));
  if (best > 0) return best;
  return r.device.PcieGbps() * kPinnedLinkShare;  // GB/s is bytes per ns
}

// Copies no longer hold the host (`pageable_only`: only pageable ones), pageable ones at `rate`.
Model CopiesAsync(double rate, bool pageable_only, std::string assumes) {
  return {[rate, pageable_only](const StepGraph&) {
            ReplayFix f;
            f.duration = [rate](const StepGraph& g, uint32_t i) {
              const GraphNode& n = g.nodes[i];
              if (n.kind != NodeKind::kCopy || !n.pageable || rate <= 0 || !n.bytes) return n.dur();
              return std::min(n.dur(), static_cast<uint64_t>(static_cast<double>(n.bytes) / rate));
            };
            f.keeps = [pageable_only](const StepGraph& g, uint32_t, const GraphEdge& e) {
              if (e.kind != EdgeKind::kSync) return true;
              const GraphNode& from = g.nodes[e.from];
              return from.kind != NodeKind::kCopy || (pageable_only && !from.pageable);
            };
            return f;
          },
          std::move(assumes)};
}

Model OneGraphLaunch(const RankResult& r) {
  const uint64_t graph_ns = r.graphs.launches ? r.graphs.launch_ns / r.graphs.launches : 0;
  return {[graph_ns](const StepGraph& g) {
            std::vector<uint64_t> launch_ns;
            for (const GraphNode& n : g.nodes)
              if (n.kind == NodeKind::kCall && n.launch) launch_ns.push_back(n.dur());
            const uint64_t cost = graph_ns ? graph_ns : MiddleOf(std::move(launch_ns));
            // The first launch of each step on each thread pays the graph's launch; the host's
            // short gaps between two launches (the framework's per-op work) go with the rest.
            auto first = std::make_shared<std::vector<bool>>(g.nodes.size(), false);
            auto between = std::make_shared<std::vector<bool>>(g.nodes.size(), false);
            std::map<std::pair<uint32_t, uint32_t>, bool> seen;
            std::map<uint32_t, std::vector<uint32_t>> host_by_thread;
            for (uint32_t i = 0; i < g.nodes.size(); ++i) {
              const GraphNode& n = g.nodes[i];
              if (n.kind == NodeKind::kCall && n.launch && !seen[{n.lane, n.step}]) (*first)[i] = seen[{n.lane, n.step}] = true;
              if (n.host()) host_by_thread[n.lane].push_back(i);
            }
            auto is_launch = [&g](uint32_t i) { return g.nodes[i].kind == NodeKind::kCall && g.nodes[i].launch; };
            for (const auto& [tid, seq] : host_by_thread)
              for (size_t k = 1; k + 1 < seq.size(); ++k)
                if (g.nodes[seq[k]].kind == NodeKind::kHostGap && g.nodes[seq[k]].dur() < kLaunchGapNs &&
                    is_launch(seq[k - 1]) && is_launch(seq[k + 1]))
                  (*between)[seq[k]] = true;
            ReplayFix f;
            f.duration = [cost, first, between](const StepGraph& g, uint32_t i) -> uint64_t {
              const GraphNode& n = g.nodes[i];
              if (n.kind == NodeKind::kCall && n.launch) return (*first)[i] ? cost : 0;
              if ((*between)[i]) return 0;
              return n.dur();
            };
            return f;
          },
          graph_ns ? "each step's kernel launches captured once and replayed as one CUDA graph, at its measured launch cost"
                   : "each step's kernel launches captured once and replayed as one CUDA graph (one launch's cost a step)"};
}

Model Bucketed(const RankResult& r) {
  const uint64_t latency = r.coll_sizes.min_call_ns;
  return {[latency](const StepGraph& g) {
            // Per step: the small collectives' bytes and transfer, as ceil(S / 25 MiB) buckets.
            auto dur = std::make_shared<std::vector<int64_t>>(g.nodes.size(), -1);
            std::map<uint32_t, std::vector<uint32_t>> by_step;
            for (uint32_t i = 0; i < g.nodes.size(); ++i) {
              const GraphNode& n = g.nodes[i];
              if ((n.kind == NodeKind::kComm || (n.kind == NodeKind::kCall && n.collective)) && n.bytes < kSmallCollectiveBytes)
                by_step[n.step].push_back(i);
            }
            for (const auto& [step, nodes] : by_step) {
              uint64_t bytes = 0, transfer = 0, lat = latency;
              bool first_kernel = true, first_call = true;
              for (uint32_t i : nodes)
                if (g.nodes[i].kind == NodeKind::kComm) {
                  bytes += g.nodes[i].bytes;
                  if (!lat) lat = g.nodes[i].dur();
                  lat = std::min(lat, g.nodes[i].dur());
                }
              for (uint32_t i : nodes)
                if (g.nodes[i].kind == NodeKind::kComm) transfer += g.nodes[i].dur() - std::min(g.nodes[i].dur(), lat);
              const uint64_t buckets = std::max<uint64_t>(1, (bytes + kBucketBytes - 1) / kBucketBytes);
              for (uint32_t i : nodes) {
                const GraphNode& n = g.nodes[i];
                if (n.kind == NodeKind::kComm) {
                  (*dur)[i] = first_kernel ? static_cast<int64_t>(buckets * lat + transfer) : 0;
                  first_kernel = false;
                } else {
                  (*dur)[i] = first_call ? static_cast<int64_t>(n.dur()) : 0;
                  first_call = false;
                }
              }
            }
            ReplayFix f;
            f.duration = [dur](const StepGraph& g, uint32_t i) {
              return (*dur)[i] >= 0 ? static_cast<uint64_t>((*dur)[i]) : g.nodes[i].dur();
            };
            return f;
          },
          "each step's small collectives bucketed to 25 MiB: one latency a bucket, their transfer time kept"};
}

Model Overlapped() {
  return {[](const StepGraph&) {
            ReplayFix f;
            f.keeps = [](const StepGraph& g, uint32_t i, const GraphEdge& e) {
              if (g.nodes[i].kind != NodeKind::kComm) return true;
              if (e.kind != EdgeKind::kStream && e.kind != EdgeKind::kEvent) return true;
              return g.nodes[e.from].kind == NodeKind::kComm;
            };
            return f;
          },
          "collectives started as soon as they are launched, overlapped with the compute before them"};
}

Model KernelsScaled(double factor, std::string assumes) {
  return {[factor](const StepGraph&) {
            ReplayFix f;
            f.duration = [factor](const StepGraph& g, uint32_t i) {
              const GraphNode& n = g.nodes[i];
              return n.kind == NodeKind::kKernel ? static_cast<uint64_t>(static_cast<double>(n.dur()) * factor) : n.dur();
            };
            return f;
          },
          std::move(assumes)};
}

std::optional<Model> ModelFor(const Finding& f, const RankResult& r, const StepGraphList& graphs) {
  const std::string& id = f.id;
  if (id == "data_loading" || id == "host_overhead" || id == "input_io" || id == "periodic_stall") return HostWork();
  if (id == "sync_stall") return SyncsAsync();
  if (id == "pageable_copy") {
    const double rate = PinnedRate(graphs, r);
    if (rate <= 0) return std::nullopt;
    return CopiesAsync(rate, true,
                       Printf("pageable copies from pinned memory at %.1f GB/s, not holding the host", rate));
  }
  if (id == "blocking_copy") return CopiesAsync(0, false, "copies made asynchronous, not holding the host");
  if (id == "launch_bound") return OneGraphLaunch(r);
  if (id == "small_collectives") return Bucketed(r);
  if (id == "communication") return Overlapped();
  if (id == "clocks_throttled") {
    const DeviceStateFigures& d = r.device;
    const double throttled =
        d.busy_samples ? static_cast<double>(std::max({d.throttled_power, d.throttled_thermal, d.throttled_hw})) / d.busy_samples : 0;
    if (d.throttled_clock_share <= 0 || throttled <= 0) return std::nullopt;
    const double factor = 1 - (1 - d.throttled_clock_share) * std::min(1.0, throttled);
    return KernelsScaled(factor, Printf("kernels at the full SM clock (they ran at %.0f%% of it %.0f%% of the time)",
                                        100 * d.throttled_clock_share, 100 * std::min(1.0, throttled)));
  }
  if (id == "gpu_shared") {
    const double busy = f.evidence.value("others_busy", 0.0);
    if (busy <= 0) return std::nullopt;
    return KernelsScaled(1 - std::min(busy, kMaxOthersBusy),
                         Printf("kernels with the GPU to themselves (the other processes kept it %.0f%% busy)", 100 * busy));
  }
  return std::nullopt;
}

// Several fixes at once: each node at its shortest, each edge kept only if every fix keeps it.
FixMaker Combined(std::vector<FixMaker> makers) {
  return [makers](const StepGraph& g) {
    auto fixes = std::make_shared<std::vector<ReplayFix>>();
    for (const FixMaker& m : makers) fixes->push_back(m(g));
    ReplayFix f;
    f.duration = [fixes](const StepGraph& g, uint32_t i) {
      uint64_t d = g.nodes[i].dur();
      for (const ReplayFix& x : *fixes)
        if (x.duration) d = std::min(d, x.duration(g, i));
      return d;
    };
    f.keeps = [fixes](const StepGraph& g, uint32_t i, const GraphEdge& e) {
      for (const ReplayFix& x : *fixes)
        if (x.keeps && !x.keeps(g, i, e)) return false;
      return true;
    };
    return f;
  };
}

WhatIf Predict(double ref_ms, const Totals& base, const Totals& fixed, std::string assumes) {
  WhatIf w;
  if (base.span_ns <= 0 || ref_ms <= 0) return w;
  w.step_ms = ref_ms * fixed.span_ns / base.span_ns;
  if (w.step_ms <= 0) return WhatIf{};
  w.speedup = ref_ms / w.step_ms;
  w.assumes = std::move(assumes);
  w.then_paced_by = fixed.Largest();
  return w;
}

CriticalPathFigures PathFigures(const StepGraphList& graphs, const Totals& base, const Totals& alone) {
  CriticalPathFigures c;
  if (base.steps <= 0) return c;
  double measured_ns = 0;
  for (const auto& g : graphs) measured_ns += static_cast<double>(MeasuredSpan(*g));
  c.steps = static_cast<size_t>(base.steps);
  c.step_ms = measured_ns / base.steps * 1e-6;
  c.path_ms = base.span_ns / base.steps * 1e-6;
  c.alone_ms = alone.span_ns / base.steps * 1e-6;
  for (int p = 0; p < kPathParts; ++p) c.part_ms[p] = base.part_ns[p] / base.steps * 1e-6;
  c.gpu_streams = StreamsLargestFirst(base.streams, 1e-6 / base.steps);
  return c;
}

// A rank's step as the what-ifs scale it: its median step as the job paced it, else its
// graphs' mean.
double StepMs(const RankResult& r) { return r.StepMedianS() > 0 ? r.StepMedianS() * 1e3 : r.critical_path.step_ms; }

std::string JoinTitles(const std::vector<std::string>& titles) {
  std::string out;
  for (const std::string& t : titles) out += (out.empty() ? "" : ", ") + t;
  return out;
}

}  // namespace

void ModelRankFixes(const StepGraphList& graphs, RankResult& r) {
  if (graphs.empty()) return;
  const Totals base = ReplayAll(graphs, nullptr, false);
  const Totals base_alone = ReplayAll(graphs, nullptr, true);
  r.critical_path = PathFigures(graphs, base, base_alone);
  if (!r.critical_path.known()) return;
  const double ref_ms = StepMs(r);
  std::vector<FixMaker> all;
  std::vector<std::string> modelled;
  for (Finding& f : r.findings) {
    std::optional<Model> m = ModelFor(f, r, graphs);
    if (!m) continue;
    f.what_if = Predict(ref_ms, base, ReplayAll(graphs, &m->make, false), m->assumes);
    all.push_back(m->make);
    modelled.push_back(f.title);
  }
  if (all.empty()) return;
  const FixMaker every = Combined(all);
  r.all_fixed = Predict(ref_ms, base, ReplayAll(graphs, &every, false), "every fix modelled at once: " + JoinTitles(modelled));
}

namespace {

// The straggler at the median rank's pace: each rank's own pace (its replay without NCCL
// kernel time) plus the collectives' transfer (the least communication any rank's path
// holds: the last to arrive waits for no one); the slowest other rank paces the job.
WhatIf StragglerFixed(const std::vector<const RankResult*>& known, const Finding& f, const JobResult& j, double job_ms) {
  WhatIf w;
  const int late = f.evidence.value("rank", -1);
  double floor = -1;
  for (const RankResult* r : known) {
    const double c = r->critical_path.part_ms[kPathComm] + r->critical_path.part_ms[kPathPeerWait];
    if (floor < 0 || c < floor) floor = c;
  }
  std::vector<double> own;
  double others = 0;
  for (const RankResult* r : known) {
    own.push_back(r->critical_path.alone_ms + floor);
    if (r->rank != late) others = std::max(others, own.back());
  }
  const double paced = std::max(others, Median(own));
  if (paced <= 0 || j.critical_path.path_ms <= 0) return w;
  w.step_ms = std::min(job_ms, paced * job_ms / j.critical_path.path_ms);
  w.assumes = Printf("rank %d at the median rank's pace: no rank waits for it", late);
  return w;
}

// The ranks' graphs joined at their collectives (job_graph.h), when every rank with a path
// kept its graphs (the ranks this process analysed: a digest from a host collector carries
// none, and the job then keeps the ranks' paces below) and they hold the same steps.
std::vector<JobGraph> JoinedGraphs(const std::vector<const RankResult*>& known) {
  std::vector<RankGraphs> ranks;
  for (const RankResult* r : known) {
    if (r->step_graphs.empty()) return {};
    ranks.push_back({r->rank, r->host, r->step_graphs});
  }
  std::sort(ranks.begin(), ranks.end(), [](const RankGraphs& a, const RankGraphs& b) { return a.rank < b.rank; });
  return JoinSampledGraphs(ranks);
}

// The job's path from the joined replays: the ranks pacing each other, the path through
// the rank that arrived last at each join; its own pace (alone_ms) stays the median rank's.
CriticalPathFigures JoinedPathFigures(const std::vector<JobGraph>& joined, const std::vector<JobPathReplay>& replays,
                                      double alone_ms, std::vector<std::pair<int, double>>* path_ranks) {
  CriticalPathFigures c;
  double span = 0, measured = 0, steps = 0, parts[kPathParts] = {};
  std::map<uint32_t, double> streams;
  std::map<int, double> by_rank;
  for (size_t k = 0; k < joined.size(); ++k) {
    const JobPathReplay& r = replays[k];
    span += static_cast<double>(r.span_ns);
    measured += static_cast<double>(joined[k].MeasuredSpan());
    steps += r.steps;
    for (int p = 0; p < kPathParts; ++p) parts[p] += r.part_ns[p];
    for (const PathStreamTime& s : r.streams) streams[s.stream] += s.ms;
    for (const PathRank& pr : r.path_ranks) by_rank[pr.rank] += pr.ns;
  }
  if (steps <= 0) return c;
  c.steps = static_cast<size_t>(steps);
  c.step_ms = measured / steps * 1e-6;
  c.path_ms = span / steps * 1e-6;
  c.alone_ms = alone_ms;
  for (int p = 0; p < kPathParts; ++p) c.part_ms[p] = parts[p] / steps * 1e-6;
  c.gpu_streams = StreamsLargestFirst(streams, 1e-6 / steps);
  for (const auto& [rank, ns] : by_rank) path_ranks->push_back({rank, ns / steps * 1e-6});
  std::sort(path_ranks->begin(), path_ranks->end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return c;
}

// A rank's own nodes (not its NCCL kernels) `factor` times as long.
ReplayFix OwnNodesScaled(double factor) {
  ReplayFix f;
  f.duration = [factor](const StepGraph& g, uint32_t i) {
    const GraphNode& n = g.nodes[i];
    return n.kind == NodeKind::kComm ? n.dur() : static_cast<uint64_t>(static_cast<double>(n.dur()) * factor);
  };
  return f;
}

// The straggler at the median rank's pace, on the joined graphs: its own nodes scaled until
// its replay alone (NCCL kernels taking no time) is the median rank's pace (the ranks' own
// alone_ms: their replays alone, already made), then the ranks replayed together: every
// rank that waited for it at a join waits less, and whoever arrives last now paces the job.
// Empty when the late rank is not in the graphs.
WhatIf StragglerJoined(const std::vector<JobGraph>& joined, const std::vector<JobPathReplay>& replays,
                       const std::vector<const RankResult*>& known, int late, double job_ms) {
  WhatIf w;
  std::vector<double> alone;
  double late_alone = 0;
  for (const RankResult* r : known) {
    alone.push_back(r->critical_path.alone_ms);
    if (r->rank == late) late_alone = r->critical_path.alone_ms;
  }
  const double pace = late_alone > 0 ? std::min(1.0, Median(alone) / late_alone) : 1.0;
  double base = 0, fixed = 0, fixed_parts[kPathParts] = {};
  for (size_t k = 0; k < joined.size(); ++k) {
    const auto& ranks = joined[k].ranks();
    size_t at = ranks.size();
    for (size_t r = 0; r < ranks.size(); ++r)
      if (ranks[r].rank == late) at = r;
    if (at == ranks.size()) return w;
    std::vector<ReplayFix> fixes(ranks.size());
    if (pace < 1) {
      // Scaling its nodes scales its pace but for what they do not hold (releases, lags): a
      // correction or two brings this graph's pace to the target.
      const StepGraph& g = *ranks[at].graph;
      const double target = pace * static_cast<double>(ReplayGraph(g, {}, true).span_ns);
      double factor = pace;
      for (int pass = 0; pass < 2; ++pass) {
        const double a = static_cast<double>(ReplayGraph(g, OwnNodesScaled(factor), true).span_ns);
        if (a <= 0 || std::abs(a - target) <= 1e-3 * target) break;
        factor = std::min(1.0, factor * target / a);
      }
      fixes[at] = OwnNodesScaled(factor);
    }
    const JobPathReplay f = joined[k].Replay(fixes);
    base += static_cast<double>(replays[k].span_ns);
    fixed += static_cast<double>(f.span_ns);
    for (int p = 0; p < kPathParts; ++p) fixed_parts[p] += f.part_ns[p];
  }
  if (base <= 0 || fixed <= 0) return w;
  w.step_ms = std::min(job_ms, job_ms * fixed / base);
  w.assumes = Printf("rank %d at the median rank's pace: the ranks replayed together, none waits for it", late);
  w.then_paced_by = LargestPart(fixed_parts);
  return w;
}

// Stages balanced: each rank's GPU compute a step at the ranks' mean, the step shorter by the
// slowest stage's excess.
WhatIf StagesBalanced(const JobResult& j, double job_ms) {
  WhatIf w;
  std::vector<double> compute;
  for (const RankResult& r : j.ranks)
    if (r.per_step.known) compute.push_back(r.per_step.compute_ms);
  if (compute.size() < 2) return w;
  double sum = 0;
  for (double c : compute) sum += c;
  const double mean = sum / static_cast<double>(compute.size());
  const double most = *std::max_element(compute.begin(), compute.end());
  if (most <= mean) return w;
  w.step_ms = std::max(job_ms - (most - mean), job_ms * 0.05);
  w.assumes = "pipeline stages balanced: each stage's GPU work a step at the stages' mean";
  return w;
}

// A rank finding's fix for the job: the median over the ranks that have it of the change it
// makes to their step, and the pace after it that a rank reported.
WhatIf RanksChange(const std::vector<const RankResult*>& known, const std::string& id, double job_ms) {
  WhatIf w;
  std::vector<double> ratios;
  for (const RankResult* r : known)
    for (const Finding& g : r->findings)
      if (g.id == id && g.what_if.known()) {
        ratios.push_back(g.what_if.step_ms / StepMs(*r));
        if (w.assumes.empty()) w.assumes = g.what_if.assumes;
        w.then_paced_by = g.what_if.then_paced_by;
      }
  if (!ratios.empty()) w.step_ms = job_ms * Median(ratios);
  return w;
}

}  // namespace

void ModelJobFixes(JobResult& j) {
  // The job's path: the median rank's (by its replayed step).
  std::vector<const RankResult*> known;
  for (const RankResult& r : j.ranks)
    if (r.critical_path.known()) known.push_back(&r);
  if (known.empty()) return;
  std::sort(known.begin(), known.end(),
            [](const RankResult* a, const RankResult* b) { return a->critical_path.path_ms < b->critical_path.path_ms; });
  j.critical_path = known[known.size() / 2]->critical_path;
  // Where the ranks' graphs join, the job's path is the joined one.
  const std::vector<JobGraph> joined = JoinedGraphs(known);
  std::vector<JobPathReplay> joined_base;
  for (const JobGraph& g : joined) joined_base.push_back(g.Replay());
  if (!joined.empty()) {
    const CriticalPathFigures c = JoinedPathFigures(joined, joined_base, j.critical_path.alone_ms, &j.critical_path_ranks);
    if (c.known()) j.critical_path = c;
  }
  const double job_ms = j.steps_median_s > 0 ? j.steps_median_s * 1e3 : j.critical_path.step_ms;
  // Every fix: the ranks' (the median change), times the job's own causes'.
  std::vector<double> all_ratios;
  const WhatIf* rank_all = nullptr;  // a rank's, for its wording and pace
  for (const RankResult* r : known)
    if (r->all_fixed.known()) all_ratios.push_back(r->all_fixed.step_ms / StepMs(*r)), rank_all = &r->all_fixed;
  double all_ratio = all_ratios.empty() ? 1.0 : Median(all_ratios);
  std::vector<std::string> job_modelled;
  for (Finding& f : j.findings) {
    const bool job_cause = f.id == "straggler" || f.id == "pipeline_bubble";
    WhatIf w = f.id == "straggler"         ? StragglerJoined(joined, joined_base, known, f.evidence.value("rank", -1), job_ms)
               : f.id == "pipeline_bubble" ? StagesBalanced(j, job_ms)
                                           : RanksChange(known, f.id, job_ms);
    if (f.id == "straggler" && !w.known()) w = StragglerFixed(known, f, j, job_ms);  // no joined graph
    if (!w.known()) continue;
    w.speedup = job_ms / w.step_ms;
    if (w.then_paced_by < 0) w.then_paced_by = j.critical_path.Largest();
    if (job_cause) {
      all_ratio *= w.step_ms / job_ms;
      job_modelled.push_back(f.title);
    }
    f.what_if = std::move(w);
  }
  // The ranks' view of the job's own causes.
  for (auto& findings : j.rank_findings)
    for (Finding& g : findings)
      if (!g.what_if.known())
        for (const Finding& f : j.findings)
          if (f.id == g.id && f.what_if.known()) g.what_if = f.what_if;
  if (!rank_all && job_modelled.empty()) return;
  j.all_fixed.step_ms = job_ms * all_ratio;
  j.all_fixed.speedup = job_ms / j.all_fixed.step_ms;
  j.all_fixed.then_paced_by = rank_all ? rank_all->then_paced_by : j.critical_path.Largest();
  j.all_fixed.assumes = rank_all ? rank_all->assumes : "every fix modelled at once: ";
  if (!job_modelled.empty()) j.all_fixed.assumes += (rank_all ? ", " : "") + JoinTitles(job_modelled);
}

}  // namespace gpuwatch::collector
