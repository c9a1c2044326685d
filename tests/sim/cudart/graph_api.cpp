// CUDA graphs by stream capture: work issued on a capturing stream is recorded as nodes of a
// graph instead of running; an instantiated graph replays its nodes, in capture order, on
// the stream it is launched on. Each replay takes one correlation id (the launch call's,
// as CUPTI reports graph work) and marks its ops with the graph's id and the node's id.
#include <atomic>
#include <mutex>
#include <vector>

#include "../model/clock.h"
#include "../model/config.h"
#include "api_trace.h"
#include "runtime.h"

#include <cuda.h>

namespace simgpu {

struct Graph {
  Stream* origin = nullptr;    // the stream whose capture built it (null once ended)
  std::vector<OpDesc> nodes;   // in capture order (one stream: a chain)
};

bool capture_into_graph(Stream* s, const OpDesc& d) {
  if (!s->capture) return false;
  s->capture->nodes.push_back(d);
  return true;
}

}  // namespace simgpu

using namespace simgpu;

namespace {

struct GraphExec {
  uint32_t id;
  std::vector<OpDesc> nodes;
};

std::atomic<uint32_t> g_next_graph_id{0};

cudaError_t begin_capture(cudaStream_t stream, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (s->legacy) return fail(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot be captured
  if (s->capture) return fail(cudaErrorIllegalState);
  s->capture = new Graph{s, {}};
  return cudaSuccess;
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* out, bool per_thread) {
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!out) return fail(cudaErrorInvalidValue);
  if (!s->capture) return fail(cudaErrorIllegalState);
  Graph* g = s->capture;
  s->capture = nullptr;
  g->origin = nullptr;
  *out = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}

cudaError_t instantiate(cudaGraphExec_t* out, cudaGraph_t graph) {
  if (!out || !graph) return fail(cudaErrorInvalidValue);
  const Graph* g = reinterpret_cast<const Graph*>(graph);
  auto* e = new GraphExec{++g_next_graph_id, g->nodes};
  for (size_t i = 0; i < e->nodes.size(); ++i) {
    e->nodes[i].graph_id = e->id;
    e->nodes[i].graph_node_id = (uint64_t{e->id} << 32) | (i + 1);  // unique across graphs, as CUPTI's
  }
  *out = reinterpret_cast<cudaGraphExec_t>(e);
  return cudaSuccess;
}

// One launch: charged like a kernel launch (one call however many nodes), one correlation id;
// CUPTI's cost on it may grow with its nodes (SIMGPU_CUPTI_GRAPH_NODE_COST_NS).
cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread, uint32_t domain, uint32_t cbid) {
  ApiScope scope(domain, cbid);
  Model& m = M();
  if (!exec) return fail(cudaErrorInvalidValue);
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  const auto* e = reinterpret_cast<const GraphExec*>(exec);
  spend_host_time(static_cast<uint64_t>(config().launch_us * 1000.0 + 0.5));
  const uint32_t corr = m.next_correlation_id();
  m.count_graph_launch();
  scope.set_graph_nodes(static_cast<uint32_t>(e->nodes.size()));
  std::vector<OpDesc> nodes = e->nodes;
  for (OpDesc& d : nodes) d.correlation_id = corr;
  if (!nodes.empty()) m.enqueue(s, nodes, nullptr, Model::Order::kChain);  // submitted at once, run back to back
  return cudaSuccess;
}

}  // namespace

SIMGPU_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  (void)mode;  // one capturing thread in the simulator: every mode behaves alike
  return begin_capture(s, false);
}
SIMGPU_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, cudaStreamCaptureMode mode) {
  (void)mode;
  return begin_capture(s, true);
}
SIMGPU_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) { return end_capture(s, g, false); }
SIMGPU_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* g) { return end_capture(s, g, true); }

SIMGPU_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* out, cudaGraph_t graph, unsigned long long flags) {
  (void)flags;
  return instantiate(out, graph);
}
SIMGPU_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* out, cudaGraph_t graph,
                                                        unsigned long long flags) {
  (void)flags;
  return instantiate(out, graph);
}

SIMGPU_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  return graph_launch(exec, s, false, SIMGPU_API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
}
SIMGPU_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t s) {
  return graph_launch(exec, s, true, SIMGPU_API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000);
}

SIMGPU_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}
SIMGPU_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<GraphExec*>(exec);
  return cudaSuccess;
}

namespace simgpu {

// The driver's cuGraphLaunch (cudaGetDriverEntryPoint("cuGraphLaunch")): the same replay,
// reported as a DRIVER call.
CUresult CUDAAPI sim_cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return graph_launch(reinterpret_cast<cudaGraphExec_t>(exec), reinterpret_cast<cudaStream_t>(stream), false,
                      SIMGPU_API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch) == cudaSuccess
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

cudaStreamCaptureStatus capture_status(Stream* s) {
  return s->capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
}

}  // namespace simgpu
