// See graphs.h.
#include "analyze/graphs.h"

namespace gpuwatch::collector {

void GraphFigures::Merge(const GraphFigures& o) {
  launches += o.launches;
  launch_ns += o.launch_ns;
  captured_calls += o.captured_calls;
  captures += o.captures;
  instantiations += o.instantiations;
  device.Add(o.device);
  // Graph ids are per process: the job's table adds the ranks' graphs of the same id (a
  // job whose ranks capture the same step in the same order gives them the same ids).
  for (const auto& [id, g] : o.by_graph) {
    auto it = by_graph.find(id);
    if (it != by_graph.end()) it->second.Add(g);
    else if (by_graph.size() < kMaxGraphs) by_graph.emplace(id, g);
  }
}

void GraphCounter::OnHostCall(const HostCall& c) {
  if (c.captured) {
    ++f_.captured_calls;
    return;
  }
  if (c.api == wire::CUDA_GRAPH_LAUNCH) {
    ++f_.launches;
    f_.launch_ns += c.dur_ns;
  } else if (c.api == wire::CUDA_STREAM_BEGIN_CAPTURE) {
    ++f_.captures;
  } else if (c.api == wire::CUDA_GRAPH_INSTANTIATE) {
    ++f_.instantiations;
  }
}

void GraphCounter::OnDeviceWork(const DeviceWork& w) {
  if (!w.graph_id) return;
  // Every node of one launch carries the launch's correlation id; a graph's launches run
  // in order on their stream, so a new id is a new launch.
  auto [it, fresh] = last_corr_.try_emplace(w.graph_id, w.correlation_id);
  const bool new_launch = fresh || it->second != w.correlation_id;
  it->second = w.correlation_id;
  GraphFigures::Graph one;
  one.launches = new_launch;
  one.ops = 1;
  one.kernels = w.kind == wire::ACTIVITY_KERNEL;
  one.device_ns = w.dur_ns();
  f_.device.Add(one);
  auto g = f_.by_graph.find(w.graph_id);
  if (g == f_.by_graph.end() && f_.by_graph.size() < GraphFigures::kMaxGraphs)
    g = f_.by_graph.emplace(w.graph_id, GraphFigures::Graph{}).first;
  if (g != f_.by_graph.end()) g->second.Add(one);
  if (last_corr_.size() > 4 * GraphFigures::kMaxGraphs) last_corr_.clear();  // bounded
}

}  // namespace gpuwatch::collector
