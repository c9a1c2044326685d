// The simulated libcupti.so.13: the activity-API subset gpuwatch uses (see
// docs/simulator.md), with the real CUDA 13 record layouts from the toolkit's cupti*.h.
//
// Records come from the device model (simgpu_set_activity_observer: kernels, copies,
// memsets, collectives as NCCL kernels) and from the simulated runtime's API reporting
// (simgpu_set_api_observer: RUNTIME and DRIVER records). The model knows an op's times as
// soon as it is enqueued, long before a real GPU would have run it, so a record waits in
// `pending` until the clock passes its end: like real CUPTI, a buffer never holds work the
// device has not finished yet, unless a forced flush takes it (then without times, as CUPTI's
// incomplete records, and its later end is never reported).
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../simgpu.h"
#include "api_choice.h"

#define CUPTI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint64_t kDefaultClockOffsetNs = 1000000000000ull;  // 1000 s: never mistaken for host time

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// What CUPTI adds to each call that enqueues device work while it records (docs/simulator.md):
// NVIDIA's instruments every launch; measured on an H200 (docs/PERFORMANCE.md), about
// 2.5 us with device records on and 0.5 us more with API records; the API record's part is
// paid by any call CUPTI writes a record of (cudaGetLastError too), and by no other.
// Blackwell's hardware event tracing (cuptiActivityEnableHWTrace) removes most of the device
// part.
uint64_t env_ns(const char* name, uint64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : def;
}
const uint64_t kDeviceRecordCostNs = env_ns("SIMGPU_CUPTI_LAUNCH_COST_NS", 1700);
const uint64_t kApiRecordCostNs = env_ns("SIMGPU_CUPTI_API_COST_NS", 500);
const uint64_t kHwTraceCostNs = env_ns("SIMGPU_CUPTI_HWTRACE_COST_NS", 200);
// And once a kind has been enabled, disabling every kind does not take CUPTI's
// instrumentation out of the calls: on an H200 a launch cost 6.97 us without CUPTI, 12.26 us
// with gpuwatch's six kinds enabled, still 8.3-8.6 us after disabling them all, and 6.5 us
// only after cuptiFinalize (tests/device/cupti_linger.py, docs/PERFORMANCE.md): about 0.27
// of the enabled cost, which of the 2.2 us configured here is 600 ns. Until cuptiFinalize
// detaches CUPTI, or a kind is enabled again.
const uint64_t kLingerCostNs = env_ns("SIMGPU_CUPTI_LINGER_COST_NS", 600);
// And per node of a graph launch, on top of the launch's own cost: NVIDIA's records each
// node's kernel (CUPTI_ACTIVITY_KIND_GRAPH_TRACE exists to spare that per-node work), at a
// cost not yet measured on the H200 (tests/device, section OG): none unless set.
const uint64_t kGraphNodeCostNs = env_ns("SIMGPU_CUPTI_GRAPH_NODE_COST_NS", 0);

// CUPTI's clock is not the host's: consumers must calibrate, as they must with real CUPTI.
uint64_t clock_offset() {
  static const uint64_t off = [] {
    const char* v = std::getenv("SIMGPU_CUPTI_CLOCK_OFFSET_NS");
    return v && *v ? std::strtoull(v, nullptr, 10) : kDefaultClockOffsetNs;
  }();
  return off;
}

// Size of a record in the buffer, by kind; 0 for kinds this library never writes.
size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    default: return 0;
  }
}
constexpr size_t kMaxRecord = sizeof(CUpti_ActivityKernel10);

// A record not yet in a buffer: a device op or an API call.
struct Pending {
  CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_INVALID;  // decided when the op was enqueued
  bool api = false;
  simgpu_activity act{};
  simgpu_api_call call{};
  bool incomplete = false;  // a forced flush took it before the device finished it: no times
  uint64_t end_ns() const { return api ? call.end_ns : act.end_ns; }
};

struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0, used = 0, max_records = 0, records = 0;
};

