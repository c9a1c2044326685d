// Shared helpers of the simulated runtime's entry points (not exported).
#pragma once

#include <cuda_runtime_api.h>

#include "../model/device.h"

// Entry points compiled here are the real names (cudaMemcpy, not cudaMemcpy_ptds); the
// per-thread-default-stream variants are defined explicitly next to them.
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "build the simulated runtime without CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#define SIMGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace simgpu {

// Records `e` as the calling thread's last error (cudaGetLastError) and returns it.
cudaError_t fail(cudaError_t e);

// The model, after the configuration check every entry point owes the user.
inline Model& M() { return Model::get(); }

// Resolves a stream handle, or nullptr (the caller returns cudaErrorInvalidResourceHandle).
inline Stream* stream_of(cudaStream_t s, bool per_thread) { return M().stream(s, per_thread); }

// Kernel launch shared by every launch entry point. `kernel` is what __cudaGetKernel
// handed out, or null with `host_fun` the host stub.
// `cbid` is the CUPTI runtime callback id the call is reported under.
// `geometry` is the launch's grid, block and dynamic shared memory (geometry_of).
cudaError_t launch(const void* host_fun, cudaKernel_t kernel, void** args, cudaStream_t stream,
                   bool per_thread, uint32_t cbid, const simgpu_launch_geometry& geometry);

// The geometry CUPTI reports for a launch <<<grid, block, smem>>> of a simulated kernel.
simgpu_launch_geometry geometry_of(dim3 grid, dim3 block, size_t smem);

// A launch that bypasses the runtime API (driver entry points, simgpu_launch_kernel):
// charges launch_us, takes a correlation id, and is reported as a DRIVER call `cbid`. Does
// not touch the runtime's last error (the driver API has none).
cudaError_t launch_driver(cudaStream_t stream, bool per_thread, const char* name, uint64_t dur_ns,
                          uint32_t cbid, const simgpu_launch_geometry& geometry);

// Stream capture (graph_api.cpp): true when `s` is being captured and `d` was recorded into
// its graph instead of running (the caller enqueues nothing and does not wait).
bool capture_into_graph(Stream* s, const OpDesc& d);
cudaStreamCaptureStatus capture_status(Stream* s);
// Device memory the process may hold: the device's memory (memory_gib) less what the
// configured other processes hold (device_memory.cpp).
uint64_t device_memory_limit();

}  // namespace simgpu
