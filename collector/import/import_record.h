// One event of a trace kept for sorting: fixed size, no pointers (names are ids into the
// rank's name table), so a full buffer can be written to disk as it is (record_sorter.h).
#pragma once
#include <cstdint>
#include <type_traits>

namespace gpuwatch::collector {

enum class RecordKind : uint8_t {
  kCall,        // a runtime or driver call: wire Event (api), and an API record when it enqueued work
  kKernel,
  kMemcpy,
  kMemset,
  kSync,        // GPU-side synchronization record
  kRange,       // a user annotation or ProfilerStep: an NVTX range, and a host frame
  kFrame,       // a python_function frame or DataLoader iteration: a host frame only
};

struct ImportRecord {
  uint64_t t_ns = 0, dur_ns = 0;
  uint64_t bytes = 0;
  uint64_t order = 0;        // position in the file: ties keep the file's order
  uint32_t name_id = 0;      // kernels, ranges: id in the rank's name table
  uint32_t correlation = 0;
  uint32_t stream = 0;
  uint32_t tid = 0;
  uint32_t api = 0;          // kCall: wire::Api; kCollective: wire::Api
  uint32_t cbid = 0;         // kCall: CUPTI callback id
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, shared_bytes = 0;
  uint32_t comm = 0;         // kCollective: index in the rank's communicator table
  int32_t device = 0;
  RecordKind kind = RecordKind::kCall;
  uint8_t copy_kind = 0;     // wire::CopyKind
  bool pageable = false;
  bool driver = false;       // kCall: a driver API call (domain 2)
  bool blocks_host = false;  // kSync: the host waited (not a stream-wait-event)

  bool operator<(const ImportRecord& o) const { return t_ns != o.t_ns ? t_ns < o.t_ns : order < o.order; }
};
static_assert(std::is_trivially_copyable_v<ImportRecord>, "records are spilled to disk as bytes");

}  // namespace gpuwatch::collector
