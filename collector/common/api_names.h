// Public names of the intercepted APIs, as they appear in summary.json keys.
#pragma once
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

inline const char* ApiName(wire::Api api) {
  switch (api) {
    case wire::CUDA_MEMCPY: return "cudaMemcpy";
    case wire::CUDA_MEMCPY_ASYNC: return "cudaMemcpyAsync";
    case wire::CUDA_STREAM_SYNCHRONIZE: return "cudaStreamSynchronize";
    case wire::CUDA_DEVICE_SYNCHRONIZE: return "cudaDeviceSynchronize";
    case wire::CUDA_EVENT_SYNCHRONIZE: return "cudaEventSynchronize";
    case wire::CUDA_LAUNCH_KERNEL: return "cudaLaunchKernel";
    case wire::CUDA_GRAPH_LAUNCH: return "cudaGraphLaunch";
    case wire::CUDA_STREAM_BEGIN_CAPTURE: return "cudaStreamBeginCapture";
    case wire::CUDA_STREAM_END_CAPTURE: return "cudaStreamEndCapture";
    case wire::CUDA_GRAPH_INSTANTIATE: return "cudaGraphInstantiate";
    case wire::CUDA_MEMSET: return "cudaMemset";
    case wire::CUDA_MEMSET_ASYNC: return "cudaMemsetAsync";
    case wire::CUDA_STREAM_WAIT_EVENT: return "cudaStreamWaitEvent";
    case wire::CUDA_EVENT_RECORD: return "cudaEventRecord";
    case wire::CUDA_LAUNCH_HOST_FUNC: return "cudaLaunchHostFunc";
    case wire::CUDA_STREAM_QUERY: return "cudaStreamQuery";
    case wire::CUDA_EVENT_QUERY: return "cudaEventQuery";
    case wire::CUDA_DRIVER_LAUNCH_KERNEL: return "cuLaunchKernel";
    case wire::CUDA_LAUNCH_RUN: return "kernel launches (summarized)";
    case wire::NCCL_ALL_REDUCE: return "ncclAllReduce";
    case wire::NCCL_ALL_GATHER: return "ncclAllGather";
    case wire::NCCL_REDUCE_SCATTER: return "ncclReduceScatter";
    case wire::NCCL_BROADCAST: return "ncclBroadcast";
    case wire::NCCL_REDUCE: return "ncclReduce";
    case wire::NCCL_SEND: return "ncclSend";
    case wire::NCCL_RECV: return "ncclRecv";
    case wire::CUDA_MALLOC: return "cudaMalloc";
    case wire::CUDA_FREE: return "cudaFree";
    case wire::CUDA_MALLOC_ASYNC: return "cudaMallocAsync";
    case wire::CUDA_FREE_ASYNC: return "cudaFreeAsync";
    case wire::CUDA_MALLOC_MANAGED: return "cudaMallocManaged";
    case wire::CUDA_MEM_GET_INFO: return "cudaMemGetInfo";
    default: return "unknown";
  }
}

}  // namespace gpuwatch::collector
