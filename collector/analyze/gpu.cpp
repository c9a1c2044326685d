// gpu: the device timeline of a rank (CUPTI activity records): busy time, idle gaps and why
// the GPU was idle, launch delays, kernels by GPU time, communication kernels, copies as
// the device saw them. Without CUPTI (source "events") only collectives' CUDA-event times
// exist: the timeline keys are null and the summary says so. The sweep is in
// gpu_timeline.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "analyze/analysis.h"
#include "analyze/gpu_timeline.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

constexpr size_t kTopN = 10;

struct TopKernel {
  std::string name;  // demangled
  uint64_t count, ns;
};

std::vector<TopKernel> Top(const GpuStats& s) {
  std::vector<std::pair<std::string, GpuStats::KernelStat>> v(s.by_name.begin(), s.by_name.end());
  const size_t n = std::min(kTopN, v.size());
  std::partial_sort(v.begin(), v.begin() + n, v.end(), [](const auto& a, const auto& b) {
    return a.second.ns != b.second.ns ? a.second.ns > b.second.ns : a.first < b.first;
  });
  std::vector<TopKernel> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back({DemangleName(v[i].first), v[i].second.count, v[i].second.ns});
  return out;
}

double Us(double ns) { return ns * 1e-3; }

const char* SourceName(const GpuStats& s) {
  if (s.cupti_ranks > 0 && s.events_ranks > 0) return "mixed";
  return s.cupti_ranks > 0 ? "cupti" : "events";
}

// Busy share per window, rounded to 0.1% to keep summary.json small (512 windows at most).
nlohmann::json SeriesJson(const BusySeries& b) {
  if (b.empty()) return nullptr;
  nlohmann::json busy = nlohmann::json::array();
  for (size_t i = 0; i < b.size(); ++i) busy.push_back(std::round(b.Fraction(i) * 1000) / 1000);
  return {{"start_ns", b.origin_ns()},
          {"window_s", static_cast<double>(b.window_ns()) / 1e9},  // 0.01 exactly, not 1e7 * 1e-9
          {"busy", busy}};
}

// Timeline keys are only meaningful when some rank had CUPTI.
void WriteGpuJson(const GpuStats& s, nlohmann::json& obj) {
  nlohmann::json g;
  g["source"] = SourceName(s);
  g["source_detail"] = s.source_detail;
  const GpuStats::KernelStat comm{s.comm.count + s.coll_events.count,
                                  s.comm.ns + s.coll_events.ns};
  g["comm_kernels"] = {{"count", comm.count}, {"total_s", Seconds(comm.ns)}};
  if (!s.cupti()) {
    for (const char* k : {"busy_s", "active_s", "utilization", "gaps", "idle_breakdown_s",
                          "launch_delay", "kernels", "memcpy", "utilization_series"})
      g[k] = nullptr;
    obj["gpu"] = g;
    return;
  }
  g["busy_s"] = Seconds(s.busy_ns);
  g["active_s"] = Seconds(s.active_ns);
  g["utilization"] = s.active_ns ? static_cast<double>(s.busy_ns) / s.active_ns : 0.0;
  g["gaps"] = {{"count", s.gap_count},
               {"total_s", Seconds(s.gap_ns)},
               {"p50_us", Us(s.gaps.Quantile(0.50))},
               {"p90_us", Us(s.gaps.Quantile(0.90))},
               {"p99_us", Us(s.gaps.Quantile(0.99))},
               {"max_us", Us(static_cast<double>(s.gaps.max()))}};
  g["idle_breakdown_s"] = {{"host_wait", Seconds(s.idle_ns[GpuStats::kHostWait])},
                           {"sync_wait", Seconds(s.idle_ns[GpuStats::kSyncWait])},
                           {"kernel_wait", Seconds(s.idle_ns[GpuStats::kKernelWait])},
                           {"other", Seconds(s.idle_ns[GpuStats::kOther])}};
  g["launch_delay"] = {{"count", s.launch_delay.count()},
                       {"p50_us", Us(s.launch_delay.Quantile(0.50))},
                       {"p99_us", Us(s.launch_delay.Quantile(0.99))}};
  nlohmann::json top = nlohmann::json::array();
  for (const auto& k : Top(s))
    top.push_back({{"name", k.name}, {"count", k.count}, {"total_s", Seconds(k.ns)}});
  g["kernels"] = {
      {"count", s.kernel_count},
      {"total_s", Seconds(s.kernel_ns)},
      {"median_us", Us(s.kernel_dur.Quantile(0.50))},
      {"short_fraction", s.kernel_with_api
                             ? static_cast<double>(s.kernel_short) / s.kernel_with_api
                             : 0.0},
      {"top", top}};
  nlohmann::json mc;
  const char* dirs[2] = {"h2d", "d2h"};
  for (int i = 0; i < 2; ++i) {
    const auto& c = s.copies[i];
    mc[dirs[i]] = {{"count", c.count},
                   {"bytes", c.bytes},
                   {"device_s", Seconds(c.ns)},
                   {"pageable_count", c.pageable}};
  }
  g["memcpy"] = mc;
  g["utilization_series"] = SeriesJson(s.series);
  g["late_records"] = s.late;
  g["window_overflows"] = s.overflow;
  g["unmatched_correlations"] = s.unmatched;
  obj["gpu"] = g;
}

