// The one record the hot path writes: fixed size, plain data, no pointers to follow.
// Times are stamp ticks (stamp_clock.h); the assembler turns a record into a wire event in ns.
#pragma once
#include <cstdint>

namespace gpuwatch::inject {

// Mirrors of gpuwatch.proto's enums: the library does not link libprotobuf (see
// proto/wire_encode.h). transport/wire_check.cpp asserts at compile time that they match.
enum Api : uint8_t {
  kApiMemcpy = 1,
  kApiMemcpyAsync = 2,
  kApiStreamSynchronize = 3,
  kApiDeviceSynchronize = 4,
  kApiEventSynchronize = 5,
  kApiLaunchKernel = 6,
  kApiGraphLaunch = 7,
  kApiStreamBeginCapture = 8,
  kApiStreamEndCapture = 9,
  kApiGraphInstantiate = 10,
  kApiMemset = 11,
  kApiMemsetAsync = 12,
  kApiStreamWaitEvent = 13,
  kApiLaunchHostFunc = 14,
  kApiStreamQuery = 15,
  kApiEventQuery = 16,
  kApiDriverLaunchKernel = 17,  // hooks_cuda_driver.cpp: cuLaunchKernel from an entry point
  kApiLaunchRun = 18,  // on the wire only: launches summarized outside CUPTI's windows (launch_summary.h)
  kApiAllReduce = 20,
  kApiAllGather = 21,
  kApiReduceScatter = 22,
  kApiBroadcast = 23,
  kApiReduce = 24,
  kApiSend = 25,
  kApiRecv = 26,
  kApiNvtxRange = 40,  // hooks_nvtx.cpp: a closed NVTX range (name_id = range name, seq = depth)
  // hooks_memory.cpp: bytes = size (allocations), seq = the address (allocations and frees).
  kApiMalloc = 50,
  kApiFree = 51,
  kApiMallocAsync = 52,
  kApiFreeAsync = 53,
  kApiMallocManaged = 54,
  kApiMemGetInfo = 55,  // bytes = free, seq = total
  kApiEventRecord = 56,  // hooks_cuda_streams.cpp: seq = the event's handle (also in kApiStreamWaitEvent)
  // 200+: records that never leave the process.
  kGroupEnd = 200,  // closes the ncclGroupStart/End group whose events are in `event_slot`
  // Closes a thread's run of summarized launches (launch_summary.h): t_ticks = its first
  // launch, dur_ticks = to its last one's end; the thread's totals so far in bytes
  // (launches), seq (host ticks inside them), stream (ticks of those under the stall
  // threshold) and comm_id (stalls, low 32 bits).
  kLaunchRun = 201,
};
enum CopyKind : uint8_t { kCopyH2D = 1, kCopyD2H = 2, kCopyD2D = 3, kCopyH2H = 4 };
enum Flag : uint16_t {
  kFlagPageable = 1,
  kFlagBlockedHost = 2,
  kFlagInGroup = 4,
  kFlagNoGpuTime = 8,
  kFlagInCapture = 16,  // the stream was being captured into a graph: recorded, not executed
  kFlagNotReady = 32,   // a query answered cudaErrorNotReady
  kFlagKernelTimed = 64,  // a collective timed by CUPTI's kernel records, not by its event pair
  kFlagFailed = 128,      // the call returned an error: it did nothing (no copy, no wait)
};

struct Record {
  uint8_t api;          // Api
  uint8_t copy_kind;    // CopyKind
  uint16_t flags;       // Flag bits
  uint32_t name_id;     // NVTX ranges: KernelNames id (registry.h); else 0 (a launch's kernel: in seq)
  uint64_t t_ticks;     // Stamp() at entry
  uint64_t dur_ticks;   // Stamp() ticks inside the call
  uint64_t bytes;
  uint64_t stream;
  uint64_t seq;         // collectives: per-communicator sequence number; memory calls: see Api;
                        // kernel launches: the kernel (host function or driver handle), which
                        // the sender names: looked up in the hook, the table's cold lines cost a
                        // launch 130-300 ns more where the job had emptied the caches
                        // (tests/bench/hot_path_bench.cpp, docs/PERFORMANCE.md)
  uint32_t comm_id;     // collectives: Comms id (at most Comms::kMax, registry.h)
  int32_t peer;
  uint32_t event_slot;  // collectives: 1 + index of the CUDA event pair timing it; 0 = none;
                        // CollectiveTimer::kCuptiTimed set: CUPTI's kernels time it, no pair
  uint32_t site_id;     // calls that blocked the host long: call site id (call_sites.h); else 0
};
static_assert(sizeof(Record) == 64, "one record is one cache line");

inline bool IsMemoryApi(uint8_t api) { return api >= kApiMalloc && api <= kApiMemGetInfo; }
// A kernel launch call, through the runtime or the driver (cuBLAS, Triton: hooks_cuda_driver.cpp).
constexpr bool LaunchesKernel(uint8_t api) { return api == kApiLaunchKernel || api == kApiDriverLaunchKernel; }
// A call that puts work on the device: a kernel, a graph's work, a copy, a memset (the
// collector's EnqueuesWork). While CUPTI records, each pays its instrumentation.
constexpr bool EnqueuesDeviceWork(uint8_t api) {
  return LaunchesKernel(api) || api == kApiGraphLaunch || api == kApiMemcpy || api == kApiMemcpyAsync ||
         api == kApiMemset || api == kApiMemsetAsync;
}

}  // namespace gpuwatch::inject
