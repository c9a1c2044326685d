// The figures of one run that `gpuwatch diff` compares, read once from its summary.json
// (the public schema, docs/summary-schema.md) and put per step and per rank (the median
// over ranks), so runs of different lengths and world sizes compare (docs/diff.md).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector::compare {

inline constexpr const char* kSummarySchema = "gpuwatch.summary.v1";

struct FindingFigures {
  std::string id, title, severity, summary, fix;
  double ms_per_step = 0;  // time_lost_s / steps (job: the median rank's), 0 without steps
  double share = 0;
  std::vector<int> ranks;
};

struct SyncFigures {  // one API of the sync table
  double calls_per_step = 0, blocked_ms_per_step = 0;
};

struct CopyFigures {  // h2d or d2h
  double calls_per_step = 0, mb_per_step = 0, host_ms_per_step = 0;
  double pageable_per_step = 0, blocking_per_step = 0;
  double pageable_share = 0;          // pageable bytes / bytes, over the job
  std::optional<double> device_gbps;  // job's; none without a device timeline
};

struct CollectiveFigures {
  double calls_per_step = 0, gpu_ms_per_step = 0;
  double busbw_gbps = 0;  // job's (time-weighted over ranks)
};

struct KernelFigures {  // one name of the job's top kernels by GPU time
  double gpu_ms_per_step = 0, count_per_step = 0;
};

struct CallSiteFigures {  // where a sync stall was called from (sync_stall's call_site)
  std::string python;                // "train.py:42 in step", empty when unknown
  std::vector<std::string> frames;   // native, innermost first
  double blocked_ms_per_step = 0, calls_per_step = 0;  // the rank where it blocked longest
};

struct RunFigures {
  std::string path;  // what the user named
  std::string job_id, generated_at;
  int ranks = 0, world_size = 0, hosts = 0;
  std::vector<int> abnormal_ranks;
  // Steps: job.steps (count is the median rank's); p90 the median of the ranks' p90.
  std::string steps_source = "none";
  uint64_t steps = 0;
  double step_median_ms = 0, step_p90_ms = 0;
  // GPU: job.gpu; busy only when every rank has a device timeline (source "cupti").
  std::string gpu_source;
  std::optional<double> gpu_busy;
  // steps.per_step_ms, the median over ranks of each part (ms per step).
  std::map<std::string, double> step_parts;
  // job.critical_path (the median rank's): its measured step and its parts in ms per step,
  // by part key without "_ms" (host_compute, ...); none when the run's was not known.
  std::optional<double> path_step_ms;
  std::map<std::string, double> path_parts;
  // job.what_if_all: the step predicted with every fix, and what would pace it then.
  std::optional<double> all_fixed_step_ms;
  std::string all_fixed_then;
  std::vector<FindingFigures> findings;  // job.findings, in its order
  std::map<std::string, SyncFigures> sync;
  std::map<std::string, CopyFigures> copies;  // "h2d", "d2h"
  std::map<std::string, CollectiveFigures> collectives;
  std::map<std::string, KernelFigures> kernels;
  bool kernels_cut = false;  // the job's top list was full: names below it are unknown
  double launches_per_step = 0;
  std::map<std::string, CallSiteFigures> call_sites;  // by CallSiteKey
  // Environment, each as one text ("13.0", or "12.4, 13.0" when ranks differ).
  std::map<std::string, std::string> environment;
};

// The identity of a call site across builds: the Python location when known, else the
// innermost native frame without its offset ("play_rank(...) (app)"), and when that one
// has no symbol, with its first named caller ("app, called from play_rank(...) (app)").
std::string CallSiteKey(const std::string& python, const std::vector<std::string>& frames);

// Reads the figures of a summary.json document that LoadSummary accepted. Keys missing
// from an older or partial document read as absent or 0; it never throws.
RunFigures ExtractFigures(const nlohmann::json& summary, const std::string& path);

// Reads `path` (an output folder holding summary.json, or the file itself) and checks it
// is a whole summary of this schema. On failure returns false and sets `error` to one line
// that names the file and what is wrong.
bool LoadSummary(const std::string& path, nlohmann::json* summary, std::string* error);

}  // namespace gpuwatch::collector::compare
