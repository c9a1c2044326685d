// See figures_text.h.
#include "report/figures_text.h"

#include <cmath>

#include "report/comms_text.h"
#include "report/critical_path_text.h"

#include "analyze/contended_cost.h"
#include "common/api_names.h"
#include "common/explains.h"
#include "common/format.h"
#include "common/kernel_names.h"
#include "common/thresholds.h"
#include "overhead_settings.h"
#include "report/device_text.h"

namespace gpuwatch::collector {

namespace {

std::string DurD(double ns) { return FmtDuration(ns * 1e-9); }
const char* const kDirNames[kCopyDirections] = {"H2D", "D2H"};

void SyncText(const SyncFigures& s, std::string& out) {
  if (s.TotalCount() == 0) {
    out += "  sync: none\n";
    return;
  }
  out += Printf("  %-36s %9s %13s\n", "sync (host blocked on the GPU)", "calls", "time");
  for (size_t i = 0; i < SyncFigures::kApis.size(); ++i) {
    if (s.count[i] == 0) continue;
    std::string label = ApiName(SyncFigures::kApis[i]);
    if (IsCopy(SyncFigures::kApis[i])) label += " (blocking)";
    out += Printf("    %-34s %9llu %13s\n", label.c_str(), static_cast<unsigned long long>(s.count[i]),
                  FmtDurationNs(s.ns[i]).c_str());
  }
  out += Printf("    %-34s %9llu %13s\n", "total", static_cast<unsigned long long>(s.TotalCount()),
                FmtDurationNs(s.TotalNs()).c_str());
}

// GB/s is the transfer's rate on the device (CUPTI's copy time); a copy call's host time
// says nothing of it for an async copy, so without a device timeline it is not shown.
void CopiesText(const CopyFigures& c, const GpuFigures& gpu, std::string& out) {
  if (c.dir[0].calls.count == 0 && c.dir[1].calls.count == 0) {
    out += "  copies: none\n";
    return;
  }
  out += Printf("  %-7s %8s %11s %12s %9s %9s %9s\n", "copies", "calls", "bytes", "time", "dev GB/s", "pageable",
                "blocking");
  for (int i = 0; i < kCopyDirections; ++i) {
    const Tally& d = c.dir[i].calls;
    const Tally& dev = gpu.copies[i].device;
    const std::string rate =
        gpu.cupti() && dev.ns ? FmtRate(Gbps(static_cast<double>(dev.bytes), Seconds(dev.ns))) : "-";
    out += Printf("    %-5s %8llu %11s %12s %9s %9llu %9llu\n", kDirNames[i], static_cast<unsigned long long>(d.count),
                  FmtBytes(d.bytes).c_str(), FmtDurationNs(d.ns).c_str(), rate.c_str(),
                  static_cast<unsigned long long>(c.dir[i].pageable.count),
                  static_cast<unsigned long long>(c.dir[i].blocking_count));
  }
}

// Bandwidths are the transfer's: after the last member arrived (`waits`, when known).
void CollectivesText(const CollectiveFigures& c, const RankWaits* waits, std::string& out) {
  const CollectiveFigures::Op t = c.Total();
  if (t.count == 0) {
    out += "  collectives: none\n";
    return;
  }
  out += Printf("  %-15s %7s %11s %10s %9s %10s %10s\n", "collectives", "calls", "bytes", "GPU time", "waiting",
                "algbw GB/s", "busbw GB/s");
  bool any_local = false;
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const CollectiveFigures::Op& o = c.ops[i];
    if (o.count == 0) continue;
    const uint64_t w = waits ? waits->op_ns[i] : 0;
    const bool local = o.only_local();  // one-member communicator: no link crossed
    any_local = any_local || o.local.count;
    out += Printf("    %-13s %7llu %11s %10s %9s %10s %10s\n", kCollOps[i].name, static_cast<unsigned long long>(o.count),
                  FmtBytes(o.bytes).c_str(), FmtDurationNs(o.timed.ns).c_str(), FmtDurationNs(w).c_str(),
                  local ? "-" : FmtRate(o.algbw(w)).c_str(), local ? "-" : FmtRate(o.busbw(w)).c_str());
  }
  if (any_local) out += "    (calls on one-member communicators copy within the device: no bandwidth)\n";
  if (t.no_gpu_time())
    out += Printf("    (%llu call%s without GPU time left out of the bandwidths)\n",
                  static_cast<unsigned long long>(t.no_gpu_time()), t.no_gpu_time() == 1 ? "" : "s");
}

// A rank's pipeline stage and its bubble (the `pipeline_bubble` class of idle compute);
// nothing without send/recv.
void PipelineText(const PipelineFigures& p, std::string& out) {
  if (!p.any()) return;
  out += Printf("  pipeline: stage %d of %d, bubble %s (compute idle while a recv ran), %llu recv kernel%s\n",
                p.stage(), p.stages(), FmtDurationNs(p.bubble_ns).c_str(), static_cast<unsigned long long>(p.recv_kernels),
                p.recv_kernels == 1 ? "" : "s");
}

void LaunchesText(const LaunchFigures& l, std::string& out) {
  out += Printf("  kernel launches (host calls seen): %llu\n", static_cast<unsigned long long>(l.launches));
  for (const auto& [name, n] : l.Top(kTopN))
    out += Printf("    %9llu  %s\n", static_cast<unsigned long long>(n), Clip(DemangleName(name), kTextWidth - 15).c_str());
}

void GraphsText(const GraphFigures& g, std::string& out) {
  if (!g.any()) return;
  out += Printf("  CUDA graphs: %llu launches (%s in the calls), %llu kernels / %llu ops on the device, %s\n",
                static_cast<unsigned long long>(g.launches), FmtDurationNs(g.launch_ns).c_str(),
                static_cast<unsigned long long>(g.device.kernels), static_cast<unsigned long long>(g.device.ops),
                FmtDurationNs(g.device.device_ns).c_str());
  if (g.captures || g.captured_calls)
    out += Printf("    %llu captures, %llu instantiations, %llu calls recorded into graphs (not run)\n",
                  static_cast<unsigned long long>(g.captures), static_cast<unsigned long long>(g.instantiations),
                  static_cast<unsigned long long>(g.captured_calls));
}

void GpuText(const GpuFigures& s, std::string& out) {
  const uint64_t comm_count = s.comm_kernels + s.coll_events.count, comm_ns = s.run.comm + s.coll_events.ns;
  if (!s.cupti()) {
    std::string why = s.source_detail.empty() ? "CUPTI not in use" : s.source_detail;
    out += "  gpu (events): " + Clip("no device timeline: " + why, kTextWidth - 16) + "\n";
    if (comm_count)
      out += Printf("    collectives timed with CUDA events: %llu, %s\n", static_cast<unsigned long long>(comm_count),
                    FmtDurationNs(comm_ns).c_str());
    return;
  }
  // Useful busy beside busy: NCCL kernels waiting for peers count in the second only.
  out += Printf("  gpu (%s): busy %s of %s active (%.1f%%), compute %.1f%%\n", s.source_name(),
                FmtDurationNs(s.run.busy).c_str(), FmtDurationNs(s.active_ns).c_str(), 100.0 * s.utilization(),
                100.0 * s.compute_utilization());
  if (const std::string note = SampledNote(s); !note.empty())
    out += "    " + note + ":\n      figures scaled to the run, communication from every collective's GPU time\n";
  out += Printf("    %-4s %9s %11s %11s %11s %11s %11s\n", "gaps", "count", "total", "p50", "p90", "p99", "max");
  out += Printf("    %-4s %9llu %11s %11s %11s %11s %11s\n", "", static_cast<unsigned long long>(s.gap_count),
                FmtDurationNs(s.run.IdleTotal()).c_str(), DurD(s.gaps.Quantile(0.5)).c_str(),
                DurD(s.gaps.Quantile(0.9)).c_str(), DurD(s.gaps.Quantile(0.99)).c_str(), FmtDurationNs(s.gaps.max()).c_str());
  out += Printf("    %-18s %11s %11s %11s %11s\n", "idle", IdleKindKey(kIdleHost), IdleKindKey(kIdleLaunch),
                IdleKindKey(kIdleSync), IdleKindKey(kIdleOther));
  out += Printf("    %-18s %11s %11s %11s %11s\n", "", FmtDurationNs(s.run.idle[kIdleHost]).c_str(),
                FmtDurationNs(s.run.idle[kIdleLaunch]).c_str(), FmtDurationNs(s.run.idle[kIdleSync]).c_str(),
                FmtDurationNs(s.run.idle[kIdleOther]).c_str());
  out += Printf("    launch delay p50 %s, p99 %s\n", DurD(s.launch_delay.Quantile(0.5)).c_str(),
                DurD(s.launch_delay.Quantile(0.99)).c_str());
  out += Printf("    kernels %llu, %s, median %s, %.1f%% short\n", static_cast<unsigned long long>(s.kernel_count),
                FmtDurationNs(s.run.compute).c_str(), DurD(s.kernel_dur.Quantile(0.5)).c_str(), 100.0 * s.short_fraction());
  if (s.graph_kernels)
    out += Printf("    (%llu of them in CUDA graphs; short counts kernels launched one by one)\n",
                  static_cast<unsigned long long>(s.graph_kernels));
  for (const auto& [name, k] : s.TopByTime(kTopN))
    out += Printf("      %9llu %11s  %s\n", static_cast<unsigned long long>(k.count), FmtDurationNs(k.ns).c_str(),
                  Clip(DemangleName(name), kTextWidth - 29).c_str());
  out += Printf("    comm kernels %llu, %s\n", static_cast<unsigned long long>(comm_count), FmtDurationNs(comm_ns).c_str());
  for (int i = 0; i < kCopyDirections; ++i) {
    const Tally& c = s.copies[i].device;
    if (!c.count) continue;
    out += Printf("    %s %llu copies, %s, %s on device, %llu pageable\n", kDirNames[i],
                  static_cast<unsigned long long>(c.count), FmtBytes(c.bytes).c_str(), FmtDurationNs(c.ns).c_str(),
                  static_cast<unsigned long long>(s.copies[i].pageable));
  }
  if (s.late || s.overflow)
    out += Printf("    (%llu records out of order, %llu released early: window full)\n",
                  static_cast<unsigned long long>(s.late), static_cast<unsigned long long>(s.overflow));
}

void OverheadText(const RankResult& r, std::string& out) {
  const OverheadFacts& o = r.overhead;
  if (!o.known) return;
  const uint64_t added = o.AddedNs();
  // The budget is a share of the wall time plus a fixed allowance (so a short run is
  // recorded whole): said with it, a 10 s run's 1.15% is within "1%".
  const std::string budget = o.cupti_mode == wire::CUPTI_MODE_FULL ? std::string("CUPTI full: no budget")
                                                                   : Printf("budget %.3g%% + %.0f ms", 100 * o.budget,
                                                                            wire::kOverheadAllowanceNs / 1e6);
  out += Clip(Printf("  gpuwatch's own cost: %s, %.2f%% of %s (%s)", FmtDurationNs(added).c_str(),
                     o.elapsed_ns ? 100.0 * added / o.elapsed_ns : 0.0, FmtDurationNs(o.elapsed_ns).c_str(), budget.c_str()),
              kTextWidth) +
         "\n";
  // CUPTI's cost is a prior until calls in and out of windows measure it (never in `full`):
  // say how much of it is.
  const double assumed = (o.cupti_ns_measured ? 0.0 : o.cupti_ns * static_cast<double>(o.cupti_calls)) +
                         (o.cupti_graph_ns_measured ? 0.0 : o.cupti_graph_ns * static_cast<double>(o.cupti_graph_launches));
  out += Clip(Printf("    hooks %s, CUPTI %s, start %s, sampler signals %s", FmtDurationNs(o.hooks_added_ns).c_str(),
                     FmtDurationNs(o.cupti_added_ns).c_str(), FmtDurationNs(o.startup_ns).c_str(),
                     FmtDurationNs(o.sampler_signals_ns).c_str()),
              kTextWidth) +
         "\n";
  if (o.cupti_detaches > 0)
    out += Clip(Printf("    CUPTI detached between windows %llu times (%s of it on the job's threads)",
                       static_cast<unsigned long long>(o.cupti_detaches), FmtDurationNs(o.cupti_detach_ns).c_str()),
                kTextWidth) +
           "\n";
  // A disabled CUPTI still costs each call something until it is detached (or all along
  // where it stays attached): said apart, being the part a window leaves behind.
  if (o.cupti_linger_calls > 0)
    out += Clip(Printf("    CUPTI left lingering: %s (%llu calls x %.2f us, %s)",
                       FmtDurationNs(static_cast<uint64_t>(o.cupti_linger_ns * static_cast<double>(o.cupti_linger_calls)))
                           .c_str(),
                       static_cast<unsigned long long>(o.cupti_linger_calls), o.cupti_linger_ns * 1e-3,
                       o.cupti_linger_ns_measured ? "measured" : "assumed"),
                kTextWidth) +
           "\n";
  if (assumed > 0)
    out += Clip(Printf("    %s of CUPTI's assumed, not measured (too few calls outside windows)",
                       FmtDurationNs(static_cast<uint64_t>(assumed)).c_str()),
                kTextWidth) +
           "\n";
  // Not in it: CPU on other threads, which slows the job only where cores are short.
  const uint64_t sampler_cpu = o.SamplerThreadNs();
  if (sampler_cpu || o.sender_cpu_ns)
    out += Clip(Printf("    beside the job: sender %s CPU, sampler %s CPU%s", FmtDurationNs(o.sender_cpu_ns).c_str(),
                       FmtDurationNs(sampler_cpu).c_str(),
                       o.collector_cpu_ns ? (", collector " + FmtDurationNs(o.collector_cpu_ns) + " CPU").c_str() : ""),
                kTextWidth) +
           "\n";
  // Where the job's cores were all busy for a tenth of the run or more, what that cost it.
  const ContendedCost c = MeasureContendedCost(r);
  if (c.known && c.busy_share >= 0.1)
    out += Clip(Printf("    every core busy %.0f%% of the time: gpuwatch took about %s from the job "
                       "(a second on its threads took %.2f s)",
                       100 * c.busy_share, FmtDurationNs(static_cast<uint64_t>(c.added_s * 1e9)).c_str(), c.stretch),
                kTextWidth) +
           "\n";
}

uint64_t DroppedTotal(const std::map<std::string, uint64_t>& d) {
  uint64_t t = 0;
  for (const auto& [r, n] : d) t += n;
  return t;
}

void DroppedText(const std::map<std::string, uint64_t>& d, std::string& out) {
  const uint64_t total = DroppedTotal(d);
  if (total == 0) {
    out += "  dropped: none\n";
    return;
  }
  std::string line = Printf("  dropped: %llu (", static_cast<unsigned long long>(total));
  bool first = true;
  for (const auto& [reason, n] : d) {
    if (n == 0) continue;
    std::string part = Printf("%s%s %llu", first ? "" : ", ", Clip(reason, 32).c_str(), static_cast<unsigned long long>(n));
    if (line.size() + part.size() + 1 > kTextWidth) {
      out += line + "\n";
      line = "    ";
      part = part.substr(first ? 0 : 2);
    }
    line += part;
    first = false;
  }
  out += line + ")\n";
}

void StepsText(const RankResult& r, const std::vector<Finding>& findings, std::string& out) {
  if (r.steps_total()) {
    out += Printf("  steps %llu (%s): median %s, p90 %s, paced by the %s\n",
                  static_cast<unsigned long long>(r.steps_total()), Clip(r.found.source, 30).c_str(),
                  FmtDuration(r.StepPercentileNs(0.5) * 1e-9).c_str(), FmtDuration(r.StepPercentileNs(0.9) * 1e-9).c_str(),
                  r.PacedBy());
    const uint64_t dev = r.DevicePeriodMedianNs();
    out += Printf("    periods: host %s, device %s; host range %s\n", FmtDuration(r.HostPeriodMedianNs() * 1e-9).c_str(),
                  dev ? FmtDuration(dev * 1e-9).c_str() : "-", FmtDuration(r.HostRangeMedianNs() * 1e-9).c_str());
  } else
    out += "  steps: none found (no NVTX step range, no repeating pattern)\n";
  const PerStepMean& m = r.per_step;
  if (m.known) {
    auto ms = [](double v) { return FmtDuration(v * 1e-3); };
    out += Printf("    per step (%s): compute %s, comm not hidden %s, copies %s\n",
                  m.per_step ? "each step" : "run average", ms(m.compute_ms).c_str(),
                  ms(m.comm_not_overlapped_ms).c_str(), ms(m.copies_ms).c_str());
    out += Printf("      GPU idle: %s %s, %s %s, %s %s, %s %s\n", IdleKindKey(kIdleHost), ms(m.idle_ms[kIdleHost]).c_str(),
                  IdleKindKey(kIdleLaunch), ms(m.idle_ms[kIdleLaunch]).c_str(), IdleKindKey(kIdleSync),
                  ms(m.idle_ms[kIdleSync]).c_str(), IdleKindKey(kIdleOther), ms(m.idle_ms[kIdleOther]).c_str());
    // The parts divide the step; say what they leave out (or count twice) when it shows.
    const double left = m.UnattributedMs();
    if (m.step_ms > 0 && std::abs(left) > kUnattributedShare * m.step_ms)
      out += Printf("      %s %s of the %s step\n", left > 0 ? "unattributed" : "parts ran side by side:",
                    ms(std::abs(left)).c_str(), ms(m.step_ms).c_str());
    out += Printf("      host blocked in syncs followed by more work: %s\n", ms(m.host_blocked_in_syncs_ms).c_str());
    if (m.graph_launches > 0 || m.graph_kernels > 0)
      out += Printf("      CUDA graphs: %.1f launches, %.1f graph kernels\n", m.graph_launches, m.graph_kernels);
  }
  for (size_t i = 0; i < findings.size() && i < 3; ++i) {
    const Finding& f = findings[i];
    out += Clip(Printf("    %s %s: %s (%.0f%%)", f.severity.c_str(), f.id.c_str(), FmtDuration(f.time_lost_s).c_str(),
                       100 * f.share),
                kTextWidth) +
           "\n";
  }
}

void Wrap(std::string& out, const std::string& text, const std::string& indent, const std::string& first_indent) {
  std::string line = first_indent;
  size_t i = 0;
  bool empty = true;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (!empty && line.size() + 1 + word.size() > kTextWidth) {
      out += line + "\n";
      line = indent;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
    i = j + 1;
  }
  out += line + "\n";
}

// Calls that returned an error did nothing: said, since they are in no other figure (a job
// on a host without a driver fails every call).
void FailedCallsText(const ApiCallFigures& a, std::string& out) {
  uint64_t total = 0;
  std::string by_api;
  for (const auto& [api, x] : a.by_api) {
    if (x.failed == 0) continue;
    total += x.failed;
    by_api += Printf("%s%s %llu", by_api.empty() ? "" : ", ", ApiName(api), static_cast<unsigned long long>(x.failed));
  }
  if (total == 0) return;
  Wrap(out,
       Printf("failed calls: %llu (%s), returned an error and did nothing: in no other figure",
              static_cast<unsigned long long>(total), by_api.c_str()),
       "    ", "  ");
}

}  // namespace