// A cuptiSubscribe's callback. Never freed (a call in flight may be about to call the one
// that cuptiUnsubscribe or cuptiFinalize just removed): retired ones stay in a list.
struct Subscriber {
  CUpti_CallbackFunc callback;
  void* user;
};

struct State {
  std::mutex mu;  // guards everything below; never held while calling the completion callback
  bool subscribed = false;
  std::vector<Subscriber*> retired;  // unsubscribed: kept reachable, see Subscriber
  // The live subscriber and the callback domains it enabled (bit per CUpti_CallbackDomain):
  // read without the lock by the calls' exit callbacks.
  std::atomic<Subscriber*> subscriber{nullptr};
  std::atomic<uint32_t> callback_domains{0};
  // A kind was enabled since CUPTI attached (its start, or the last cuptiFinalize): with none
  // enabled now, calls pay kLingerCostNs.
  bool instrumented = false;
  std::atomic<bool> lingering{false};
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  uint64_t enabled = 0;  // bit per CUpti_ActivityKind (all kinds used here are < 64)
  simcupti::ApiChoice api_calls;  // which calls get API records (RUNTIME / DRIVER)
  // What each enqueueing call costs now for its device records and the lingering
  // instrumentation (from `enabled` and HW trace), read without the lock on the caller's
  // thread; a call with an API record costs kApiRecordCostNs more.
  std::atomic<uint64_t> call_cost_ns{0};
  std::atomic<uint64_t> graph_node_cost_ns{0};  // per node of a graph launch, on top
  bool hw_trace = false;
  bool observing = false;
  Buffer cur;
  std::deque<Buffer> full;     // awaiting the completion callback
  std::deque<Pending> pending; // known to the model, not yet finished on the device
  uint64_t pending_min_end = UINT64_MAX;  // earliest end in `pending`: most calls skip the scan
  size_t dropped = 0;
  int64_t grid_id = 0;
  bool worker_started = false;
  std::condition_variable full_cv;
};

State& S() {
  static State* s = new State;  // leaked: the model may call back while the process exits
  return *s;
}

bool on(const State& s, CUpti_ActivityKind k) { return (s.enabled >> k) & 1u; }

// The API domain (SIMGPU_API_*) an activity kind records, or 0.
uint32_t api_domain(CUpti_ActivityKind k) {
  return k == CUPTI_ACTIVITY_KIND_RUNTIME ? SIMGPU_API_RUNTIME : k == CUPTI_ACTIVITY_KIND_DRIVER ? SIMGPU_API_DRIVER : 0;
}

