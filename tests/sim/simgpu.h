/* simgpu.h — internal C API of the simulated GPU's device model.
 *
 * Exported by the simulated libcudart.so.13 next to the public cuda* functions. It exists
 * so that other simulated libraries (libnccl.so.2, later a simulated CUPTI or cuBLAS) can
 * put work on the device WITHOUT calling public cuda* functions: real NCCL and cuBLAS carry
 * their own static runtime, so a preloaded profiler must never see their internal calls.
 * See docs/simulator.md for the model these functions drive.
 *
 * All times are CLOCK_MONOTONIC nanoseconds. Thread-safe unless noted.
 */
#ifndef GPUWATCH_SIMGPU_H
#define GPUWATCH_SIMGPU_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of device work. Append only: values are part of the observer contract. */
typedef enum simgpu_kind {
  SIMGPU_KERNEL = 0,
  SIMGPU_H2D = 1,
  SIMGPU_D2H = 2,
  SIMGPU_D2D = 3,
  SIMGPU_MEMSET = 4,
  SIMGPU_ALLREDUCE = 5,
  SIMGPU_ALLGATHER = 6,
  SIMGPU_REDUCESCATTER = 7,
  SIMGPU_BROADCAST = 8,
  SIMGPU_REDUCE = 9,
  SIMGPU_SEND = 10,
  SIMGPU_RECV = 11,
  SIMGPU_KIND_COUNT = 12
} simgpu_kind;

/* Lower-case name as used in truth files ("kernel", "h2d", "allreduce", ...). */
const char* simgpu_kind_name(int kind);

/* Flags of an activity record: where a copy's host side lives (CUPTI's srcKind/dstKind). */
enum {
  SIMGPU_FLAG_HOST_PAGEABLE = 1u << 0, /* the host buffer of an H2D/D2H copy is pageable */
  SIMGPU_FLAG_HOST_PINNED = 1u << 1,   /* ... is page-locked (cudaMallocHost/HostAlloc/HostRegister) */
  SIMGPU_FLAG_SYNC_API = 1u << 2       /* issued by a synchronous API (cudaMemcpy, cudaMemset) */
};

/* A kernel's launch geometry, as CUPTI's kernel records carry it. Zero grid = not a kernel
 * launched with one (copies, collectives; simgpu_launch_kernel reports 1 block of 1 thread). */
typedef struct simgpu_launch_geometry {
  uint32_t grid_x, grid_y, grid_z;
  uint32_t block_x, block_y, block_z;
  uint32_t dynamic_shared_bytes;  /* the launch's sharedMem argument */
  uint32_t static_shared_bytes;   /* the kernel's own __shared__ arrays (0 for the simulated kernels) */
  uint32_t registers_per_thread;  /* SIMGPU_REGISTERS_PER_THREAD for every simulated kernel */
} simgpu_launch_geometry;

/* What the simulated compiler "allocated" per thread for every kernel (a spin loop needs few). */
#define SIMGPU_REGISTERS_PER_THREAD 16

/* One executed device operation, as a simulated CUPTI would report it. */
typedef struct simgpu_activity {
  uint32_t kind;           /* simgpu_kind */
  uint32_t flags;          /* SIMGPU_FLAG_* */
  uint64_t start_ns;       /* device start */
  uint64_t end_ns;         /* device end */
  uint64_t bytes;          /* copies/memsets: bytes; collectives: S (nccl-tests size) */
  uint64_t stream_id;      /* unique per stream in this process, never reused; 0 = legacy */
  int32_t device;          /* device ordinal */
  uint32_t correlation_id; /* id of the API call that enqueued the op */
  const char* name;        /* kernel or collective name; valid for the process lifetime */
  uint64_t wait_ns;        /* collectives: time spent waiting for the slowest peer */
  uint32_t graph_id;       /* run by a graph launch: the executable graph's id (CUPTI graphId); else 0 */
  uint64_t graph_node_id;  /* run by a graph launch: the node's id (CUPTI graphNodeId); else 0 */
  const char* comm;        /* NCCL ops: the communicator's members as root-communicator ranks,
                              e.g. "0,2" (static string; the truth's key), else NULL */
  simgpu_launch_geometry geometry; /* kernels: grid, block, shared memory, registers */
} simgpu_activity;

typedef void (*simgpu_activity_observer)(const simgpu_activity* record, void* user);

/* Install (or with NULL remove) the single activity observer. It is called once per device
 * op as soon as the op's start and end are known — which may be before the wall clock
 * reaches end_ns — from whichever thread resolved the op, with no simulator lock held.
 * Records are delivered in resolution order, not sorted by time. */
void simgpu_set_activity_observer(simgpu_activity_observer callback, void* user);

/* ---- API calls (what a simulated CUPTI reports as RUNTIME / DRIVER records) ----------------
 * Every public runtime call that enqueues device work (launches, copies, memsets), every
 * driver-path launch (cudaGetDriverEntryPoint's cuLaunchKernel, simgpu_launch_kernel) and
 * each NCCL kernel launch is reported once, when it returns, with the host time it took and
 * the correlation id its device op carries. Of the calls that enqueue nothing only
 * cudaGetLastError is reported (enqueued 0, correlation id 0): a framework checks each launch
 * with it (PyTorch's C10_CUDA_KERNEL_LAUNCH_CHECK), and CUPTI records it as any call. */
enum { SIMGPU_API_RUNTIME = 1, SIMGPU_API_DRIVER = 2 };

