// CUDA graph wrappers: stream capture (which puts the capture check of every launch, copy
// and memset on, cuda_call.h), instantiation, and graph launches. A graph launch is one
// record however many kernels it runs: CUPTI's records of its work carry its correlation id
// and the graph's id, and the collector ties them together.
#include <cuda_runtime_api.h>

#include "hooks/cuda_call.h"

namespace gi = gpuwatch::inject;
using gi::hooks::Timed;

namespace gpuwatch::inject::hooks {
std::atomic<int> g_open_captures{0};
}

namespace {

void CaptureBegun(cudaError_t rc) {
  if (rc == cudaSuccess) gi::hooks::g_open_captures.fetch_add(1, std::memory_order_relaxed);
}
// Called for every EndCapture: the capture ends even when it failed (it was invalidated).
void CaptureEnded() {
  int n = gi::hooks::g_open_captures.load(std::memory_order_relaxed);
  while (n > 0 && !gi::hooks::g_open_captures.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
  }
}

}  // namespace

extern "C" {

// ---- capture ----
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  GW_REAL(cudaStreamBeginCapture);
  const cudaError_t rc = Timed(gi::kApiStreamBeginCapture, s, 0, [&] { return real(s, mode); });
  CaptureBegun(rc);
  return rc;
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, cudaStreamCaptureMode mode) {
  GW_REAL_T(decltype(&cudaStreamBeginCapture), "cudaStreamBeginCapture_ptsz");
  const cudaError_t rc = Timed(gi::kApiStreamBeginCapture, s, 0, [&] { return real(s, mode); });
  CaptureBegun(rc);
  return rc;
}
cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps,
                                          const cudaGraphEdgeData* data, size_t n, cudaStreamCaptureMode mode) {
  GW_REAL(cudaStreamBeginCaptureToGraph);
  const cudaError_t rc = Timed(gi::kApiStreamBeginCapture, s, 0, [&] { return real(s, g, deps, data, n, mode); });
  CaptureBegun(rc);
  return rc;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  GW_REAL(cudaStreamEndCapture);
  const cudaError_t rc = Timed(gi::kApiStreamEndCapture, s, 0, [&] { return real(s, g); });
  CaptureEnded();
  return rc;
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* g) {
  GW_REAL_T(decltype(&cudaStreamEndCapture), "cudaStreamEndCapture_ptsz");
  const cudaError_t rc = Timed(gi::kApiStreamEndCapture, s, 0, [&] { return real(s, g); });
  CaptureEnded();
  return rc;
}

// ---- instantiate ----
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long flags) {
  GW_REAL(cudaGraphInstantiate);
  return Timed(gi::kApiGraphInstantiate, nullptr, 0, [&] { return real(e, g, flags); });
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long flags) {
  GW_REAL(cudaGraphInstantiateWithFlags);
  return Timed(gi::kApiGraphInstantiate, nullptr, 0, [&] { return real(e, g, flags); });
}

// ---- launch ----
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  GW_REAL(cudaGraphLaunch);
  return Timed(gi::kApiGraphLaunch, s, 0, [&] { return real(e, s); });
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t e, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaGraphLaunch), "cudaGraphLaunch_ptsz");
  return Timed(gi::kApiGraphLaunch, s, 0, [&] { return real(e, s); });
}

}  // extern "C"