// The kind a device op is reported as, or INVALID if that kind is not enabled.
CUpti_ActivityKind kind_of(const State& s, const simgpu_activity& a) {
  switch (a.kind) {
    case SIMGPU_H2D:
    case SIMGPU_D2H:
    case SIMGPU_D2D: return on(s, CUPTI_ACTIVITY_KIND_MEMCPY) ? CUPTI_ACTIVITY_KIND_MEMCPY : CUPTI_ACTIVITY_KIND_INVALID;
    case SIMGPU_MEMSET: return on(s, CUPTI_ACTIVITY_KIND_MEMSET) ? CUPTI_ACTIVITY_KIND_MEMSET : CUPTI_ACTIVITY_KIND_INVALID;
    default:  // kernels, and collectives, which are NCCL kernels on a real device
      if (on(s, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      return on(s, CUPTI_ACTIVITY_KIND_KERNEL) ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_INVALID;
  }
}

uint8_t memory_kind(uint32_t flags) {
  if (flags & SIMGPU_FLAG_HOST_PAGEABLE) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

// The process id API records carry, read once and again in a forked child: a getpid() per
// record is a syscall per launch (2 us on the 2-core VM), which made the simulated CUPTI
// cost twice what it is configured to (docs/simulator.md).
pid_t g_pid = [] {
  pthread_atfork(nullptr, nullptr, [] { g_pid = getpid(); });
  return getpid();
}();

// Serializes one record into `out` (kMaxRecord bytes); returns its size.
size_t encode(State& s, const Pending& p, CUpti_ActivityKind kind, uint8_t* out) {
  const uint64_t off = clock_offset();
  std::memset(out, 0, kMaxRecord);
  if (p.api) {
    auto* r = reinterpret_cast<CUpti_ActivityAPI*>(out);
    r->kind = kind;
    r->cbid = p.call.cbid;
    r->start = p.call.start_ns + off;
    r->end = p.call.end_ns + off;
    r->processId = static_cast<uint32_t>(g_pid);
    r->threadId = p.call.thread_id;
    r->correlationId = p.call.correlation_id;
    r->returnValue = p.call.result;
    return sizeof *r;
  }
  const simgpu_activity& a = p.act;
  // CUPTI writes 0 for both times of work a forced flush took unfinished.
  const uint64_t start = p.incomplete ? 0 : a.start_ns + off, end = p.incomplete ? 0 : a.end_ns + off;
  const uint32_t ctx = static_cast<uint32_t>(a.device) + 1;  // one primary context per device
  const uint32_t stream = static_cast<uint32_t>(a.stream_id);
  if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
    auto* r = reinterpret_cast<CUpti_ActivityMemcpy6*>(out);
    r->kind = kind;
    if (a.kind == SIMGPU_H2D) {
      r->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
      r->srcKind = memory_kind(a.flags);
      r->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    } else if (a.kind == SIMGPU_D2H) {
      r->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
      r->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      r->dstKind = memory_kind(a.flags);
    } else {
      r->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
      r->srcKind = r->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    }
    r->flags = (a.flags & SIMGPU_FLAG_SYNC_API) ? 0 : CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    r->bytes = a.bytes;
    r->start = start;
    r->end = end;
    r->deviceId = static_cast<uint32_t>(a.device);
    r->contextId = ctx;
    r->streamId = stream;
    r->correlationId = a.correlation_id;
    r->channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
    r->copyCount = 1;
    r->graphId = a.graph_id;
    r->graphNodeId = a.graph_node_id;
    return sizeof *r;
  }
  if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
    auto* r = reinterpret_cast<CUpti_ActivityMemset4*>(out);
    r->kind = kind;
    r->bytes = a.bytes;
    r->start = start;
    r->end = end;
    r->deviceId = static_cast<uint32_t>(a.device);
    r->contextId = ctx;
    r->streamId = stream;
    r->correlationId = a.correlation_id;
    r->flags = (a.flags & SIMGPU_FLAG_SYNC_API) ? 0 : CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
    r->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r->channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    r->graphId = a.graph_id;
    r->graphNodeId = a.graph_node_id;
    return sizeof *r;
  }
  auto* r = reinterpret_cast<CUpti_ActivityKernel10*>(out);
  r->kind = kind;
  r->start = start;
  r->end = end;
  r->completed = r->end;
  r->deviceId = static_cast<uint32_t>(a.device);
  r->contextId = ctx;
  r->streamId = stream;
  const simgpu_launch_geometry& g = a.geometry;
  if (g.grid_x) {  // a launch with a geometry (collectives have none: one block, as before)
    r->gridX = static_cast<int32_t>(g.grid_x), r->gridY = static_cast<int32_t>(g.grid_y);
    r->gridZ = static_cast<int32_t>(g.grid_z);
    r->blockX = static_cast<int32_t>(g.block_x), r->blockY = static_cast<int32_t>(g.block_y);
    r->blockZ = static_cast<int32_t>(g.block_z);
    r->dynamicSharedMemory = static_cast<int32_t>(g.dynamic_shared_bytes);
    r->staticSharedMemory = static_cast<int32_t>(g.static_shared_bytes);
    r->registersPerThread = static_cast<uint16_t>(g.registers_per_thread);
  } else {
    r->gridX = r->gridY = r->gridZ = r->blockX = r->blockY = r->blockZ = 1;
  }
  r->correlationId = a.correlation_id;
  r->gridId = ++s.grid_id;
  r->name = a.name ? a.name : "kernel";
  r->launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
  r->channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
  r->graphId = a.graph_id;
  r->graphNodeId = a.graph_node_id;
  return sizeof *r;
}

void worker_loop() {
  State& s = S();
  std::unique_lock<std::mutex> lk(s.mu);
  for (;;) {
    s.full_cv.wait(lk, [&] { return !s.full.empty(); });
    Buffer b = s.full.front();
    s.full.pop_front();
    auto cb = s.complete;
    lk.unlock();
    if (cb) cb(nullptr, 0, b.data, b.size, b.used);
    lk.lock();
  }
}

// Full buffers go back from CUPTI's own thread, as with real CUPTI: never from the app
// thread whose launch happened to fill the buffer.
void retire_current(State& s, bool wake_worker) {
  if (!s.cur.data) return;
  s.full.push_back(s.cur);
  s.cur = Buffer{};
  if (!wake_worker) return;
  if (!s.worker_started) {
    s.worker_started = true;
    std::thread(worker_loop).detach();
  }
  s.full_cv.notify_one();
}

// Appends one finished record (mu held). A missing or refused buffer drops the record.
// Work enqueued while its kind was enabled is recorded even if the kind is disabled before
// the device finishes it, as with real CUPTI.
void append(State& s, const Pending& p) {
  alignas(8) uint8_t rec[kMaxRecord];
  const size_t n = encode(s, p, p.kind, rec);
  Buffer& b = s.cur;
  if (b.data && (b.used + n > b.size || (b.max_records && b.records >= b.max_records))) retire_current(s, true);
  if (!b.data) {
    if (!s.request) {
      ++s.dropped;
      return;
    }
    uint8_t* data = nullptr;
    size_t size = 0, max_records = 0;
    s.request(&data, &size, &max_records);
    if (!data || size == 0) {
      ++s.dropped;
      return;
    }
    b = Buffer{data, size, 0, max_records, 0};
    if (size < n) {  // useless buffer: give it back empty rather than keep it forever
      retire_current(s, true);
      ++s.dropped;
      return;
    }
  }
  std::memcpy(b.data + b.used, rec, n);
  b.used += n;
  ++b.records;
}

// Moves every pending record the device has finished into the buffers, in arrival order.
void drain(State& s, uint64_t now) {
  if (now < s.pending_min_end) return;
  uint64_t min_end = UINT64_MAX;
  for (auto it = s.pending.begin(); it != s.pending.end();) {
    if (it->end_ns() > now) {
      min_end = std::min(min_end, it->end_ns());
      ++it;
      continue;
    }
    append(s, *it);
    it = s.pending.erase(it);
  }
  s.pending_min_end = min_end;
}

void submit(Pending& p) {
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  p.kind = p.api ? (p.call.domain == SIMGPU_API_DRIVER ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME)
                 : kind_of(s, p.act);
  if (p.kind == CUPTI_ACTIVITY_KIND_INVALID) return;  // not enabled
  if (p.api ? !s.api_calls.Records(p.call.domain, p.call.cbid) : !on(s, p.kind)) return;
  const uint64_t now = mono_ns();
  drain(s, now);
  if (p.end_ns() <= now) {
    append(s, p);
  } else {
    s.pending.push_back(p);
    s.pending_min_end = std::min(s.pending_min_end, p.end_ns());
  }
}

// Time this thread spent in the observers since its last enqueueing call ended: the
// simulation's own bookkeeping counts towards the cost CUPTI adds, not on top of it.
thread_local uint64_t t_observed_ns = 0;
// This thread is inside a subscriber's API-exit callback: where CUPTI asks cuptiFinalize to
// be called from.
thread_local bool t_in_exit_callback = false;

// The subscriber's callback at the exit of a call, on the caller's thread, if it enabled the
// call's domain. Only calls that enqueue device work are reported (simgpu_set_api_observer).
void exit_callback(const simgpu_api_call& c) {
  State& s = S();
  const CUpti_CallbackDomain domain =
      c.domain == SIMGPU_API_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (!((s.callback_domains.load(std::memory_order_acquire) >> domain) & 1u)) return;
  const Subscriber* sub = s.subscriber.load(std::memory_order_acquire);
  if (!sub || !sub->callback) return;
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_EXIT;
  data.functionName = "simulated";
  data.correlationId = c.correlation_id;
  // Inside the call, as CUPTI's own cost: the truth counts it (a detach's cuptiFinalize).
  const uint64_t t0 = mono_ns();
  t_in_exit_callback = true;
  sub->callback(sub->user, domain, c.cbid, &data);
  t_in_exit_callback = false;
  simgpu_truth_cupti_cost(mono_ns() - t0, 0);
}

void on_activity(const simgpu_activity* a, void*) {
  const uint64_t t0 = mono_ns();
  Pending p;
  p.act = *a;
  submit(p);
  t_observed_ns += mono_ns() - t0;
}

void on_api(const simgpu_api_call* c, void*) {
  const uint64_t t0 = mono_ns();
  Pending p;
  p.api = true;
  p.call = *c;
  const bool lingering = c->enqueued && S().lingering.load(std::memory_order_relaxed);
  // CUPTI's instrumentation of the call, on the caller's thread and inside its API record:
  // what this call spent in the observers, topped up to the configured cost.
  const uint64_t device_cost = c->enqueued ? S().call_cost_ns.load(std::memory_order_relaxed) +
                                                 c->graph_nodes * S().graph_node_cost_ns.load(std::memory_order_relaxed)
                                           : 0;
  if (const uint64_t cost = device_cost + (S().api_calls.Records(c->domain, c->cbid) ? kApiRecordCostNs : 0)) {
    const uint64_t until = t0 + (cost > t_observed_ns ? cost - t_observed_ns : 0);
    while (mono_ns() < until) {
    }
    p.call.end_ns = std::max(p.call.end_ns, mono_ns());
    // The truth takes what CUPTI costs the call as configured (or the observers' own time
    // where that was more), not the wall time of the wait: on a loaded machine a preempted
    // wait would count the scheduler's time as CUPTI's (twice the cost under two CPU hogs).
    simgpu_truth_cupti_cost(std::max(cost, t_observed_ns), lingering ? 1 : 0);
  }
  // This record's own bookkeeping comes after the call's end: it counts towards the next call.
  const uint64_t t1 = mono_ns();
  submit(p);
  t_observed_ns = mono_ns() - t1;
  exit_callback(*c);
}

bool supported(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMSET:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:  // accepted; no records yet (docs/simulator.md)
      return true;
    default:
      return false;
  }
}

