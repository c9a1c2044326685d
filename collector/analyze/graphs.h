// graphs: CUDA graph launches the library saw (cudaGraphLaunch, cuGraphLaunch), calls
// recorded into graphs while their stream was captured, and the device work graph launches
// ran (CUPTI's graph ids), in all and per executable graph.
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct GraphFigures {
  static constexpr size_t kMaxGraphs = 1000;  // graphs kept by id (rank and job); beyond, only totals
  struct Graph {
    uint64_t launches = 0;  // launches seen on the device (distinct correlation ids)
    uint64_t kernels = 0, ops = 0, device_ns = 0;  // ops: kernels, copies, memsets
    void Add(const Graph& o) { launches += o.launches, kernels += o.kernels, ops += o.ops, device_ns += o.device_ns; }
  };
  uint64_t launches = 0, launch_ns = 0;  // hooked graph launch calls (not captured ones)
  uint64_t captured_calls = 0;           // launches, copies, memsets recorded into graphs
  uint64_t captures = 0, instantiations = 0;
  Graph device;                          // all work graph launches ran (CUPTI)
  std::map<uint32_t, Graph> by_graph;    // CUPTI graph id -> its work; bounded

  bool any() const { return launches || captured_calls || captures || device.ops; }
  void Merge(const GraphFigures& o);
};

class GraphCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  const GraphFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  GraphFigures f_;
  std::unordered_map<uint32_t, uint32_t> last_corr_;  // graph id -> correlation id of its last launch seen
};

}  // namespace gpuwatch::collector
