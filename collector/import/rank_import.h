// One torch.profiler trace file in, one rank's stream out: the file is read as a stream
// (chrome_trace_reader.h), its events mapped (kineto_vocab.h) to records, put in time
// order (record_sorter.h), then sent to a RankDirectory as the frames a live rank sends --
// Hello, Batches of host calls (wire Event) and CUPTI records (wire Activity), Goodbye --
// so that the collector's own interpretation, analyses and views run on it unchanged.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/host_spans.h"
#include "ingest/rank_sink.h"
#include "import/trace_event.h"

namespace gpuwatch::collector {

struct RankImportOptions {
  std::string job_id = "import";
  int fallback_rank = 0;       // when the trace has no distributedInfo.rank
  int fallback_world_size = 1; // when it has no world_size: the number of files given
  std::string out_dir;         // Hello.out_dir
  size_t max_in_memory = 0;    // records held before spilling a sorted run (0: the default)
  // Keep each thread's top-level CPU operator and runtime-call spans (RankImportStats::
  // host_spans): for comparing with tools that weigh host time by operator (HTA).
  bool keep_host_spans = false;
};

// What came out of one file, counted for the summary's notes and the tests.
struct RankImportStats {
  int rank = -1;
  bool gzip = false;
  uint64_t events = 0;        // traceEvents elements read
  uint64_t ignored = 0;       // of them, ones the mapping does not use (flows, CPU ops, ...)
  std::map<std::string, uint64_t> unknown_categories;  // categories neither dialect has
  uint64_t calls = 0;         // runtime/driver calls sent as host calls (wire Event)
  uint64_t api_records = 0;   // of the calls, ones that enqueued device work (ACTIVITY_API)
  uint64_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0, ranges = 0, steps = 0, collectives = 0;
  uint64_t memcpy_bytes = 0, memset_bytes = 0;
  uint64_t untimed = 0;       // X events without ts or dur: dropped
  uint64_t sorted_runs = 0;   // runs spilled to disk (0: sorted in memory)
  std::vector<std::string> notes;  // what the trace cannot say, and what was dropped
  std::vector<HostSpan> host_spans;  // RankImportOptions::keep_host_spans: top-level, by thread
};

// False with `error` (one line, naming the file) when the file cannot be read, is not a
// trace, or has no GPU events; nothing has then been sent to `jobs` (but where the disk
// fails while the sorted runs are read back: the rank is then closed without its Goodbye).
bool ImportRankTrace(const std::string& path, const RankImportOptions& options, RankDirectory& jobs,
                     RankImportStats* stats, std::string* error);

}  // namespace gpuwatch::collector