// The observers cost the simulated runtime something only while a kind is enabled, while
// the instrumentation lingers after the last disable, or while a subscriber takes callbacks.
void update_observers(State& s) {
  const bool device = on(s, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || on(s, CUPTI_ACTIVITY_KIND_KERNEL) ||
                      on(s, CUPTI_ACTIVITY_KIND_MEMCPY) || on(s, CUPTI_ACTIVITY_KIND_MEMSET);
  const bool recording = s.enabled != 0 || s.api_calls.Any();
  if (recording) s.instrumented = true;
  const bool lingering = !recording && s.instrumented;
  s.lingering.store(lingering, std::memory_order_relaxed);
  s.call_cost_ns.store((device ? (s.hw_trace ? kHwTraceCostNs : kDeviceRecordCostNs) : 0) + (lingering ? kLingerCostNs : 0),
                       std::memory_order_relaxed);
  s.graph_node_cost_ns.store(device && !s.hw_trace ? kGraphNodeCostNs : 0, std::memory_order_relaxed);
  const bool want = recording || lingering || s.callback_domains.load(std::memory_order_relaxed) != 0;
  if (want == s.observing) return;
  s.observing = want;
  simgpu_set_activity_observer(want ? on_activity : nullptr, nullptr);
  simgpu_set_api_observer(want ? on_api : nullptr, nullptr);
}

// Retires the live subscriber (mu held).
void drop_subscriber(State& s) {
  if (Subscriber* sub = s.subscriber.exchange(nullptr)) s.retired.push_back(sub);
  s.callback_domains.store(0, std::memory_order_release);
  s.subscribed = false;
}

}  // namespace

