// One Chrome-trace event as the importer keeps it: the fields of torch.profiler's (Kineto's)
// events that the mapping reads (import/kineto_vocab.h), flattened; every other field and
// any nested argument is skipped while parsing. Times are integer ns (timestamp.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuwatch::collector {

struct TraceEvent {
  std::string ph, cat, name;
  uint64_t ts_ns = 0, dur_ns = 0;
  bool has_ts = false, has_dur = false;
  int64_t pid = 0, tid = 0;  // a string pid/tid ("Spans") reads as 0 with pid_is_name set
  bool pid_is_name = false;
  // args
  int64_t correlation = -1, external_id = -1, stream = -1, device = -1, cbid = -1;
  uint64_t bytes = 0;
  bool has_bytes = false;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, shared_bytes = 0;
  // Collective arguments (record_param_comms, and NCCL kernels in recent Kineto).
  std::string collective, dtype, pg_name, pg_ranks;
  uint64_t in_nelems = 0, out_nelems = 0;
  int64_t group_size = 0;
  std::string sync_kind;  // cuda_sync: "Stream Sync", "Context Sync", "Event Sync", "Stream Wait Event"
  // cuda_sync "Stream Wait Event" (recent Kineto): the stream the awaited event was recorded
  // on, and the correlation id of that cudaEventRecord.
  int64_t wait_on_stream = -1, wait_record_correlation = -1;

  void Clear() { *this = TraceEvent{}; }
};

// What a trace says about itself outside its events.
struct TraceDevice {
  int id = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int sms = 0;  // 0: not said (older traces have no numSms)
  int compute_major = 0, compute_minor = 0;  // computeMajor/computeMinor; 0: not said
};

struct TraceHeader {
  bool has_trace_events = false;
  int rank = -1;        // distributedInfo.rank; -1: not said
  int world_size = 0;   // distributedInfo.world_size; 0: not said
  std::string host;     // host_name, when the trace has one
  std::vector<TraceDevice> devices;
};

}  // namespace gpuwatch::collector