void AppendRankText(const RankResult& r, std::string& out, const JobResult* job) {
  SyncText(r.sync, out);
  CopiesText(r.copies, r.gpu, out);
  CollectivesText(r.collectives, job ? job->WaitsOf(r) : nullptr, out);
  PipelineText(r.pipeline, out);
  AppendOverlapText(r, out);
  LaunchesText(r.launches, out);
  GraphsText(r.graphs, out);
  GpuText(r.gpu, out);
  DeviceStateText(r, out);
  DroppedText(r.dropped, out);
  FailedCallsText(r.api_calls, out);
  StepsText(r, job ? job->FindingsOf(r) : r.findings, out);
  CriticalPathText(r.critical_path, r.all_fixed, "", out);
  OverheadText(r, out);
}

std::string SampledNote(const GpuFigures& g) {
  if (!g.coverage.sampled || g.coverage_share() >= 1) return {};
  return Printf("GPU timeline sampled over %.1f%% of the run (%llu window%s)", 100 * g.coverage_share(),
                static_cast<unsigned long long>(g.coverage.windows), g.coverage.windows == 1 ? "" : "s");
}

std::vector<std::string> JobHeadlines(const JobResult& j) {
  std::vector<std::string> parts;
  parts.push_back("sync " + FmtDuration(Seconds(j.sync.TotalNs())));
  parts.push_back("H2D " + FmtBytes(j.copies.dir[0].calls.bytes) + ", D2H " + FmtBytes(j.copies.dir[1].calls.bytes));
  parts.push_back(Printf("%llu collectives", static_cast<unsigned long long>(j.collectives.Total().count)));
  parts.push_back(Printf("%llu launches", static_cast<unsigned long long>(j.launches.launches)));
  if (j.gpu.cupti() && j.gpu.active_ns) parts.push_back(Printf("gpu busy %.1f%%", 100.0 * j.gpu.utilization()));
  uint64_t added = 0, elapsed = 0;
  for (const RankResult& r : j.ranks)
    if (r.overhead.known) added += r.overhead.AddedNs(), elapsed += r.overhead.elapsed_ns;
  if (elapsed) parts.push_back(Printf("own cost %.2f%%", 100.0 * added / elapsed));
  parts.push_back(Printf("%llu dropped", static_cast<unsigned long long>(DroppedTotal(j.dropped))));
  return parts;
}

