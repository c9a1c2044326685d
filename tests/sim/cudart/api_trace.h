// API-call reporting for the simulated CUPTI (simgpu_set_api_observer in simgpu.h).
//
// Each public entry point that can enqueue device work opens an ApiScope. With no observer
// installed the scope costs one relaxed atomic load; with one, it notes the host time and the
// thread's last correlation id, and on return reports the call if (and only if) it took a
// new correlation id, i.e. it enqueued work. That keeps the reported calls exactly the ones
// whose device records carry their correlation id, as in real CUPTI.
#pragma once

#include <atomic>
#include <cstdint>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "../model/clock.h"
#include "../model/device.h"
#include "../simgpu.h"

namespace simgpu {

struct ApiObserver {
  simgpu_api_observer cb;
  void* user;
};

// Never freed once published: a call in flight may still hold the previous one.
extern std::atomic<const ApiObserver*> g_api_observer;

void report_api(const ApiObserver* obs, uint32_t domain, uint32_t cbid, uint64_t start_ns, uint32_t correlation_id,
                uint32_t graph_nodes = 0);

class ApiScope {
 public:
  ApiScope(uint32_t domain, uint32_t cbid) : obs_(g_api_observer.load(std::memory_order_acquire)) {
    if (!obs_) return;
    domain_ = domain;
    cbid_ = cbid;
    start_ns_ = now_ns();
    corr_ = Model::last_correlation_id();
  }
  ~ApiScope() {
    if (!obs_) return;
    const uint32_t c = Model::last_correlation_id();
    if (c != corr_) report_api(obs_, domain_, cbid_, start_ns_, c, graph_nodes_);
  }
  // A graph launch: how many nodes it ran (CUPTI's work on it grows with them).
  void set_graph_nodes(uint32_t n) { graph_nodes_ = n; }
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;

 private:
  const ApiObserver* obs_;
  uint32_t domain_ = 0, cbid_ = 0, corr_ = 0, graph_nodes_ = 0;
  uint64_t start_ns_ = 0;
};

inline ApiScope runtime_call(uint32_t cbid) { return ApiScope(SIMGPU_API_RUNTIME, cbid); }

}  // namespace simgpu
