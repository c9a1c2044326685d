// gpuwatch.proto messages written with wire_encode.h (see there for why not libprotobuf), field
// numbers from wire_fields.h. tests/unit/inject/transport/encode_test.cpp parses the output.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "enrich/cupti_budget.h"
#include "enrich/host_sampler.h"
#include "transport/identity.h"

namespace gpuwatch::inject {

struct ActivityRecord;
struct EnvironmentInfo;
struct ProcTotals;
struct DeviceSample;

struct HelloInfo {
  const Identity* id;
  int device;
  std::string_view out_dir;
  std::string_view library_version;
  uint64_t start_ns;
  std::string_view token = {};  // GPUWATCH_TOKEN, only on a TCP connection (never spooled)
};

std::string EncodeHello(const HelloInfo& h);

// One host call as the wire carries it (gpuwatch.wire.Event): times in CLOCK_MONOTONIC ns.
struct HostEvent {
  uint8_t api = 0;        // Api (record.h)
  uint8_t copy_kind = 0;  // CopyKind
  uint16_t flags = 0;     // Flag bits
  uint32_t name_id = 0;   // kernels and NVTX ranges: KernelName id
  uint32_t site_id = 0;   // syncs and blocking copies that blocked long: CallSite id
  uint32_t tid = 0;
  uint64_t t_ns = 0;
  uint64_t dur_ns = 0;
  uint64_t bytes = 0;
  uint64_t stream = 0;
  uint64_t comm_id = 0;   // collectives: Communicator id (0: none, and no seq and peer)
  uint64_t seq = 0;
  int32_t peer = 0;
  uint64_t gpu_ns = 0;    // collectives: GPU time
  uint64_t address = 0;   // memory calls: the allocation's address
  uint64_t total_bytes = 0;  // cudaMemGetInfo: the device's total memory
  // kApiLaunchRun: the launches summarized in it, and the host time inside them (0 otherwise).
  uint64_t calls = 0, calls_ns = 0;
};

// Cumulative drop counts, one per reason the collector knows.
struct DropCounts {
  uint64_t ring_full = 0;
  uint64_t too_many_threads = 0;
  uint64_t collector_unreachable = 0;
  uint64_t spool_full = 0;
  uint64_t gpu_records_unsent = 0;
  uint64_t gpu_records_incomplete = 0;  // CUPTI's, without times: unfinished at a window's detach
};

// Batch body pieces, appended in any order.
void AppendBatchSeq(std::string& batch, uint64_t seq);
void AppendBatchSettled(std::string& batch, uint64_t settled_ns);
void AppendEvent(std::string& batch, const HostEvent& e);
// Launches of one kernel through one API summarized since the previous batch (Batch.launch_tallies).
void AppendLaunchTally(std::string& batch, uint8_t api, uint32_t name_id, uint64_t launches, uint64_t ns);
void AppendKernelName(std::string& batch, uint32_t id, std::string_view name);
void AppendCommunicator(std::string& batch, uint64_t comm_id, int nranks, int rank, uint64_t unique_hash);
// A communicator's definition with how it was made (proto Communicator, fields 5-10).
struct CommDefinition {
  uint64_t comm_id = 0, unique_hash = 0, parent_hash = 0, split_index = 0;
  int nranks = 0, rank = 0, color = 0, key = 0;
  uint32_t origin = 0, ended = 0;
};
void AppendCommunicator(std::string& batch, const CommDefinition& c);
// The non-zero counts as DropCount messages in `field_number` (Batch.dropped or Goodbye.dropped);
// returns their sum.
uint64_t AppendDropCounts(std::string& msg, uint32_t field_number, const DropCounts& d);
void AppendActivity(std::string& batch, const ActivityRecord& a);
void AppendGpuSource(std::string& batch, int source, std::string_view detail);
void AppendEnvironment(std::string& batch, const EnvironmentInfo& e);
void AppendProcSample(std::string& batch, const ProcTotals& s);
void AppendDeviceSample(std::string& batch, const DeviceSample& s);
void AppendDeviceSamplerDetail(std::string& batch, const std::string& detail);
// Where a long sync or blocking copy was called from.
void AppendCallSite(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                    std::string_view python);
// An interned Python stack (issue 16), with the call site it was captured with (0: a sample's).
void AppendPythonStack(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                       uint32_t call_site_id);
// A named native stack (enrich/native_frame_names.h), sent as a PythonStack with `native`.
void AppendNativeStack(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                       std::string_view blocked_in);
// Where a CUDA-calling thread was at t_ns (host sampler), and the sampler's totals.
void AppendHostSample(std::string& batch, uint64_t t_ns, uint32_t tid, uint32_t stack_id, bool in_cuda);
void AppendHostSampling(std::string& batch, const HostSampler::Totals& t);

// The overhead budget's windows closed since the last batch, the open one's start (0: none),
// when CUPTI stopped recording for good (0: it has not, or said before), and the library's
// own cost so far (`hw_trace`: CUPTI's hardware tracing is on; the sender thread's CPU time).
void AppendCuptiWindows(std::string& batch, const std::vector<std::pair<uint64_t, uint64_t>>& closed,
                        uint64_t open_since_ns, uint64_t ended_ns);
void AppendOverhead(std::string& batch, const CuptiBudget::Figures& f, bool hw_trace, uint64_t sender_cpu_ns);

// Heartbeat body pieces.
void AppendHeartbeatNow(std::string& hb, uint64_t now_ns);
void AppendInFlight(std::string& hb, uint8_t api, uint64_t since_ns, uint32_t tid, uint64_t comm_id, uint64_t seq,
                    uint64_t stream);
void AppendCommProgress(std::string& hb, uint64_t comm_id, uint64_t unique_hash, uint64_t last_seq, bool any);

// Goodbye body: the counts after its drops.
void AppendGoodbyeTail(std::string& goodbye, uint64_t events_sent, uint64_t end_ns);

}  // namespace gpuwatch::inject