std::string FindingsText(const JobResult& j, size_t shown, bool evidence) {
  std::string out;
  Wrap(out, j.verdict, "  ", "");
  // A finding that explains another is that loss's cause, not a loss of its own: shown inside it.
  std::vector<const Finding*> losses;
  for (const Finding& x : j.findings)
    if (ExplainedFinding(x.id).empty()) losses.push_back(&x);
  if (losses.empty()) return out;
  if (shown == 0) return out + Printf("(%zu finding%s in summary.txt)\n", losses.size(), losses.size() == 1 ? "" : "s");
  out += "findings, by time lost:\n";
  const double steps = JobSteps(j.ranks);
  for (size_t i = 0; i < losses.size() && i < shown; ++i) {
    const Finding& x = *losses[i];
    const Finding* cause = ExplanationOf(j.findings, x);
    std::string rk;
    for (size_t k = 0; k < x.ranks.size() && k < 8; ++k) {
      if (k) rk += ',';
      rk += std::to_string(x.ranks[k]);
    }
    if (x.ranks.size() > 8) rk += ",...";
    std::string head = Printf("%zu. [%s] %s", i + 1, x.severity.c_str(), x.title.c_str());
    if (cause) head += " (" + cause->title + ")";
    if (x.id != "environment") {  // environment: no measured time
      head += ": " + FmtDuration(x.time_lost_s);
      if (steps > 0) head += Printf(", %s/step", FmtDuration(x.time_lost_s / steps).c_str());
      head += Printf(", %.0f%%", 100 * x.share);
    }
    head += Printf("; rank%s %s", x.ranks.size() == 1 ? "" : "s", rk.c_str());
    // The console's short form says what the fix buys in the finding's own line.
    if (!evidence && x.what_if.known()) head += "; " + WhatIfShort(x.what_if);
    Wrap(out, head, "     ", "  ");
    if (evidence) {
      Wrap(out, x.summary, "      ", "    ");
      if (cause) Wrap(out, "cause: " + cause->summary, "      ", "    ");
    }
    // The cause's fix is the one that applies (input_io's: CPU-bound or waiting on reads).
    Wrap(out, "fix: " + (cause ? cause->fix : x.fix), "      ", "    ");
    if (evidence && x.what_if.known()) Wrap(out, WhatIfSentence(x.title, x.what_if), "      ", "    ");
  }
  if (losses.size() > shown)
    out += Printf("  (%zu more finding%s in summary.txt)\n", losses.size() - shown, losses.size() - shown == 1 ? "" : "s");
  return out;
}

}  // namespace gpuwatch::collector