// ---- subscription --------------------------------------------------------------------------

CUPTI_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  // SIMGPU_CUPTI_TAKEN=1: another profiler (torch.profiler, Nsight) holds the one subscriber.
  const char* taken = std::getenv("SIMGPU_CUPTI_TAKEN");
  if (taken && std::strcmp(taken, "1") == 0) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  auto* sub = new Subscriber{callback, userdata};
  s.subscriber.store(sub, std::memory_order_release);
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(sub);
  return CUPTI_SUCCESS;
}

// The runtime and driver domains call back at the exit of each call that enqueues device
// work (no other call is reported, and no entry site); other domains are accepted, never called.
CUPTI_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain) {
  if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE || domain >= 32) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  if (!subscriber || reinterpret_cast<Subscriber*>(subscriber) != s.subscriber.load()) return CUPTI_ERROR_INVALID_PARAMETER;
  const uint32_t bit = 1u << domain;
  const uint32_t domains = s.callback_domains.load();
  s.callback_domains.store(enable ? domains | bit : domains & ~bit, std::memory_order_release);
  update_observers(s);
  return CUPTI_SUCCESS;
}

// Detaches CUPTI: every kind off, the callbacks and the subscriber gone, the instrumentation
// out of the calls (no lingering cost), until an activity call attaches it again. Records
// not yet handed back are lost, as the buffer CUPTI held (the client's memory: never
// returned). CUPTI asks for it to be called at the exit of a CUDA call (a subscriber's
// callback), or else after the client synchronized and flushed: called elsewhere with device
// work recorded but unfinished, or records not flushed, this one aborts the process.
CUPTI_EXPORT CUptiResult cuptiFinalize(void) {
  State& s = S();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    drain(s, mono_ns());
    if (!t_in_exit_callback && (!s.pending.empty() || s.cur.records > 0 || !s.full.empty())) {
      std::fprintf(stderr,
                   "simgpu: cuptiFinalize outside a CUDA call's exit callback with %zu records of unfinished work and "
                   "%zu unflushed: CUPTI asks for a synchronize and a flush first\n",
                   s.pending.size(), s.cur.records + s.full.size());
      std::fflush(stderr);
      std::abort();
    }
    s.pending.clear();
    s.pending_min_end = UINT64_MAX;
    s.cur = Buffer{};
    s.full.clear();
    s.enabled = 0;
    s.api_calls.Clear();
    s.request = nullptr;
    s.complete = nullptr;
    s.hw_trace = false;
    s.instrumented = false;
    drop_subscriber(s);
    update_observers(s);
  }
  simgpu_truth_cupti_finalize();
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  if (!s.subscribed || reinterpret_cast<Subscriber*>(subscriber) != s.subscriber.load()) return CUPTI_ERROR_INVALID_PARAMETER;
  drop_subscriber(s);
  update_observers(s);
  return CUPTI_SUCCESS;
}

