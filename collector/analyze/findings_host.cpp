// The host-side findings (issue 6): `input_io` says whether the host side of a data_loading
// finding was CPU-bound or waiting on reads, from the process tree's counters during the
// GPU's host-wait gaps (input_io.h); `environment` lists settings and versions that disable
// a fast path or are old (environment.h). Thresholds: thresholds.h.
#include <algorithm>

#include "analyze/environment.h"
#include "analyze/findings.h"
#include "common/kernel_names.h"
#include "interpret/python_frames.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {

int SeverityRank(const std::string& s) { return s == "high" ? 2 : s == "medium" ? 1 : 0; }
const char* SeverityName(int r) { return r >= 2 ? "high" : r == 1 ? "medium" : "low"; }

}  // namespace

void AddHostFrames(const HostFramesFigures& hf, Finding& f) {
  if (!hf.known()) return;
  nlohmann::json frames = nlohmann::json::array();
  for (const HostFrame& h : hf.frames) {
    frames.push_back({{"where", h.where}, {"share", h.share}});
    if (!h.blocked_in.empty()) frames.back()["blocked_in"] = h.blocked_in;
  }
  f.evidence["host_frames"] = frames;
  f.evidence["host_samples"] = hf.samples;
  f.evidence["data_loading_share"] = hf.data_loading_share;
  f.evidence["unnamed_share"] = hf.unnamed_share;
}

// What fits depends on what the frames are; the frames themselves say where. A frame that
// names nothing (IsNoFrame: samples without a stack of the user's code) is no place to look.
std::string HostOverheadFix(const HostFramesFigures& hf) {
  std::string names;
  for (size_t i = 0, named = 0; i < hf.frames.size() && named < 2; ++i) {
    if (IsNoFrame(hf.frames[i].where)) continue;
    names += (named++ ? ", " : "") + ShortName(ShortWhere(hf.frames[i].where));
  }
  if (names.empty()) names = "code no sample could name";
  return "the GPU waited while the training thread ran " + names +
         ": do that work less often (log/metrics every N steps), asynchronously or off the training "
         "thread (evaluation and checkpoint writing in another process or async), keep values on the "
         "GPU; for Python overhead per step, torch.compile or CUDA graphs";
}

std::optional<Finding> InputIoFinding(const RankContext& c, const std::vector<Finding>& found) {
  const auto dl = std::find_if(found.begin(), found.end(), [](const Finding& f) { return f.id == "data_loading"; });
  if (dl == found.end() || dl->share < kReportShare) return std::nullopt;
  const Finding& data_loading = *dl;
  const InputIoFigures& io = c.r.io;
  // The samples see every host-wait gap of the run (stall steps included).
  const double host_idle_s = io.host_wait_s;
  if (data_loading.time_lost_s <= 0 || host_idle_s <= 0 || io.gap_s < kInputMinCoverage * host_idle_s)
    return std::nullopt;
  const double cores = io.cpu_s / io.gap_s, waiting = io.run_wait_s / io.gap_s;
  const double mbps = io.read_chars / io.gap_s / 1e6, storage = io.read_bytes / io.gap_s / 1e6;
  Finding f;
  f.id = "input_io";
  // Reads decide before the run-queue wait does: a reader woken every millisecond on a busy
  // machine waits for a core too, while a starved CPU-bound pipeline reads nothing.
  const bool cpu = cores >= kInputCpuBoundCores ||
                   (mbps < kInputReadMinMBps && cores + waiting >= kInputCpuBoundCores);
  std::string verdict;
  if (cpu) {
    verdict = "cpu_bound";
    f.title = "input pipeline CPU-bound";
    f.fix = "more DataLoader workers (num_workers, up to the free cores); cheaper transforms, or "
            "augmentation on the GPU (e.g. DALI); preprocess once offline; faster decoders and "
            "formats";
  } else if (mbps >= kInputReadMinMBps) {
    verdict = "io_wait";
    f.title = "input pipeline waiting on reads";
    f.fix = "data on local NVMe or in RAM (page cache); large sequential reads (sharded formats "
            "such as WebDataset, TFRecord, MosaicML streaming) instead of many small files; more "
            "workers and prefetch_factor to keep more reads in flight";
  } else {
    verdict = "other";
    f.title = "input pipeline waiting (neither CPU nor reads)";
    f.fix = "the host neither computed nor read while the GPU waited: look for sleeps, locks, "
            "queues (workers restarted every epoch: persistent_workers=True), or a remote "
            "service";
  }
  // The same time as data_loading: this explains that loss, it does not add to it.
  f.time_lost_s = data_loading.time_lost_s;
  f.share = data_loading.share;
  f.severity = data_loading.severity;
  f.evidence = {{"verdict", verdict},
                {"cpu_cores_busy_in_gaps", cores},
                {"cpu_cores_waiting_in_gaps", waiting},
                {"read_mbps_in_gaps", mbps},
                {"storage_read_mbps_in_gaps", storage},
                {"cpu_cores_busy_overall", io.all_s > 0 ? io.all_cpu_s / io.all_s : 0.0},
                {"read_mbps_overall", io.all_s > 0 ? io.all_read_chars / io.all_s / 1e6 : 0.0},
                {"processes", io.max_processes},
                {"gaps_sampled_s", io.gap_s},
                {"samples", io.intervals}};
  f.summary = Printf("while the GPU waited, the host's %u process%s kept %.2f cores busy (on average %.2f "
                     "more threads waited for a free CPU) and read %.1f MB/s: %s",
                     io.max_processes, io.max_processes == 1 ? "" : "es", cores, waiting, mbps,
                     verdict == "cpu_bound" ? "CPU-bound"
                     : verdict == "io_wait" ? "waiting on reads"
                                            : "neither");
  return f;
}

std::optional<Finding> EnvironmentFinding(const RankContext& c, const std::vector<Finding>& found) {
  const RankResult& d = c.r;
  const std::vector<EnvIssue> issues = EnvIssues(d.env);
  if (issues.empty()) return std::nullopt;
  // Impact: settings that act through NCCL matter as much as the rank's communication does.
  double comm_share = 0;
  for (const auto& g : found)
    if (g.id == "communication") comm_share = g.share;
  int sev = 0;
  nlohmann::json list = nlohmann::json::array();
  std::string what, fix;
  for (const auto& i : issues) {
    int s = SeverityRank(i.severity);
    if (i.transport) {
      if (d.collectives.Total().count == 0) s = 0;  // NCCL unused: no effect on this run
      else if (s == 1 && comm_share >= kHighShare) s = 2;
    }
    sev = std::max(sev, s);
    list.push_back({{"setting", i.what}, {"effect", i.effect}, {"severity", SeverityName(s)}});
    what += (what.empty() ? "" : "; ") + i.what + ": " + i.effect;
    if (fix.find(i.fix) == std::string::npos) fix += (fix.empty() ? "" : "; ") + i.fix;
  }
  Finding f;
  f.id = "environment";
  f.title = "environment settings";
  f.severity = SeverityName(sev);
  f.time_lost_s = 0;  // not measured: listed after every measured loss
  f.evidence = {{"issues", list},
                {"cuda_runtime", CudaVersionText(d.env.cuda_runtime)},
                {"cuda_driver", CudaVersionText(d.env.cuda_driver)},
                {"nccl", NcclVersionText(d.env.nccl)}};
  f.summary = what;
  f.fix = fix;
  return f;
}

}  // namespace gpuwatch::collector
