// The copy and memset shapes beyond cudaMemcpy(Async): pitched 2D/3D copies, peer copies,
// symbol copies, memsets. Each is recorded as the copy it is (CUDA_MEMCPY for the
// synchronous forms, CUDA_MEMCPY_ASYNC for the stream-ordered ones, bytes = the area
// moved), so host figures count copies through any of them.
#include <cuda_runtime_api.h>

#include "hooks/cuda_call.h"

namespace gi = gpuwatch::inject;
using gi::hooks::Copy;
using gi::hooks::Timed;

namespace {

size_t ExtentBytes(const cudaMemcpy3DParms* p) {
  if (!p) return 0;
  const cudaExtent& e = p->extent;
  return e.width * (e.height ? e.height : 1) * (e.depth ? e.depth : 1);
}
void* Dst3D(const cudaMemcpy3DParms* p) { return p ? p->dstPtr.ptr : nullptr; }
const void* Src3D(const cudaMemcpy3DParms* p) { return p ? p->srcPtr.ptr : nullptr; }
cudaMemcpyKind Kind3D(const cudaMemcpy3DParms* p) { return p ? p->kind : cudaMemcpyDefault; }

}  // namespace

extern "C" {

// ---- pitched copies ----
cudaError_t cudaMemcpy2D(void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k) {
  GW_REAL(cudaMemcpy2D);
  return Copy(gi::kApiMemcpy, dst, src, w * h, k, nullptr, [&] { return real(dst, dp, src, sp, w, h, k); });
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k,
                              cudaStream_t s) {
  GW_REAL(cudaMemcpy2DAsync);
  return Copy(gi::kApiMemcpyAsync, dst, src, w * h, k, s, [&] { return real(dst, dp, src, sp, w, h, k, s); });
}
cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) {
  GW_REAL(cudaMemcpy3D);
  return Copy(gi::kApiMemcpy, Dst3D(p), Src3D(p), ExtentBytes(p), Kind3D(p), nullptr, [&] { return real(p); });
}
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t s) {
  GW_REAL(cudaMemcpy3DAsync);
  return Copy(gi::kApiMemcpyAsync, Dst3D(p), Src3D(p), ExtentBytes(p), Kind3D(p), s, [&] { return real(p, s); });
}

// ---- between devices ----
cudaError_t cudaMemcpyPeer(void* dst, int dd, const void* src, int sd, size_t n) {
  GW_REAL(cudaMemcpyPeer);
  return Copy(gi::kApiMemcpy, dst, src, n, cudaMemcpyDeviceToDevice, nullptr, [&] { return real(dst, dd, src, sd, n); });
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t s) {
  GW_REAL(cudaMemcpyPeerAsync);
  return Copy(gi::kApiMemcpyAsync, dst, src, n, cudaMemcpyDeviceToDevice, s,
              [&] { return real(dst, dd, src, sd, n, s); });
}

// ---- device symbols (__constant__ / __device__ variables): device memory ----
cudaError_t cudaMemcpyToSymbol(const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k) {
  GW_REAL(cudaMemcpyToSymbol);
  return Copy(gi::kApiMemcpy, const_cast<void*>(sym), src, n, k == cudaMemcpyDefault ? cudaMemcpyHostToDevice : k,
              nullptr, [&] { return real(sym, src, n, off, k); });
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k) {
  GW_REAL(cudaMemcpyFromSymbol);
  return Copy(gi::kApiMemcpy, dst, sym, n, k == cudaMemcpyDefault ? cudaMemcpyDeviceToHost : k, nullptr,
              [&] { return real(dst, sym, n, off, k); });
}
cudaError_t cudaMemcpyToSymbolAsync(const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k,
                                    cudaStream_t s) {
  GW_REAL(cudaMemcpyToSymbolAsync);
  return Copy(gi::kApiMemcpyAsync, const_cast<void*>(sym), src, n, k == cudaMemcpyDefault ? cudaMemcpyHostToDevice : k,
              s, [&] { return real(sym, src, n, off, k, s); });
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k,
                                      cudaStream_t s) {
  GW_REAL(cudaMemcpyFromSymbolAsync);
  return Copy(gi::kApiMemcpyAsync, dst, sym, n, k == cudaMemcpyDefault ? cudaMemcpyDeviceToHost : k, s,
              [&] { return real(dst, sym, n, off, k, s); });
}

// ---- memsets ----
cudaError_t cudaMemset(void* p, int v, size_t n) {
  GW_REAL(cudaMemset);
  return Timed(gi::kApiMemset, nullptr, 0, [&] { return real(p, v, n); }, n);
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  GW_REAL(cudaMemsetAsync);
  return Timed(gi::kApiMemsetAsync, s, 0, [&] { return real(p, v, n, s); }, n);
}
cudaError_t cudaMemsetAsync_ptsz(void* p, int v, size_t n, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaMemsetAsync), "cudaMemsetAsync_ptsz");
  return Timed(gi::kApiMemsetAsync, s, 0, [&] { return real(p, v, n, s); }, n);
}
cudaError_t cudaMemset2D(void* p, size_t pitch, int v, size_t w, size_t h) {
  GW_REAL(cudaMemset2D);
  return Timed(gi::kApiMemset, nullptr, 0, [&] { return real(p, pitch, v, w, h); }, w * h);
}
cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s) {
  GW_REAL(cudaMemset2DAsync);
  return Timed(gi::kApiMemsetAsync, s, 0, [&] { return real(p, pitch, v, w, h, s); }, w * h);
}

}  // extern "C"