// ---- activity API --------------------------------------------------------------------------

CUPTI_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                        CUpti_BuffersCallbackCompleteFunc complete) {
  if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  if (!supported(kind)) return CUPTI_ERROR_NOT_SUPPORTED;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  s.enabled |= 1ull << kind;
  if (const uint32_t d = api_domain(kind)) s.api_calls.SetWhole(d, true);
  update_observers(s);
  return CUPTI_SUCCESS;
}

// Hardware event tracing exists on Blackwell only: elsewhere CUPTI_ERROR_NOT_SUPPORTED, as
// on the H200. SIMGPU_CUPTI_HWTRACE=1 plays a device that has it.
CUPTI_EXPORT CUptiResult cuptiActivityEnableHWTrace(uint8_t enable) {
  const char* hw = std::getenv("SIMGPU_CUPTI_HWTRACE");
  if (!hw || std::strcmp(hw, "1") != 0) return CUPTI_ERROR_NOT_SUPPORTED;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  s.hw_trace = enable != 0;
  update_observers(s);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  if (!supported(kind)) return CUPTI_ERROR_NOT_SUPPORTED;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  s.enabled &= ~(1ull << kind);
  if (const uint32_t d = api_domain(kind)) s.api_calls.SetWhole(d, false);
  update_observers(s);
  return CUPTI_SUCCESS;
}

