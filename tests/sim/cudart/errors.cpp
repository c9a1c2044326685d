// Error state and error strings of the simulated runtime.
#include <cuda_runtime_api.h>

#include "api_trace.h"
#include "runtime.h"

namespace simgpu {
namespace {
thread_local cudaError_t tl_last_error = cudaSuccess;

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};
// The codes the simulator can return, plus the ones callers commonly print.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
}  // namespace

cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) tl_last_error = e;
  return e;
}

}  // namespace simgpu

using namespace simgpu;

SIMGPU_EXPORT cudaError_t cudaGetLastError(void) {
  // Reported although it enqueues nothing (simgpu.h): CUPTI records it as any call.
  const ApiObserver* obs = g_api_observer.load(std::memory_order_acquire);
  const uint64_t t0 = obs ? now_ns() : 0;
  cudaError_t e = tl_last_error;
  tl_last_error = cudaSuccess;
  if (obs) report_api(obs, SIMGPU_API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, t0, 0);
  return e;
}

SIMGPU_EXPORT cudaError_t cudaPeekAtLastError(void) { return tl_last_error; }

SIMGPU_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  for (const ErrorText& e : kErrors)
    if (e.code == error) return e.text;
  return "unrecognized error code";
}

SIMGPU_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  for (const ErrorText& e : kErrors)
    if (e.code == error) return e.name;
  return "cudaErrorUnknown";
}
