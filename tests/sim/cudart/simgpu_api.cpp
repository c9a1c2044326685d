// The internal C API (simgpu.h) over the device model.
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#include "../model/clock.h"
#include "../model/config.h"
#include "api_trace.h"
#include "runtime.h"

using namespace simgpu;

// The public handle of an external op keeps the op alive while its owner holds it.
struct simgpu_op {
  OpRef op;
};

SIMGPU_EXPORT const char* simgpu_kind_name(int kind) {
  static const char* const names[SIMGPU_KIND_COUNT] = {
      "kernel",    "h2d",    "d2h",  "d2d",  "memset", "allreduce",
      "allgather", "reducescatter", "broadcast", "reduce", "send", "recv"};
  return kind >= 0 && kind < SIMGPU_KIND_COUNT ? names[kind] : "unknown";
}

SIMGPU_EXPORT void simgpu_set_activity_observer(simgpu_activity_observer cb, void* user) {
  M().set_observer(cb, user);
}

namespace simgpu {
std::atomic<const ApiObserver*> g_api_observer{nullptr};

void report_api(const ApiObserver* obs, uint32_t domain, uint32_t cbid, uint64_t start_ns, uint32_t correlation_id,
                uint32_t graph_nodes) {
  static thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  simgpu_api_call c{domain, cbid, start_ns, now_ns(), correlation_id, tid, 0, graph_nodes, correlation_id != 0};
  obs->cb(&c, obs->user);
}
}  // namespace simgpu

SIMGPU_EXPORT void simgpu_set_api_observer(simgpu_api_observer cb, void* user) {
  // Never freed: a call in flight may still read the previous observer. Replaced ones are
  // kept in a list so they stay reachable (LeakSanitizer reported them as leaks); the list
  // itself is never destroyed either: threads still inside CUDA calls while another runs
  // exit() read the observer after static destructors ran (as real CUPTI's callbacks may).
  static auto* all = new std::vector<std::unique_ptr<ApiObserver>>;
  static auto* mu = new std::mutex;
  std::lock_guard<std::mutex> lock(*mu);
  if (cb) all->push_back(std::make_unique<ApiObserver>(ApiObserver{cb, user}));
  g_api_observer.store(cb ? all->back().get() : nullptr, std::memory_order_release);
}

SIMGPU_EXPORT uint32_t simgpu_last_correlation_id(void) { return Model::last_correlation_id(); }

SIMGPU_EXPORT cudaError_t simgpu_launch_kernel(cudaStream_t stream, const char* name, uint64_t duration_ns) {
  // Names must outlive the records that point at them: intern them for the process lifetime.
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>;
  const char* interned;
  {
    std::lock_guard<std::mutex> lk(mu);
    interned = names->insert(name ? name : "kernel").first->c_str();
  }
  cudaError_t e = launch_driver(stream, false, interned, duration_ns, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                geometry_of(dim3(1), dim3(1), 0));
  return e == cudaSuccess ? e : fail(e);
}

SIMGPU_EXPORT int simgpu_current_device(void) { return Model::current_device(); }

SIMGPU_EXPORT uint64_t simgpu_now_ns(void) { return now_ns(); }

SIMGPU_EXPORT cudaError_t simgpu_enqueue_external(cudaStream_t stream, int n, const simgpu_external_desc* descs,
                                                  simgpu_op** out) {
  if (n <= 0 || !descs || !out) return cudaErrorInvalidValue;
  Model& m = M();
  Stream* s = stream_of(stream, false);
  if (!s) return cudaErrorInvalidResourceHandle;
  // A library (NCCL) launching its kernel through the driver: one DRIVER cuLaunchKernelEx
  // call per op, reported with the op's correlation id.
  const ApiObserver* obs = g_api_observer.load(std::memory_order_acquire);
  const uint64_t t0 = obs ? now_ns() : 0;
  std::vector<OpDesc> ds(n);
  for (int i = 0; i < n; ++i) {
    ds[i].kind = descs[i].kind;
    ds[i].bytes = descs[i].bytes;
    ds[i].name = descs[i].name;
    ds[i].comm = descs[i].comm;
    ds[i].link_tx_bytes = descs[i].link_tx_bytes;
    ds[i].link_rx_bytes = descs[i].link_rx_bytes;
    ds[i].external = true;
  }
  std::vector<OpRef> ops = m.enqueue(s, ds);
  for (int i = 0; i < n; ++i) out[i] = new simgpu_op{ops[i]};
  if (obs)
    for (const OpRef& op : ops) report_api(obs, SIMGPU_API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, t0, op->rec.correlation_id);
  return cudaSuccess;
}

SIMGPU_EXPORT int simgpu_op_start(simgpu_op* op, uint64_t* start_ns) {
  return op && start_ns && M().started(op->op, start_ns) ? 1 : 0;
}

SIMGPU_EXPORT void simgpu_op_complete(simgpu_op* op, uint64_t end_ns, uint64_t wait_ns) {
  if (op) M().complete(op->op, end_ns, wait_ns);
}

SIMGPU_EXPORT void simgpu_op_release(simgpu_op* op) { delete op; }

SIMGPU_EXPORT void simgpu_truth_cupti_cost(uint64_t ns, int lingering) { M().truth().add_cupti_cost(ns, lingering != 0); }

SIMGPU_EXPORT void simgpu_truth_cupti_finalize(void) { M().truth().add_cupti_finalize(); }

SIMGPU_EXPORT double simgpu_config_value(const char* key) {
  const double* v = config().find(key ? key : "");
  if (!v) {
    std::fprintf(stderr, "simgpu: unknown configuration key '%s'\n", key ? key : "");
    std::fflush(stderr);
    _exit(2);
  }
  return *v;
}
