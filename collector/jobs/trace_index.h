// Where each rank's trace is when the host collectors keep them (issue #21): a root whose
// ranks came as figures (Hello.upstream_digests) has no events to trace; it writes
// OUT/trace-index.json, one entry per rank: its host, the host collector's HOST:DIR and the
// offset that puts that host's clock on the root's. `gpuwatch report --traces` reads it to
// merge chosen ranks' traces onto one timeline.
#pragma once
#include <string>
#include <vector>

#include "jobs/job_table.h"

namespace gpuwatch::collector {

inline constexpr const char* kTraceIndexFileName = "trace-index.json";

// The index of `job`'s ranks that sent figures; "" when none did.
std::string TraceIndexJson(const Job& job);

// One entry of the index, read back (`gpuwatch report --ranks`).
struct TraceIndexEntry {
  int rank = -1;
  std::string host, collector_host, trace;
  int64_t clock_offset_ns = 0;
};
// The entries of the index at `path`; false with `error` (one line) when it cannot be read
// or is not an index.
bool ReadTraceIndex(const std::string& path, std::vector<TraceIndexEntry>* entries,
                    std::string* error);

}  // namespace gpuwatch::collector