std::string Dur(uint64_t ns) { return FmtDuration(Seconds(ns)); }
std::string DurD(double ns) { return FmtDuration(ns * 1e-9); }

void WriteGpuText(const GpuStats& s, std::string& out) {
  const GpuStats::KernelStat comm{s.comm.count + s.coll_events.count,
                                  s.comm.ns + s.coll_events.ns};
  if (!s.cupti()) {
    std::string why = s.source_detail.empty() ? "CUPTI not in use" : s.source_detail;
    out += "  gpu (events): " + Clip("no device timeline: " + why, kTextWidth - 16) + "\n";
    if (comm.count)
      out += Printf("    collectives timed with CUDA events: %llu, %s\n",
                    static_cast<unsigned long long>(comm.count), Dur(comm.ns).c_str());
    return;
  }
  const double util = s.active_ns ? 100.0 * s.busy_ns / s.active_ns : 0.0;
  out += Printf("  gpu (%s): busy %s of %s active, utilization %.1f%%\n", SourceName(s),
                Dur(s.busy_ns).c_str(), Dur(s.active_ns).c_str(), util);
  out += Printf("    %-4s %9s %11s %11s %11s %11s %11s\n", "gaps", "count", "total", "p50",
                "p90", "p99", "max");
  out += Printf("    %-4s %9llu %11s %11s %11s %11s %11s\n", "",
                static_cast<unsigned long long>(s.gap_count), Dur(s.gap_ns).c_str(),
                DurD(s.gaps.Quantile(0.5)).c_str(), DurD(s.gaps.Quantile(0.9)).c_str(),
                DurD(s.gaps.Quantile(0.99)).c_str(), Dur(s.gaps.max()).c_str());
  out += Printf("    %-18s %11s %11s %11s %11s\n", "idle", "host_wait", "sync_wait",
                "kernel_wait", "other");
  out += Printf("    %-18s %11s %11s %11s %11s\n", "",
                Dur(s.idle_ns[GpuStats::kHostWait]).c_str(),
                Dur(s.idle_ns[GpuStats::kSyncWait]).c_str(),
                Dur(s.idle_ns[GpuStats::kKernelWait]).c_str(),
                Dur(s.idle_ns[GpuStats::kOther]).c_str());
  out += Printf("    launch delay p50 %s, p99 %s\n", DurD(s.launch_delay.Quantile(0.5)).c_str(),
                DurD(s.launch_delay.Quantile(0.99)).c_str());
  const double short_pct =
      s.kernel_with_api ? 100.0 * s.kernel_short / s.kernel_with_api : 0.0;
  out += Printf("    kernels %llu, %s, median %s, %.1f%% short\n",
                static_cast<unsigned long long>(s.kernel_count), Dur(s.kernel_ns).c_str(),
                DurD(s.kernel_dur.Quantile(0.5)).c_str(), short_pct);
  for (const auto& k : Top(s))
    out += Printf("      %9llu %11s  %s\n", static_cast<unsigned long long>(k.count),
                  Dur(k.ns).c_str(), Clip(k.name, kTextWidth - 29).c_str());
  out += Printf("    comm kernels %llu, %s\n", static_cast<unsigned long long>(comm.count),
                Dur(comm.ns).c_str());
  const char* dirs[2] = {"H2D", "D2H"};
  for (int i = 0; i < 2; ++i) {
    const auto& c = s.copies[i];
    if (!c.count) continue;
    out += Printf("    %s %llu copies, %s, %s on device, %llu pageable\n", dirs[i],
                  static_cast<unsigned long long>(c.count), FmtBytes(c.bytes).c_str(),
                  Dur(c.ns).c_str(), static_cast<unsigned long long>(c.pageable));
  }
  if (s.late || s.overflow)
    out += Printf("    (%llu records out of order, %llu released early: window full)\n",
                  static_cast<unsigned long long>(s.late),
                  static_cast<unsigned long long>(s.overflow));
}

class GpuAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "gpu"; }

  void OnBatch(const wire::Batch& batch) override { timeline_.OnBatch(batch); }

  void Merge(const RankAnalysis& other) override {
    const auto& o = static_cast<const GpuAnalysis&>(other);
    job_ = true;
    totals_.Merge(o.Stats());
    totals_.source_detail =
        Printf("%llu rank(s) cupti, %llu rank(s) events",
               static_cast<unsigned long long>(totals_.cupti_ranks),
               static_cast<unsigned long long>(totals_.events_ranks));
  }

  void WriteJson(nlohmann::json& obj) const override { WriteGpuJson(Stats(), obj); }
  void WriteText(std::string& out) const override { WriteGpuText(Stats(), out); }

  std::string Headline() const override {
    const GpuStats s = Stats();
    if (!s.cupti() || !s.active_ns) return {};
    return Printf("gpu busy %.1f%%", 100.0 * s.busy_ns / s.active_ns);
  }

 private:
  GpuStats Stats() const {
    if (!job_) return timeline_.Result();
    return totals_;
  }

  GpuTimeline timeline_;  // a rank's
  bool job_ = false;      // this instance holds job totals
  GpuStats totals_;
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeGpuAnalysis() { return std::make_unique<GpuAnalysis>(); }

}  // namespace gpuwatch::collector
