// What the importer learns about a rank while reading its file, beside the sorted records:
// names by id, the device side of every correlation id (to give a host call its stream,
// bytes and direction, as the library's hooks know them at the call), the NCCL kernels'
// collectives, and the communicators. Sized by the distinct names and the GPU records
// (about 32 bytes each), not by the file.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

// The device record(s) of one correlation id.
struct DeviceSide {
  uint64_t bytes = 0;       // copies, memsets
  uint32_t stream = 0;
  uint32_t name_id = 0;     // kernels
  uint32_t waits_for = 0;   // a stream-wait-event: the correlation id of the awaited cudaEventRecord
  uint8_t copy_kind = 0;    // wire::CopyKind
  bool pageable = false;
  bool work = false;        // a kernel, copy or memset (not only a sync record)
};

// An NCCL kernel as a collective call.
struct CollectiveSide {
  wire::Api api = wire::API_UNSPECIFIED;
  uint64_t bytes = 0;       // count x element size as ncclX is passed; 0: the trace does not say
  uint64_t gpu_ns = 0;      // the kernel's time
  uint32_t comm = 0;        // index in RankTables::comms
};

// A process group as the trace names it.
struct TraceComm {
  std::string name;         // "Process Group Name" ("" when only kernel names were seen)
  std::string ranks;        // "Process Group Ranks", as written ("[0, 1]")
  int size = 0;             // "Group size" (0: not said)
};

class RankTables {
 public:
  uint32_t Name(const std::string& n);  // interned; ids from 1
  const std::vector<std::string>& names() const { return names_; }  // id - 1
  uint32_t Comm(const TraceComm& c);    // interned; index
  const std::vector<TraceComm>& comms() const { return comms_; }

  std::unordered_map<uint32_t, DeviceSide> device;         // by correlation id
  std::unordered_map<uint32_t, CollectiveSide> collective; // by correlation id (NCCL kernels)
  // cudaEventRecord calls a stream waited on: correlation id -> the stream it recorded on
  // (the trace names it only at the wait).
  std::unordered_map<uint32_t, uint32_t> recorded_on;

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<TraceComm> comms_;
};

}  // namespace gpuwatch::collector
