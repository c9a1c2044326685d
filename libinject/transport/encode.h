// gpuwatch.proto messages written with wire_encode.h (see there for why not libprotobuf).
// Field numbers here must match proto/gpuwatch.proto; tests/unit/inject/encode_test.cpp
// parses each encoder's output with the generated classes to keep them honest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

#include "transport/identity.h"
#include "record/record.h"

namespace gpuwatch::inject {

// Frame body field numbers.
enum FrameField : uint32_t { kFrameHello = 1, kFrameBatch = 2, kFrameGoodbye = 3 };

struct HelloInfo {
  const Identity* id;
  int device;
  std::string_view out_dir;
  std::string_view library_version;
  uint64_t start_ns;
  std::string_view token = {};  // GPUWATCH_TOKEN, only on a TCP connection (never spooled)
};

std::string EncodeHello(const HelloInfo& h);

// Batch body pieces, appended in any order.
void AppendBatchSeq(std::string& batch, uint64_t seq);
void AppendBatchSettled(std::string& batch, uint64_t settled_ns);
void AppendEvent(std::string& batch, const Record& r, uint32_t tid, uint64_t gpu_ns);
void AppendKernelName(std::string& batch, uint32_t id, std::string_view name);
void AppendCommunicator(std::string& batch, uint64_t comm_id, int nranks, int rank, uint64_t unique_hash);
// Batch.dropped (field 4) or Goodbye.dropped (field 1).
void AppendDropCount(std::string& msg, uint32_t field, std::string_view reason, uint64_t count);

struct ActivityRecord;
void AppendActivity(std::string& batch, const ActivityRecord& a);
// Batch.gpu_source (6) and gpu_source_detail (7).
void AppendGpuSource(std::string& batch, int source, std::string_view detail);

// Heartbeat (Frame field 4): built piece by piece.
enum FrameFieldHeartbeat : uint32_t { kFrameHeartbeat = 4 };
void AppendHeartbeatNow(std::string& hb, uint64_t now_ns);
void AppendInFlight(std::string& hb, uint8_t api, uint64_t since_ns, uint32_t tid, uint64_t comm_id, uint64_t seq,
                    uint64_t stream);
void AppendCommProgress(std::string& hb, uint64_t comm_id, uint64_t unique_hash, uint64_t last_seq, bool any);

void AppendGoodbyeTail(std::string& goodbye, uint64_t events_sent, uint64_t end_ns);

// Issue 6: Batch.environment (9) and one Batch.proc_samples (10).
struct EnvironmentInfo;
struct ProcTotals;
void AppendEnvironment(std::string& batch, const EnvironmentInfo& e);
void AppendProcSample(std::string& batch, const ProcTotals& s);
// Batch.call_sites (11): where a long sync or blocking copy was called from.
void AppendCallSite(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                    std::string_view python);

}  // namespace gpuwatch::inject