// API records of single calls (CUPTI 12 and later). SIMGPU_CUPTI_API_CHOICE plays the CUPTIs
// that differ: `none` one without it (CUPTI_ERROR_NOT_SUPPORTED), `ignored` one that takes the
// choice and records none of the calls chosen.
CUptiResult choose_call(uint32_t domain, CUpti_CallbackId cbid, uint8_t enable) {
  static const char* how = std::getenv("SIMGPU_CUPTI_API_CHOICE");
  if (how && std::strcmp(how, "none") == 0) return CUPTI_ERROR_NOT_SUPPORTED;
  if (how && std::strcmp(how, "ignored") == 0) return CUPTI_SUCCESS;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  if (!s.api_calls.SetCall(domain, cbid, enable != 0)) return CUPTI_ERROR_INVALID_PARAMETER;
  update_observers(s);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return choose_call(SIMGPU_API_RUNTIME, cbid, enable);
}

CUPTI_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return choose_call(SIMGPU_API_DRIVER, cbid, enable);
}

CUPTI_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (!name) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = simcupti::CallbackName(domain, cbid);
  return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

// Hands every buffer holding records back through the completion callback, from this thread.
// Forced, it hands back the work the device has not finished too, as records without times
// (CUPTI's documented incomplete records): a client that detaches CUPTI right after loses
// that work's times, and can tell how much it lost.
CUPTI_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  State& s = S();
  std::vector<Buffer> out;
  CUpti_BuffersCallbackCompleteFunc cb;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    drain(s, mono_ns());
    if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
      for (Pending& p : s.pending) {
        p.incomplete = !p.api;
        append(s, p);
      }
      s.pending.clear();
      s.pending_min_end = UINT64_MAX;
    }
    if (s.cur.data && s.cur.records > 0) retire_current(s, false);
    out.assign(s.full.begin(), s.full.end());
    s.full.clear();
    cb = s.complete;
  }
  for (const Buffer& b : out)
    if (cb) cb(nullptr, 0, b.data, b.size, b.used);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t at = 0;
  if (*record) {
    const size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + size;
  }
  if (at + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
  const size_t size = record_size(next->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (at + size > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

// Records dropped for want of a buffer since the last call (real CUPTI resets the count too).
CUPTI_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id, size_t* dropped) {
  (void)context, (void)stream_id;  // one global queue
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = S();
  std::lock_guard<std::mutex> lk(s.mu);
  *dropped = s.dropped;
  s.dropped = 0;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = mono_ns() + clock_offset();
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
#define CASE(x) \
  case x: *str = #x; break;
    CASE(CUPTI_SUCCESS)
    CASE(CUPTI_ERROR_INVALID_PARAMETER)
    CASE(CUPTI_ERROR_INVALID_KIND)
    CASE(CUPTI_ERROR_MAX_LIMIT_REACHED)
    CASE(CUPTI_ERROR_NOT_SUPPORTED)
    CASE(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    CASE(CUPTI_ERROR_NOT_INITIALIZED)
#undef CASE
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}