typedef struct simgpu_api_call {
  uint32_t domain;         /* SIMGPU_API_RUNTIME or SIMGPU_API_DRIVER */
  uint32_t cbid;           /* CUPTI callback id (cupti_runtime_cbid.h / cupti_driver_cbid.h) */
  uint64_t start_ns;       /* host time the call was entered */
  uint64_t end_ns;         /* host time it returned */
  uint32_t correlation_id; /* equals the device op's correlation_id */
  uint32_t thread_id;      /* gettid() of the caller */
  uint32_t result;         /* the call's return value (cudaError_t / CUresult) */
  uint32_t graph_nodes;    /* a graph launch: the nodes it ran; else 0 */
  uint32_t enqueued;       /* 1: the call put work on the device; 0: cudaGetLastError */
} simgpu_api_call;

typedef void (*simgpu_api_observer)(const simgpu_api_call* call, void* user);

/* Install (or with NULL remove) the single API observer. Called on the calling thread after
 * the call's device op was delivered to the activity observer, with no simulator lock held.
 * Costs one relaxed atomic load per call while none is installed. */
void simgpu_set_api_observer(simgpu_api_observer callback, void* user);

/* Correlation id of the last work-enqueuing API call made by the calling thread (0 if
 * none). Ids come from one per-process counter, incremented by every API call that
 * enqueues device work (launches, copies, memsets, collectives). */
uint32_t simgpu_last_correlation_id(void);

/* Enqueue a named kernel of the given duration on a stream, as a library launching through
 * driver entry points would (cuBLAS, Triton). Charges the host launch cost like any launch
 * and takes a correlation id. `stream` follows the legacy default-stream rules. */
cudaError_t simgpu_launch_kernel(cudaStream_t stream, const char* name, uint64_t duration_ns);

/* Current device of the calling thread (what cudaGetDevice would say), without an API call. */
int simgpu_current_device(void);

/* 1 when `stream` is being captured into a graph (cudaStreamIsCapturing), without an API
 * call: the simulated NCCL asks, and must make no public runtime call (hooks would see it). */
int simgpu_stream_capturing(cudaStream_t stream);

/* The model's clock: CLOCK_MONOTONIC in nanoseconds. */
uint64_t simgpu_now_ns(void);

/* The simulated driver function named `symbol` (cuLaunchKernel, cuLaunchKernelEx,
 * cuGraphLaunch, the allocations), as cudaGetDriverEntryPoint hands it out; NULL for any
 * other. The simulated libcuda.so.1 exports them through this. */
void* simgpu_driver_symbol(const char* symbol);

/* ---- Externally completed ops (used by the simulated NCCL) ------------------------------
 * An external op has no duration of its own: the device model works out when it starts
 * (stream order, default-stream rules, group start), the owner learns that start by
 * polling simgpu_op_start, and later tells the model when the op ends. Work queued behind
 * an external op waits for it, exactly as behind a running collective kernel. */
typedef struct simgpu_op simgpu_op;

typedef struct simgpu_external_desc {
  int kind;         /* simgpu_kind */
  uint64_t bytes;   /* reported in truth and activity records */
  const char* name; /* static string, e.g. "ncclAllReduce" */
  const char* comm; /* static string or NULL: simgpu_activity.comm */
  /* Bytes the op sends and receives over the device's links (NCCL: its bus bytes), spread
   * evenly over its device time: what the simulated NVML's NVLink counters count. */
  uint64_t link_tx_bytes, link_rx_bytes;
} simgpu_external_desc;

/* Enqueue n external ops on one stream as a group: all start together when the stream
 * reaches this point, and later work on the stream waits for the last of them. Each op
 * takes its own correlation id. On success out[i] holds a handle the caller must release
 * with simgpu_op_release. */
cudaError_t simgpu_enqueue_external(cudaStream_t stream, int n, const simgpu_external_desc* descs,
                                    simgpu_op** out);

/* 1 and *start_ns set once the op's device start is known, else 0. */
int simgpu_op_start(simgpu_op* op, uint64_t* start_ns);

/* Declare when the op ends (>= its start) and how much of it was waiting for peers. */
void simgpu_op_complete(simgpu_op* op, uint64_t end_ns, uint64_t wait_ns);

void simgpu_op_release(simgpu_op* op);

/* Value of a SIMGPU_CONFIG key as a double (after defaults); aborts on unknown keys, like a
 * bad SIMGPU_CONFIG does. Lets other simulated libraries share one configuration. */
double simgpu_config_value(const char* key);

/* What the simulated CUPTI added to the calling thread's calls, for the truth file's "cupti"
 * section: `lingering` while no record kind was enabled (the instrumentation a disable leaves
 * behind until cuptiFinalize). And each cuptiFinalize. Any thread. */
void simgpu_truth_cupti_cost(uint64_t ns, int lingering);
void simgpu_truth_cupti_finalize(void);

/* ---- Device state (for the simulated NVML, libnvidia-ml.so.1) ---------------------------- */
#define SIMGPU_MAX_OTHER_PROCESSES 8
typedef struct simgpu_device_state {
  uint64_t memory_total;  /* memory_gib */
  uint64_t memory_held;   /* device memory this process holds now */
  uint64_t busy_ns;       /* device time busy so far (this process, all streams merged) */
  uint64_t now_ns;        /* when busy_ns was read */
  int sm_count, pcie_gen, pcie_width;
  int throttle;           /* 0 none, 1 power, 2 thermal */
  int other_processes;    /* configured other processes (at most SIMGPU_MAX_OTHER_PROCESSES) */
  uint64_t other_memory[SIMGPU_MAX_OTHER_PROCESSES];
  double other_busy[SIMGPU_MAX_OTHER_PROCESSES];
  uint64_t link_tx_bytes, link_rx_bytes; /* moved over the links by now (simgpu_external_desc) */
} simgpu_device_state;
void simgpu_get_device_state(simgpu_device_state* out);

#ifdef __cplusplus
}
#endif

#endif /* GPUWATCH_SIMGPU_H */
